package store

import (
	"context"
	"time"

	"github.com/tollgate-ai/tollgate/kernel"
)

// Alerts (docs/governance.md, "Alerts"): the sinks and settings are
// configuration objects every replica reads; the alerts fired and their
// deliveries are a log every backend keeps (Alerts), whose primary key makes
// an alert fire at most once across replicas.

const (
	// KindAlertSink is where alerts are delivered (id: the sink's name).
	KindAlertSink Kind = "alert_sink"
	// KindAlertSettings is the alert settings, id AlertSettingsID.
	KindAlertSettings Kind = "alert_settings"
)

// AlertSettingsID is the id of the one AlertSettings object.
const AlertSettingsID = "alerts"

// Alert sink kinds.
const (
	AlertSinkWebhook = "webhook" // the alert as JSON, signed with Secret when set
	AlertSinkSlack   = "slack"   // a Slack-compatible incoming-webhook payload
)

// AlertSink is one destination of alerts.
type AlertSink struct {
	ID   string `json:"id"`
	Kind string `json:"kind"` // AlertSinkWebhook or AlertSinkSlack
	URL  string `json:"url"`
	// Secret is the webhook's HMAC key sealed with the replicas' sealer
	// (internal/secret); empty: unsigned.
	Secret []byte `json:"secret,omitempty"`
}

// AlertSettings tune when alerts fire; zero fields take the defaults.
type AlertSettings struct {
	ID string `json:"id"` // AlertSettingsID
	// Thresholds are the percents of a budget window that alert (none: 50, 80, 100).
	Thresholds []int `json:"thresholds_pct,omitempty"`
	// AnomalyFactor: a key's last hour above this many times its trailing
	// hourly average alerts (0: the gateway's flag).
	AnomalyFactor int `json:"anomaly_factor,omitempty"`
	// ExpiringWithin: a key expiring within it alerts (0: 7 days).
	ExpiringWithin time.Duration `json:"expiring_within,omitempty"`
}

// AlertRecord is one alert fired.
type AlertRecord struct {
	ID      string // the same on every replica for the same condition
	Kind    string // "budget_threshold", "key_expiring", "spend_anomaly"
	Scope   kernel.ScopeRef
	Message string
	Detail  string // the alert as JSON
	FiredAt time.Time
	// Deliveries are filled by ListAlerts, by sink name.
	Deliveries []AlertDelivery
}

// AlertDelivery is the state of one alert's delivery to one sink.
type AlertDelivery struct {
	AlertID  string
	Sink     string
	Attempts int
	OK       bool
	Error    string
	At       time.Time
}

// Alerts is the log of alerts fired and their deliveries, shared by every
// replica. Every backend implements it; it is not part of Store so that
// narrow users depend on it alone.
type Alerts interface {
	// ClaimAlert records a fired alert unless one with its ID is recorded
	// already, and reports whether this call recorded it: of concurrent
	// callers on any replica, exactly one gets true.
	ClaimAlert(ctx context.Context, a AlertRecord) (bool, error)
	// RecordAlertDelivery records the state of an alert's delivery to a
	// sink, replacing an earlier state of the same alert and sink.
	RecordAlertDelivery(ctx context.Context, d AlertDelivery) error
	// ListAlerts returns the latest alerts, newest first, at most limit (0:
	// 100), each with its deliveries ordered by sink.
	ListAlerts(ctx context.Context, limit int) ([]AlertRecord, error)
}
