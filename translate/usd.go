package translate

import (
	"strconv"

	"github.com/tollgate-ai/tollgate/kernel"
)

// The gateway's cost and budget headers render money as decimal dollars.

// FormatUSD renders nano-dollars as a decimal dollar amount ("0.000125000").
func FormatUSD(m kernel.Money) string { return string(AppendUSD(nil, m)) }

// AppendUSD appends FormatUSD(m) to b.
func AppendUSD(b []byte, m kernel.Money) []byte {
	if m < 0 {
		b = append(b, '-')
		m = -m
	}
	b = strconv.AppendInt(b, int64(m/kernel.Dollar), 10)
	b = append(b, '.')
	frac := int64(m % kernel.Dollar)
	for d := int64(kernel.Dollar / 10); d > 1 && frac < d; d /= 10 {
		b = append(b, '0')
	}
	return strconv.AppendInt(b, frac, 10)
}

// HdrBudgetWarning names the soft budgets past their limit on an admitted
// request: "<scope> <period> spent=<USD> limit=<USD>", comma-separated.
const HdrBudgetWarning = "x-tollgate-budget-warning"

// BudgetWarnings is HdrBudgetWarning's value of soft budgets past their
// limit.
func BudgetWarnings(ws []kernel.BudgetWarning) string {
	var b []byte
	for i, w := range ws {
		if i > 0 {
			b = append(b, ", "...)
		}
		b = append(b, w.Scope.String()...)
		b = append(b, ' ')
		b = append(b, w.Period.String()...)
		b = append(b, " spent="...)
		b = AppendUSD(b, w.Spent)
		b = append(b, " limit="...)
		b = AppendUSD(b, w.Limit)
	}
	return string(b)
}
