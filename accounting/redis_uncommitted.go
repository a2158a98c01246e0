package accounting

import "slices"

// ledgerFollower is told by the Accountant what reached its ledger: counters
// that must re-apply settlements the ledger has not committed (RedisCounters,
// after Redis lost its data) follow the ledger's progress.
type ledgerFollower interface {
	followLedger()
	// appended: the settlement of id is the idx-th entry appended.
	appended(id string, idx int64)
	// durable: a flush confirmed every entry appended up to idx.
	durable(idx int64)
}

var _ ledgerFollower = (*RedisCounters)(nil)

// uncommitted holds this replica's settlements its ledger has not confirmed
// durable: charged in Redis, but missing from a re-seed from the ledger. Kept
// only when an Accountant follows the ledger (followLedger); bounded by
// maxCorrections each (beyond, the oldest are dropped: a re-seed then misses
// them, as it did before).
type uncommitted struct {
	on      bool
	settled map[string]correction // settled, not appended yet
	queued  []queuedCharge        // appended, with their append index
}

type queuedCharge struct {
	idx int64
	correction
}

func (c *RedisCounters) followLedger() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.unc.on = true
	c.unc.settled = make(map[string]correction)
}

// settledLocked notes a settlement charged in Redis (or owed to it); c.mu held.
func (c *RedisCounters) settledLocked(x correction) {
	if !c.unc.on || len(c.unc.settled) >= maxCorrections {
		return
	}
	c.unc.settled[x.rec.ID] = x
}

func (c *RedisCounters) appended(id string, idx int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	x, ok := c.unc.settled[id]
	if !ok {
		return
	}
	delete(c.unc.settled, id)
	if len(c.unc.queued) >= maxCorrections {
		c.unc.queued = slices.Delete(c.unc.queued, 0, 1)
	}
	c.unc.queued = append(c.unc.queued, queuedCharge{idx: idx, correction: x})
}

func (c *RedisCounters) durable(idx int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.unc.queued = slices.DeleteFunc(c.unc.queued, func(q queuedCharge) bool { return q.idx <= idx })
}

// uncommittedLocked is every settlement not yet durable in the ledger; c.mu held.
func (c *RedisCounters) uncommittedLocked() []correction {
	out := make([]correction, 0, len(c.unc.settled)+len(c.unc.queued))
	for _, x := range c.unc.settled {
		out = append(out, x)
	}
	for _, q := range c.unc.queued {
		out = append(out, q.correction)
	}
	return out
}
