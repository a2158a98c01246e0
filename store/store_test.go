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

func TestSeriesBuckets(t *testing.T) {
	h := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	since := h.Add(30 * time.Minute) // buckets [10:30, 12:30), [12:30, 14:30), [14:30, 15:00)
	b := store.NewSeriesBuckets(since, h.Add(5*time.Hour), 2*time.Hour)
	b.Add(h.Unix(), store.SpendPoint{Cost: 1, Requests: 1, Tokens: 10})                    // 10:00, before since: first bucket
	b.Add(h.Add(2*time.Hour).Unix(), store.SpendPoint{Cost: 2, Requests: 1, Tokens: 20})   // 12:00: first bucket
	b.Add(h.Add(3*time.Hour).Unix(), store.SpendPoint{Cost: 4, Requests: 1, Tokens: 40})   // 13:00: second bucket
	b.Add(h.Add(4*time.Hour).Unix(), store.SpendPoint{Cost: 16, Requests: 2, Tokens: 160}) // 14:00: second bucket
	b.Add(h.Add(5*time.Hour).Unix(), store.SpendPoint{Cost: 8, Requests: 1, Tokens: 80})   // 15:00, at until: last bucket
	require.Equal(t, []store.SpendPoint{
		{Start: since, Cost: 3, Requests: 2, Tokens: 30},
		{Start: since.Add(2 * time.Hour), Cost: 20, Requests: 3, Tokens: 200},
		{Start: since.Add(4 * time.Hour), Cost: 8, Requests: 1, Tokens: 80},
	}, b.Points())
}
