package testenv

import "testing"

// FreePort never returns a port twice in one process, even when the kernel
// offers a port it just released again (common when many are asked for).
func TestFreePortUnique(t *testing.T) {
	seen := map[int]bool{}
	for range 500 {
		p := FreePort(t)
		if seen[p] {
			t.Fatalf("port %d returned twice", p)
		}
		seen[p] = true
	}
}
