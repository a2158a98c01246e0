package guard

import (
	"bytes"
	"encoding/binary"
	"math/bits"
	"sync"
)

// The detectors skip to their anchors eight bytes at a time: every match of
// a card, SSN, phone, IBAN or IPv4 address has a digit, every IPv6 address
// a colon, so the text between two digits (most of a prose prompt) is
// passed over with one 64-bit test per eight bytes instead of a test per
// byte and per detector.

const (
	low7 = 0x7f7f7f7f7f7f7f7f
	high = 0x8080808080808080
)

// rangeMask sets the high bit of each byte of w in [lo, hi] (ASCII; hi <
// 0x7f). Adding 0x80-lo to a 7-bit byte sets its high bit when the byte is
// at least lo, without a carry into the next byte; bytes with their own
// high bit set (UTF-8) are excluded.
func rangeMask(w uint64, geLo, gtHi uint64) uint64 {
	x := w & low7
	return (x + geLo) &^ (x + gtHi) &^ w & high
}

// Per-byte addends of rangeMask: 0x80-'0' (at least '0'), 0x80-('9'+1) and
// 0x80-(':'+1).
const (
	addGE0     = 0x5050505050505050
	addGT9     = 0x4646464646464646
	addGTColon = 0x4545454545454545
)

// anchors are the positions of the digits and colons of a text, one bit
// per byte, found in one pass that the detectors share.
type anchors struct {
	n      int
	digits []uint64
	colons []uint64
	// seps: the '-' and '_' of the text, built on the first nextKeyStart;
	// aiza: the next "AIza" at or after some earlier offset (-1 before).
	seps []uint64
	aiza int
}

// gather moves the high bit of each byte of m (as rangeMask sets them) to
// bit i for byte i.
func gather(m uint64) uint64 { return ((m >> 7) * 0x0102040810204080) >> 56 }

// anchorPool recycles anchors (and their bitmaps) between checks.
var anchorPool = sync.Pool{New: func() any { return new(anchors) }}

// newAnchors indexes text in ax (reusing its bitmaps) and returns ax.
func newAnchors(text []byte, ax *anchors) *anchors {
	if ax == nil {
		ax = new(anchors)
	}
	ax.reset(text)
	ax.index(text)
	return ax
}

// reset readies ax for text, its digits and colons not yet indexed (index).
func (ax *anchors) reset(text []byte) {
	ax.n, ax.digits, ax.colons = len(text), ax.digits[:0], ax.colons[:0]
	ax.seps, ax.aiza = ax.seps[:0], -1
}

// index finds the digits and colons of text, for the detectors that skip
// to them (detector.digits).
func (ax *anchors) index(text []byte) {
	words := (len(text) + 63) / 64
	buf := append(ax.digits[:0:cap(ax.digits)], make([]uint64, 2*words)...) // zeroed
	ax.digits, ax.colons = buf[:words:2*words], buf[words:]
	i := 0
	for ; i+8 <= len(text); i += 8 {
		w := binary.LittleEndian.Uint64(text[i:])
		d := rangeMask(w, addGE0, addGT9)
		c := rangeMask(w, addGE0, addGTColon) &^ d
		if d|c != 0 {
			ax.digits[i/64] |= gather(d) << (i % 64)
			ax.colons[i/64] |= gather(c) << (i % 64)
		}
	}
	for ; i < len(text); i++ {
		if isDigit(text[i]) {
			ax.digits[i/64] |= 1 << (i % 64)
		} else if text[i] == ':' {
			ax.colons[i/64] |= 1 << (i % 64)
		}
	}
}

// next returns the first set bit at or after i in set, or n.
func (ax *anchors) next(set []uint64, i int) int {
	if i >= ax.n {
		return ax.n
	}
	k := i / 64
	w := set[k] &^ (1<<(i%64) - 1)
	for w == 0 {
		if k++; k == len(set) {
			return ax.n
		}
		w = set[k]
	}
	return k*64 + bits.TrailingZeros64(w)
}

// nextDigit returns the index of the first ASCII digit at or after i, or
// the text's length.
func (ax *anchors) nextDigit(i int) int { return ax.next(ax.digits, i) }

// nextDigitOrColon returns the index of the first ASCII digit or ':' at or
// after i, or the text's length.
func (ax *anchors) nextDigitOrColon(i int) int {
	return min(ax.next(ax.digits, i), ax.next(ax.colons, i))
}

// byteMask sets the high bit of each byte of w equal to c (ASCII).
func byteMask(w uint64, c byte) uint64 {
	const ones = 0x0101010101010101
	return rangeMask(w, ones*uint64(0x80-c), ones*uint64(0x80-c-1))
}

var aiza = []byte("AIza")

// nextKeyStart returns the first offset at or after i where an API key's
// prefix may start: up to keySepMax bytes before a '-' or '_' (at least 2,
// the shortest prefix's), or an "AIza"; the text's length when there is
// none.
func (ax *anchors) nextKeyStart(text []byte, i int) int {
	if i >= ax.n {
		return ax.n
	}
	words := (len(text) + 63) / 64
	if len(ax.seps) != words {
		ax.seps = append(ax.seps[:0], make([]uint64, words)...)
		j := 0
		for ; j+8 <= len(text); j += 8 {
			w := binary.LittleEndian.Uint64(text[j:])
			if m := byteMask(w, '-') | byteMask(w, '_'); m != 0 {
				ax.seps[j/64] |= gather(m) << (j % 64)
			}
		}
		for ; j < len(text); j++ {
			if text[j] == '-' || text[j] == '_' {
				ax.seps[j/64] |= 1 << (j % 64)
			}
		}
	}
	if ax.aiza < i {
		if k := bytes.Index(text[i:], aiza); k >= 0 {
			ax.aiza = i + k
		} else {
			ax.aiza = len(text)
		}
	}
	// Word k of the starts: the separators of words k and k+1 shifted down
	// by 2 to keySepMax.
	start := func(k int) uint64 {
		var w uint64
		for o := 2; o <= keySepMax; o++ {
			w |= ax.seps[k] >> o
			if k+1 < len(ax.seps) {
				w |= ax.seps[k+1] << (64 - o)
			}
		}
		return w
	}
	k := i / 64
	w := start(k) &^ (1<<(i%64) - 1)
	for w == 0 {
		if k++; k == words || k*64 >= ax.aiza {
			return ax.aiza
		}
		w = start(k)
	}
	return min(k*64+bits.TrailingZeros64(w), ax.aiza)
}
