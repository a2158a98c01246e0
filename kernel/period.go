package kernel

import (
	"encoding/json"
	"strconv"
	"strings"
	"time"
)

// EndOfTime is the end of the PeriodTotal window: a date no request will reach.
var EndOfTime = time.Date(9999, time.December, 31, 23, 59, 59, 0, time.UTC)

// unixEpoch is the anchor of a rolling period whose Anchor is zero.
var unixEpoch = time.Unix(0, 0).UTC()

// Window is the budget window of p that contains now, as [start, end).
// PeriodTotal is (zero time, EndOfTime). Daily, weekly (from Monday) and monthly
// windows start at midnight in p.Location (UTC when nil); across a daylight-saving
// change a day is 23 or 25 hours long. A rolling window is Anchor + k·Every (a zero
// Anchor is the Unix epoch); a rolling period without a positive Every never resets.
func (p Period) Window(now time.Time) (start, end time.Time) {
	switch p.Kind {
	case PeriodDaily, PeriodWeekly, PeriodMonthly:
		loc := p.loc()
		t := now.In(loc)
		y, m, d := t.Date()
		switch p.Kind {
		case PeriodDaily:
			return midnight(y, m, d, loc), midnight(y, m, d+1, loc)
		case PeriodWeekly:
			d -= (int(t.Weekday()) + 6) % 7 // days since Monday
			return midnight(y, m, d, loc), midnight(y, m, d+7, loc)
		default:
			return midnight(y, m, 1, loc), midnight(y, m+1, 1, loc)
		}
	case PeriodRolling:
		if p.Every <= 0 {
			return time.Time{}, EndOfTime
		}
		anchor := p.anchor()
		for {
			d := now.Sub(anchor)
			if d == maxDuration || d == minDuration {
				// now.Sub saturates more than ~292 years away: step closer, by
				// whole periods, and retry.
				anchor = anchor.Add(d / p.Every * p.Every)
				continue
			}
			k := d / p.Every
			if d%p.Every < 0 {
				k--
			}
			start = anchor.Add(k * p.Every)
			return start, start.Add(p.Every)
		}
	default:
		return time.Time{}, EndOfTime
	}
}

// midnight is the first instant of a day in loc. Where a clock change skips
// midnight, time.Date may answer with an instant of the day before; the day then
// starts at the clock change.
func midnight(y int, m time.Month, d int, loc *time.Location) time.Time {
	t := time.Date(y, m, d, 0, 0, 0, 0, loc)
	want := time.Date(y, m, d, 12, 0, 0, 0, time.UTC) // normalised date, for comparison
	if ty, tm, td := t.Date(); ty != want.Year() || tm != want.Month() || td != want.Day() {
		_, t = t.ZoneBounds()
	}
	return t
}

const (
	maxDuration time.Duration = 1<<63 - 1
	minDuration time.Duration = -1 << 63
)

func (p Period) loc() *time.Location {
	if p.Location == nil {
		return time.UTC
	}
	return p.Location
}

func (p Period) anchor() time.Time {
	if p.Anchor.IsZero() {
		return unixEpoch
	}
	return p.Anchor
}

// locName is the name of a location, "UTC" for nil.
func locName(l *time.Location) string {
	if l == nil {
		return "UTC"
	}
	return l.String()
}

// Equal reports whether p and q reset at the same instants: same kind, same
// location name (nil is UTC) for calendar kinds, same Every and Anchor for
// rolling ones. Fields a kind does not use are ignored.
func (p Period) Equal(q Period) bool {
	if p.Kind != q.Kind {
		return false
	}
	switch p.Kind {
	case PeriodDaily, PeriodWeekly, PeriodMonthly:
		return p.Location == q.Location || locName(p.Location) == locName(q.Location)
	case PeriodRolling:
		if p.Every != q.Every {
			return false
		}
		return p.Every <= 0 || p.anchor().Equal(q.anchor())
	default:
		return true
	}
}

// String is the period in ParsePeriod's syntax: "total", "daily",
// "weekly@Europe/Paris", "30d", "90m@2026-01-01T00:00:00Z".
func (p Period) String() string {
	switch p.Kind {
	case PeriodDaily, PeriodWeekly, PeriodMonthly:
		if p.Location == nil || p.Location == time.UTC || p.Location.String() == "UTC" {
			return p.Kind.String()
		}
		return p.Kind.String() + "@" + p.Location.String()
	case PeriodRolling:
		s := formatEvery(p.Every)
		if !p.Anchor.IsZero() && !p.Anchor.Equal(unixEpoch) {
			s += "@" + p.Anchor.Format(time.RFC3339Nano)
		}
		return s
	default:
		return p.Kind.String()
	}
}

const day = 24 * time.Hour

// formatEvery writes whole days as "Nd" and anything else as a Go duration.
func formatEvery(d time.Duration) string {
	if d > 0 && d%day == 0 {
		return strconv.FormatInt(int64(d/day), 10) + "d"
	}
	return d.String()
}

// parseEvery reads "30d", "2w" or a Go duration such as "12h" or "90m"; it must be positive.
func parseEvery(s string) (time.Duration, bool) {
	if n := len(s); n > 1 && (s[n-1] == 'd' || s[n-1] == 'w') && allDigits(s[:n-1]) {
		v, err := strconv.ParseInt(s[:n-1], 10, 64)
		unit := day
		if s[n-1] == 'w' {
			unit = 7 * day
		}
		if err != nil || v <= 0 || v > int64(maxDuration/unit) {
			return 0, false
		}
		return time.Duration(v) * unit, true
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return 0, false
	}
	return d, true
}

// ParsePeriod reads a period: "total", "daily", "weekly" or "monthly", optionally
// followed by "@" and an IANA time zone ("daily@Europe/Paris"); or a rolling
// duration ("30d", "2w", "12h", "90m"), optionally followed by "@" and an RFC 3339
// anchor (default: the Unix epoch). Errors wrap ErrBadPeriod.
func ParsePeriod(s string) (Period, error) {
	head, tail, hasTail := strings.Cut(s, "@")
	if hasTail && tail == "" {
		return Period{}, badPeriod(s)
	}
	if kind, err := ParsePeriodKind(head); err == nil {
		p := Period{Kind: kind}
		switch kind {
		case PeriodDaily, PeriodWeekly, PeriodMonthly:
			if hasTail {
				loc, err := loadLocation(tail)
				if err != nil {
					return Period{}, badPeriod(s)
				}
				p.Location = loc
			}
			return p, nil
		case PeriodTotal:
			if hasTail {
				return Period{}, badPeriod(s)
			}
			return p, nil
		default: // "rolling" needs a duration
			return Period{}, badPeriod(s)
		}
	}
	every, ok := parseEvery(head)
	if !ok {
		return Period{}, badPeriod(s)
	}
	p := Period{Kind: PeriodRolling, Every: every}
	if hasTail {
		a, err := time.Parse(time.RFC3339Nano, tail)
		if err != nil {
			return Period{}, badPeriod(s)
		}
		p.Anchor = a
	}
	return p, nil
}

// loadLocation loads an IANA zone; nil for UTC so that Period values compare simply.
func loadLocation(name string) (*time.Location, error) {
	if name == "" || name == "Local" {
		return nil, ErrBadPeriod // the machine's zone is not a configuration value
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return nil, err
	}
	if loc == time.UTC {
		return nil, nil
	}
	return loc, nil
}

func badPeriod(s string) error {
	return &parseError{err: ErrBadPeriod, text: s}
}

// periodJSON is the JSON form of a Period.
type periodJSON struct {
	Kind   PeriodKind      `json:"kind"`
	TZ     string          `json:"tz,omitempty"`
	Every  json.RawMessage `json:"every,omitempty"`
	Anchor *time.Time      `json:"anchor,omitempty"`
}

// MarshalJSON writes {"kind":"daily","tz":"Europe/Paris"} or
// {"kind":"rolling","every":"720h0m0s","anchor":"2026-01-01T00:00:00Z"}; fields a
// kind does not use are left out, and so are a UTC zone and a zero anchor.
func (p Period) MarshalJSON() ([]byte, error) {
	out := periodJSON{Kind: p.Kind}
	switch p.Kind {
	case PeriodDaily, PeriodWeekly, PeriodMonthly:
		if name := locName(p.Location); name != "UTC" {
			out.TZ = name
		}
	case PeriodRolling:
		out.Every = json.RawMessage(strconv.Quote(p.Every.String()))
		if !p.Anchor.IsZero() {
			a := p.Anchor
			out.Anchor = &a
		}
	}
	return json.Marshal(out)
}

// UnmarshalJSON reads what MarshalJSON writes. It also accepts the kind as a
// number and every as nanoseconds. A rolling period needs a positive every.
func (p *Period) UnmarshalJSON(data []byte) error {
	if string(data) == "null" {
		return nil // like the standard decoders: null leaves the value alone
	}
	var in periodJSON
	if err := json.Unmarshal(data, &in); err != nil {
		return &parseError{err: ErrBadPeriod, text: err.Error()}
	}
	out := Period{Kind: in.Kind}
	switch in.Kind {
	case PeriodDaily, PeriodWeekly, PeriodMonthly:
		if in.TZ != "" {
			loc, err := loadLocation(in.TZ)
			if err != nil {
				return badPeriod(in.TZ)
			}
			out.Location = loc
		}
	case PeriodRolling:
		every, ok := unmarshalEvery(in.Every)
		if !ok {
			return badPeriod(string(in.Every))
		}
		out.Every = every
		if in.Anchor != nil {
			out.Anchor = *in.Anchor
		}
	}
	*p = out
	return nil
}

func unmarshalEvery(raw json.RawMessage) (time.Duration, bool) {
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return parseEvery(s)
	}
	var n int64
	if err := json.Unmarshal(raw, &n); err == nil && n > 0 {
		return time.Duration(n), true
	}
	return 0, false
}
