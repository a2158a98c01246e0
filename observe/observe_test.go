package observe

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/extproc"
)

func TestReadyzListsChecksWithoutTheirErrors(t *testing.T) {
	h := NewHealth(nil, time.Second)
	h.Add(Check{Name: "store", Check: func(context.Context) error { return nil }},
		Check{Name: "redis", Check: func(context.Context) error { return errors.New("dial redis://:secret@10.0.0.1") }})
	for path, want := range map[string]int{PathLive: http.StatusOK, PathReady: http.StatusServiceUnavailable, "/other": http.StatusNotFound} {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, path, nil))
		require.Equal(t, want, w.Code, path)
		if path == PathReady {
			require.Equal(t, "[+]store ok\n[-]redis failed\nnot ready\n", w.Body.String())
		}
	}
	require.ErrorIs(t, h.Ready(context.Background()), ErrNotReady)
	require.ErrorContains(t, h.Ready(context.Background()), "redis")
}

func TestLedgerCheckFailsOnlyWhenStalled(t *testing.T) {
	now := time.Unix(1000, 0)
	st := LedgerStats{Pending: 5, Entries: 10}
	c := LedgerCheck(func() LedgerStats { return st }, 30*time.Second, func() time.Time { return now })
	ctx := context.Background()
	require.NoError(t, c.Check(ctx))
	now = now.Add(20 * time.Second)
	require.NoError(t, c.Check(ctx), "within the stall window")
	now = now.Add(20 * time.Second)
	require.Error(t, c.Check(ctx), "entries pending and none written for 40s")
	st.Entries = 15
	require.NoError(t, c.Check(ctx), "progress")
	st.Pending = 0
	now = now.Add(time.Hour)
	require.NoError(t, c.Check(ctx), "an idle writer is not stalled")
}

func TestTraceparent(t *testing.T) {
	sc, ok := parseTraceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	require.True(t, ok)
	require.True(t, sc.IsSampled())
	require.Equal(t, "4bf92f3577b34da6a3ce929d0e0e4736", sc.TraceID().String())
	for _, bad := range []string{"", "00-00000000000000000000000000000000-00f067aa0ba902b7-01", "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra", "00-xyz"} {
		_, ok := parseTraceparent(bad)
		require.False(t, ok, bad)
	}
	r := &extproc.Report{ClientTraceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00"}
	tp := (&Tracing{}).UpstreamTraceparent(r)
	require.Regexp(t, `^00-4bf92f3577b34da6a3ce929d0e0e4736-[0-9a-f]{16}-00$`, tp, "unsampled stays unsampled")
	require.Equal(t, tp, (&Tracing{}).UpstreamTraceparent(r), "ids are chosen once per request")
	r = &extproc.Report{}
	require.Regexp(t, `^00-[0-9a-f]{32}-[0-9a-f]{16}-01$`, (&Tracing{}).UpstreamTraceparent(r), "a new trace")
}

type countObserver struct{ n int }

func (c *countObserver) Observe(*extproc.Report) { c.n++ }

func TestJoin(t *testing.T) {
	require.Nil(t, Join(nil, nil))
	a, b := &countObserver{}, &countObserver{}
	require.Same(t, a, Join(nil, a))
	j := Join(a, nil, b)
	j.Observe(&extproc.Report{})
	require.Equal(t, 1, a.n)
	require.Equal(t, 1, b.n)
	_, traced := j.(extproc.Tracer)
	require.False(t, traced)
	_, traced = Join(a, &Tracing{}).(extproc.Tracer)
	require.True(t, traced)
}
