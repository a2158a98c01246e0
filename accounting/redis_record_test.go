package accounting

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/tollgate-ai/tollgate/kernel"
)

// TestRecordJSON: appendRecordJSON writes what json.Marshal writes, for any
// model name, scope ids, prices and periods.
func TestRecordJSON(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		str := rapid.OneOf(rapid.StringMatching(`[a-z0-9._/-]{0,12}`), rapid.String())
		money := rapid.OneOf(rapid.Just(kernel.Money(0)), rapid.Map(rapid.Int64(), func(v int64) kernel.Money { return kernel.Money(v) }))
		rec := &record{
			Model: str.Draw(rt, "model"),
			Price: kernel.Price{
				Input: money.Draw(rt, "in"), CachedInput: money.Draw(rt, "cached"), CacheWrite: money.Draw(rt, "write"),
				Output: money.Draw(rt, "out"), Reasoning: money.Draw(rt, "rsn"), Unpriced: rapid.Bool().Draw(rt, "unpriced"),
			},
			AdmittedAt: rapid.Int64().Draw(rt, "a"), Deadline: rapid.Int64().Draw(rt, "dl"), Minute: rapid.Int64().Draw(rt, "mn"),
			Output: rapid.OneOf(rapid.Just(int64(0)), rapid.Int64()).Draw(rt, "o"),
		}
		if rapid.Bool().Draw(rt, "scopes") {
			for i := range rapid.IntRange(0, 4).Draw(rt, "n") {
				rec.Scopes = append(rec.Scopes, kernel.ScopeRef{
					Kind: kernel.ScopeKind(rapid.IntRange(0, 5).Draw(rt, "kind")), ID: str.Draw(rt, "id"),
				})
				if rapid.Bool().Draw(rt, "periods") {
					if rec.Periods == nil {
						rec.Periods = make([][]kernel.Period, 4)
					}
					rec.Periods[i] = []kernel.Period{{Kind: kernel.PeriodDaily}, {Kind: kernel.PeriodRolling, Every: 90 * time.Second}}
				}
			}
		}
		want, err := json.Marshal(rec)
		require.NoError(rt, err)
		got, err := appendRecordJSON(nil, rec)
		require.NoError(rt, err)
		require.Equal(rt, string(want), string(got))
	})
}
