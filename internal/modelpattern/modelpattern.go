package modelpattern

import "strings"

// Wildcard is the one special character of a pattern.
const Wildcard = '*'

// IsPattern reports whether s holds a wildcard (a plain name otherwise).
func IsPattern(s string) bool { return strings.IndexByte(s, Wildcard) >= 0 }

// Specificity is the number of literal characters of a pattern: of two
// patterns matching one name, the one with more wins ("claude-opus-*" over
// "claude-*").
func Specificity(p string) int { return len(p) - strings.Count(p, string(Wildcard)) }

// Match reports whether name matches pattern p (a plain p matches only
// itself). It runs in O(len(p)·len(name)) at worst, without allocating.
func Match(p, name string) bool {
	// The classic two-pointer glob match with backtracking to the last star.
	pi, ni := 0, 0
	star, mark := -1, 0
	for ni < len(name) {
		switch {
		case pi < len(p) && p[pi] == Wildcard:
			star, mark = pi, ni
			pi++
		case pi < len(p) && p[pi] == name[ni]:
			pi++
			ni++
		case star >= 0:
			pi = star + 1
			mark++
			ni = mark
		default:
			return false
		}
	}
	for pi < len(p) && p[pi] == Wildcard {
		pi++
	}
	return pi == len(p)
}

// Overlap reports whether some name matches both a and b. Two patterns of
// one specificity that overlap make the winner for that name ambiguous.
func Overlap(a, b string) bool {
	// Intersection of two star-only globs: a search over position pairs,
	// memoised, where a star may consume one character of the other side's
	// literal, or be left behind.
	type pos struct{ i, j int }
	seen := make(map[pos]bool)
	var walk func(i, j int) bool
	walk = func(i, j int) bool {
		k := pos{i, j}
		if v, ok := seen[k]; ok {
			return v
		}
		seen[k] = false // a cycle is no witness
		var ok bool
		switch {
		case i == len(a) && j == len(b):
			ok = true
		case i < len(a) && a[i] == Wildcard:
			// The star matches nothing more, or one more character that b
			// must also produce (b's literal, or b's star consuming it too).
			ok = walk(i+1, j) ||
				(j < len(b) && b[j] != Wildcard && walk(i, j+1)) ||
				(j < len(b) && b[j] == Wildcard && walk(i, j+1))
		case j < len(b) && b[j] == Wildcard:
			ok = walk(i, j+1) || (i < len(a) && walk(i+1, j))
		case i < len(a) && j < len(b):
			ok = a[i] == b[j] && walk(i+1, j+1)
		}
		seen[k] = ok
		return ok
	}
	return walk(0, 0)
}

// Best returns the index of the most specific of patterns matching name, or
// -1 when none does; ties go to the earliest.
func Best(patterns []string, name string) int {
	best, spec := -1, -1
	for i, p := range patterns {
		if s := Specificity(p); s > spec && Match(p, name) {
			best, spec = i, s
		}
	}
	return best
}
