package redis

import goredis "github.com/redis/go-redis/v9"

// Reply codes of admitLua.
const (
	replyAdmitted  = 0
	replyRejected  = 1
	replyNeedSeed  = 2
	replyDuplicate = 3
)

// Rejection codes of admitLua (mapped to kernel reasons in Go).
const (
	codeExpired  = 1
	codeModel    = 2
	codeParallel = 3
	codeRPM      = 4
	codeTPM      = 5
	codeBudget   = 6
)

// admitLua is the whole admission of one request, over all its scopes, in one
// atomic script: the same rules, in the same order, as kernel.State.Admit.
//
// KEYS: [1] reservation record, [2] lease zset, [3 .. 2+nS] scope counters,
// [3+nS .. 2+nS+nW] budget windows (unique).
// ARGV: [1] nS [2] nW [3] minute [4] mode (0 strict, 1 estimate) [5] shortfall
// (0 clamp, 1 reject) [6] input bound [7] output bound [8] qi [9] ri [10] qo
// [11] ro (input cost = qi·1e6+ri, output price = qo·1e6+ro, so that every
// product stays an exact integer in a double) [12] lease score [13] record JSON
// [14] estimate tokens [15] scope TTL (s) [16] record TTL (ms) [17] id, then per
// scope 7 values: has limits, expired, model denied, max parallel, rpm, tpm,
// number of budgets; then per budget, in scope order: window index, limit.
var admitLua = goredis.NewScript(`
local function I(x) return string.format('%.0f', x) end
local nS, nW = tonumber(ARGV[1]), tonumber(ARGV[2])
if redis.call('EXISTS', KEYS[1]) == 1 then return {3} end
local need, win = {}, {}
for w = 1, nW do
  win[w] = redis.call('HMGET', KEYS[2+nS+w], 'sd', 'sp', 'rs')
  if not win[w][1] then need[#need+1] = w end
end
if #need > 0 then return {2, need} end

local minute = tonumber(ARGV[3])
local mode, short = tonumber(ARGV[4]), tonumber(ARGV[5])
local inB, outB = tonumber(ARGV[6]), tonumber(ARGV[7])
local qi, ri, qo, ro = tonumber(ARGV[8]), tonumber(ARGV[9]), tonumber(ARGV[10]), tonumber(ARGV[11])

local function worstOf(m)
  local low = ri + m * ro
  local c = qi + m * qo + math.floor(low / 1000000)
  if low % 1000000 ~= 0 then c = c + 1 end
  return c
end
local function affordable(avail, n)
  if avail < 0 or worstOf(0) > avail then return -1 end
  if qo == 0 and ro == 0 then return n end
  if worstOf(n) <= avail then return n end
  local lo, hi = 0, n
  while hi - lo > 1 do
    local mid = math.floor((lo + hi) / 2)
    if worstOf(mid) <= avail then lo = mid else hi = mid end
  end
  return lo
end

local f, m, r, k, rolled = {}, {}, {}, {}, {}
local lim = {}
local a = 18
for i = 1, nS do
  local v = redis.call('HMGET', KEYS[2+i], 'f', 'm', 'r', 'k')
  f[i] = tonumber(v[1] or '0')
  m[i] = tonumber(v[2] or '-1')
  r[i] = tonumber(v[3] or '0')
  k[i] = tonumber(v[4] or '0')
  rolled[i] = minute > m[i]
  if rolled[i] then m[i], r[i], k[i] = minute, 0, 0 end
  lim[i] = {tonumber(ARGV[a]), tonumber(ARGV[a+1]), tonumber(ARGV[a+2]), tonumber(ARGV[a+3]),
    tonumber(ARGV[a+4]), tonumber(ARGV[a+5]), tonumber(ARGV[a+6])}
  a = a + 7
end

local n, fail = outB, -1
for i = 1, nS do
  for j = 1, lim[i][7] do
    local wi, limit = tonumber(ARGV[a]), tonumber(ARGV[a+1])
    a = a + 2
    if fail < 0 then
      local v = win[wi]
      local sp, rs = tonumber(v[2] or '0'), tonumber(v[3] or '0')
      if mode == 1 then
        if sp >= limit then fail = i end
      else
        local fit = affordable(limit - sp - rs, n)
        if (short == 1 and fit < n) or fit < 1 then fail = i else n = fit end
      end
    end
  end
end
if fail >= 0 then n = outB end
local worst = worstOf(n)
local tokens = inB + n
if mode == 1 then tokens = tonumber(ARGV[14]) end

for i = 1, nS do
  local l = lim[i]
  if l[1] == 1 then
    local code = 0
    if l[2] == 1 then code = 1
    elseif l[3] == 1 then code = 2
    elseif l[4] > 0 and f[i] >= l[4] then code = 3
    elseif l[5] > 0 and r[i] >= l[5] then code = 4
    elseif l[6] > 0 and k[i] + tokens > l[6] then code = 5
    elseif i == fail then code = 6
    end
    if code > 0 then return {1, code, i, r, k, tokens} end
  end
end

local reserved = worst
if mode == 1 then reserved = 0 end
local ttl = tonumber(ARGV[15])
for i = 1, nS do
  redis.call('HSET', KEYS[2+i], 'f', I(f[i] + 1), 'm', I(m[i]), 'r', I(r[i] + 1), 'k', I(k[i] + tokens))
  r[i], k[i] = r[i] + 1, k[i] + tokens
  if rolled[i] then redis.call('EXPIRE', KEYS[2+i], ttl) end -- refreshed once a minute
end
if reserved > 0 then
  for w = 1, nW do redis.call('HINCRBY', KEYS[2+nS+w], 'rs', I(reserved)) end
end
redis.call('HSET', KEYS[1], 'd', ARGV[13], 'w', I(worst), 'rs', I(reserved), 't', I(tokens), 'mn', I(minute))
redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[16]))
redis.call('ZADD', KEYS[2], tonumber(ARGV[12]), ARGV[17])
return {0, n, worst, reserved, tokens, r, k}
`)

// seedLua marks budget windows seeded, adding the ledger's spend to what was
// charged to them meanwhile (at most once per window).
//
// KEYS: windows. ARGV: per window: spent, TTL in seconds (0: none).
var seedLua = goredis.NewScript(`
for i = 1, #KEYS do
  if redis.call('HSETNX', KEYS[i], 'sd', 1) == 1 then
    redis.call('HINCRBY', KEYS[i], 'sp', ARGV[2*i-1])
    local ttl = tonumber(ARGV[2*i])
    if ttl > 0 then redis.call('EXPIRE', KEYS[i], ttl) end
  end
end
return 1
`)

// settleLua ends one reservation atomically: idempotent by the record's
// existence, it releases the reservation from the windows it was made in, adds
// the cost to the windows current now, frees the parallel slots and corrects
// the tpm count (kernel.State.Settle / Expire).
//
// KEYS: [1] record [2] lease zset [3 .. 2+nS] scope counters, then nR reserved
// windows, then nC current windows. ARGV: [1] id [2] nS [3] nR [4] nC [5] cost
// (-1: the record's worst cost) [6] fix tokens (0/1) [7] actual tokens [8] now
// minute, then per current window its TTL in seconds (0: none).
// Reply: 0 when not open, else {1, cost, reserved}.
var settleLua = goredis.NewScript(`
local function I(x) return string.format('%.0f', x) end
local v = redis.call('HMGET', KEYS[1], 'rs', 't', 'mn', 'w')
if not v[1] then return 0 end
local rs, t, mn = tonumber(v[1]), tonumber(v[2]), tonumber(v[3])
local nS, nR, nC = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local cost = tonumber(ARGV[5])
if cost < 0 then cost = tonumber(v[4]) end
local fix, actual, now = tonumber(ARGV[6]), tonumber(ARGV[7]), tonumber(ARGV[8])
redis.call('DEL', KEYS[1])
redis.call('ZREM', KEYS[2], ARGV[1])
for i = 1, nS do
  local key = KEYS[2+i]
  local s = redis.call('HMGET', key, 'f', 'm', 'k')
  if s[1] and tonumber(s[1]) > 0 then redis.call('HINCRBY', key, 'f', -1) end
  if fix == 1 and s[2] and tonumber(s[2]) == mn and now <= mn then
    local nk = tonumber(s[3] or '0') + actual - t
    if nk < 0 then nk = 0 end
    redis.call('HSET', key, 'k', I(nk))
  end
end
if rs > 0 then
  for w = 1, nR do
    local key = KEYS[2+nS+w]
    if redis.call('EXISTS', key) == 1 then redis.call('HINCRBY', key, 'rs', I(-rs)) end
  end
end
for w = 1, nC do
  local key = KEYS[2+nS+nR+w]
  local ttl = tonumber(ARGV[8+w])
  if redis.call('HINCRBY', key, 'sp', I(cost)) == cost and ttl > 0 then
    redis.call('EXPIRE', key, ttl) -- a new window (or one with nothing spent yet)
  end
end
return {1, cost, rs}
`)
