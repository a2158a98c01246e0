package accounting

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/tollgate-ai/tollgate/kernel"
)

// Usage checkpoints: what a stream had shown when its replica died.
//
// A reservation whose replica died (kill -9, OOM, a machine lost) is settled
// by another replica when its lease ends. Without more, the only bound known is
// the reservation itself: the worst case. So the processor notes, at every
// chunk of a stream, the usage it would charge were the stream cut there
// (Checkpoint: the provider's figures when it sent them, else the prompt-text
// estimate for input and the streamed text's for output), in this replica's
// memory only; every interval (WithCheckpoints, default 1 s) one script
// writes the usage of every stream that has run at least that long into
// {tg}:u:<id>, only while the reservation's record exists and expiring an
// hour after its lease (checkpointKeep), together with an allowance for the output produced after it:
// twice the largest output growth seen between two writes, plus
// checkpointSlack tokens. A stream shorter than the interval costs no Redis
// write at all; a longer one costs one SET per interval, all the replica's
// streams in one round trip.
//
// Expire charges a reservation with a checkpoint its checkpointed usage with
// the allowance added to the output, output never past the request's output
// bound (saved in the record) and never more than its worst cost (so a
// strict budget, which held the worst cost until then, stays safe); one
// without (a request that was not a stream, or a stream shorter than the
// interval) keeps the worst case. A settlement deletes the checkpoint at the
// next write (its record is gone, so the write cannot bring it back).
//
// The allowance covers a replica that died within an interval of its last
// write while its streams' output rate did not more than double. Two faults at
// once remain uncovered: a replica that could not reach Redis for intervals
// before it died leaves a checkpoint older than its death.
//
// Only a stale checkpoint is charged: one its writer has not rewritten for
// checkpointStale intervals (each write carries its time and the writer's
// interval). A fresh one means its replica is alive and the stream still
// runs past its lease (a lease shorter than the longest request): it will go
// on past the checkpoint and its allowance, and its own settlement will find
// the reservation expired, so the expiry charges the worst case, as before
// checkpoints (the spin model's -DCPLIVE is the refuted alternative).

// DefaultCheckpointEvery is how often a replica writes its streams' usage
// checkpoints to Redis by default.
const DefaultCheckpointEvery = time.Second

// checkpointSlack is the output allowance, in tokens, beyond twice the
// largest growth between two checkpoint writes: a stream's output comes in
// bursts, and the provider goes on until it notices the connection gone.
const checkpointSlack = 64

// checkpointKeep is how long a checkpoint outlives its reservation's lease:
// time for an expiry to read it (after that, the worst case is charged), and
// a bound on what one left behind (a settlement whose delete did not reach
// Redis) costs.
const checkpointKeep = time.Hour

// checkpointStale is how many of its writer's intervals a checkpoint must
// have gone unwritten for an expiry to charge it: its writer died. A live
// replica rewrites it every interval; the margin covers a slow write loop.
const checkpointStale = 5

// checkpointChunk bounds the writes of one script call.
const checkpointChunk = 500

// WithCheckpoints sets how often the usage of this replica's streams is
// written to Redis (default DefaultCheckpointEvery); 0 turns checkpoints off
// (expired reservations are then charged their worst case).
func WithCheckpoints(every time.Duration) RedisOption {
	return func(o *options) { o.checkpoint = max(every, 0) }
}

// usageCheckpoint is what this replica knows of one open stream.
type usageCheckpoint struct {
	u       kernel.Usage // the latest usage seen
	since   time.Time    // the first chunk
	expire  int64        // unix ms the written checkpoint expires at (0: not this replica's to write)
	written int64        // output (and reasoning) at the last write
	peak    int64        // the largest output growth between two writes
	sent    bool         // a write may have reached Redis
}

func (c *RedisCounters) checkpointKey(id string) string { return c.tag + "u:" + id }

// checkpoint notes the usage stream id has shown so far (memory only).
// now is read only for a stream's first chunk.
func (c *RedisCounters) checkpoint(now func() time.Time, id string, u kernel.Usage) {
	c.cpMu.Lock()
	e := c.cps[id]
	if e == nil {
		e = &usageCheckpoint{since: now()}
		c.mu.Lock()
		if rec := c.cache[id]; rec != nil { // admitted here through Redis
			e.expire = time.Unix(0, rec.Deadline).Add(checkpointKeep).UnixMilli()
		}
		c.mu.Unlock()
		c.cps[id] = e
	}
	e.u = u
	c.cpMu.Unlock()
}

// forgetCheckpoint drops id's checkpoint: its reservation ended.
func (c *RedisCounters) forgetCheckpoint(id string) {
	c.cpMu.Lock()
	if e := c.cps[id]; e != nil {
		delete(c.cps, id)
		if e.sent {
			c.cpGone = append(c.cpGone, id)
		}
	}
	c.cpMu.Unlock()
}

// checkpointEvery is the write interval (0: off).
func (c *RedisCounters) checkpointEvery() time.Duration { return c.opts.checkpoint }

// cpLua writes checkpoints of open reservations and deletes those of ended
// ones. KEYS: the record and the checkpoint key of each write, then the
// checkpoint keys to delete. ARGV: [1] number of writes, then each value and
// its TTL (ms). A checkpoint is written only while its record
// exists: a settled reservation's cannot come back.
var cpLua = goredis.NewScript(`
local n = tonumber(ARGV[1])
for i = 1, n do
  if redis.call('EXISTS', KEYS[2*i-1]) == 1 then
    redis.call('SET', KEYS[2*i], ARGV[2*i], 'PX', ARGV[2*i+1])
  end
end
if #KEYS > 2*n then redis.call('DEL', unpack(KEYS, 2*n+1)) end
return 1
`)

// WriteCheckpoints writes the checkpoints of streams that have run at least
// an interval, and deletes those of reservations that ended: what
// Accountant.ExpireLoop does every interval.
func (c *RedisCounters) WriteCheckpoints(ctx context.Context, now time.Time) error {
	every := c.opts.checkpoint
	type write struct {
		id, val string
		ttl     int64 // ms
	}
	c.cpMu.Lock()
	gone := c.cpGone
	c.cpGone = nil
	var writes []write
	for id, e := range c.cps {
		ttl := e.expire - now.UnixMilli()
		if e.expire == 0 || ttl <= 0 || now.Sub(e.since) < every {
			continue
		}
		out := e.u.Output + e.u.Reasoning
		e.peak = max(e.peak, out-e.written)
		e.written, e.sent = out, true
		writes = append(writes, write{id, encodeCheckpoint(e.u, 2*e.peak+checkpointSlack, now.UnixMilli(), every.Milliseconds()), ttl})
	}
	c.cpMu.Unlock()
	var errs []error
	for len(writes) > 0 || len(gone) > 0 {
		nw := min(len(writes), checkpointChunk)
		ng := min(len(gone), checkpointChunk-nw)
		keys := make([]string, 0, 2*nw+ng)
		args := make([]any, 0, 1+2*nw)
		args = append(args, nw)
		for _, w := range writes[:nw] {
			keys = append(keys, c.recordKey(w.id), c.checkpointKey(w.id))
			args = append(args, w.val, w.ttl)
		}
		for _, id := range gone[:ng] {
			keys = append(keys, c.checkpointKey(id))
		}
		if err := cpLua.Run(ctx, c.rdb, keys, args...).Err(); err != nil {
			errs = append(errs, err)
			c.cpMu.Lock()
			c.cpGone = append(c.cpGone, gone[:ng]...) // deleted at the next write
			c.cpMu.Unlock()
		}
		writes, gone = writes[nw:], gone[ng:]
	}
	if err := errors.Join(errs...); err != nil {
		return unavailable("checkpoint", err)
	}
	return nil
}

// encodeCheckpoint is "<input> <cached input> <cache write> <output>
// <reasoning> <output allowance> <written at, unix ms> <writer's interval, ms>".
func encodeCheckpoint(u kernel.Usage, allowance, at, every int64) string {
	b := make([]byte, 0, 80)
	for i, x := range [...]int64{u.Input, u.CachedInput, u.CacheWrite, u.Output, u.Reasoning, allowance, at, every} {
		if i > 0 {
			b = append(b, ' ')
		}
		b = strconv.AppendInt(b, x, 10)
	}
	return string(b)
}

// decodeCheckpoint is the usage an expiry charges for a checkpoint (the
// output allowance added to the output), and whether it is stale at now.
func decodeCheckpoint(v string, now time.Time) (kernel.Usage, bool, error) {
	f := strings.Fields(v)
	if len(f) != 8 {
		return kernel.Usage{}, false, fmt.Errorf("redis: decode checkpoint %q", v)
	}
	var x [8]int64
	for i := range f {
		n, err := strconv.ParseInt(f[i], 10, 64)
		if err != nil || n < 0 {
			return kernel.Usage{}, false, fmt.Errorf("redis: decode checkpoint %q", v)
		}
		x[i] = n
	}
	stale := now.UnixMilli()-x[6] >= checkpointStale*max(x[7], 1)
	return kernel.Usage{Input: x[0], CachedInput: x[1], CacheWrite: x[2], Output: satAdd(x[3], x[5]), Reasoning: x[4]}, stale, nil
}

// expiryCharges reads the checkpoints of the reservations expiring at now:
// the usage and cost each is charged (cost -1: none or a fresh one, the worst
// case).
func (c *RedisCounters) expiryCharges(ctx context.Context, recs []*record, now time.Time) ([]kernel.Usage, []int64, error) {
	us, costs := make([]kernel.Usage, len(recs)), make([]int64, len(recs))
	for i := range costs {
		costs[i] = -1
	}
	if len(recs) == 0 {
		return us, costs, nil
	}
	keys := make([]string, len(recs))
	for i, rec := range recs {
		keys[i] = c.checkpointKey(rec.ID)
	}
	vals, err := c.rdb.MGet(ctx, keys...).Result()
	if err != nil {
		return nil, nil, unavailable("expire", err)
	}
	for i, v := range vals {
		s, ok := v.(string)
		if !ok {
			continue
		}
		u, stale, err := decodeCheckpoint(s, now)
		if err != nil {
			c.opts.logger.Warn("unreadable usage checkpoint; charging the worst case", "request_id", recs[i].ID, "err", err)
			continue
		}
		if !stale { // its replica still writes it: the stream runs on
			continue
		}
		if bound := recs[i].Output; bound > 0 { // the provider stops at the output bound
			u.Reasoning = min(u.Reasoning, bound)
			u.Output = min(u.Output, bound-u.Reasoning)
		}
		if cost := kernel.Cost(recs[i].Price, u); cost < recs[i].Worst {
			us[i], costs[i] = u, int64(cost)
		}
	}
	return us, costs, nil
}

// checkpointer is implemented by counters that keep usage checkpoints.
type checkpointer interface {
	checkpoint(now func() time.Time, id string, u kernel.Usage)
	WriteCheckpoints(ctx context.Context, now time.Time) error
	checkpointEvery() time.Duration
}

var _ checkpointer = (*RedisCounters)(nil)

// Checkpoint notes the usage stream id (a reservation id) has shown so far:
// the usage it would be charged were it cut now. Memory only, and cheap: the
// processor calls it at every chunk; the counters write it to Redis every
// interval (WithCheckpoints), so that an expiry after this replica died
// charges what the stream showed instead of its worst case. A no-op with
// counters that keep no checkpoints.
func (a *Accountant) Checkpoint(id string, u kernel.Usage) {
	if a.cp != nil {
		a.cp.checkpoint(a.now, id, u)
	}
}
