package reconcile

import (
	"cmp"
	"slices"
	"strings"
	"time"

	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/store"
)

// Cell is one UTC day × provider model: what the ledger recorded and what the
// provider reported.
type Cell struct {
	Day   time.Time `json:"day"`
	Model string    `json:"model"` // the provider's model name
	// Public are the public model names of the ledger rows (the model groups
	// whose deployments serve Model).
	Public   []string `json:"public,omitempty"`
	Ledger   Totals   `json:"ledger"`
	Provider Totals   `json:"provider"`
	// RequestIDs are the ledger rows behind the cell.
	RequestIDs []string `json:"request_ids,omitempty"`
	// Keys are the provider's tokens per provider API key id, when reported.
	Keys map[string]int64 `json:"keys,omitempty"`
}

// Drift is provider − ledger: positive when the provider billed more than
// the ledger recorded. Rel is the drift over the larger of the two sides
// (0 when both are 0), so -1 is "only in the ledger" and 1 "only in the
// provider's report".
type Drift struct {
	Tokens      int64        `json:"tokens"`
	TokensRel   float64      `json:"tokens_rel"`
	Requests    int64        `json:"requests"`
	RequestsRel float64      `json:"requests_rel"`
	Cost        kernel.Money `json:"cost"`
	CostRel     float64      `json:"cost_rel"`
}

func rel(provider, ledger int64) float64 {
	den := max(abs(provider), abs(ledger))
	if den == 0 {
		return 0
	}
	return float64(provider-ledger) / float64(den)
}

func abs(v int64) int64 {
	if v < 0 {
		return -v
	}
	return v
}

// Drift of the cell; requests only when the report counts them.
func (c *Cell) Drift(requestsReported bool) Drift {
	d := Drift{
		Tokens:    c.Provider.Tokens() - c.Ledger.Tokens(),
		TokensRel: rel(c.Provider.Tokens(), c.Ledger.Tokens()),
		Cost:      c.Provider.Cost - c.Ledger.Cost,
		CostRel:   rel(int64(c.Provider.Cost), int64(c.Ledger.Cost)),
	}
	if requestsReported {
		d.Requests, d.RequestsRel = c.Provider.Requests-c.Ledger.Requests, rel(c.Provider.Requests, c.Ledger.Requests)
	}
	return d
}

// Worst is the largest relative drift of the cell (in absolute value).
func (d Drift) Worst() float64 {
	return max(abs64(d.TokensRel), abs64(d.RequestsRel), abs64(d.CostRel))
}

func abs64(f float64) float64 {
	if f < 0 {
		return -f
	}
	return f
}

// Result is one reconciliation of a provider over [From, To).
type Result struct {
	Provider         string    `json:"provider"`
	From             time.Time `json:"from"`
	To               time.Time `json:"to"`
	RanAt            time.Time `json:"ran_at"`
	RequestsReported bool      `json:"requests_reported"`
	Cells            []Cell    `json:"cells"`
	Ledger           Totals    `json:"ledger"`
	Reported         Totals    `json:"reported"`
}

// Drift is the drift of the whole range.
func (r *Result) Drift() Drift {
	c := Cell{Ledger: r.Ledger, Provider: r.Reported}
	return c.Drift(r.RequestsReported)
}

// Worst is the largest relative drift of any cell.
func (r *Result) Worst() float64 {
	var w float64
	for i := range r.Cells {
		w = max(w, r.Cells[i].Drift(r.RequestsReported).Worst())
	}
	return w
}

// Deployment is what the comparison needs of a deployment: the provider's
// name of its model, the name the provider's report uses.
type Deployment struct {
	ProviderModel string
}

// Compare lays the ledger rows of the provider's deployments (deployments,
// by id) that ended in [from, to) beside the report, per UTC day × provider
// model. A ledger row counts as a request when its upstream answered 2xx,
// which is when a provider bills one.
func Compare(rep *Report, rows []store.LedgerEntry, deployments map[string]Deployment, from, to time.Time) *Result {
	res := &Result{From: from, To: to, RequestsReported: rep.RequestsReported}
	idx := map[cellKey]int{}
	cell := func(day time.Time, model string) *Cell {
		day = day.UTC().Truncate(Day)
		k := cellKey{day.Unix(), model}
		i, ok := idx[k]
		if !ok {
			i = len(res.Cells)
			idx[k] = i
			res.Cells = append(res.Cells, Cell{Day: day, Model: model})
		}
		return &res.Cells[i]
	}
	for i := range rep.Lines {
		l := &rep.Lines[i]
		if l.Day.Before(from) || !l.Day.Before(to) {
			continue
		}
		c := cell(l.Day, l.Model)
		c.Provider.add(l.Totals)
		if !rep.RequestsReported {
			c.Provider.Requests = 0
		}
		for k, v := range l.Keys {
			if c.Keys == nil {
				c.Keys = map[string]int64{}
			}
			c.Keys[k] += v
		}
	}
	for i := range rows {
		e := &rows[i]
		d, ok := deployments[e.Deployment]
		if !ok || e.EndedAt.Before(from) || !e.EndedAt.Before(to) {
			continue
		}
		c := cell(e.EndedAt, d.ProviderModel)
		t := Totals{
			Input: e.Usage.Input, CachedInput: e.Usage.CachedInput, CacheWrite: e.Usage.CacheWrite,
			Output: e.Usage.Output + e.Usage.Reasoning, Cost: e.Cost,
		}
		if e.HTTPStatus >= 200 && e.HTTPStatus < 300 {
			t.Requests = 1
		}
		c.Ledger.add(t)
		c.RequestIDs = append(c.RequestIDs, e.RequestID)
		if !slices.Contains(c.Public, e.Model) {
			c.Public = append(c.Public, e.Model)
		}
	}
	slices.SortFunc(res.Cells, func(a, b Cell) int {
		return cmp.Or(a.Day.Compare(b.Day), strings.Compare(a.Model, b.Model))
	})
	for i := range res.Cells {
		slices.Sort(res.Cells[i].Public)
		res.Ledger.add(res.Cells[i].Ledger)
		res.Reported.add(res.Cells[i].Provider)
	}
	return res
}
