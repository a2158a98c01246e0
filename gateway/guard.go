package gateway

import (
	"context"

	"github.com/tollgate-ai/tollgate/extproc"
	"github.com/tollgate-ai/tollgate/guard"
)

// guardSet is a guard.Set as the processor's Guardrails.
type guardSet struct {
	set    guard.Set
	names  []string
	window int
}

var _ extproc.Guardrails = (*guardSet)(nil)

// newGuardSet adapts s (nil when empty).
func newGuardSet(s guard.Set, window int) *guardSet {
	if len(s) == 0 {
		return nil
	}
	names := make([]string, len(s))
	for i, g := range s {
		names[i] = g.Name
	}
	return &guardSet{set: s, names: names, window: window}
}

func (g *guardSet) Names() []string { return g.names }

func (g *guardSet) At(st extproc.GuardStage) bool { return g.set.At(guard.Stage(st)) }

func (g *guardSet) Check(ctx context.Context, st extproc.GuardStage, body []byte) extproc.GuardVerdict {
	v := g.set.Check(ctx, guard.Stage(st), body, true)
	return extproc.GuardVerdict{Blocked: v.Blocked, Body: v.Text, Hits: guardHits(v.Hits)}
}

func (g *guardSet) Redactor() extproc.GuardRedactor {
	r := g.set.NewRedactor(g.window)
	if r == nil {
		return nil
	}
	return guardRedactor{r}
}

type guardRedactor struct{ r *guard.Redactor }

func (r guardRedactor) Push(seg []byte) ([][]byte, *extproc.GuardHit) { return blockHit(r.r.Push(seg)) }
func (r guardRedactor) Flush() ([][]byte, *extproc.GuardHit)         { return blockHit(r.r.Flush()) }
func (r guardRedactor) Hits() []extproc.GuardHit                     { return guardHits(r.r.Hits()) }

func blockHit(segs [][]byte, h *guard.Hit) ([][]byte, *extproc.GuardHit) {
	if h == nil {
		return segs, nil
	}
	x := guardHit(*h)
	return segs, &x
}

func guardHits(hs []guard.Hit) []extproc.GuardHit {
	if len(hs) == 0 {
		return nil
	}
	out := make([]extproc.GuardHit, len(hs))
	for i, h := range hs {
		out[i] = guardHit(h)
	}
	return out
}

func guardHit(h guard.Hit) extproc.GuardHit {
	return extproc.GuardHit{
		Guardrail: h.Guardrail, Kind: h.Kind, Action: h.Action.String(), Types: h.Types,
		Reason: h.Reason, Failed: h.Failed, Message: h.Message(),
	}
}
