package observe

import (
	"context"
	"errors"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/extproc"
	"github.com/tollgate-ai/tollgate/kernel"
)

type fakeAccountant struct{ d kernel.Decision }

func (f fakeAccountant) Admit(context.Context, *kernel.AdmitRequest) (kernel.Decision, error) {
	return f.d, nil
}

func (f fakeAccountant) Settle(context.Context, *extproc.Record) (kernel.Money, error) {
	return 0, errors.New("down")
}

func (fakeAccountant) RecordRefused(context.Context, *extproc.Record) error { return nil }

// Every metric the Grafana dashboard queries is one Tollgate exports.
func TestDashboardQueriesExportedMetrics(t *testing.T) {
	m := NewMetrics()
	m.WatchLedger(func() LedgerStats { return LedgerStats{} })
	m.XDSPublished(1)
	t0 := time.Unix(100, 0)
	m.Observe(&extproc.Report{
		API: extproc.APIChat, Principal: &extproc.Principal{KeyID: "k", TeamID: "t"}, Model: "m",
		Target: &extproc.Target{Model: "m", Deployment: "d", Provider: extproc.ProviderOpenAI, ProviderModel: "pm"},
		Stream: true, HTTPStatus: 200, Settled: true, Usage: kernel.Usage{Input: 3, Output: 4}, Cost: 7, Attempts: 1,
		Started: t0, FirstToken: t0.Add(time.Millisecond), SettleStart: t0.Add(3 * time.Millisecond), Ended: t0.Add(4 * time.Millisecond),
	})
	m.Observe(retriedReport(t0))
	m.CooledDown("d", extproc.CooldownAllowedFails, time.Minute)
	m.WatchRouter(fakeStates{"d": {}}, time.Now)
	a := m.Accountant(fakeAccountant{d: kernel.Decision{Reason: kernel.ReasonBudgetExceeded}})
	_, _ = a.Admit(context.Background(), &kernel.AdmitRequest{})
	_, _ = a.Settle(context.Background(), &extproc.Record{})
	families, err := m.Registry().Gather()
	require.NoError(t, err)
	have := map[string]bool{}
	for _, f := range families {
		have[f.GetName()] = true
	}

	b, err := os.ReadFile("../deploy/grafana/tollgate.json")
	require.NoError(t, err)
	names := regexp.MustCompile(`\b(?:gen_ai|tollgate)_[a-z_]+`).FindAllString(string(b), -1)
	require.NotEmpty(t, names)
	labels := map[string]bool{lblOperation: true, lblProvider: true, lblReqModel: true, lblRespModel: true, lblTokenType: true}
	for _, n := range names {
		if labels[n] {
			continue
		}
		base := n
		for _, suf := range []string{"_bucket", "_sum", "_count"} {
			base = strings.TrimSuffix(base, suf)
		}
		require.True(t, have[base], "the dashboard queries %s, which is not exported", n)
	}
}
