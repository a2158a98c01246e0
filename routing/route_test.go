package routing

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// fakeClock is a Clock the test moves.
type fakeClock struct{ t time.Time }

func (c *fakeClock) Now() time.Time { return c.t }

// catalog is a Groups over a map (a missing name: the key may not use it).
type catalog map[string]*Group

func (c catalog) Group(_ context.Context, name string) (*Group, error) { return c[name], nil }

// world is a router, a fake clock and groups: primary (a, b; falls back to
// backup), backup (c), solo (s), cw (w; its context-window fallback is
// big), big (z).
func world() (*Router, *fakeClock, catalog) {
	cat := catalog{
		"primary": NewGroup(&Group{Name: "primary", Retries: 2, Fallbacks: []string{"backup"}, Deployments: []*Deployment{testDep("a"), testDep("b")}}),
		"backup":  NewGroup(&Group{Name: "backup", Deployments: []*Deployment{testDep("c")}}),
		"solo":    NewGroup(&Group{Name: "solo", Retries: 3, Deployments: []*Deployment{testDep("s")}}),
		"cw":      NewGroup(&Group{Name: "cw", Retries: 1, ContextWindowFallbacks: []string{"big"}, Deployments: []*Deployment{testDep("w")}}),
		"big":     NewGroup(&Group{Name: "big", Deployments: []*Deployment{testDep("z")}}),
	}
	return NewRouter(), &fakeClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}, cat
}

func open(t *testing.T, h *Router, c *fakeClock, cat catalog, att *Attempt, group string) (*Route, *Deployment, error) {
	t.Helper()
	r := new(Route)
	r.Reset(Env{Health: h, Clock: c, Groups: cat}, att, cat[group])
	d, err := r.Open(context.Background())
	return r, d, err
}

// coolAll fails each deployment until it cools down (a 429 does at once).
func coolAll(h *Router, c *fakeClock, cat catalog, ids ...string) {
	for _, id := range ids {
		for _, g := range cat {
			for _, d := range g.Deployments {
				if d.Target.Deployment == id {
					h.Observe(d, 429, 10*time.Second, 0, c.t)
				}
			}
		}
	}
}

func TestRouteOpenSkipsCoolingAndTried(t *testing.T) {
	h, c, cat := world()
	coolAll(h, c, cat, "a")
	for range 10 {
		_, d, err := open(t, h, c, cat, nil, "primary")
		require.NoError(t, err)
		require.Equal(t, "b", d.Target.Deployment, "a is cooling down")
	}
	r, d, err := open(t, h, c, cat, &Attempt{N: 2, Max: 3, Avoid: []string{"b"}}, "primary")
	require.NoError(t, err)
	require.Equal(t, "c", d.Target.Deployment, "a cools, b was tried: the fallback group")
	from, why := r.FallbackReason()
	require.Equal(t, []string{"primary", FallbackCooldown}, []string{from, why})

	c.t = c.t.Add(11 * time.Second) // a's retry-after is over
	r, d, err = open(t, h, c, cat, nil, "primary")
	require.NoError(t, err)
	require.Contains(t, []string{"a", "b"}, d.Target.Deployment)
	from, _ = r.FallbackReason()
	require.Empty(t, from, "on the requested group")
}

func TestRouteOpenUnavailable(t *testing.T) {
	h, c, cat := world()
	coolAll(h, c, cat, "a", "b", "c")
	_, _, err := open(t, h, c, cat, nil, "primary")
	ue := AsUnavailable(err)
	require.NotNil(t, ue)
	require.Equal(t, 10*time.Second, ue.RetryAfter, "the soonest end, on the fake clock")

	coolAll(h, c, cat, "s")
	_, d, err := open(t, h, c, cat, nil, "solo")
	require.NoError(t, err)
	require.Equal(t, "s", d.Target.Deployment, "the only deployment answers even while cooling")
	_, _, err = open(t, h, c, cat, &Attempt{N: 2, Max: 4, Avoid: []string{"s"}}, "solo")
	require.NotNil(t, AsUnavailable(err), "unless it was tried")
}

func TestRoutePassOver(t *testing.T) {
	h, c, cat := world()
	r, _, err := open(t, h, c, cat, nil, "primary")
	require.NoError(t, err)
	ctx := context.Background()
	require.True(t, r.PassOver(ctx, false), "the group's other deployment")
	require.True(t, r.PassOver(ctx, false), "then the fallback group")
	require.Equal(t, "c", r.Next().Target.Deployment)
	from, why := r.FallbackReason()
	require.Equal(t, []string{"primary", FallbackRateLimited}, []string{from, why})
	require.False(t, r.PassOver(ctx, false), "nothing left")

	r, _, _ = open(t, h, c, cat, nil, "primary")
	require.True(t, r.PassOver(ctx, true))
	require.False(t, r.PassOver(ctx, true), "pinned: no fallback group")
}

// quotaLimiter is a Limiter whose deployments in full have no quota left,
// refusing outright those in refuse, failing with err; it records the
// deployments it was asked about.
type quotaLimiter struct {
	full, refuse map[string]bool
	err          error
	asked        []string
}

func (q *quotaLimiter) AdmitOn(_ context.Context, d *Deployment) (admitted, full bool, err error) {
	id := d.Target.Deployment
	q.asked = append(q.asked, id)
	switch {
	case q.err != nil:
		return false, false, q.err
	case q.refuse[id]:
		return false, false, nil
	case q.full[id]:
		return false, true, nil
	}
	return true, false, nil
}

// TestRouteAdmit: admission through a Limiter passes over each deployment
// whose own quota is full, to the group's next and then the fallback
// group's, and leaves for the one that admits (in flight there); another
// refusal or an error ends it at once; a pinned route never leaves its
// deployment; nothing left is no deployment.
func TestRouteAdmit(t *testing.T) {
	ctx := context.Background()
	h, c, cat := world()
	r, first, err := open(t, h, c, cat, nil, "primary")
	require.NoError(t, err)
	other := map[string]string{"a": "b", "b": "a"}[first.Target.Deployment]
	lim := &quotaLimiter{full: map[string]bool{"a": true, "b": true}}
	d, err := r.Admit(ctx, false, lim)
	require.NoError(t, err)
	require.Equal(t, "c", d.Target.Deployment, "both of primary full: the fallback group")
	require.Equal(t, []string{first.Target.Deployment, other, "c"}, lim.asked)
	require.Same(t, d, r.Current)
	require.Equal(t, int64(1), h.States(c.t)["c"].InFlight)
	from, why := r.FallbackReason()
	require.Equal(t, []string{"primary", FallbackRateLimited}, []string{from, why})

	r, _, _ = open(t, h, c, cat, nil, "primary")
	lim = &quotaLimiter{full: map[string]bool{"a": true, "b": true, "c": true}}
	d, err = r.Admit(ctx, false, lim)
	require.NoError(t, err)
	require.Nil(t, d, "every candidate full")
	require.Len(t, lim.asked, 3)

	r, first, _ = open(t, h, c, cat, nil, "primary")
	lim = &quotaLimiter{refuse: map[string]bool{"a": true, "b": true}}
	d, _ = r.Admit(ctx, false, lim)
	require.Nil(t, d, "a budget's refusal is not the deployment's: no next candidate")
	require.Equal(t, []string{first.Target.Deployment}, lim.asked)

	r, _, _ = open(t, h, c, cat, nil, "primary")
	lim = &quotaLimiter{err: context.DeadlineExceeded}
	_, err = r.Admit(ctx, false, lim)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Len(t, lim.asked, 1)

	r = new(Route)
	r.Pin(Env{Health: h, Clock: c, Groups: cat}, nil, cat["primary"], cat["primary"].Deployments[1])
	lim = &quotaLimiter{full: map[string]bool{"b": true}}
	d, _ = r.Admit(ctx, true, lim)
	require.Nil(t, d, "pinned: b alone")
	require.Equal(t, []string{"b"}, lim.asked)
}

func TestRouteAdmittedObserveDone(t *testing.T) {
	h, c, cat := world()
	r, _, err := open(t, h, c, cat, nil, "solo")
	require.NoError(t, err)
	d := r.Admitted()
	require.Equal(t, int64(1), h.States(c.t)["s"].InFlight)
	c.t = c.t.Add(120 * time.Millisecond)
	r.Observe(200, 0, c.t)
	require.Equal(t, 120*time.Millisecond, h.States(c.t)["s"].Latency, "timed from SentAt on the fake clock")
	r.Done(10)
	r.Done(10) // once only
	require.Zero(t, h.States(c.t)["s"].InFlight)
	require.Nil(t, r.Current)
	require.Same(t, d, r.Last)
	r.Observe(500, 0, c.t) // on no deployment: nothing
	require.Zero(t, h.States(c.t)["s"].ErrorRate)
}

func TestRouteRetry(t *testing.T) {
	h, c, cat := world()
	ctx := context.Background()

	// A 503 on a or b: the group's other deployment, with a backoff.
	r, d, err := open(t, h, c, cat, nil, "primary")
	require.NoError(t, err)
	r.Admitted()
	next, delay, ok := r.Retry(ctx, RetryToken, 503, nil, 0)
	require.True(t, ok)
	require.Equal(t, Attempt{N: 2, Max: 3, Group: "primary", Avoid: []string{d.Target.Deployment}, FailedGroup: "primary", FailedStatus: 503, Why: FallbackFailed}, next)
	require.Positive(t, delay)
	require.LessOrEqual(t, delay, RetryBackoffBase)
	_, delay, _ = r.Retry(ctx, RetryToken, 429, nil, 5*time.Second)
	require.Equal(t, MaxRetryWait, delay, "a retry-after, capped")

	// The second attempt on the other one fails too: the fallback group.
	r, d2, err := open(t, h, c, cat, &next, "primary")
	require.NoError(t, err)
	require.NotEqual(t, d.Target.Deployment, d2.Target.Deployment)
	r.Admitted()
	next2, _, ok := r.Retry(ctx, RetryToken, 500, nil, 0)
	require.True(t, ok)
	require.Equal(t, "backup", next2.Group)
	require.Equal(t, 3, next2.N)
	require.Len(t, next2.Avoid, 2)

	// The third is the last of 1 + 2 retries.
	r, _, err = open(t, h, c, cat, &next2, "backup")
	require.NoError(t, err)
	r.Admitted()
	_, _, ok = r.Retry(ctx, RetryToken, 500, nil, 0)
	require.False(t, ok, "no attempt left")

	// Not a failure of the deployment: not retried.
	r, _, _ = open(t, h, c, cat, nil, "primary")
	r.Admitted()
	_, _, ok = r.Retry(ctx, RetryToken, 400, []byte(`{"error":"bad"}`), 0)
	require.False(t, ok)

	// A context-window refusal goes to the context-window fallback; per
	// try it is the only kind retried (by a redirect, without a delay).
	r, _, _ = open(t, h, c, cat, nil, "cw")
	r.Admitted()
	body := []byte(`{"error":{"code":"context_length_exceeded"}}`)
	next, delay, ok = r.Retry(ctx, RetryRedirect, 400, body, 0)
	require.True(t, ok)
	require.Equal(t, "big", next.Group)
	require.Equal(t, FallbackContextWindow, next.Why)
	require.Zero(t, delay)
	_, _, ok = r.Retry(ctx, RetryRedirect, 503, nil, 0)
	require.False(t, ok, "per try, the data plane's retry policy retries a 503")
	coolAll(h, c, cat, "z")
	_, _, ok = r.Retry(ctx, RetryToken, 400, body, 0)
	require.False(t, ok, "the fallback has nothing in rotation")

	// Nothing admitted: nothing to retry.
	r, _, _ = open(t, h, c, cat, nil, "primary")
	_, _, ok = r.Retry(ctx, RetryToken, 503, nil, 0)
	require.False(t, ok)
}

func TestAttemptPayload(t *testing.T) {
	a := Attempt{N: 3, Max: 4, Group: "g x", Avoid: []string{"a", "b"}, Orig: "req-1", FailedGroup: "f", FailedStatus: 429, Why: FallbackFailed}
	got, ok := ParseAttempt(a.Payload())
	require.True(t, ok)
	require.Equal(t, a, got)
	for _, bad := range []Attempt{
		{N: 1, Max: 3, Orig: "r"},  // a first attempt is no token's
		{N: 4, Max: 3, Orig: "r"},  // past its budget
		{N: 2, Max: 12, Orig: "r"}, // more than MaxAttempts
		{N: 2, Max: 3},             // no first attempt's id
	} {
		_, ok := ParseAttempt(bad.Payload())
		require.False(t, ok, "%+v", bad)
	}
	_, ok = ParseAttempt("%zz")
	require.False(t, ok)
}

func TestRouteTries(t *testing.T) {
	h, c, cat := world()
	ctx := context.Background()
	env := Env{Health: h, Clock: c, Groups: cat}

	r := new(Route)
	r.Reset(env, &Attempt{N: 2}, cat["primary"])
	d, order, err := r.OpenTry(ctx, "c")
	require.NoError(t, err)
	require.Equal(t, "c", d.Target.Deployment, "a try on the fallback group")
	require.Equal(t, 3, order, "a, b, c")
	require.Len(t, r.Groups, 2)
	require.True(t, r.TryRetried(2, order, 503))
	require.False(t, r.TryRetried(3, order, 503), "the group's retries are spent")
	require.False(t, r.TryRetried(1, order, 400))

	r.Reset(env, nil, cat["primary"])
	_, _, err = r.OpenTry(ctx, "nowhere")
	require.NotNil(t, AsUnavailable(err), "the xDS and the catalog disagree")

	r.Reset(env, nil, cat["primary"])
	require.Zero(t, r.TrySkip(ctx, "a"))
	coolAll(h, c, cat, "c")
	require.Equal(t, uint(0b10), r.TrySkip(ctx, "a"), "order a, b, c: c left out")
	delete(cat, "backup")
	require.Zero(t, r.TrySkip(ctx, "a"), "a group of the chain the key may not use")

	require.True(t, cat["primary"].PerTry())
	require.False(t, cat["big"].PerTry())
	require.True(t, cat["cw"].RedirectsFallbacks())
	require.False(t, cat["primary"].RedirectsFallbacks())
}

func TestPinnedRoute(t *testing.T) {
	h, c, cat := world()
	r := new(Route)
	r.Pin(Env{Health: h, Clock: c, Groups: cat}, nil, cat["primary"], cat["primary"].Deployments[1])
	require.Equal(t, "b", r.Next().Target.Deployment)
	require.False(t, r.PassOver(context.Background(), true))
}

func TestTryOrderAndMasks(t *testing.T) {
	chain := GroupChain("p", func(n string) []string {
		return map[string][]string{"p": {"f1", "f2"}, "f1": {"p", "f3"}, "f2": nil, "f3": {"f4"}}[n]
	})
	require.Equal(t, []string{"p", "f1", "f3", "f4"}, chain, "depth first, each once, at most 1+MaxFallbackDepth")
	order := TryOrder("b", [][]string{{"a", "b"}, {"c"}, {"a", "d"}})
	require.Equal(t, []string{"b", "a", "c", "d"}, order)
	require.Equal(t, uint(8), Masks(order))
	m := Skip(order, func(id string) bool { return id == "c" })
	require.Equal(t, []string{"b", "a", "d"}, Skipped(order, m))
	require.True(t, PerTry(1, 1, 1))
	require.False(t, PerTry(0, 3, 1))
	require.False(t, PerTry(2, 1, 0))
}

// TestRetriableStatuses: what a data plane's retry policy retries is what
// the processor counts as a deployment's failure and retries itself.
func TestRetriableStatuses(t *testing.T) {
	for _, s := range RetriableStatuses {
		require.Equal(t, FailRetryable, Classify(s, nil), s)
		require.True(t, Retryable(s), s)
	}
	n, d := CooldownPolicy(0, 0)
	require.Equal(t, DefaultAllowedFails, n)
	require.Equal(t, DefaultCooldown, d)
	n, d = CooldownPolicy(5, time.Minute)
	require.Equal(t, 5, n)
	require.Equal(t, time.Minute, d)
}
