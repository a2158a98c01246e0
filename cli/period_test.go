package cli

import (
	"testing"

	"github.com/stretchr/testify/require"

	adminv1 "github.com/tollgate-ai/tollgate/proto/tollgate/admin/v1"
)

func TestParsePeriod(t *testing.T) {
	for _, tc := range []struct {
		in   string
		kind adminv1.PeriodKind
		tz   string
		err  bool
	}{
		{in: "monthly", kind: adminv1.PeriodKind_PERIOD_KIND_MONTHLY},
		{in: "daily@Europe/Paris", kind: adminv1.PeriodKind_PERIOD_KIND_DAILY, tz: "Europe/Paris"},
		{in: "rolling:7d", kind: adminv1.PeriodKind_PERIOD_KIND_ROLLING},
		{in: "hourly", err: true},
		{in: "daily:3d", err: true},
	} {
		t.Run(tc.in, func(t *testing.T) {
			w, err := parsePeriod(tc.in)
			if tc.err {
				require.ErrorIs(t, err, ErrUsage)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.kind, w.GetPeriod())
			require.Equal(t, tc.tz, w.GetTimeZone())
		})
	}
	l := &adminv1.Limits{Budgets: []*adminv1.BudgetWindow{{Limit: adminv1.NewMoney(10_000_000_000), Period: adminv1.PeriodKind_PERIOD_KIND_MONTHLY, TimeZone: "Asia/Tokyo"}}}
	require.Equal(t, "$10.00/monthly@Asia/Tokyo", budgets(l))
}
