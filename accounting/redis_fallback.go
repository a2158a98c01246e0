package accounting

import (
	"context"
	"fmt"
	"time"

	"github.com/tollgate-ai/tollgate/kernel"
)

// admitLocal admits against the in-process kernel.State (LocalFallback), after
// seeding each budget window it has not seen from the ledger: a window that
// cannot be seeded refuses admission with ErrUnavailable.
func (c *RedisCounters) admitLocal(ctx context.Context, now time.Time, req *kernel.AdmitRequest) (kernel.Decision, error) {
	c.localMu.Lock()
	defer c.localMu.Unlock()
	for i := range req.Scopes {
		lim := req.Scopes[i].Limits
		if lim == nil {
			continue
		}
		key := c.scopeKey(req.Scopes[i].Ref)
		for _, b := range lim.Budgets {
			sp := windowAt(key, req.Scopes[i].Ref, b.Period, now)
			id := windowID{scope: req.Scopes[i].Ref, period: sp.period, start: sp.startN}
			if c.localSeeded[id] {
				continue
			}
			var until time.Time
			if !sp.end.Equal(kernel.EndOfTime) {
				until = sp.end
			}
			spent, err := c.seed(ctx, sp.scope, sp.start, until)
			if err != nil {
				return kernel.Decision{}, fmt.Errorf("%w: seed %v from the ledger: %w", ErrUnavailable, sp.scope, err)
			}
			c.local.Seed(sp.scope, b.Period, sp.start, spent)
			c.localSeeded[id] = true
		}
	}
	return c.local.Admit(now, req), nil
}

func (c *RedisCounters) settleLocal(now time.Time, id string, u kernel.Usage, p *kernel.Price, st kernel.Status) (kernel.Settlement, bool) {
	if c.opts.policy != LocalFallback {
		return kernel.Settlement{}, false
	}
	if p != nil {
		return c.local.SettleAt(now, id, u, *p, st)
	}
	return c.local.Settle(now, id, u, st)
}

func (c *RedisCounters) expireLocal(now time.Time) []kernel.Settlement {
	if c.opts.policy != LocalFallback {
		return nil
	}
	return c.local.Expire(now)
}
