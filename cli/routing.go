package cli

import (
	"flag"
	"fmt"
	"strings"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	adminv1 "github.com/tollgate-ai/tollgate/proto/tollgate/admin/v1"
)

// The routing flags of deployments (cooldown, timeouts) and model groups
// (strategy, retries, fallbacks).

type deploymentRoutingFlags struct {
	cooldown, timeout, firstByte, connect time.Duration
	allowedFails                          int
}

func (f *deploymentRoutingFlags) register(fs *flag.FlagSet) {
	fs.DurationVar(&f.cooldown, "cooldown", 0, "time out of rotation after --allowed-fails failures in a minute (0: 30s)")
	fs.IntVar(&f.allowedFails, "allowed-fails", 0, "failures in a minute before the deployment cools down (0: 3)")
	fs.DurationVar(&f.timeout, "timeout", 0, "bound on one attempt, whole reply included (0: 600s)")
	fs.DurationVar(&f.firstByte, "first-byte-timeout", 0, "bound on the wait for the reply's headers; past it the request is retried elsewhere (0: 60s)")
	fs.DurationVar(&f.connect, "connect-timeout", 0, "bound on connecting to the provider (0: 5s)")
}

// deploymentRoutingMask maps the flags to update_mask paths.
var deploymentRoutingMask = map[string]string{
	"cooldown": "cooldown", "allowed-fails": "allowed_fails", "timeout": "timeout",
	"first-byte-timeout": "first_byte_timeout", "connect-timeout": "connect_timeout",
}

func optDuration(d time.Duration) *durationpb.Duration {
	if d == 0 {
		return nil
	}
	return durationpb.New(d)
}

func (f *deploymentRoutingFlags) set(d *adminv1.Deployment) *adminv1.Deployment {
	d.Cooldown, d.AllowedFails = optDuration(f.cooldown), int32(f.allowedFails)
	d.Timeout, d.FirstByteTimeout, d.ConnectTimeout = optDuration(f.timeout), optDuration(f.firstByte), optDuration(f.connect)
	return d
}

func durationText(d *durationpb.Duration) string {
	if d == nil {
		return "-"
	}
	return d.AsDuration().String()
}

// deploymentState is the STATE column: healthy, or cooling down until when,
// with the recent error rate and latency.
func deploymentState(d *adminv1.Deployment) string {
	st := d.GetState()
	if st == nil {
		return "-"
	}
	s := st.GetHealth()
	if st.GetCooldownUntil() != nil {
		s = "cooling down until " + st.GetCooldownUntil().AsTime().Local().Format(time.TimeOnly)
	}
	if st.GetErrorRate() > 0 {
		s += fmt.Sprintf(", %.0f%% errors", 100*st.GetErrorRate())
	}
	if st.GetLatency() != nil {
		s += ", ttfb " + st.GetLatency().AsDuration().Round(time.Millisecond).String()
	}
	return s
}

type modelRoutingFlags struct {
	routing, fallbacks, contextWindow, contentPolicy string
	retries                                          int
}

func (f *modelRoutingFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.routing, "routing", "", "balancing strategy: "+strings.Join(adminv1.RoutingStrategies, ", ")+" (default weighted)")
	fs.IntVar(&f.retries, "retries", 2, "further attempts after a failure, each on another deployment when there is one")
	fs.StringVar(&f.fallbacks, "fallbacks", "", "model groups tried in order once this one failed, comma-separated")
	fs.StringVar(&f.contextWindow, "context-window-fallbacks", "", "model groups tried when the prompt exceeds the context window")
	fs.StringVar(&f.contentPolicy, "content-policy-fallbacks", "", "model groups tried when a provider refuses the content")
}

var modelRoutingMask = map[string]string{
	"routing": "routing", "retries": "retries", "fallbacks": "fallbacks",
	"context-window-fallbacks": "context_window_fallbacks", "content-policy-fallbacks": "content_policy_fallbacks",
}

// set copies the flags into m; retries only when given (unset keeps the
// server's default).
func (f *modelRoutingFlags) set(m *adminv1.Model, given map[string]bool) *adminv1.Model {
	m.Routing = f.routing
	if given["retries"] {
		n := int32(f.retries)
		m.Retries = &n
	}
	m.Fallbacks, m.ContextWindowFallbacks, m.ContentPolicyFallbacks = splitList(f.fallbacks), splitList(f.contextWindow), splitList(f.contentPolicy)
	return m
}

func (r *runner) modelRouting(m *adminv1.Model) [][2]string {
	routing := m.GetRouting()
	if routing == "" {
		routing = "weighted"
	}
	retries := "2"
	if m.Retries != nil {
		retries = fmt.Sprint(m.GetRetries())
	}
	return [][2]string{
		{"ROUTING", routing},
		{"RETRIES", retries},
		{"FALLBACKS", orDash(strings.Join(m.GetFallbacks(), ", "))},
		{"CONTEXT WINDOW FALLBACKS", orDash(strings.Join(m.GetContextWindowFallbacks(), ", "))},
		{"CONTENT POLICY FALLBACKS", orDash(strings.Join(m.GetContentPolicyFallbacks(), ", "))},
	}
}
