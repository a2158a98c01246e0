package accounting

import (
	"encoding/binary"
	"math"
	"math/bits"

	"github.com/tollgate-ai/tollgate/kernel"
)

// bounds are the prices that bound any input and any output token (zero
// cached-input and cache-write prices count as input, zero reasoning as output).
func bounds(p kernel.Price) (in, out kernel.Money) {
	in, out = max(p.Input, 0), max(p.Output, 0)
	cached, write, reasoning := p.CachedInput, p.CacheWrite, p.Reasoning
	if cached <= 0 {
		cached = in
	}
	if write <= 0 {
		write = in
	}
	if reasoning <= 0 {
		reasoning = out
	}
	return max(in, cached, write), max(out, reasoning)
}

// maxExact bounds the integers a double (a Lua number) holds exactly.
const maxExact = 1 << 53

// worstOf is the script's worstOf in exact integers: ceil((input cost + m·output
// price)/1e6) with input cost = qi·1e6+ri and output price = qo·1e6+ro. ok is
// false when a term reaches 2^53, where the script's doubles may round.
func worstOf(m, qi, ri, qo, ro int64) (int64, bool) {
	if m < 0 || qi < 0 || ri < 0 || qo < 0 || ro < 0 || qi >= maxExact {
		return 0, false
	}
	lh, low := bits.Mul64(uint64(m), uint64(ro))
	qh, mq := bits.Mul64(uint64(m), uint64(qo))
	if lh != 0 || qh != 0 || low >= maxExact || mq >= maxExact {
		return 0, false
	}
	low += uint64(ri)
	c := uint64(qi) + mq + low/1_000_000
	if low%1_000_000 != 0 {
		c++
	}
	if low >= maxExact || c >= maxExact {
		return 0, false
	}
	return int64(c), true
}

// divmod1e6 splits the 128-bit value hi:lo into q·1e6 + r (q saturated).
func divmod1e6(hi, lo uint64) (q, r int64) {
	if hi >= 1_000_000 {
		return math.MaxInt64 / 2, 0
	}
	uq, ur := bits.Div64(hi, lo, 1_000_000)
	if uq > math.MaxInt64/2 {
		uq = math.MaxInt64 / 2
	}
	return int64(uq), int64(ur)
}

func satAdd(a, b int64) int64 {
	s := a + b
	if a > 0 && b > 0 && s < 0 {
		return math.MaxInt64
	}
	if a < 0 && b < 0 && s >= 0 {
		return math.MinInt64
	}
	return s
}

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

func toInt(v any) int64 {
	switch x := v.(type) {
	case int64:
		return x
	case int:
		return int64(x)
	default:
		return 0
	}
}

// op is one operation of a batch (opAdmit, opSettle) with its arguments for
// batchLua: its integers as little-endian doubles in one string (struct.unpack
// in Lua: one C call, no parsing), the first three its kind, number of keys
// and number of strings; then its strings as arguments of their own.
type op struct {
	keys []string
	nums []byte
	strs []string
}

func newOp(kind int, nKeys, nNums, nStrs int) *op {
	o := &op{keys: make([]string, 0, nKeys), nums: make([]byte, 0, 8*(3+nNums)), strs: make([]string, 0, nStrs)}
	o.num(int64(kind), 0, 0) // keys and strings counted in done
	return o
}

// num appends integers (exact in a double below 2^53).
func (o *op) num(xs ...int64) {
	for _, x := range xs {
		o.nums = binary.LittleEndian.AppendUint64(o.nums, math.Float64bits(float64(x)))
	}
}

// done fills in the numbers of keys and strings.
func (o *op) done() {
	binary.LittleEndian.PutUint64(o.nums[8:], math.Float64bits(float64(len(o.keys))))
	binary.LittleEndian.PutUint64(o.nums[16:], math.Float64bits(float64(len(o.strs))))
}
