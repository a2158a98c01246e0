package accounting

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// joinPoll is how often Join looks whether the other replicas synced.
const joinPoll = 50 * time.Millisecond

// Join makes this replica one that the others wait for after Redis loses its
// data, before it serves: it registers in the members hash, copies the
// replicas alive (one transaction with the epoch, so its own copy is right
// from the start), and waits until each of them has synced since — its copy
// of the members then holds this replica — or the grace (WithRejoinGrace)
// ended: a replica that does not sync within the grace is taken for dead,
// the timing assumption of the rejoin (docs/accounting.md). A replica that
// admitted before the others copied it would be waited for by no one if
// Redis lost its data then (spin's -DLATEJOIN). Accountant.Join calls it; the
// gateway does before its ext_proc processor starts.
func (c *RedisCounters) Join(ctx context.Context, now time.Time) error {
	deadline := time.Now().Add(c.opts.grace)
	for attempt := 0; ; attempt++ {
		if attempt > 3 {
			return fmt.Errorf("%w: Redis lost its data again while joining", ErrUnavailable)
		}
		ep, seen, err := c.register(ctx, now)
		if err != nil {
			return err
		}
		if ep == "" || ep != c.currentEpoch() {
			if err := c.rejoin(ctx, now); err != nil {
				return err
			}
		}
		pending := make(map[string]string)
		for name, v := range seen {
			if name != c.name && c.isMember(name) {
				pending[name] = v
			}
		}
		done, err := c.awaitSynced(ctx, pending, deadline)
		if err != nil || done {
			return err
		}
	}
}

// isMember reports whether name is in this replica's copy of the members.
func (c *RedisCounters) isMember(name string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Contains(c.members, name)
}

// awaitSynced waits until every replica of pending (name → its value in the
// members hash when this one registered) changed its value or left the hash,
// or the deadline passed; false when Redis's epoch changed meanwhile (this
// replica must register again).
func (c *RedisCounters) awaitSynced(ctx context.Context, pending map[string]string, deadline time.Time) (bool, error) {
	epoch := c.currentEpoch()
	for len(pending) > 0 {
		if !time.Now().Before(deadline) {
			c.opts.logger.Warn("redis: replicas did not sync within the rejoin grace; serving without them",
				"replicas", len(pending))
			return true, nil
		}
		t := time.NewTimer(joinPoll)
		select {
		case <-ctx.Done():
			t.Stop()
			return false, ctx.Err()
		case <-t.C:
		}
		names := make([]string, 0, len(pending))
		for name := range pending {
			names = append(names, name)
		}
		var ep *goredis.StringCmd
		var vals *goredis.SliceCmd
		_, err := c.rdb.TxPipelined(ctx, func(p goredis.Pipeliner) error {
			ep = p.Get(ctx, c.epochKey())
			vals = p.HMGet(ctx, c.membersKey(), names...)
			return nil
		})
		if err != nil && !errors.Is(err, goredis.Nil) {
			return false, unavailable("join", err)
		}
		if ep.Val() != epoch {
			return false, nil
		}
		for i, v := range vals.Val() {
			if s, ok := v.(string); !ok || s != pending[names[i]] {
				delete(pending, names[i])
			}
		}
	}
	return true, nil
}
