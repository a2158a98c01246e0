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
// K: [1] reservation record, [2] lease zset, [3 .. 2+nS] scope hashes (rate
// counters and budget windows). The integers A come packed in the operation's
// first argument (packArgs); its string arguments follow it: [2] the record
// JSON, [3] the id, then the field prefix of each window; (x) in A is a 0 in place of string x. A: [1] nS [2] nW (unique budget windows) [3] minute [4] mode (0 strict, 1 estimate) [5] shortfall
// (0 clamp, 1 reject) [6] input bound [7] output bound [8] qi [9] ri [10] qo
// [11] ro (input cost = qi·1e6+ri, output price = qo·1e6+ro, so that every
// product stays an exact integer in a double) [12] lease score [13] (JSON)
// [14] estimate tokens [15] scope TTL (s) [16] record TTL (ms) [17] (id), then per
// scope 7 values: has limits, expired, model denied, max parallel, rpm, tpm,
// number of budgets; then per window: its scope's index, (its field prefix);
// then per budget, in scope order: window index, limit.
const admitLua = `
local function admit(ko, ao, A)
local nS, nW = tonumber(A[1]), tonumber(A[2])
local ws, wp, wf = {}, {}, {}
local a = 18 + 7 * nS
for w = 1, nW do
  local i, p = tonumber(A[a]), ARGV[ao+3+w]
  a = a + 2
  ws[w], wp[w] = i, p
  local fl = wf[i] or {}
  wf[i] = fl
  fl[#fl+1] = p .. 'sd'
  fl[#fl+1] = p .. 'sp'
  fl[#fl+1] = p .. 'rs'
end
local sc = {}
for i = 1, nS do sc[i] = S(KEYS[ko+2+i], wf[i]) end
local need = {}
for w = 1, nW do
  if not sc[ws[w]].v[wp[w] .. 'sd'] then need[#need+1] = w end
end
if #need > 0 then
  if redis.call('EXISTS', KEYS[ko+1]) == 1 then return {3} end -- an open id refuses first
  return {2, need}
end

local minute = tonumber(A[3])
local mode, short = tonumber(A[4]), tonumber(A[5])
local inB, outB = tonumber(A[6]), tonumber(A[7])
local qi, ri, qo, ro = tonumber(A[8]), tonumber(A[9]), tonumber(A[10]), tonumber(A[11])


local f, m, r, k, rolled = {}, {}, {}, {}, {}
for i = 1, nS do
  local v = sc[i].v
  f[i], m[i], r[i], k[i] = v.f or 0, v.m or -1, v.r or 0, v.k or 0
  rolled[i] = minute > m[i]
  if rolled[i] then m[i], r[i], k[i] = minute, 0, 0 end
end

local n, fail = outB, -1
for i = 1, nS do
  for j = 1, tonumber(A[18 + 7*i - 1]) do
    local wi, limit = tonumber(A[a]), tonumber(A[a+1])
    a = a + 2
    if fail < 0 then
      local v, p = sc[ws[wi]].v, wp[wi]
      local sp, rs = v[p .. 'sp'] or 0, v[p .. 'rs'] or 0
      if mode == 1 then
        if sp >= limit then fail = i end
      else
        local fit = affordable(limit - sp - rs, n, qi, ri, qo, ro)
        if (short == 1 and fit < n) or fit < 1 then fail = i else n = fit end
      end
    end
  end
end
if fail >= 0 then n = outB end
local worst = worstOf(n, qi, ri, qo, ro)
local tokens = inB + n
if mode == 1 then tokens = tonumber(A[14]) end

for i = 1, nS do
  local b = 18 + 7 * (i - 1)
  if A[b] == 1 then
    local code = 0
    local par, rpm, tpm = tonumber(A[b+3]), tonumber(A[b+4]), tonumber(A[b+5])
    if A[b+1] == 1 then code = 1
    elseif A[b+2] == 1 then code = 2
    elseif par > 0 and f[i] >= par then code = 3
    elseif rpm > 0 and r[i] >= rpm then code = 4
    elseif tpm > 0 and k[i] + tokens > tpm then code = 5
    elseif i == fail then code = 6
    end
    if code > 0 then
      if redis.call('EXISTS', KEYS[ko+1]) == 1 then return {3} end
      return {1, code, i, r, k, tokens}
    end
  end
end

local reserved = worst
if mode == 1 then reserved = 0 end
-- The record is written first: SET NX fails when the id is open (duplicate).
if not redis.call('SET', KEYS[ko+1], I(reserved) .. ' ' .. I(worst) .. ' ' .. I(tokens) .. ' ' .. I(A[3]) .. ' ' .. ARGV[ao+2],
    'PX', I(A[16]), 'NX') then
  return {3}
end
local ttl = tonumber(A[15])
for i = 1, nS do
  local e = sc[i]
  set(e, 'f', f[i] + 1)
  set(e, 'm', m[i])
  set(e, 'r', r[i] + 1)
  set(e, 'k', k[i] + tokens)
  r[i], k[i] = r[i] + 1, k[i] + tokens
  if rolled[i] then e.x = ttl end -- refreshed once a minute
end
if reserved > 0 then
  for w = 1, nW do
    local e, f = sc[ws[w]], wp[w] .. 'rs'
    set(e, f, (e.v[f] or 0) + reserved)
  end
end
LK = KEYS[ko+2]
Z[ARGV[ao+3]] = I(A[12])
return {0, n, worst, reserved, tokens, r, k}
end
`

// seedLua marks budget windows seeded, adding the ledger's spend to what was
// charged to them meanwhile (at most once per window), and drops the fields of
// the window of the same period it replaces.
//
// KEYS: the scope hash of each window. ARGV: [1] scope TTL (s), then per
// window: period, window start, spent (field prefix "<period>:<start>:").
var seedLua = goredis.NewScript(`
local ttl = tonumber(ARGV[1])
for i = 1, #KEYS do
  local key, per, st = KEYS[i], ARGV[3*i-1], ARGV[3*i]
  local p = per .. ':' .. st .. ':'
  if redis.call('HSETNX', key, p .. 'sd', 1) == 1 then
    redis.call('HINCRBY', key, p .. 'sp', ARGV[3*i+1])
    local cur = redis.call('HGET', key, 'c:' .. per)
    if not cur or tonumber(cur) < tonumber(st) then
      if cur then
        local q = per .. ':' .. cur .. ':'
        redis.call('HDEL', key, q .. 'sd', q .. 'sp', q .. 'rs')
      end
      redis.call('HSET', key, 'c:' .. per, st)
    end
    if redis.call('TTL', key) == -1 then redis.call('EXPIRE', key, ttl) end
  end
end
return 1
`)

// settleLua ends one reservation atomically: idempotent by the record's
// existence (the first to delete it wins), it releases the reservation from
// the windows it was made in (if they still exist), adds the cost to the
// windows current now, frees the parallel slots and corrects the tpm count
// (kernel.State.Settle / Expire). What the reservation holds is passed in by
// Go (from its cache or the record).
//
// K: [1] record [2] lease zset [3 .. 2+nS] scope hashes. The integers A come
// packed in the operation's first argument (packArgs); its string arguments
// follow it: [2] the id, then the window field prefixes. A: [1] (id) [2] nS
// [3] cost (-1: the worst cost) [4] fix tokens (0/1) [5] actual tokens [6] now
// minute [7] reserved [8] tokens counted [9] admission minute [10] worst cost
// [11] scope TTL (s), then per scope: number of windows, then per window the
// (field prefix) of the window reserved in and of the window current now.
// Reply: 0 when not open, else {1, cost, reserved}.
const settleLua = `
local function settle(ko, ao, A)
  if redis.call('DEL', KEYS[ko+1]) == 0 then return 0 end
  LK = KEYS[ko+2]
  Z[ARGV[ao+2]] = false
  local nS = tonumber(A[2])
  local cost = tonumber(A[3])
  if cost < 0 then cost = tonumber(A[10]) end
  local fix, actual, now = A[4] == 1, tonumber(A[5]), tonumber(A[6])
  local rs, t, mn, ttl = tonumber(A[7]), tonumber(A[8]), tonumber(A[9]), tonumber(A[11])
  local a, fo = 12, ao + 2
  for i = 1, nS do
    local nw = tonumber(A[a])
    local fl = {}
    for j = 1, nw do
      local p, q = ARGV[fo+2*j-1], ARGV[fo+2*j]
      fl[#fl+1] = p .. 'sd'
      fl[#fl+1] = p .. 'sp'
      fl[#fl+1] = p .. 'rs'
      fl[#fl+1] = q .. 'sp'
    end
    local e = S(KEYS[ko+2+i], fl)
    local v = e.v
    if fix and v.m and v.m == mn and now <= mn then
      local nk = (v.k or 0) + actual - t
      if nk < 0 then nk = 0 end
      set(e, 'k', nk)
    end
    if v.f and v.f > 0 then set(e, 'f', v.f - 1) end
    if rs > 0 then
      for j = 1, nw do
        local p = ARGV[fo+2*j-1]
        if v[p .. 'sd'] or v[p .. 'sp'] or v[p .. 'rs'] then -- the window still exists
          set(e, p .. 'rs', (v[p .. 'rs'] or 0) - rs)
        end
      end
    end
    for j = 1, nw do
      local f = ARGV[fo+2*j] .. 'sp'
      set(e, f, (v[f] or 0) + cost)
    end
    if nw > 0 and not v.m then e.x = ttl end -- a hash admission did not make (after a flush)
    a, fo = a + 1 + 2 * nw, fo + 2 * nw
  end
  return {1, cost, rs}
end
`

// Kinds of operations in a batch.
const (
	opAdmit  = 1
	opSettle = 2
)

// batchLua runs the operations of one pipeline batch in order, each on its own
// keys and arguments and all or nothing on its own, and replies with their
// replies in order: one EVALSHA (and one round trip) for many admissions and
// settlements of concurrent callers.
//
// ARGV: [1] number of operations, then per operation: kind, number of keys,
// number of arguments, its arguments: a MessagePack array of its integers
// (cmsgpack.unpack, no string parsing in Lua), then its strings. KEYS: the
// keys of each operation in turn.
var batchLua = goredis.NewScript(`
local function I(x) return string.format('%d', x) end -- x is an integer below 2^53
local unpack = unpack or table.unpack
-- worstOf is the worst cost with m output tokens: ceil((input cost + m·output
-- price)/1e6), with input cost = qi·1e6+ri and output price = qo·1e6+ro.
local function worstOf(m, qi, ri, qo, ro)
  local low = ri + m * ro
  local c = qi + m * qo + math.floor(low / 1000000)
  if low % 1000000 ~= 0 then c = c + 1 end
  return c
end
-- affordable is the largest m ≤ n whose worst cost fits avail, -1 when none.
local function affordable(avail, n, qi, ri, qo, ro)
  if avail < 0 or worstOf(0, qi, ri, qo, ro) > avail then return -1 end
  if qo == 0 and ro == 0 then return n end
  if worstOf(n, qi, ri, qo, ro) <= avail then return n end
  local lo, hi = 0, n
  while hi - lo > 1 do
    local mid = math.floor((lo + hi) / 2)
    if worstOf(mid, qi, ri, qo, ro) <= avail then lo = mid else hi = mid end
  end
  return lo
end
-- Hashes read and written in this batch: key -> {v = fields read or set
-- (false: read and absent), d = dirty set, l = dirty list, x = TTL to set}.
local C, order = {}, {}
local function set(e, f, x)
  if not e.d[f] then e.d[f] = true; e.l[#e.l+1] = f end
  e.v[f] = x
end
-- S loads the scope hash key: its rate counters and the fields in extra (a
-- list), each read at most once per batch.
local function S(key, extra)
  local e = C[key]
  local want
  if not e then
    e = {v = {}, d = {}, l = {}}
    C[key] = e
    order[#order+1] = key
    want = {'f', 'm', 'r', 'k'}
  end
  if extra then
    local v = e.v
    for _, f in ipairs(extra) do
      if v[f] == nil then
        v[f] = false
        if want then want[#want+1] = f else want = {f} end
      end
    end
  end
  if want then
    local r = redis.call('HMGET', key, unpack(want))
    local v = e.v
    for j, f in ipairs(want) do v[f] = tonumber(r[j]) or false end
  end
  return e
end
-- Lease changes of this batch (id -> score, or false to remove), in LK.
local Z, LK = {}, nil
` + admitLua + settleLua + `
local out = {}
local ko, ao = 0, 1
for i = 1, tonumber(ARGV[1]) do
  local kind, nk, na = ARGV[ao+1], tonumber(ARGV[ao+2]), tonumber(ARGV[ao+3])
  ao = ao + 3
  local A = cmsgpack.unpack(ARGV[ao+1])
  if kind == '1' then out[i] = admit(ko, ao, A) else out[i] = settle(ko, ao, A) end
  ko, ao = ko + nk, ao + na
end
for _, key in ipairs(order) do
  local e = C[key]
  if #e.l > 0 then
    local hv = {}
    for _, f in ipairs(e.l) do hv[#hv+1] = f; hv[#hv+1] = I(e.v[f]) end
    redis.call('HSET', key, unpack(hv))
  end
  if e.x then redis.call('EXPIRE', key, e.x) end
end
if LK then
  local add, rem = {}, {}
  for id, score in pairs(Z) do
    if score then add[#add+1] = score; add[#add+1] = id else rem[#rem+1] = id end
  end
  if #add > 0 then redis.call('ZADD', LK, unpack(add)) end
  if #rem > 0 then redis.call('ZREM', LK, unpack(rem)) end
end
return out
`)
