package reconcile

import (
	"context"
	"fmt"
	"math/big"
	"net/url"
	"strconv"
	"time"

	"github.com/tollgate-ai/tollgate/kernel"
)

// anthropic reads Anthropic's Usage & Cost Admin API: GET
// /v1/organizations/usage_report/messages (daily buckets grouped by model and
// api_key_id; it counts tokens, not requests) and GET
// /v1/organizations/cost_report (grouped by description, whose items name
// the model; amounts are cents as decimal strings), with the Admin API key
// in x-api-key and anthropic-version, following next_page while has_more.
type anthropic struct{ Endpoint }

type anthropicPage struct {
	Data []struct {
		StartingAt time.Time         `json:"starting_at"`
		Results    []anthropicResult `json:"results"`
	} `json:"data"`
	HasMore  bool    `json:"has_more"`
	NextPage *string `json:"next_page"`
}

type anthropicResult struct {
	UncachedInputTokens int64 `json:"uncached_input_tokens"`
	CacheCreation       struct {
		Ephemeral1h int64 `json:"ephemeral_1h_input_tokens"`
		Ephemeral5m int64 `json:"ephemeral_5m_input_tokens"`
	} `json:"cache_creation"`
	CacheReadInputTokens int64   `json:"cache_read_input_tokens"`
	OutputTokens         int64   `json:"output_tokens"`
	Model                *string `json:"model"`
	APIKeyID             *string `json:"api_key_id"`
	Amount               *string `json:"amount"`
	Currency             string  `json:"currency"`
}

func (a *anthropic) pages(ctx context.Context, path string, q url.Values, each func(day time.Time, r *anthropicResult) error) error {
	version := a.Version
	if version == "" {
		version = "2023-06-01"
	}
	headers := map[string]string{"x-api-key": a.AdminKey, "anthropic-version": version}
	for {
		var page anthropicPage
		if err := a.get(ctx, path, q, headers, &page); err != nil {
			return err
		}
		for _, b := range page.Data {
			for i := range b.Results {
				if err := each(b.StartingAt.UTC(), &b.Results[i]); err != nil {
					return err
				}
			}
		}
		if !page.HasMore || str(page.NextPage) == "" {
			return nil
		}
		q.Set("page", *page.NextPage)
	}
}

func (a *anthropic) Fetch(ctx context.Context, from, to time.Time) (*Report, error) {
	rep := &Report{}
	base := func() url.Values {
		return url.Values{
			"starting_at":  {from.UTC().Format(time.RFC3339)},
			"ending_at":    {to.UTC().Format(time.RFC3339)},
			"bucket_width": {"1d"},
			"limit":        {strconv.Itoa(31)},
		}
	}
	q := base()
	q["group_by[]"] = []string{"model", "api_key_id"}
	err := a.pages(ctx, "/organizations/usage_report/messages", q, func(day time.Time, r *anthropicResult) error {
		rep.addUsage(day, str(r.Model), str(r.APIKeyID), Totals{
			Input:       r.UncachedInputTokens,
			CachedInput: r.CacheReadInputTokens,
			CacheWrite:  r.CacheCreation.Ephemeral1h + r.CacheCreation.Ephemeral5m,
			Output:      r.OutputTokens,
		})
		return nil
	})
	if err != nil {
		return nil, err
	}
	q = base()
	q["group_by[]"] = []string{"description"}
	err = a.pages(ctx, "/organizations/cost_report", q, func(day time.Time, r *anthropicResult) error {
		if r.Amount == nil {
			return nil
		}
		m, err := centsToMoney(*r.Amount)
		if err != nil {
			return err
		}
		rep.addCost(day, str(r.Model), m)
		return nil
	})
	if err != nil {
		return nil, err
	}
	rep.sort()
	return rep, nil
}

// centsToMoney converts a decimal string of cents ("123.45" is $1.2345) to
// Money exactly, rounded to the nearest nano-dollar.
func centsToMoney(s string) (kernel.Money, error) {
	r, ok := new(big.Rat).SetString(s)
	if !ok {
		return 0, fmt.Errorf("%w: amount %q is not a decimal", ErrProvider, s)
	}
	r.Mul(r, big.NewRat(int64(kernel.Cent), 1))
	// Round half away from zero: (num*2 + den) / (2*den) for positive values.
	num, den := new(big.Int).Set(r.Num()), r.Denom()
	neg := num.Sign() < 0
	num.Abs(num)
	num.Mul(num, big.NewInt(2)).Add(num, den)
	num.Quo(num, new(big.Int).Mul(den, big.NewInt(2)))
	if neg {
		num.Neg(num)
	}
	if !num.IsInt64() {
		return 0, fmt.Errorf("%w: amount %q is out of range", ErrProvider, s)
	}
	return kernel.Money(num.Int64()), nil
}
