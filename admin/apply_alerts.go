package admin

import (
	"fmt"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	adminv1 "github.com/tollgate-ai/tollgate/proto/tollgate/admin/v1"
	"github.com/tollgate-ai/tollgate/store"
)

// Alerts in apply -f: alert_sinks (as CreateAlertSink; a secret may be a
// ${ENV_VAR} reference, kept when absent) and alerts (the settings).

// AlertSinkDoc is one alert sink.
type AlertSinkDoc struct {
	ID     string `yaml:"id"`
	Kind   string `yaml:"kind"` // webhook (default) | slack
	URL    string `yaml:"url"`
	Secret string `yaml:"secret"` // a webhook's signing secret, usually ${ENV_VAR}
}

// AlertsDoc is the alert settings.
type AlertsDoc struct {
	Thresholds     []int32 `yaml:"thresholds_pct"`
	AnomalyFactor  int32   `yaml:"anomaly_factor"`
	ExpiringWithin string  `yaml:"expiring_within"` // a Go duration, e.g. 168h
}

// alertPlans are the plans of the document's alert sinks and settings.
func (a *applier) alertPlans(d *Document) ([]plan, error) {
	var plans []plan
	for i, k := range d.AlertSinks {
		f := fmt.Sprintf("alert_sinks[%d]", i)
		secret, err := expandEnv(f+".secret", k.Secret, a.lookup)
		if err != nil {
			return nil, err
		}
		if err := (&adminv1.CreateAlertSinkRequest{Sink: &adminv1.AlertSink{Id: k.ID, Url: k.URL}}).Validate(); err != nil {
			return nil, errorf(ErrInvalid, "%s: %v", f, err)
		}
		// Checked (and sealed) once the stored secret is known.
		want, err := alertSinkIn(f, &adminv1.AlertSink{Id: k.ID, Kind: k.Kind, Url: k.URL}, func(string) ([]byte, error) { return nil, nil })
		if err != nil {
			return nil, err
		}
		if secret != "" && want.Kind == store.AlertSinkSlack {
			return nil, errorf(ErrInvalid, "%s.secret: a slack sink is not signed", f)
		}
		if secret != "" && a.sealer == nil {
			return nil, ErrNoSealer
		}
		plans = append(plans, entityPlan(a, want.ID, func(cur *store.AlertSink, found bool) (store.AlertSink, error) {
			w := want
			w.Secret = a.credential(cur.Secret, found, secret)
			return w, nil
		}))
	}
	if d.Alerts != nil {
		in := &adminv1.AlertSettings{ThresholdsPct: d.Alerts.Thresholds, AnomalyFactor: d.Alerts.AnomalyFactor}
		if d.Alerts.ExpiringWithin != "" {
			w, err := time.ParseDuration(d.Alerts.ExpiringWithin)
			if err != nil {
				return nil, errorf(ErrInvalid, "alerts.expiring_within: %v", err)
			}
			in.ExpiringWithin = durationpb.New(w)
		}
		want, err := alertSettingsIn("alerts", in)
		if err != nil {
			return nil, err
		}
		plans = append(plans, entityPlan(a, want.ID, func(*store.AlertSettings, bool) (store.AlertSettings, error) { return want, nil }))
	}
	return plans, nil
}
