package cli

import (
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	adminv1 "github.com/tollgate-ai/tollgate/proto/tollgate/admin/v1"
)

// Alerts: the sinks every replica delivers to, the alerts fired and the
// settings (AlertService). "tollgate alert sink VERB" is the noun "alert
// sink" (Main joins the two words).

// EnvAlertSecret is where `alert sink add` reads a webhook's secret from
// when --secret-env is not given.
const EnvAlertSecret = "TOLLGATE_ALERT_SECRET"

func init() {
	register(
		&command{noun: "alert sink", verb: "add", args: "ID", help: "add an alert sink: --url URL [--kind webhook|slack] (a webhook's secret from env " + EnvAlertSecret + ")", setup: alertSinkAdd},
		&command{noun: "alert sink", verb: "list", help: "list the alert sinks", setup: alertSinkList},
		&command{noun: "alert sink", verb: "delete", args: "ID", help: "remove an alert sink", setup: alertSinkDelete},
		&command{noun: "alert", verb: "list", help: "list the alerts fired, newest first, with their deliveries", setup: alertList},
		&command{noun: "alert", verb: "settings", help: "show the alert settings, or set them with --thresholds 50,80,100 --anomaly-factor N --expiring-within 168h", setup: alertSettings},
	)
}

func alertSinkAdd(fs *flag.FlagSet) func(*runner, []string) error {
	url := fs.String("url", "", "where the sink posts (required)")
	kind := fs.String("kind", "webhook", "webhook (signed JSON) or slack (incoming webhook)")
	secretEnv := fs.String("secret-env", EnvAlertSecret, "environment variable holding the webhook's signing secret (unset or empty: unsigned)")
	return func(r *runner, pos []string) error {
		if *url == "" {
			return fmt.Errorf("%w: --url is required", ErrUsage)
		}
		sink := &adminv1.AlertSink{Id: pos[0], Kind: *kind, Url: *url}
		if *kind == "webhook" {
			sink.Secret = os.Getenv(*secretEnv)
		}
		resp, err := adminv1.NewAlertServiceClient(r.conn).CreateAlertSink(r.ctx, &adminv1.CreateAlertSinkRequest{Sink: sink})
		if err != nil {
			return err
		}
		return r.emit(resp, func() { r.fields(sinkFields(resp.GetSink())) })
	}
}

func sinkFields(k *adminv1.AlertSink) [][2]string {
	return [][2]string{{"ID", k.GetId()}, {"KIND", k.GetKind()}, {"URL", k.GetUrl()}, {"SIGNED", strconv.FormatBool(k.GetHasSecret())}}
}

func alertSinkList(*flag.FlagSet) func(*runner, []string) error {
	return func(r *runner, _ []string) error {
		resp, err := adminv1.NewAlertServiceClient(r.conn).ListAlertSinks(r.ctx, &adminv1.ListAlertSinksRequest{})
		if err != nil {
			return err
		}
		return r.emit(resp, func() {
			rows := make([][]string, 0, len(resp.GetSinks()))
			for _, k := range resp.GetSinks() {
				row := make([]string, 0, 4)
				for _, f := range sinkFields(k) {
					row = append(row, f[1])
				}
				rows = append(rows, row)
			}
			r.table([]string{"ID", "KIND", "URL", "SIGNED"}, rows)
		})
	}
}

func alertSinkDelete(*flag.FlagSet) func(*runner, []string) error {
	return func(r *runner, pos []string) error {
		_, err := adminv1.NewAlertServiceClient(r.conn).DeleteAlertSink(r.ctx, &adminv1.DeleteAlertSinkRequest{Id: pos[0]})
		return deleted(r, "alert sink", pos[0], err)
	}
}

func alertList(fs *flag.FlagSet) func(*runner, []string) error {
	limit := fs.Int("limit", 50, "at most this many alerts (1..1000)")
	return func(r *runner, _ []string) error {
		resp, err := adminv1.NewAlertServiceClient(r.conn).ListAlerts(r.ctx, &adminv1.ListAlertsRequest{Limit: int32(min(max(*limit, 0), 1000))}) //nolint:gosec // bounded
		if err != nil {
			return err
		}
		return r.emit(resp, func() {
			rows := make([][]string, 0, len(resp.GetAlerts()))
			for _, a := range resp.GetAlerts() {
				var ds []string
				for _, d := range a.GetDeliveries() {
					state := "ok"
					if !d.GetOk() {
						state = "failed"
					}
					ds = append(ds, fmt.Sprintf("%s:%s/%d", d.GetSink(), state, d.GetAttempts()))
				}
				rows = append(rows, []string{
					a.GetFiredAt().AsTime().UTC().Format(time.RFC3339), a.GetKind(), a.GetMessage(), strings.Join(ds, " "),
				})
			}
			r.table([]string{"FIRED", "KIND", "MESSAGE", "DELIVERIES"}, rows)
		})
	}
}

func alertSettings(fs *flag.FlagSet) func(*runner, []string) error {
	thresholds := fs.String("thresholds", "", "percents of a budget window that alert, e.g. 50,80,100")
	factor := fs.Int("anomaly-factor", -1, "a key's last hour above this many times its trailing hourly average alerts (0: the gateway's flag)")
	within := fs.Duration("expiring-within", 0, "a key expiring within this alerts (0: 7 days)")
	return func(r *runner, _ []string) error {
		c := adminv1.NewAlertServiceClient(r.conn)
		cur, err := c.GetAlertSettings(r.ctx, &adminv1.GetAlertSettingsRequest{})
		if err != nil {
			return err
		}
		set := cur.GetSettings()
		changed := false
		fs.Visit(func(f *flag.Flag) {
			switch f.Name {
			case "thresholds", "anomaly-factor", "expiring-within":
				changed = true
			}
		})
		if changed {
			if set == nil {
				set = &adminv1.AlertSettings{}
			}
			if *thresholds != "" {
				set.ThresholdsPct = nil
				for _, p := range strings.Split(*thresholds, ",") {
					n, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(p, "%")), 10, 32)
					if err != nil {
						return fmt.Errorf("%w: --thresholds: %q is not a percent", ErrUsage, p)
					}
					set.ThresholdsPct = append(set.ThresholdsPct, int32(n))
				}
			}
			if *factor >= 0 {
				set.AnomalyFactor = int32(min(*factor, 1<<30)) //nolint:gosec // bounded
			}
			if *within > 0 {
				set.ExpiringWithin = durationpb.New(*within)
			}
			resp, err := c.UpdateAlertSettings(r.ctx, &adminv1.UpdateAlertSettingsRequest{Settings: set})
			if err != nil {
				return err
			}
			set = resp.GetSettings()
			cur = &adminv1.GetAlertSettingsResponse{Settings: set}
		}
		return r.emit(cur, func() {
			th := "50,80,100 (default)"
			if len(set.GetThresholdsPct()) > 0 {
				ps := make([]string, 0, len(set.GetThresholdsPct()))
				for _, p := range set.GetThresholdsPct() {
					ps = append(ps, strconv.Itoa(int(p)))
				}
				th = strings.Join(ps, ",")
			}
			af := "the gateway's --alert-anomaly-factor"
			if set.GetAnomalyFactor() > 0 {
				af = strconv.Itoa(int(set.GetAnomalyFactor()))
			}
			ew := "168h0m0s (default)"
			if set.GetExpiringWithin() != nil {
				ew = set.GetExpiringWithin().AsDuration().String()
			}
			r.fields([][2]string{{"THRESHOLDS", th}, {"ANOMALY FACTOR", af}, {"EXPIRING WITHIN", ew}})
		})
	}
}
