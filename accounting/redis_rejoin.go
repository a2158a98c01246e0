package accounting

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/tollgate-ai/tollgate/kernel"
)

// After Redis loses its data (a restart without persistence, a FLUSHALL), the
// counters are rebuilt as ledger + settlements not yet committed to it + open
// reservations: each replica re-registers what only it knows (rejoin) before
// any budget window is seeded again.
//
//   - {tg}:epoch — a random id, created by the first replica that finds it
//     missing. Its absence means Redis lost its data (or never had any).
//   - {tg}:rejoin — while replicas re-register after a loss: one field per
//     replica expected (those alive before it, by the copy each replica keeps
//     of the members hash), deleted as each one rejoins, and expiring after
//     the grace (WithRejoinGrace) so that a dead replica cannot block
//     admissions for longer.
//   - {tg}:members — replica name → the last Sync (unix ns).
//
// An admission that meets an unseeded window while its replica's epoch is not
// Redis's rejoins first; while the rejoin hash exists it waits (seeding would
// miss what the replicas still re-registering hold). A settlement whose
// reservation is gone while its lease runs rejoins and closes it again. Sync
// (every second, from Accountant.ExpireLoop) notices a loss within a second
// on an idle replica.

// memberFresh is how recently a replica must have synced to be waited for
// after a loss.
const memberFresh = 30 * time.Second

// rejoinChunk bounds the reservations and settlements re-registered by one
// script call.
const rejoinChunk = 500

// WithRejoinGrace sets how long, at most, admissions that need a budget
// window seeded wait, after Redis lost its data, for the replicas alive before
// the loss to re-register their open reservations (default 5s: a replica
// syncs every second).
func WithRejoinGrace(d time.Duration) RedisOption {
	return func(o *options) { o.grace = max(d, time.Millisecond) }
}

func (c *RedisCounters) epochKey() string   { return c.tag + "epoch" }
func (c *RedisCounters) rejoinKey() string  { return c.tag + "rejoin" }
func (c *RedisCounters) membersKey() string { return c.tag + "members" }

func newReplicaName() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// waitRejoin waits a moment for the replicas re-registering after a loss
// (the rejoin hash expires after the grace), until the deadline.
func waitRejoin(ctx context.Context, deadline time.Time) error {
	if !time.Now().Before(deadline) {
		return fmt.Errorf("%w: replicas still re-registering after Redis lost its data", ErrUnavailable)
	}
	t := time.NewTimer(20 * time.Millisecond)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// currentEpoch is the epoch this replica last registered under ("" before its first).
func (c *RedisCounters) currentEpoch() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.epoch
}

// Sync records this replica in the members hash, keeps a copy of the replicas
// alive, rejoins when Redis lost its data since the last call, and keeps the
// counters of the runs it holds uncommitted settlements of (redis_keepruns.go).
func (c *RedisCounters) Sync(ctx context.Context, now time.Time) error {
	ep, _, err := c.register(ctx, now)
	if err != nil {
		return err
	}
	if ep == "" || ep != c.currentEpoch() {
		if err := c.rejoin(ctx, now); err != nil {
			return err
		}
	}
	return c.keepRuns(ctx)
}

// register records this replica in the members hash and reads Redis's epoch
// ("" when it has none) and the members (name → last Sync), as one
// transaction; it updates this replica's copy of the others alive.
func (c *RedisCounters) register(ctx context.Context, now time.Time) (string, map[string]string, error) {
	c.rejoinMu.Lock() // a rejoin lists the copy as of the last register
	defer c.rejoinMu.Unlock()
	c.lastSync = max(now.UnixNano(), c.lastSync+1) // every Sync changes the value: Join sees it
	var epoch *goredis.StringCmd
	var all *goredis.MapStringStringCmd
	_, err := c.rdb.TxPipelined(ctx, func(p goredis.Pipeliner) error {
		epoch = p.Get(ctx, c.epochKey())
		all = p.HGetAll(ctx, c.membersKey())
		p.HSet(ctx, c.membersKey(), c.name, c.lastSync)
		p.Expire(ctx, c.membersKey(), 24*time.Hour)
		return nil
	})
	if err != nil && !errors.Is(err, goredis.Nil) {
		return "", nil, unavailable("sync", err)
	}
	ep := epoch.Val()
	var alive, stale []string
	for name, v := range all.Val() {
		seen, _ := strconv.ParseInt(v, 10, 64)
		switch {
		case name == c.name:
		case now.UnixNano()-seen < int64(memberFresh):
			alive = append(alive, name)
		default:
			stale = append(stale, name)
		}
	}
	c.mu.Lock()
	same := ep != "" && ep == c.epoch
	if same {
		// Redis holds what it held: the members are the ones to wait for
		// after a loss.
		c.members = alive
	} else {
		// A first registration, or Redis lost its data since the last one: a
		// copy made after a loss misses the replicas that have not
		// re-registered yet, so the old copy stays beside it.
		for _, m := range alive {
			if !slices.Contains(c.members, m) {
				c.members = append(c.members, m)
			}
		}
	}
	c.mu.Unlock()
	if same && len(stale) > 0 {
		_ = c.rdb.HDel(ctx, c.membersKey(), stale...).Err()
	}
	return ep, all.Val(), nil
}

// rejoin re-registers, when Redis's epoch is not this replica's, its open
// reservations (records, leases, reserved money, in-flight slots) and the
// settlements its ledger has not committed yet (spent money), then marks it
// rejoined. The first replica to find no epoch creates one and lists the
// replicas to wait for.
func (c *RedisCounters) rejoin(ctx context.Context, now time.Time) error {
	c.rejoinMu.Lock()
	defer c.rejoinMu.Unlock()
	ep, err := c.rdb.Get(ctx, c.epochKey()).Result()
	if err != nil && !errors.Is(err, goredis.Nil) {
		return unavailable("rejoin", err)
	}
	c.mu.Lock()
	known := c.epoch
	if err == nil && ep == known {
		c.mu.Unlock()
		return nil // another call rejoined meanwhile
	}
	open := slices.Collect(maps.Values(c.cache))
	charges := c.uncommittedLocked()
	members := slices.Clone(c.members)
	c.mu.Unlock()

	nOpen, nCharges := len(open), len(charges)
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	epoch := hex.EncodeToString(b)
	nowN := now.UnixNano()
	for first := true; first || len(open) > 0 || len(charges) > 0; first = false {
		nr := min(len(open), rejoinChunk)
		nc := min(len(charges), rejoinChunk-nr)
		last := nr == len(open) && nc == len(charges)
		keys := []string{c.epochKey(), c.rejoinKey(), c.leasesKey()}
		args := []any{
			epoch, known, c.name, int64(c.opts.grace / time.Millisecond), int64(c.opts.scopeTTL / time.Second),
			b2i(first), b2i(last), floorDiv(nowN, int64(time.Minute)), len(members),
		}
		for _, m := range members {
			args = append(args, m)
		}
		args = append(args, nr)
		for _, rec := range open[:nr] {
			head := fmt.Appendf(nil, "%d %d %d %d ", rec.Reserved, rec.Worst, rec.Tokens, rec.Minute)
			doc, err := appendRecordJSON(head, rec)
			if err != nil {
				return fmt.Errorf("redis: rejoin: encode reservation: %w", err)
			}
			keys = append(keys, c.recordKey(rec.ID))
			args = append(args, string(doc), rec.ID, leaseScore(rec.Deadline),
				max((rec.Deadline-nowN+int64(24*time.Hour))/int64(time.Millisecond), 1), int64(rec.Reserved))
			keys, args = c.windowArgs(keys, args, rec, time.Unix(0, rec.AdmittedAt))
		}
		args = append(args, nc)
		for _, x := range charges[:nc] {
			args = append(args, int64(x.cost))
			keys, args = c.windowArgs(keys, args, x.rec, x.at)
		}
		v, err := rejoinLua.Run(ctx, c.rdb, keys, args...).Result()
		if err != nil {
			return unavailable("rejoin", err)
		}
		res, _ := v.([]any)
		if len(res) != 2 || toInt(res[0]) == 0 {
			return fmt.Errorf("%w: rejoin: Redis lost its data again", ErrUnavailable)
		}
		epoch, _ = res[1].(string)
		open, charges = open[nr:], charges[nc:]
		if toInt(res[0]) == 2 {
			break // the epoch was already this replica's
		}
	}
	c.mu.Lock()
	c.epoch = epoch
	c.mu.Unlock()
	if known != "" && epoch != known {
		c.opts.logger.Warn("redis: counters lost their data; re-registered this replica's open reservations and uncommitted settlements",
			"epoch", epoch, "reservations", nOpen, "settlements", nCharges)
	}
	return nil
}

// windowArgs appends, for each scope of rec, its hash key and its budget
// windows at t: the number, then each window's field.
func (c *RedisCounters) windowArgs(keys []string, args []any, rec *record, t time.Time) ([]string, []any) {
	args = append(args, len(rec.Scopes))
	for i, ref := range rec.Scopes {
		keys = append(keys, c.scopeKey(ref))
		var periods []kernel.Period
		if i < len(rec.Periods) {
			periods = rec.Periods[i]
		}
		args = append(args, len(periods))
		for _, p := range periods {
			args = append(args, windowField(p.String(), p, t))
		}
	}
	return keys, args
}

// rejoinLua re-registers one chunk of a replica's reservations and
// uncommitted settlements after Redis lost its data.
//
// KEYS: [1] epoch [2] rejoin hash [3] leases, then per reservation its record
// and its scope hashes, then per settlement its scope hashes. ARGV: [1] a new
// epoch id [2] the epoch the replica knew [3] its name [4] grace (ms) [5]
// scope TTL (s) [6] first chunk [7] last chunk [8] the current minute [9] m,
// the number of members to wait for, [10..9+m] their names; then the number
// of reservations, and per reservation: record string, id, lease score,
// record TTL (ms), reserved, and its scopes (number, then per scope the
// number of windows and their fields); then the number of settlements, and
// per settlement: cost and its scopes likewise.
//
// Reply: {0} the epoch changed between chunks (Redis lost its data again);
// {1, epoch} re-registered; {2, epoch} nothing to do (the epoch is the one the
// replica knew).
var rejoinLua = goredis.NewScript(`
local ek, jk, lk = KEYS[1], KEYS[2], KEYS[3]
local me, grace, ttl, minute = ARGV[3], tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[8])
local epoch = redis.call('GET', ek)
if ARGV[6] == '1' then
  if epoch and epoch == ARGV[2] then return {2, epoch} end
  if not epoch then
    epoch = ARGV[1]
    redis.call('SET', ek, epoch)
    redis.call('DEL', jk)
    redis.call('HSET', jk, me, 1)
    for i = 1, tonumber(ARGV[9]) do redis.call('HSET', jk, ARGV[9+i], 1) end
    redis.call('PEXPIRE', jk, grace)
  end
elseif epoch ~= ARGV[1] then
  return {0}
end
local function add(key, f, dsp, drs)
  local v = redis.call('HGET', key, f)
  local sd, sp, rs = 0, 0, 0
  if v then sd, sp, rs = struct.unpack('<ddd', v) end
  redis.call('HSET', key, f, struct.pack('<ddd', sd, sp + dsp, rs + drs))
end
local function touch(key)
  if redis.call('TTL', key) < 0 then redis.call('EXPIRE', key, ttl) end
end
local a, k = 10 + tonumber(ARGV[9]), 4 -- ARGV[a], KEYS[k]: the next unread
local n = tonumber(ARGV[a])
a = a + 1
for _ = 1, n do
  local rk, rec, id, score, rttl, rs = KEYS[k], ARGV[a], ARGV[a+1], ARGV[a+2], ARGV[a+3], tonumber(ARGV[a+4])
  local fresh = redis.call('SET', rk, rec, 'PX', rttl, 'NX')
  if fresh then redis.call('ZADD', lk, score, id) end
  local ns = tonumber(ARGV[a+5])
  k, a = k + 1, a + 6
  for _ = 1, ns do
    local sk, nw = KEYS[k], tonumber(ARGV[a])
    if fresh then
      local v = redis.call('HGET', sk, 'n')
      local f, m, r, t = 0, minute, 0, 0
      if v then f, m, r, t = struct.unpack('<dddd', v) end
      redis.call('HSET', sk, 'n', struct.pack('<dddd', f + 1, m, r, t))
      for j = 1, nw do add(sk, ARGV[a+j], 0, rs) end
      touch(sk)
    end
    k, a = k + 1, a + 1 + nw
  end
end
n = tonumber(ARGV[a])
a = a + 1
for _ = 1, n do
  local cost, ns = tonumber(ARGV[a]), tonumber(ARGV[a+1])
  a = a + 2
  for _ = 1, ns do
    local sk, nw = KEYS[k], tonumber(ARGV[a])
    for j = 1, nw do add(sk, ARGV[a+j], cost, 0) end
    touch(sk)
    k, a = k + 1, a + 1 + nw
  end
end
if ARGV[7] == '1' then redis.call('HDEL', jk, me) end
return {1, epoch}
`)
