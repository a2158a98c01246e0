package accounting

import goredis "github.com/redis/go-redis/v9"

// Reply codes of admitLua.
const (
	replyAdmitted  = 0
	replyRejected  = 1
	replyNeedSeed  = 2
	replyDuplicate = 3
	replyRejoin    = 4 // Redis lost its data since this replica registered: rejoin first
	replyWait      = 5 // replicas are re-registering after Redis lost its data
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
// TTL (ms) [19] the worst cost written in the record string (-1: none) [20]
// the length of its head, then per scope 7 values: has limits (0 no, 1 yes,
// k > 1 yes with a TTL of its own of k-1 s, Limits.TTL), expired, model
// denied, max parallel, rpm, tpm, number of budgets; then per window the
// index of its scope; then per budget, in scope order: window index, limit
// (-1-limit for a soft window, which never refuses).
// Strings: [1] the record string as Go made it for the output bound not
// clamped ("<reserved> <worst> <tokens> <minute> <JSON>", or with no head),
// [2] the id, then the field of each window, then the epoch the replica
// registered under. Keys: [1] the reservation record, then the scope hashes,
// then the epoch and the rejoin hash (redis_rejoin.go).
//
// Reply: {0, n, worst, reserved, tokens, requests and tokens of each scope
// after the admission, then per soft window whose spent reached its limit:
// its budget's ordinal (1-based, in request order) and spent}, {1, code, scope, requests and tokens of each scope},
// {2, windows to seed}, {3} (duplicate), or, when a window needs seeding, {4}
// (the replica's epoch is not Redis's: rejoin first) or {5} (replicas are
// still re-registering: wait).
const admitLua = `
local function admit(ko, ao, A)
local nS, nW = A[4], A[5]
local wb = 20 + 7 * nS -- A[wb+w]: the scope of window w (windows come in scope order)
local w = 1
for i = 1, nS do
  local w0 = w
  while w <= nW and A[wb+w] == i do w = w + 1 end
  E[i] = S(KEYS[ko+1+i], ao + 2 + w0, ao + 1 + w)
end
local need
for w = 1, nW do
  local t = E[A[wb+w]][ARGV[ao+2+w]]
  if not t or t[1] ~= 1 then
    need = need or {}
    need[#need+1] = w
  end
end
if need then
  if rcall('EXISTS', KEYS[ko+1]) == 1 then return {3} end -- an open id refuses first
  -- Seeding counts the ledger only: every replica must have re-registered
  -- what it holds since Redis lost its data (redis_rejoin.go).
  if rcall('GET', KEYS[ko+2+nS]) ~= ARGV[ao+3+nW] then return {4} end
  if rcall('EXISTS', KEYS[ko+3+nS]) == 1 then return {5} end
  return {2, need}
end

local minute = A[6]
for i = 1, nS do
  local e = E[i]
  if e.n and minute <= e.m then
    SF[i], SM[i], SR[i], SK[i], SX[i] = e.f, e.m, e.r, e.k, false
  else
    SF[i], SM[i], SR[i], SK[i], SX[i] = e.f or 0, minute, 0, 0, true
  end
end

local mode, short, inB, outB = A[7], A[8], A[9], A[10]
local qi, ri, qo, ro = A[11], A[12], A[13], A[14]
local n, fail = outB, -1
local a = wb + nW + 1
local bi, nwarn = 0, 0
for i = 1, nS do
  for _ = 1, A[20 + 7*i] do
    local wi, limit = A[a], A[a+1]
    a = a + 2
    bi = bi + 1
    if limit < 0 then -- a soft window (limit -1-L): never refuses, warns once spent >= L
      local sp = E[A[wb+wi]][ARGV[ao+2+wi]][2]
      if sp >= -1 - limit then
        WN[2*nwarn+1], WN[2*nwarn+2] = bi, sp
        nwarn = nwarn + 1
      end
    elseif fail < 0 then
      local t = E[A[wb+wi]][ARGV[ao+2+wi]]
      local sp, rs = t[2], t[3]
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
  local b = 21 + 7 * (i - 1)
  if A[b] >= 1 then
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
      if rcall('EXISTS', KEYS[ko+1]) == 1 then return {3} end
      for j = 1, nS do T[j], T[nS+j] = SR[j], SK[j] end
      return {1, code, i, unpack(T, 1, 2*nS)}
    end
  end
end

local reserved = worst
if mode == 1 then reserved = 0 end
local rec = ARGV[ao+1]
if n ~= outB or worst ~= A[19] then -- clamped: the head Go wrote does not hold
  rec = format('%d %d %d %d ', reserved, worst, tokens, minute) .. string.sub(rec, A[20] + 1)
end
-- The record is written first: SET NX fails when the id is open (duplicate).
if not rcall('SET', KEYS[ko+1], rec, 'PX', I(A[18]), 'NX') then
  return {3}
end
local ttl = A[17]
for i = 1, nS do
  local e = E[i]
  local r, k = SR[i] + 1, SK[i] + tokens
  e.n, e.f, e.m, e.r, e.k, e[1] = true, SF[i] + 1, SM[i], r, k, true
  T[i], T[nS+i] = r, k
  local own = A[21 + 7*(i-1)] - 1 -- a scope TTL of its own (runs), refreshed at each admission
  if own > 0 then e[2] = own elseif SX[i] then e[2] = ttl end -- else refreshed once a minute
end
if reserved > 0 then
  for w = 1, nW do
    local e = E[A[wb+w]]
    local t = e[ARGV[ao+2+w]]
    t[3], t[4], e[3] = t[3] + reserved, true, true
  end
end
Z[ARGV[ao+2]] = A[15]
for j = 1, 2*nwarn do T[2*nS+j] = WN[j] end
return {0, n, worst, reserved, tokens, unpack(T, 1, 2*nS + 2*nwarn)}
end
`

// seedLua marks budget windows seeded, adding the ledger's spend to what was
// charged to them meanwhile (at most once per window), and drops the field of
// the window of the same period it replaces. The ledger was read under the
// epoch the admission saw: when Redis's epoch is another (it lost its data
// since), the read may miss what the replicas re-register, and nothing is
// seeded.
//
// KEYS: [1] the epoch, then the scope hash of each window. ARGV: [1] scope
// TTL (s), [2] the epoch the ledger was read under, then per window: period,
// window start, spent (field "<period>:<start>:", packed as in batchLua).
// Reply: 1 seeded, 0 the epoch changed.
var seedLua = goredis.NewScript(`
local ttl = tonumber(ARGV[1])
if redis.call('GET', KEYS[1]) ~= ARGV[2] then return 0 end
for i = 1, #KEYS - 1 do
  local key, per, st = KEYS[i+1], ARGV[3*i], ARGV[3*i+1]
  local p = per .. ':' .. st .. ':'
  local v = redis.call('HGET', key, p)
  local sd, sp, rs = 0, 0, 0
  if v then sd, sp, rs = struct.unpack('<ddd', v) end
  if sd ~= 1 then
    redis.call('HSET', key, p, struct.pack('<ddd', 1, sp + tonumber(ARGV[3*i+2]), rs))
    local cur = redis.call('HGET', key, 'c:' .. per)
    if not cur or tonumber(cur) < tonumber(st) then
      if cur then redis.call('HDEL', key, per .. ':' .. cur .. ':') end
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
// then per scope and window the field of the window reserved in and of the
// window current now. Keys: [1] the record, then the scope hashes. Reply: 0
// when not open, else {1, cost, reserved}.
const settleLua = `
local function settle(ko, ao, A)
  if rcall('DEL', KEYS[ko+1]) == 0 then return 0 end
  Z[ARGV[ao+1]] = false
  local cost = A[5]
  if cost < 0 then cost = A[12] end
  local fix, actual, now = A[6] == 1, A[7], A[8]
  local rs, t, mn, ttl = A[9], A[10], A[11], A[13]
  local fo = ao + 1 -- ARGV[fo+2j-1], ARGV[fo+2j]: window j of the scope, reserved in and now
  for i = 1, A[4] do
    local nw = A[13+i]
    local e = S(KEYS[ko+1+i], fo + 1, fo + 2*nw)
    if e.n then
      if fix and e.m == mn and now <= mn then
        local nk = e.k + actual - t
        if nk < 0 then nk = 0 end
        e.k, e[1] = nk, true
      end
      if e.f > 0 then e.f, e[1] = e.f - 1, true end
    end
    if rs > 0 then
      for j = 1, nw do
        local w = e[ARGV[fo+2*j-1]]
        if w then w[3], w[4], e[3] = w[3] - rs, true, true end -- the window still exists
      end
    end
    for j = 1, nw do
      local f = ARGV[fo+2*j]
      local w = e[f]
      if not w then
        w = {0, 0, 0}
        e[f] = w
      end
      w[2], w[4], e[3] = w[2] + cost, true, true
    end
    if nw > 0 and not e.n then e[2] = ttl end -- a hash admission did not make (after a flush)
    fo = fo + 2 * nw
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
// A scope hash holds its rate counters in field "n" and each budget window in
// field "<period>:<start>:", packed as little-endian doubles (f, m, r, k and
// sd, sp, rs): one field and one struct.unpack instead of a number to parse
// per counter. Each hash is read once per batch (one HMGET of the fields the
// batch needs, more only for fields a later operation adds) into one table
// that the operations change, and written back once at the end (one HSET of
// the parts changed). Scratch tables (E, T and the per-scope snapshots) are
// reused by every operation of the batch.
var batchLua = goredis.NewScript(`
local ARGV, KEYS, tonumber, pairs, ipairs = ARGV, KEYS, tonumber, pairs, ipairs
local rcall, format, floor, pack, sunpack = redis.call, string.format, math.floor, struct.pack, struct.unpack
local function I(x) return format('%d', x) end -- x is an integer below 2^53
local unpack = unpack or table.unpack
-- worstOf is the worst cost with m output tokens: ceil((input cost + m·output
-- price)/1e6), with input cost = qi·1e6+ri and output price = qo·1e6+ro.
local function worstOf(m, qi, ri, qo, ro)
  local low = ri + m * ro
  local c = qi + m * qo + floor(low / 1000000)
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
    local mid = floor((lo + hi) / 2)
    if worstOf(mid, qi, ri, qo, ro) <= avail then lo = mid else hi = mid end
  end
  return lo
end
-- Hashes read and written in this batch: key -> entry: n (the rate counters
-- are present) with f, m, r, k; per window field read, {sd, sp, rs, changed}
-- or false when absent; [1] true once a counter changed, [3] once a window
-- did, [2] the TTL to set.
local C, order = {}, {}
-- Scratch: H an HMGET's or HSET's arguments, E the entries of an admission's
-- scopes, SF..SX their counters, T a reply's counts.
local H, E, SF, SM, SR, SK, SX, T, WN = {}, {}, {}, {}, {}, {}, {}, {}, {}
-- S returns the entry of hash key with its rate counters and the windows
-- ARGV[from..to] loaded: each field is read at most once per batch.
local function S(key, from, to)
  local e = C[key]
  local h = 0
  if not e then
    e = {false, false, false, n = false, f = false, m = false, r = false, k = false}
    C[key] = e
    order[#order+1] = key
    H[1] = 'n'
    h = 1
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
    local r = rcall('HMGET', key, unpack(H, 1, h))
    local j0 = 1
    if H[1] == 'n' then
      if r[1] then e.n, e.f, e.m, e.r, e.k = true, sunpack('<dddd', r[1]) end
      j0 = 2
    end
    for j = j0, h do
      local v = r[j]
      if v then
        local sd, sp, rs = sunpack('<ddd', v)
        e[H[j]] = {sd, sp, rs, false}
      end
    end
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
  local A = {sunpack(fm, s)}
  if A[1] == 1 then out[i] = admit(ko, ao, A) else out[i] = settle(ko, ao, A) end
  ko, ao = ko + A[2], ao + 1 + A[3]
end
for _, key in ipairs(order) do
  local e = C[key]
  local h = 0
  if e[1] then
    H[1], H[2] = 'n', pack('<dddd', e.f, e.m, e.r, e.k)
    h = 2
  end
  if e[3] then
    for f, w in pairs(e) do
      if w and type(w) == 'table' and w[4] then
        H[h+1], H[h+2] = f, pack('<ddd', w[1], w[2], w[3])
        h = h + 2
      end
    end
  end
  if h > 0 then rcall('HSET', key, unpack(H, 1, h)) end
  if e[2] then rcall('EXPIRE', key, e[2]) end
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
if #add > 0 then rcall('ZADD', KEYS[1], unpack(add)) end
if #rem > 0 then rcall('ZREM', KEYS[1], unpack(rem)) end
return out
`)
