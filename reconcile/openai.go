package reconcile

import (
	"context"
	"math"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/tollgate-ai/tollgate/kernel"
)

// openAI reads OpenAI's organization Usage API (GET
// /v1/organization/usage/completions and …/embeddings, daily buckets grouped
// by model and api_key_id) and Costs API (GET /v1/organization/costs, grouped
// by line_item, whose value names the model: "<model>, input"), with an admin
// key as the bearer token, following next_page while has_more.
type openAI struct{ Endpoint }

// openAIPage is a page of either API. Buckets carry their results under
// "results" (the API's answers; the published schema once said "result").
type openAIPage struct {
	Data []struct {
		StartTime int64          `json:"start_time"`
		Results   []openAIResult `json:"results"`
		Result    []openAIResult `json:"result"`
	} `json:"data"`
	HasMore  bool    `json:"has_more"`
	NextPage *string `json:"next_page"`
}

type openAIResult struct {
	InputTokens       int64   `json:"input_tokens"`
	OutputTokens      int64   `json:"output_tokens"`
	InputCachedTokens int64   `json:"input_cached_tokens"`
	NumModelRequests  int64   `json:"num_model_requests"`
	Model             *string `json:"model"`
	APIKeyID          *string `json:"api_key_id"`
	Amount            *struct {
		Value    float64 `json:"value"`
		Currency string  `json:"currency"`
	} `json:"amount"`
	LineItem *string `json:"line_item"`
}

func str(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// pages walks every page of one report.
func (o *openAI) pages(ctx context.Context, path string, q url.Values, each func(day time.Time, r *openAIResult)) error {
	for {
		var page openAIPage
		if err := o.get(ctx, path, q, map[string]string{"Authorization": "Bearer " + o.AdminKey}, &page); err != nil {
			return err
		}
		for _, b := range page.Data {
			day := time.Unix(b.StartTime, 0).UTC()
			for i := range b.Results {
				each(day, &b.Results[i])
			}
			for i := range b.Result {
				each(day, &b.Result[i])
			}
		}
		if !page.HasMore || str(page.NextPage) == "" {
			return nil
		}
		q.Set("page", *page.NextPage)
	}
}

func (o *openAI) Fetch(ctx context.Context, from, to time.Time) (*Report, error) {
	rep := &Report{RequestsReported: true}
	base := func(limit int) url.Values {
		return url.Values{
			"start_time":   {strconv.FormatInt(from.Unix(), 10)},
			"end_time":     {strconv.FormatInt(to.Unix(), 10)},
			"bucket_width": {"1d"},
			"limit":        {strconv.Itoa(limit)},
		}
	}
	for _, api := range []string{"completions", "embeddings"} {
		q := base(31)
		q["group_by"] = []string{"model", "api_key_id"}
		err := o.pages(ctx, "/organization/usage/"+api, q, func(day time.Time, r *openAIResult) {
			rep.addUsage(day, str(r.Model), str(r.APIKeyID), Totals{
				Requests:    r.NumModelRequests,
				Input:       r.InputTokens - r.InputCachedTokens,
				CachedInput: r.InputCachedTokens,
				Output:      r.OutputTokens,
			})
		})
		if err != nil {
			return nil, err
		}
	}
	q := base(180)
	q["group_by"] = []string{"line_item"}
	err := o.pages(ctx, "/organization/costs", q, func(day time.Time, r *openAIResult) {
		if r.Amount == nil {
			return
		}
		rep.addCost(day, lineItemModel(str(r.LineItem)), dollars(r.Amount.Value))
	})
	if err != nil {
		return nil, err
	}
	rep.sort()
	return rep, nil
}

// lineItemModel is the model a Costs API line item names: the text before
// its last ", " ("gpt-4o-2024-08-06, input" → "gpt-4o-2024-08-06"); the
// whole item when it has none.
func lineItemModel(item string) string {
	if i := strings.LastIndex(item, ", "); i >= 0 {
		return item[:i]
	}
	return item
}

// dollars converts an amount in USD (a JSON number) to Money, rounded to the
// nearest nano-dollar.
func dollars(v float64) kernel.Money {
	return kernel.Money(math.Round(v * float64(kernel.Dollar)))
}
