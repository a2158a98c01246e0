package kernel

import (
	"encoding/json"
	"testing"
	"time"
	_ "time/tzdata" // zones for the tests, whatever the machine has

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

func mustLoad(t require.TestingT, name string) *time.Location {
	loc, err := time.LoadLocation(name)
	require.NoError(t, err)
	return loc
}

func TestPeriodWindow(t *testing.T) {
	ny := mustLoad(t, "America/New_York")
	paris := mustLoad(t, "Europe/Paris")
	utc := func(s string) time.Time {
		v, err := time.Parse(time.RFC3339Nano, s)
		require.NoError(t, err)
		return v
	}
	tests := []struct {
		name       string
		p          Period
		now        time.Time
		start, end time.Time
	}{
		{"total", Period{Kind: PeriodTotal}, utc("2026-03-08T12:00:00Z"), time.Time{}, EndOfTime},
		{"daily utc", Period{Kind: PeriodDaily}, utc("2026-03-08T12:00:00Z"), utc("2026-03-08T00:00:00Z"), utc("2026-03-09T00:00:00Z")},
		{"daily at midnight", Period{Kind: PeriodDaily}, utc("2026-03-09T00:00:00Z"), utc("2026-03-09T00:00:00Z"), utc("2026-03-10T00:00:00Z")},
		{"daily one nano before midnight", Period{Kind: PeriodDaily}, utc("2026-03-08T23:59:59.999999999Z"), utc("2026-03-08T00:00:00Z"), utc("2026-03-09T00:00:00Z")},
		// 2026-03-08: New York springs forward at 02:00 EST, the day has 23 hours.
		{"daily new york spring forward", Period{Kind: PeriodDaily, Location: ny}, utc("2026-03-08T12:00:00Z"), utc("2026-03-08T05:00:00Z"), utc("2026-03-09T04:00:00Z")},
		// 2026-11-01: New York falls back at 02:00 EDT, the day has 25 hours.
		{"daily new york fall back", Period{Kind: PeriodDaily, Location: ny}, utc("2026-11-01T06:30:00Z"), utc("2026-11-01T04:00:00Z"), utc("2026-11-02T05:00:00Z")},
		{"daily new york evening is previous utc day", Period{Kind: PeriodDaily, Location: ny}, utc("2026-11-02T03:00:00Z"), utc("2026-11-01T04:00:00Z"), utc("2026-11-02T05:00:00Z")},
		// 1970-10-11: Santiago skips from 00:00 -04 to 01:00 -03; the day starts at the change.
		{"daily santiago skipped midnight", Period{Kind: PeriodDaily, Location: mustLoad(t, "America/Santiago")}, utc("1970-10-11T10:00:00Z"), utc("1970-10-11T04:00:00Z"), utc("1970-10-12T03:00:00Z")},
		{"daily santiago before skipped midnight", Period{Kind: PeriodDaily, Location: mustLoad(t, "America/Santiago")}, utc("1970-10-11T03:59:59Z"), utc("1970-10-10T04:00:00Z"), utc("1970-10-11T04:00:00Z")},
		{"weekly from monday", Period{Kind: PeriodWeekly}, utc("2026-03-08T12:00:00Z"), utc("2026-03-02T00:00:00Z"), utc("2026-03-09T00:00:00Z")},
		{"weekly on monday", Period{Kind: PeriodWeekly}, utc("2026-03-09T00:00:00Z"), utc("2026-03-09T00:00:00Z"), utc("2026-03-16T00:00:00Z")},
		{"weekly across dst", Period{Kind: PeriodWeekly, Location: ny}, utc("2026-03-10T12:00:00Z"), utc("2026-03-09T04:00:00Z"), utc("2026-03-16T04:00:00Z")},
		{"weekly containing dst", Period{Kind: PeriodWeekly, Location: ny}, utc("2026-03-07T12:00:00Z"), utc("2026-03-02T05:00:00Z"), utc("2026-03-09T04:00:00Z")},
		{"monthly", Period{Kind: PeriodMonthly}, utc("2026-02-28T23:00:00Z"), utc("2026-02-01T00:00:00Z"), utc("2026-03-01T00:00:00Z")},
		{"monthly december", Period{Kind: PeriodMonthly}, utc("2026-12-31T23:00:00Z"), utc("2026-12-01T00:00:00Z"), utc("2027-01-01T00:00:00Z")},
		{"monthly paris", Period{Kind: PeriodMonthly, Location: paris}, utc("2026-03-31T22:30:00Z"), utc("2026-03-31T22:00:00Z"), utc("2026-04-30T22:00:00Z")},
		{"monthly paris across dst", Period{Kind: PeriodMonthly, Location: paris}, utc("2026-03-15T00:00:00Z"), utc("2026-02-28T23:00:00Z"), utc("2026-03-31T22:00:00Z")},
		{"rolling from epoch", Period{Kind: PeriodRolling, Every: 12 * time.Hour}, utc("2026-03-08T13:00:00Z"), utc("2026-03-08T12:00:00Z"), utc("2026-03-09T00:00:00Z")},
		{"rolling anchored", Period{Kind: PeriodRolling, Every: 30 * day, Anchor: utc("2026-01-10T00:00:00Z")}, utc("2026-03-08T13:00:00Z"), utc("2026-02-09T00:00:00Z"), utc("2026-03-11T00:00:00Z")},
		{"rolling before anchor", Period{Kind: PeriodRolling, Every: time.Hour, Anchor: utc("2026-01-10T00:30:00Z")}, utc("2026-01-09T22:00:00Z"), utc("2026-01-09T21:30:00Z"), utc("2026-01-09T22:30:00Z")},
		{"rolling at boundary", Period{Kind: PeriodRolling, Every: time.Hour}, utc("2026-01-09T22:00:00Z"), utc("2026-01-09T22:00:00Z"), utc("2026-01-09T23:00:00Z")},
		{"rolling without every", Period{Kind: PeriodRolling}, utc("2026-01-09T22:00:00Z"), time.Time{}, EndOfTime},
		{"rolling far from anchor", Period{Kind: PeriodRolling, Every: day, Anchor: utc("1000-01-01T00:00:00Z")}, utc("2026-01-09T22:00:00Z"), utc("2026-01-09T00:00:00Z"), utc("2026-01-10T00:00:00Z")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start, end := tt.p.Window(tt.now)
			require.True(t, tt.start.Equal(start), "start %s, want %s", start, tt.start)
			require.True(t, tt.end.Equal(end), "end %s, want %s", end, tt.end)
		})
	}
}

// TestPeriodWindowsTile checks, in zones with daylight saving, that every
// instant is in its window and that consecutive windows meet exactly.
func TestPeriodWindowsTile(t *testing.T) {
	zones := []string{"UTC", "America/New_York", "Europe/Paris", "Australia/Lord_Howe", "America/Santiago", "Asia/Kolkata", "America/Sao_Paulo"}
	rapid.Check(t, func(t *rapid.T) {
		loc := mustLoad(t, rapid.SampledFrom(zones).Draw(t, "zone"))
		kind := rapid.SampledFrom([]PeriodKind{PeriodDaily, PeriodWeekly, PeriodMonthly, PeriodRolling}).Draw(t, "kind")
		p := Period{Kind: kind, Location: loc}
		if kind == PeriodRolling {
			p = Period{Kind: kind, Every: time.Duration(rapid.Int64Range(1, int64(90*day)).Draw(t, "every")), Anchor: time.Unix(rapid.Int64Range(-4e9, 4e9).Draw(t, "anchor"), 0)}
		}
		now := time.Unix(rapid.Int64Range(0, 4e9).Draw(t, "now"), rapid.Int64Range(0, 999_999_999).Draw(t, "nanos"))
		start, end := p.Window(now)
		require.False(t, now.Before(start), "now %s before start %s", now, start)
		require.True(t, now.Before(end), "now %s not before end %s", now, end)
		nextStart, _ := p.Window(end)
		require.True(t, end.Equal(nextStart), "next window starts at %s, not %s", nextStart, end)
		prevStart, prevEnd := p.Window(start.Add(-time.Nanosecond))
		require.True(t, start.Equal(prevEnd), "previous window ends at %s, not %s", prevEnd, start)
		require.True(t, prevStart.Before(start))
	})
}

func TestParsePeriod(t *testing.T) {
	paris := mustLoad(t, "Europe/Paris")
	anchor := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		in   string
		want Period
		str  string // String() when it differs from in
	}{
		{in: "total", want: Period{Kind: PeriodTotal}},
		{in: "daily", want: Period{Kind: PeriodDaily}},
		{in: "weekly", want: Period{Kind: PeriodWeekly}},
		{in: "monthly", want: Period{Kind: PeriodMonthly}},
		{in: "daily@Europe/Paris", want: Period{Kind: PeriodDaily, Location: paris}},
		{in: "monthly@UTC", want: Period{Kind: PeriodMonthly}, str: "monthly"},
		{in: "30d", want: Period{Kind: PeriodRolling, Every: 30 * day}},
		{in: "2w", want: Period{Kind: PeriodRolling, Every: 14 * day}, str: "14d"},
		{in: "12h", want: Period{Kind: PeriodRolling, Every: 12 * time.Hour}, str: "12h0m0s"},
		{in: "90m", want: Period{Kind: PeriodRolling, Every: 90 * time.Minute}, str: "1h30m0s"},
		{in: "30d@2026-01-01T00:00:00Z", want: Period{Kind: PeriodRolling, Every: 30 * day, Anchor: anchor}},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParsePeriod(tt.in)
			require.NoError(t, err)
			require.True(t, tt.want.Equal(got), "got %#v", got)
			require.Equal(t, tt.want.Location, got.Location)
			str := tt.str
			if str == "" {
				str = tt.in
			}
			require.Equal(t, str, got.String())
		})
	}
}

func TestParsePeriodRejects(t *testing.T) {
	for _, in := range []string{
		"", "yearly", "rolling", "Daily", "daily@", "daily@Mars/Olympus", "daily@Local", "total@UTC",
		"0d", "-1h", "0s", "d", "1.5d", "30d@", "30d@yesterday", "@UTC", "9999999999999999999d",
	} {
		t.Run(in, func(t *testing.T) {
			_, err := ParsePeriod(in)
			require.ErrorIs(t, err, ErrBadPeriod)
		})
	}
}

func TestPeriodJSON(t *testing.T) {
	paris := mustLoad(t, "Europe/Paris")
	anchor := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		p    Period
		json string
	}{
		{Period{Kind: PeriodTotal}, `{"kind":"total"}`},
		{Period{Kind: PeriodDaily}, `{"kind":"daily"}`},
		{Period{Kind: PeriodDaily, Location: paris}, `{"kind":"daily","tz":"Europe/Paris"}`},
		{Period{Kind: PeriodWeekly, Location: paris}, `{"kind":"weekly","tz":"Europe/Paris"}`},
		{Period{Kind: PeriodMonthly}, `{"kind":"monthly"}`},
		{Period{Kind: PeriodRolling, Every: 30 * day}, `{"kind":"rolling","every":"720h0m0s"}`},
		{Period{Kind: PeriodRolling, Every: time.Hour, Anchor: anchor}, `{"kind":"rolling","every":"1h0m0s","anchor":"2026-01-01T00:00:00Z"}`},
	}
	for _, tt := range tests {
		t.Run(tt.json, func(t *testing.T) {
			b, err := json.Marshal(tt.p)
			require.NoError(t, err)
			require.JSONEq(t, tt.json, string(b))
			var back Period
			require.NoError(t, json.Unmarshal(b, &back))
			require.True(t, tt.p.Equal(back))
			require.Equal(t, tt.p.Location, back.Location)
			require.True(t, tt.p.Anchor.Equal(back.Anchor))
		})
	}
}

func TestPeriodJSONLenient(t *testing.T) {
	var p Period
	require.NoError(t, json.Unmarshal([]byte(`{"kind":4,"every":3600000000000}`), &p))
	require.True(t, Period{Kind: PeriodRolling, Every: time.Hour}.Equal(p))
	require.NoError(t, json.Unmarshal([]byte(`{"kind":"rolling","every":"30d"}`), &p))
	require.True(t, Period{Kind: PeriodRolling, Every: 30 * day}.Equal(p))
	for _, bad := range []string{`{"kind":"rolling"}`, `{"kind":"rolling","every":"-1h"}`, `{"kind":"yearly"}`, `{"kind":9}`, `{"kind":"daily","tz":"Nowhere/Land"}`, `[]`, `{"kind":"daily","tz":1}`} {
		require.ErrorIs(t, json.Unmarshal([]byte(bad), &p), ErrBadPeriod, bad)
	}
}

func TestLimitsJSON(t *testing.T) {
	paris := mustLoad(t, "Europe/Paris")
	in := Limits{
		Budgets: []BudgetWindow{
			{Limit: 10 * Dollar, Period: Period{Kind: PeriodMonthly, Location: paris}},
			{Limit: Dollar, Period: Period{Kind: PeriodRolling, Every: 5 * time.Hour}},
		},
		RPM: 60, TPM: 1000, MaxParallel: 2, Models: []string{"gpt-4o"},
		ExpiresAt: time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC), Mode: Estimate, Shortfall: Reject,
	}
	b, err := json.Marshal(in)
	require.NoError(t, err)
	require.Contains(t, string(b), `"mode":"estimate"`)
	require.Contains(t, string(b), `"shortfall":"reject"`)
	require.Contains(t, string(b), `"tz":"Europe/Paris"`)
	var out Limits
	require.NoError(t, json.Unmarshal(b, &out))
	require.Len(t, out.Budgets, 2)
	for i := range in.Budgets {
		require.Equal(t, in.Budgets[i].Limit, out.Budgets[i].Limit)
		require.True(t, in.Budgets[i].Period.Equal(out.Budgets[i].Period))
	}
	out.Budgets, in.Budgets = nil, nil
	require.Equal(t, in, out)

	// Strict and clamp are the zero values and are left out.
	b, err = json.Marshal(Limits{RPM: 1})
	require.NoError(t, err)
	require.JSONEq(t, `{"rpm":1}`, string(b))
}

func FuzzParsePeriod(f *testing.F) {
	for _, s := range []string{"total", "daily", "weekly@Europe/Paris", "monthly@America/New_York", "30d", "2w", "12h", "90m@2026-01-01T00:00:00Z", "daily@", "0d", "rolling"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := ParsePeriod(s)
		if err != nil {
			require.ErrorIs(t, err, ErrBadPeriod)
			return
		}
		back, err := ParsePeriod(p.String())
		require.NoError(t, err, "String() = %q", p.String())
		require.True(t, p.Equal(back), "%q → %q", s, p.String())
		require.Equal(t, p.String(), back.String())
		now := time.Date(2026, 3, 8, 7, 0, 0, 0, time.UTC)
		start, end := p.Window(now)
		require.False(t, now.Before(start))
		require.True(t, now.Before(end))
	})
}

func FuzzPeriodJSON(f *testing.F) {
	for _, s := range []string{
		`{"kind":"total"}`, `{"kind":"daily","tz":"Europe/Paris"}`, `{"kind":"weekly"}`, `{"kind":"monthly","tz":"America/New_York"}`,
		`{"kind":"rolling","every":"720h0m0s"}`, `{"kind":"rolling","every":"1h","anchor":"2026-01-01T00:00:00Z"}`, `{"kind":2}`, `{"kind":"rolling"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var p Period
		if err := json.Unmarshal(data, &p); err != nil {
			return
		}
		b, err := json.Marshal(p)
		require.NoError(t, err)
		var back Period
		require.NoError(t, json.Unmarshal(b, &back), "%s", b)
		require.True(t, p.Equal(back), "%s → %s", data, b)
		require.True(t, p.Anchor.Equal(back.Anchor))
		b2, err := json.Marshal(back)
		require.NoError(t, err)
		require.Equal(t, string(b), string(b2))
	})
}
