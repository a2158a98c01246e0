package main

import (
	"flag"
	"fmt"
	"runtime/debug"
	"strconv"
	"strings"
)

// gcFlags tune the Go collector of `tollgate run`: how far the heap may grow
// past what is live before a collection (GOGC), and a soft memory limit the
// collector works to stay under (GOMEMLIMIT). Each flag left unset keeps the
// environment variable's setting, else Go's default. bench/README.md ("The
// rush") has what they change under 5,000 connections.
type gcFlags struct {
	percent int    // -1: unset
	limit   string // "": unset
}

func (g *gcFlags) register(fs *flag.FlagSet) {
	fs.IntVar(&g.percent, "gc-percent", -1, "Go GC target: heap growth in percent of the live heap before a collection (as GOGC; unset: GOGC, else 100)")
	fs.StringVar(&g.limit, "memory-limit", "", "soft memory limit for the Go runtime, e.g. 512MiB or 1GiB (as GOMEMLIMIT; unset: GOMEMLIMIT, else none)")
}

// apply sets what was given.
func (g *gcFlags) apply() error {
	if g.percent >= 0 {
		debug.SetGCPercent(g.percent)
	}
	if g.limit != "" {
		n, err := parseBytes(g.limit)
		if err != nil {
			return fmt.Errorf("--memory-limit %q: %w", g.limit, err)
		}
		debug.SetMemoryLimit(n)
	}
	return nil
}

// parseBytes reads a size as GOMEMLIMIT writes it: a number of bytes with an
// optional B, KiB, MiB, GiB or TiB suffix.
func parseBytes(s string) (int64, error) {
	units := []struct {
		suffix string
		mult   int64
	}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}, {"B", 1}}
	mult := int64(1)
	for _, u := range units {
		if strings.HasSuffix(s, u.suffix) {
			s, mult = strings.TrimSuffix(s, u.suffix), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil || n <= 0 || n > (1<<62)/mult {
		return 0, fmt.Errorf("not a size (a positive number of bytes, optionally with B, KiB, MiB, GiB or TiB)")
	}
	return n * mult, nil
}
