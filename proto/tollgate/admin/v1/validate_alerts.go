package adminv1

// maxURL bounds an alert sink's URL (the admin layer checks its form).
const maxURL = 2048

// Validate implements the go-grpc-middleware validator interface.
func (r *CreateAlertSinkRequest) Validate() error {
	k := r.GetSink()
	if k == nil {
		return bad("sink", "is required")
	}
	var u error
	if k.GetUrl() == "" || len(k.GetUrl()) > maxURL {
		u = bad("sink.url", "must be a URL of at most %d characters", maxURL)
	}
	return first(id("sink.id", k.GetId()), u)
}

// Validate implements the go-grpc-middleware validator interface.
func (r *ListAlertSinksRequest) Validate() error { return nil }

// Validate implements the go-grpc-middleware validator interface.
func (r *DeleteAlertSinkRequest) Validate() error { return id("id", r.GetId()) }

// Validate implements the go-grpc-middleware validator interface.
func (r *ListAlertsRequest) Validate() error {
	if r.GetLimit() < 0 || r.GetLimit() > 1000 {
		return bad("limit", "must be 0..1000")
	}
	return nil
}

// Validate implements the go-grpc-middleware validator interface.
func (r *GetAlertSettingsRequest) Validate() error { return nil }

// Validate implements the go-grpc-middleware validator interface.
func (r *UpdateAlertSettingsRequest) Validate() error {
	if r.GetSettings() == nil {
		return bad("settings", "is required")
	}
	return nil
}
