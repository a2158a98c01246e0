package kernel_test

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/tollgate-ai/tollgate/kernel"
)

func ExampleCost() {
	// $3 per million input tokens, $15 per million output tokens.
	price := kernel.Price{Input: 3 * kernel.Dollar, Output: 15 * kernel.Dollar}
	cost := kernel.Cost(price, kernel.Usage{Input: 1234, Output: 567})
	fmt.Println(cost.Dollars())
	// Output: $0.012207
}

func ExampleParseDollars() {
	m, err := kernel.ParseDollars("$12.50")
	if err != nil {
		panic(err)
	}
	fmt.Println(int64(m), m, m.Dollars())
	_, err = kernel.ParseDollars("0.0000000001")
	fmt.Println(err)
	// Output:
	// 12500000000 12.5 $12.5
	// kernel: invalid dollar amount: "0.0000000001"
}

func ExampleParsePeriod() {
	p, err := kernel.ParsePeriod("daily@Europe/Paris")
	if err != nil {
		panic(err)
	}
	start, end := p.Window(time.Date(2026, 3, 29, 12, 0, 0, 0, time.UTC)) // clocks go forward that night
	fmt.Println(start.UTC(), end.UTC())
	b, _ := json.Marshal(p)
	fmt.Println(string(b))
	// Output:
	// 2026-03-28 23:00:00 +0000 UTC 2026-03-29 22:00:00 +0000 UTC
	// {"kind":"daily","tz":"Europe/Paris"}
}

func ExampleState() {
	s := kernel.NewState()
	now := time.Date(2026, 3, 8, 12, 0, 0, 0, time.UTC)
	key := kernel.ScopeRef{Kind: kernel.ScopeKey, ID: "k1"}
	limits := &kernel.Limits{Budgets: []kernel.BudgetWindow{
		{Limit: kernel.Cent, Period: kernel.Period{Kind: kernel.PeriodDaily}},
	}}
	req := &kernel.AdmitRequest{
		ID:          "req-1",
		Scopes:      []kernel.Scope{{Ref: key, Limits: limits}, {Ref: kernel.ScopeRef{Kind: kernel.ScopeGlobal}}},
		Model:       "gpt-4o",
		PromptBytes: 1000,
		MaxTokens:   4000,
		Price:       kernel.Price{Input: 2 * kernel.Dollar, Output: 8 * kernel.Dollar},
	}
	d := s.Admit(now, req)
	fmt.Println(d.Admitted, d.Clamped, d.MaxTokens, d.Reserved.Dollars())

	st, _ := s.Settle(now.Add(2*time.Second), "req-1", kernel.Usage{Input: 300, Output: 200}, kernel.StatusCompleted)
	spent, reserved := s.Usage(key, kernel.Period{Kind: kernel.PeriodDaily}, now)
	fmt.Println(st.Cost.Dollars(), spent.Dollars(), reserved.Dollars())
	// Output:
	// true true 1000 $0.01
	// $0.0022 $0.0022 $0
}
