package redis

import (
	"encoding/binary"
	"fmt"
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

func mul64(a, b uint64) (hi, lo uint64) { return bits.Mul64(a, b) }

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

func b2i(b bool) int {
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

func toInts(v any) []int64 {
	arr, _ := v.([]any)
	out := make([]int64, len(arr))
	for i, x := range arr {
		out[i] = toInt(x)
	}
	return out
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// packArgs packs an operation's arguments for batchLua: the integers in one
// MessagePack array (cmsgpack.unpack gives Lua numbers without parsing
// strings; a string argument leaves 0 in its place), then the strings, in
// order, as arguments of their own.
func packArgs(args []any) []any {
	buf := make([]byte, 0, 3+5*len(args))
	switch n := len(args); {
	case n < 16:
		buf = append(buf, 0x90|byte(n))
	case n < 1<<16:
		buf = append(buf, 0xdc, byte(n>>8), byte(n))
	default:
		buf = append(buf, 0xdd)
		buf = binary.BigEndian.AppendUint32(buf, uint32(n))
	}
	out := []any{nil}
	for _, a := range args {
		var x int64
		switch v := a.(type) {
		case int:
			x = int64(v)
		case int64:
			x = v
		case string:
			out = append(out, v)
		case []byte:
			out = append(out, v)
		default:
			panic(fmt.Sprintf("redis: packArgs: %T", a))
		}
		if x >= 0 && x < 128 {
			buf = append(buf, byte(x))
		} else {
			buf = append(buf, 0xd3)
			buf = binary.BigEndian.AppendUint64(buf, uint64(x))
		}
	}
	out[0] = string(buf)
	return out
}
