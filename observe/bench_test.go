package observe

import (
	"context"
	"testing"
	"time"

	"github.com/tollgate-ai/tollgate/extproc"
	"github.com/tollgate-ai/tollgate/kernel"
)

type okAccountant struct{}

func (okAccountant) Admit(context.Context, *kernel.AdmitRequest) (kernel.Decision, error) {
	return kernel.Decision{Admitted: true}, nil
}

func (okAccountant) Settle(context.Context, *extproc.Record) (kernel.Money, error) { return 1, nil }

func (okAccountant) RecordRefused(context.Context, *extproc.Record) error { return nil }

// BenchmarkObserveChat is what metrics add to one successful chat request:
// the accountant's two counted calls and Observe (compare with the
// gateway's CPU per request in bench/README.md).
func BenchmarkObserveChat(b *testing.B) {
	m := NewMetrics()
	acct := m.Accountant(okAccountant{})
	t0 := time.Now()
	r := &extproc.Report{
		API: extproc.APIChat, Principal: &extproc.Principal{KeyID: "k", TeamID: "team"}, Model: "demo",
		Target:     &extproc.Target{Model: "demo", Deployment: "demo-mock", Provider: extproc.ProviderOpenAI, ProviderModel: "mock-gpt"},
		HTTPStatus: 200, Settled: true, Usage: kernel.Usage{Input: 12, Output: 30}, Cost: 72000, Attempts: 1,
		Started: t0, AdmitStart: t0, Forwarded: t0, FirstByte: t0.Add(time.Millisecond), SettleStart: t0.Add(time.Millisecond), Ended: t0.Add(2 * time.Millisecond),
		Tries: []extproc.Try{{Group: "demo", Deployment: "demo-mock", Sent: t0, Status: 200}},
	}
	ctx := context.Background()
	req := &kernel.AdmitRequest{}
	rec := &extproc.Record{}
	b.ReportAllocs()
	for b.Loop() {
		_, _ = acct.Admit(ctx, req)
		_, _ = acct.Settle(ctx, rec)
		m.Observe(r)
	}
}
