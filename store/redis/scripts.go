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
// atomic step: the same rules, in the same order, as kernel.State.Admit.
//
// A (the operation's integers, see batchLua): [1] kind [2] number of keys [3]
// number of strings [4] nS [5] nW (unique budget windows) [6] minute [7] mode
// (0 strict, 1 estimate) [8] shortfall (0 clamp, 1 reject) [9] input bound
// [10] output bound [11] qi [12] ri [13] qo [14] ro (input cost = qi·1e6+ri,
// output price = qo·1e6+ro, so that every product stays an exact integer in a
// double) [15] lease score [16] estimate tokens [17] scope TTL (s) [18] record
// TTL (ms), then per scope 7 values: has limits, expired, model denied, max
// parallel, rpm, tpm, number of budgets; then per window the index of its
// scope; then per budget, in scope order: window index, limit. Strings: [1]
// the record JSON, [2] the id, then per window its fields "<prefix>sd",
// "<prefix>sp", "<prefix>rs". Keys: [1] the reservation record, then the scope
// hashes.
//
// Reply: {0, n, worst, reserved, tokens, requests and tokens of each scope
// after the admission}, {1, code, scope, requests and tokens of each scope},
// {2, windows to seed} or {3} (duplicate).
const admitLua = `
local function admit(ko, ao, A)
local nS, nW = A[4], A[5]
local wb = 18 + 7 * nS -- A[wb+w]: the scope of window w (windows come in scope order)
local w = 1
for i = 1, nS do
  local w0 = w
  while w <= nW and A[wb+w] == i do w = w + 1 end
  E[i] = S(KEYS[ko+1+i], ao + 3*w0, ao + 3*w - 1)
end
local need
for w = 1, nW do
  if not E[A[wb+w]][ARGV[ao+3*w]] then
    need = need or {}
    need[#need+1] = w
  end
end
if need then
  if redis.call('EXISTS', KEYS[ko+1]) == 1 then return {3} end -- an open id refuses first
  return {2, need}
end

local minute = A[6]
for i = 1, nS do
  local e = E[i]
  local m = e.m or -1
  if minute > m then
    SF[i], SM[i], SR[i], SK[i], SX[i] = e.f or 0, minute, 0, 0, true
  else
    SF[i], SM[i], SR[i], SK[i], SX[i] = e.f or 0, m, e.r or 0, e.k or 0, false
  end
end

local mode, short, inB, outB = A[7], A[8], A[9], A[10]
local qi, ri, qo, ro = A[11], A[12], A[13], A[14]
local n, fail = outB, -1
local a = wb + nW + 1
for i = 1, nS do
  for _ = 1, A[18 + 7*i] do
    local wi, limit = A[a], A[a+1]
    a = a + 2
    if fail < 0 then
      local e, f = E[A[wb+wi]], ao + 3*wi
      local sp, rs = e[ARGV[f+1]] or 0, e[ARGV[f+2]] or 0
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
if mode == 1 then tokens = A[16] end

for i = 1, nS do
  local b = 19 + 7 * (i - 1)
  if A[b] == 1 then
    local code = 0
    local par, rpm, tpm = A[b+3], A[b+4], A[b+5]
    if A[b+1] == 1 then code = 1
    elseif A[b+2] == 1 then code = 2
    elseif par > 0 and SF[i] >= par then code = 3
    elseif rpm > 0 and SR[i] >= rpm then code = 4
    elseif tpm > 0 and SK[i] + tokens > tpm then code = 5
    elseif i == fail then code = 6
    end
    if code > 0 then
      if redis.call('EXISTS', KEYS[ko+1]) == 1 then return {3} end
      for j = 1, nS do T[j], T[nS+j] = SR[j], SK[j] end
      return {1, code, i, unpack(T, 1, 2*nS)}
    end
  end
end

local reserved = worst
if mode == 1 then reserved = 0 end
-- The record is written first: SET NX fails when the id is open (duplicate).
if not redis.call('SET', KEYS[ko+1], string.format('%d %d %d %d %s', reserved, worst, tokens, minute, ARGV[ao+1]),
    'PX', I(A[18]), 'NX') then
  return {3}
end
local ttl = A[17]
for i = 1, nS do
  local e = E[i]
  local r, k = SR[i] + 1, SK[i] + tokens
  e.f, e.m, e.r, e.k, e[1] = SF[i] + 1, SM[i], r, k, true
  T[i], T[nS+i] = r, k
  if SX[i] then e[2] = ttl end -- refreshed once a minute
end
if reserved > 0 then
  for w = 1, nW do
    local e, f = E[A[wb+w]], ARGV[ao+3*w+2]
    e[f], e[1] = (e[f] or 0) + reserved, true
  end
end
Z[ARGV[ao+2]] = A[15]
return {0, n, worst, reserved, tokens, unpack(T, 1, 2*nS)}
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
// A: [1] kind [2] number of keys [3] number of strings [4] nS [5] cost (-1:
// the worst cost) [6] fix tokens (0/1) [7] actual tokens [8] now minute [9]
// reserved [10] tokens counted [11] admission minute [12] worst cost [13]
// scope TTL (s), then per scope its number of windows. Strings: [1] the id,
// then per scope and window the fields sd, sp and rs of the window reserved in
// and sp of the window current now. Keys: [1] the record, then the scope
// hashes. Reply: 0 when not open, else {1, cost, reserved}.
const settleLua = `
local function settle(ko, ao, A)
  if redis.call('DEL', KEYS[ko+1]) == 0 then return 0 end
  Z[ARGV[ao+1]] = false
  local cost = A[5]
  if cost < 0 then cost = A[12] end
  local fix, actual, now = A[6] == 1, A[7], A[8]
  local rs, t, mn, ttl = A[9], A[10], A[11], A[13]
  local fo = ao + 1 -- ARGV[fo+4j-3 .. fo+4j]: the fields of window j of the scope
  for i = 1, A[4] do
    local nw = A[13+i]
    local e = S(KEYS[ko+1+i], fo + 1, fo + 4*nw)
    if fix and e.m and e.m == mn and now <= mn then
      local nk = (e.k or 0) + actual - t
      if nk < 0 then nk = 0 end
      e.k, e[1] = nk, true
    end
    if e.f and e.f > 0 then e.f, e[1] = e.f - 1, true end
    if rs > 0 then
      for j = 1, nw do
        local f = ARGV[fo+4*j-1]
        if e[ARGV[fo+4*j-3]] or e[ARGV[fo+4*j-2]] or e[f] then -- the window still exists
          e[f], e[1] = (e[f] or 0) - rs, true
        end
      end
    end
    for j = 1, nw do
      local f = ARGV[fo+4*j]
      e[f], e[1] = (e[f] or 0) + cost, true
    end
    if nw > 0 and not e.m then e[2] = ttl end -- a hash admission did not make (after a flush)
    fo = fo + 4 * nw
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
// KEYS: [1] the lease zset, then the keys of each operation in turn. ARGV: [1]
// number of operations, then per operation its integers as one string of
// little-endian doubles (struct.unpack: one C call, no parsing; [1] kind, [2]
// number of keys, [3] number of strings) followed by its strings.
//
// Each hash is read once per batch (one HMGET of the fields the batch needs,
// more only for fields a later operation adds) into one table that the
// operations change, and written back once at the end (one HSET of the fields
// it holds, when any changed). Scratch tables (E, T and the per-scope
// snapshots) are reused by every operation of the batch.
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
-- Hashes read and written in this batch: key -> entry, the hash's fields
-- read or set (false: read and absent), [1] true once one changed, [2] the
-- TTL to set.
local C, order = {}, {}
-- Scratch: H an HMGET's or HSET's arguments, E the entries of an admission's
-- scopes, SF..SX their counters, T a reply's counts.
local H, E, SF, SM, SR, SK, SX, T = {}, {}, {}, {}, {}, {}, {}, {}
-- S returns the entry of hash key with its rate counters and the fields
-- ARGV[from..to] loaded: each field is read at most once per batch.
local function S(key, from, to)
  local e = C[key]
  local h = 0
  if not e then
    -- Eight slots at once (the nil fields only size the table): the counters
    -- and the fields of a window or two, without rehashing.
    e = {false, false, f = false, m = false, r = false, k = false, s1 = nil, s2 = nil, s3 = nil, s4 = nil}
    C[key] = e
    order[#order+1] = key
    H[1], H[2], H[3], H[4] = 'f', 'm', 'r', 'k'
    h = 4
  end
  for j = from, to do
    local f = ARGV[j]
    if e[f] == nil then
      e[f] = false
      h = h + 1
      H[h] = f
    end
  end
  if h > 0 then
    local r = redis.call('HMGET', key, unpack(H, 1, h))
    for j = 1, h do e[H[j]] = tonumber(r[j]) or false end
  end
  return e
end
-- Lease changes of this batch: id -> score, or false to remove.
local Z = {}
` + admitLua + settleLua + `
local out, F = {}, {}
local ko, ao = 1, 2
for i = 1, tonumber(ARGV[1]) do
  local s = ARGV[ao]
  local nv = #s / 8
  local fm = F[nv]
  if not fm then
    fm = '<' .. string.rep('d', nv)
    F[nv] = fm
  end
  local A = {struct.unpack(fm, s)}
  if A[1] == 1 then out[i] = admit(ko, ao, A) else out[i] = settle(ko, ao, A) end
  ko, ao = ko + A[2], ao + 1 + A[3]
end
for _, key in ipairs(order) do
  local e = C[key]
  if e[1] then
    local h = 0
    for f, x in pairs(e) do
      if x and type(f) == 'string' then
        -- Below 1e7 every Redis version writes a number as plain digits.
        if x >= 1e7 or x <= -1e7 then x = I(x) end
        H[h+1], H[h+2] = f, x
        h = h + 2
      end
    end
    redis.call('HSET', key, unpack(H, 1, h))
  end
  if e[2] then redis.call('EXPIRE', key, e[2]) end
end
local add, rem = {}, {}
for id, score in pairs(Z) do
  if score then
    add[#add+1] = I(score)
    add[#add+1] = id
  else
    rem[#rem+1] = id
  end
end
if #add > 0 then redis.call('ZADD', KEYS[1], unpack(add)) end
if #rem > 0 then redis.call('ZREM', KEYS[1], unpack(rem)) end
return out
`)
