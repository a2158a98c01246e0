package store_test

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/store"
)

func TestHourRange(t *testing.T) {
	h := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	east := time.FixedZone("east", 2*3600)
	tests := []struct {
		name         string
		since, until time.Time
		lo, hi       int64
	}{
		{name: "on the hour", since: h, until: h.Add(2 * time.Hour), lo: h.Unix(), hi: h.Add(2 * time.Hour).Unix()},
		{name: "partial hours count whole", since: h.Add(30 * time.Minute), until: h.Add(90 * time.Minute), lo: h.Unix(), hi: h.Add(2 * time.Hour).Unix()},
		{name: "zone does not matter", since: h.In(east), until: h.Add(time.Hour).In(east), lo: h.Unix(), hi: h.Add(time.Hour).Unix()},
		{name: "no bounds", lo: math.MinInt64, hi: math.MaxInt64},
		{name: "before 1970", since: time.Unix(-1, 0), until: time.Unix(-1, 0), lo: -3600, hi: 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			lo, hi := store.HourRange(tc.since, tc.until)
			require.Equal(t, tc.lo, lo)
			require.Equal(t, tc.hi, hi)
		})
	}
}
