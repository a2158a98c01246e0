package admin

import (
	"context"
	"errors"
	"net/url"
	"slices"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/tollgate-ai/tollgate/kernel"
	adminv1 "github.com/tollgate-ai/tollgate/proto/tollgate/admin/v1"
	"github.com/tollgate-ai/tollgate/store"
)

// Alerts (AlertService): the sinks every replica delivers to and the
// settings are configuration objects; the alerts fired and their deliveries
// are the store's alert log (store.Alerts).

// alertSinkIn checks a sink of the API (or of apply -f) and seals its secret.
func alertSinkIn(field string, in *adminv1.AlertSink, seal func(string) ([]byte, error)) (store.AlertSink, error) {
	k := store.AlertSink{ID: in.GetId(), Kind: in.GetKind(), URL: in.GetUrl()}
	if k.Kind == "" {
		k.Kind = store.AlertSinkWebhook
	}
	if k.Kind != store.AlertSinkWebhook && k.Kind != store.AlertSinkSlack {
		return k, errorf(ErrInvalid, "%s.kind: %q is not webhook or slack", field, k.Kind)
	}
	if u, err := url.Parse(k.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return k, errorf(ErrInvalid, "%s.url: %q is not an http(s) URL", field, k.URL)
	}
	if in.GetSecret() != "" && k.Kind == store.AlertSinkSlack {
		return k, errorf(ErrInvalid, "%s.secret: a slack sink is not signed", field)
	}
	var err error
	k.Secret, err = seal(in.GetSecret())
	return k, err
}

func alertSinkView(k *store.AlertSink) *adminv1.AlertSink {
	return &adminv1.AlertSink{Id: k.ID, Kind: k.Kind, Url: k.URL, HasSecret: len(k.Secret) > 0}
}

// alertSinkAudit is a sink without its secret.
func alertSinkAudit(k *store.AlertSink) any {
	return map[string]any{"kind": k.Kind, "url": k.URL, "has_secret": len(k.Secret) > 0}
}

// CreateAlertSink adds a sink.
func (s *Server) CreateAlertSink(ctx context.Context, req *adminv1.CreateAlertSinkRequest) (*adminv1.CreateAlertSinkResponse, error) {
	k, err := alertSinkIn("sink", req.GetSink(), s.seal)
	if err == nil {
		_, err = store.Put(ctx, s.st, k.ID, &k, 0)
		if errors.Is(err, store.ErrConflict) {
			err = errorf(ErrExists, "alert sink %q", k.ID)
		}
	}
	if err == nil {
		err = s.record(ctx, "alert_sink.create", store.KindAlertSink, k.ID, alertSinkAudit(&k))
	}
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	return &adminv1.CreateAlertSinkResponse{Sink: alertSinkView(&k)}, nil
}

// ListAlertSinks lists the sinks, without their secrets.
func (s *Server) ListAlertSinks(ctx context.Context, _ *adminv1.ListAlertSinksRequest) (*adminv1.ListAlertSinksResponse, error) {
	ks, err := store.List[store.AlertSink](ctx, s.st)
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	out := &adminv1.ListAlertSinksResponse{}
	for i := range ks {
		out.Sinks = append(out.Sinks, alertSinkView(&ks[i]))
	}
	return out, nil
}

// DeleteAlertSink removes a sink.
func (s *Server) DeleteAlertSink(ctx context.Context, req *adminv1.DeleteAlertSinkRequest) (*adminv1.DeleteAlertSinkResponse, error) {
	err := remove[store.AlertSink](ctx, s.st, req.GetId())
	if err == nil {
		err = s.record(ctx, "alert_sink.delete", store.KindAlertSink, req.GetId(), nil)
	}
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	return &adminv1.DeleteAlertSinkResponse{}, nil
}

// ListAlerts lists the alerts fired, newest first, with their deliveries;
// none when the store keeps no alert log.
func (s *Server) ListAlerts(ctx context.Context, req *adminv1.ListAlertsRequest) (*adminv1.ListAlertsResponse, error) {
	out := &adminv1.ListAlertsResponse{}
	j, ok := s.st.(store.Alerts)
	if !ok {
		return out, nil
	}
	as, err := j.ListAlerts(ctx, int(req.GetLimit()))
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	for i := range as {
		a := &as[i]
		v := &adminv1.Alert{
			Id: a.ID, Kind: a.Kind, Message: a.Message, FiredAt: timestamppb.New(a.FiredAt),
			Scope: &adminv1.Scope{Kind: scopeKindOut(a.Scope.Kind), Id: a.Scope.ID},
		}
		for _, d := range a.Deliveries {
			v.Deliveries = append(v.Deliveries, &adminv1.AlertDelivery{
				Sink: d.Sink, Attempts: int32(min(d.Attempts, 1<<30)), Ok: d.OK, Error: d.Error, At: timestamppb.New(d.At), //nolint:gosec // bounded
			})
		}
		out.Alerts = append(out.Alerts, v)
	}
	return out, nil
}

// scopeKindOut is the API's kind of a scope kind.
func scopeKindOut(k kernel.ScopeKind) adminv1.ScopeKind {
	for api, kk := range scopeKinds {
		if kk == k && api != adminv1.ScopeKind_SCOPE_KIND_UNSPECIFIED {
			return api
		}
	}
	return adminv1.ScopeKind_SCOPE_KIND_UNSPECIFIED
}

// alertSettingsIn checks the settings of the API (or of apply -f).
func alertSettingsIn(field string, in *adminv1.AlertSettings) (store.AlertSettings, error) {
	set := store.AlertSettings{ID: store.AlertSettingsID, AnomalyFactor: int(in.GetAnomalyFactor())}
	for _, t := range in.GetThresholdsPct() {
		if t <= 0 || t > 1000 {
			return set, errorf(ErrInvalid, "%s.thresholds_pct: %d is not a percent in 1..1000", field, t)
		}
		set.Thresholds = append(set.Thresholds, int(t))
	}
	slices.Sort(set.Thresholds)
	set.Thresholds = slices.Compact(set.Thresholds)
	if set.AnomalyFactor < 0 {
		return set, errorf(ErrInvalid, "%s.anomaly_factor: must not be negative", field)
	}
	if d := in.GetExpiringWithin(); d != nil {
		set.ExpiringWithin = d.AsDuration()
		if set.ExpiringWithin < 0 {
			return set, errorf(ErrInvalid, "%s.expiring_within: must not be negative", field)
		}
	}
	return set, nil
}

func alertSettingsView(set *store.AlertSettings) *adminv1.AlertSettings {
	out := &adminv1.AlertSettings{AnomalyFactor: int32(min(set.AnomalyFactor, 1<<30))} //nolint:gosec // bounded
	for _, t := range set.Thresholds {
		out.ThresholdsPct = append(out.ThresholdsPct, int32(min(t, 1<<30))) //nolint:gosec // bounded
	}
	if set.ExpiringWithin > 0 {
		out.ExpiringWithin = durationpb.New(set.ExpiringWithin)
	}
	return out
}

// GetAlertSettings returns the alert settings (zero: the defaults).
func (s *Server) GetAlertSettings(ctx context.Context, _ *adminv1.GetAlertSettingsRequest) (*adminv1.GetAlertSettingsResponse, error) {
	set, _, err := store.Get[store.AlertSettings](ctx, s.st, store.AlertSettingsID)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return nil, s.toStatus(ctx, err)
	}
	return &adminv1.GetAlertSettingsResponse{Settings: alertSettingsView(&set)}, nil
}

// UpdateAlertSettings replaces the alert settings.
func (s *Server) UpdateAlertSettings(ctx context.Context, req *adminv1.UpdateAlertSettingsRequest) (*adminv1.UpdateAlertSettingsResponse, error) {
	set, err := alertSettingsIn("settings", req.GetSettings())
	if err == nil {
		_, err = store.Put(ctx, s.st, set.ID, &set, -1)
	}
	if err == nil {
		err = s.record(ctx, "alert_settings.update", store.KindAlertSettings, set.ID, set)
	}
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	return &adminv1.UpdateAlertSettingsResponse{Settings: alertSettingsView(&set)}, nil
}
