package storetest

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/store"
)

func obj(kind store.Kind, id, doc string) store.Object {
	return store.Object{Kind: kind, ID: id, Doc: []byte(doc)}
}

func (s *suite) configTests() []test {
	return []test{
		{"RoutingFieldsRoundTrip", func(t *testing.T) {
			st := s.fresh(t)
			retries := int32(0)
			m := store.ModelGroup{ID: "m", Deployments: []string{"a", "b"}, GroupRouting: store.GroupRouting{
				Routing: store.RoutingLatency, Retries: &retries, Fallbacks: []string{"f1", "f2"},
				ContextWindowFallbacks: []string{"big"}, ContentPolicyFallbacks: []string{"f1"},
			}}
			_, err := store.Put(t.Context(), st, m.ID, &m, 0)
			require.NoError(t, err)
			gotM, _, err := store.Get[store.ModelGroup](t.Context(), st, "m")
			require.NoError(t, err)
			require.Equal(t, m, gotM, "retries 0 stays 0, not the default")
			d := store.Deployment{ID: "a", Provider: "p", ProviderModel: "x", RPM: 2, DeploymentPolicy: store.DeploymentPolicy{
				Cooldown: 30 * time.Second, AllowedFails: 3, Timeout: time.Minute, FirstByteTimeout: 10 * time.Second, ConnectTimeout: time.Second,
			}}
			_, err = store.Put(t.Context(), st, d.ID, &d, 0)
			require.NoError(t, err)
			gotD, _, err := store.Get[store.Deployment](t.Context(), st, "a")
			require.NoError(t, err)
			require.Equal(t, d, gotD)
		}},
		{"GetMissing", func(t *testing.T) {
			st := s.fresh(t)
			_, err := st.Get(t.Context(), store.KindKey, "nope")
			require.ErrorIs(t, err, store.ErrNotFound)
		}},
		{"CreateAndGet", func(t *testing.T) {
			st := s.fresh(t)
			before := time.Now().Add(-time.Second)
			v, err := st.Put(t.Context(), obj(store.KindTeam, "t1", `{"id":"t1","name":"red"}`), 0)
			require.NoError(t, err)
			require.Positive(t, v)
			got, err := st.Get(t.Context(), store.KindTeam, "t1")
			require.NoError(t, err)
			require.Equal(t, store.KindTeam, got.Kind)
			require.Equal(t, "t1", got.ID)
			require.JSONEq(t, `{"id":"t1","name":"red"}`, string(got.Doc))
			require.Equal(t, v, got.Version)
			require.WithinRange(t, got.UpdatedAt, before, time.Now().Add(time.Second))
		}},
		{"CreateOnlyConflicts", func(t *testing.T) {
			st := s.fresh(t)
			v, err := st.Put(t.Context(), obj(store.KindKey, "k", `{"a":1}`), 0)
			require.NoError(t, err)
			_, err = st.Put(t.Context(), obj(store.KindKey, "k", `{"a":2}`), 0)
			require.ErrorIs(t, err, store.ErrConflict)
			got, err := st.Get(t.Context(), store.KindKey, "k")
			require.NoError(t, err)
			require.JSONEq(t, `{"a":1}`, string(got.Doc), "a conflicting put changes nothing")
			require.Equal(t, v, got.Version)
		}},
		{"PutIfVersion", func(t *testing.T) {
			st := s.fresh(t)
			v1, err := st.Put(t.Context(), obj(store.KindKey, "k", `{"a":1}`), 0)
			require.NoError(t, err)
			v2, err := st.Put(t.Context(), obj(store.KindKey, "k", `{"a":2}`), v1)
			require.NoError(t, err)
			require.Greater(t, v2, v1)
			rev, err := st.Revision(t.Context())
			require.NoError(t, err)
			_, err = st.Put(t.Context(), obj(store.KindKey, "k", `{"a":3}`), v1)
			require.ErrorIs(t, err, store.ErrConflict, "stale version")
			rev2, err := st.Revision(t.Context())
			require.NoError(t, err)
			require.Equal(t, rev, rev2, "a conflicting put does not bump the revision")
			got, err := st.Get(t.Context(), store.KindKey, "k")
			require.NoError(t, err)
			require.JSONEq(t, `{"a":2}`, string(got.Doc))
			require.Equal(t, v2, got.Version)
			_, err = st.Put(t.Context(), obj(store.KindKey, "absent", `{}`), v2)
			require.ErrorIs(t, err, store.ErrConflict, "ifVersion > 0 on an absent object")
		}},
		{"PutUnconditional", func(t *testing.T) {
			st := s.fresh(t)
			v1, err := st.Put(t.Context(), obj(store.KindModel, "gpt", `{"v":1}`), -1)
			require.NoError(t, err)
			v2, err := st.Put(t.Context(), obj(store.KindModel, "gpt", `{"v":2}`), -1)
			require.NoError(t, err)
			require.Greater(t, v2, v1)
			got, err := st.Get(t.Context(), store.KindModel, "gpt")
			require.NoError(t, err)
			require.JSONEq(t, `{"v":2}`, string(got.Doc))
		}},
		{"ConcurrentPutsOneWins", func(t *testing.T) {
			st := s.fresh(t)
			v, err := st.Put(t.Context(), obj(store.KindKey, "k", `{"n":0}`), 0)
			require.NoError(t, err)
			const writers = 8
			var wg sync.WaitGroup
			errs := make([]error, writers)
			for i := range writers {
				wg.Go(func() {
					_, errs[i] = st.Put(t.Context(), obj(store.KindKey, "k", fmt.Sprintf(`{"n":%d}`, i+1)), v)
				})
			}
			wg.Wait()
			wins := 0
			for _, err := range errs {
				if err == nil {
					wins++
					continue
				}
				require.ErrorIs(t, err, store.ErrConflict)
			}
			require.Equal(t, 1, wins)
		}},
		{"Delete", func(t *testing.T) {
			st := s.fresh(t)
			require.ErrorIs(t, st.Delete(t.Context(), store.KindUser, "u"), store.ErrNotFound)
			v, err := st.Put(t.Context(), obj(store.KindUser, "u", `{}`), 0)
			require.NoError(t, err)
			require.NoError(t, st.Delete(t.Context(), store.KindUser, "u"))
			rev, err := st.Revision(t.Context())
			require.NoError(t, err)
			require.Greater(t, rev, v, "delete bumps the revision")
			_, err = st.Get(t.Context(), store.KindUser, "u")
			require.ErrorIs(t, err, store.ErrNotFound)
			require.ErrorIs(t, st.Delete(t.Context(), store.KindUser, "u"), store.ErrNotFound)
			v2, err := st.Put(t.Context(), obj(store.KindUser, "u", `{"again":true}`), 0)
			require.NoError(t, err, "create after delete")
			require.Greater(t, v2, rev)
		}},
		{"KindsAreSeparate", func(t *testing.T) {
			st := s.fresh(t)
			_, err := st.Put(t.Context(), obj(store.KindTeam, "x", `{"kind":"team"}`), 0)
			require.NoError(t, err)
			_, err = st.Put(t.Context(), obj(store.KindOrg, "x", `{"kind":"org"}`), 0)
			require.NoError(t, err)
			got, err := st.Get(t.Context(), store.KindOrg, "x")
			require.NoError(t, err)
			require.JSONEq(t, `{"kind":"org"}`, string(got.Doc))
			require.NoError(t, st.Delete(t.Context(), store.KindTeam, "x"))
			_, err = st.Get(t.Context(), store.KindOrg, "x")
			require.NoError(t, err)
		}},
		{"List", func(t *testing.T) {
			st := s.fresh(t)
			empty, err := st.List(t.Context(), store.KindKey, "", 0)
			require.NoError(t, err)
			require.Empty(t, empty)
			for _, id := range []string{"k3", "k1", "k10", "k2", "K0"} {
				_, err := st.Put(t.Context(), obj(store.KindKey, id, fmt.Sprintf(`{"id":%q}`, id)), 0)
				require.NoError(t, err)
			}
			_, err = st.Put(t.Context(), obj(store.KindUser, "k1", `{}`), 0)
			require.NoError(t, err)
			ids := func(objs []store.Object) []string {
				var out []string
				for _, o := range objs {
					require.Equal(t, store.KindKey, o.Kind)
					require.JSONEq(t, fmt.Sprintf(`{"id":%q}`, o.ID), string(o.Doc))
					require.Positive(t, o.Version)
					out = append(out, o.ID)
				}
				return out
			}
			tests := []struct {
				after string
				limit int
				want  []string
			}{
				{"", 0, []string{"K0", "k1", "k10", "k2", "k3"}},
				{"", 2, []string{"K0", "k1"}},
				{"k1", 2, []string{"k10", "k2"}},
				{"k2", 0, []string{"k3"}},
				{"k3", 10, nil},
				{"a", 0, []string{"k1", "k10", "k2", "k3"}},
			}
			for _, tc := range tests {
				got, err := st.List(t.Context(), store.KindKey, tc.after, tc.limit)
				require.NoError(t, err)
				require.Equal(t, tc.want, ids(got), "after %q limit %d", tc.after, tc.limit)
			}
		}},
		{"RevisionMonotonic", func(t *testing.T) {
			st := s.fresh(t)
			last, err := st.Revision(t.Context())
			require.NoError(t, err)
			require.GreaterOrEqual(t, last, int64(0))
			for i := range 10 {
				id := fmt.Sprint("o", i%3)
				if i%4 == 3 {
					require.NoError(t, st.Delete(t.Context(), store.KindKey, id))
				} else {
					v, err := st.Put(t.Context(), obj(store.KindKey, id, `{}`), -1)
					require.NoError(t, err)
					require.Greater(t, v, last)
				}
				rev, err := st.Revision(t.Context())
				require.NoError(t, err)
				require.Greater(t, rev, last)
				last = rev
			}
			objs, err := st.List(t.Context(), store.KindKey, "", 0)
			require.NoError(t, err)
			for _, o := range objs {
				require.LessOrEqual(t, o.Version, last, "the revision is the highest version")
			}
		}},
		{"TypedEntities", func(t *testing.T) {
			st := s.fresh(t)
			key := store.Key{
				ID: "key1", Alias: "ci", Prefix: "tg-abc",
				Hashes: []store.KeyHash{{Hash: "00ff"}}, TeamID: "t1",
				Limits: kernel.Limits{RPM: 60, Budgets: []kernel.BudgetWindow{
					{Limit: 5 * kernel.Dollar, Period: kernel.Period{Kind: kernel.PeriodDaily}},
				}},
				Metadata:  map[string]string{"env": "ci"},
				CreatedAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
			}
			v, err := store.Put(t.Context(), st, key.ID, &key, 0)
			require.NoError(t, err)
			got, gv, err := store.Get[store.Key](t.Context(), st, key.ID)
			require.NoError(t, err)
			require.Equal(t, v, gv)
			require.Equal(t, key, got)
			all, err := store.List[store.Key](t.Context(), st)
			require.NoError(t, err)
			require.Equal(t, []store.Key{key}, all)
		}},
	}
}

// requireWatchEnds drains ch until it is closed, failing with msg unless that
// happens within two seconds.
func requireWatchEnds(t *testing.T, ch <-chan int64, msg string) {
	t.Helper()
	deadline := time.After(2 * time.Second)
	for {
		select {
		case _, ok := <-ch:
			if !ok {
				return
			}
		case <-deadline:
			t.Fatal(msg)
		}
	}
}

func (s *suite) watchTests() []test {
	// next reads revisions until one reaches want, within a second.
	next := func(t *testing.T, ch <-chan int64, prev, want int64) int64 {
		t.Helper()
		deadline := time.After(time.Second)
		for {
			select {
			case rev, ok := <-ch:
				require.True(t, ok, "watch channel closed early")
				require.Greater(t, rev, prev, "revisions arrive in increasing order")
				if rev >= want {
					return rev
				}
				prev = rev
			case <-deadline:
				t.Fatalf("watch did not deliver revision %d within 1s", want)
			}
		}
	}
	return []test{
		{"DeliversChanges", func(t *testing.T) {
			st := s.fresh(t)
			start, err := st.Revision(t.Context())
			require.NoError(t, err)
			ch := st.Watch(t.Context())
			v, err := st.Put(t.Context(), obj(store.KindKey, "a", `{}`), 0)
			require.NoError(t, err)
			got := next(t, ch, start, v)
			require.Equal(t, v, got)
			require.NoError(t, st.Delete(t.Context(), store.KindKey, "a"))
			rev, err := st.Revision(t.Context())
			require.NoError(t, err)
			require.Equal(t, rev, next(t, ch, got, rev))
		}},
		{"Coalesces", func(t *testing.T) {
			st := s.fresh(t)
			ch := st.Watch(t.Context())
			var last int64
			for i := range 50 {
				v, err := st.Put(t.Context(), obj(store.KindKey, fmt.Sprint(i), `{}`), 0)
				require.NoError(t, err)
				last = v
			}
			// A reader that did not keep up still gets the latest revision.
			require.Equal(t, last, next(t, ch, 0, last))
		}},
		{"SeveralWatchers", func(t *testing.T) {
			st := s.fresh(t)
			a, b := st.Watch(t.Context()), st.Watch(t.Context())
			v, err := st.Put(t.Context(), obj(store.KindKey, "a", `{}`), 0)
			require.NoError(t, err)
			require.Equal(t, v, next(t, a, 0, v))
			require.Equal(t, v, next(t, b, 0, v))
		}},
		{"EndsWithContext", func(t *testing.T) {
			st := s.fresh(t)
			ctx, cancel := context.WithCancel(t.Context())
			ch := st.Watch(ctx)
			cancel()
			requireWatchEnds(t, ch, "watch channel not closed after its context ended")
		}},
	}
}
