package extproc

import "github.com/tollgate-ai/tollgate/kernel"

// maxChoices bounds n and best_of (OpenAI accepts at most 128 choices).
const maxChoices = 128

// choices is how many completions the request makes the provider generate,
// and bill: max(n, best_of), at least 1. Only OpenAI's chat and completions
// APIs have them; Anthropic's Messages and OpenAI's Responses API generate
// one completion per request.
func (in *Inbound) choices() (int64, error) {
	if in.API != APIChat && in.API != APICompletions || in.fields == nil {
		return 1, nil
	}
	c := int64(1)
	for _, m := range [...]struct {
		name string
		s    span
	}{{"n", in.fields.n}, {"best_of", in.fields.bestOf}} {
		if !m.s.ok() || m.s.isNull(in.Body) {
			continue
		}
		v, ok := intValue(in.Body, m.s)
		if !ok || v < 1 || v > maxChoices {
			return 0, &fieldError{m.name, "must be an integer from 1 to 128"}
		}
		c = max(c, v)
	}
	return c, nil
}

// reserveChoices makes req's output bound cover every choice: the provider
// bills each of them up to max_tokens (or the default bound).
func reserveChoices(req *kernel.AdmitRequest, choices int64) {
	if choices <= 1 {
		return
	}
	if req.MaxTokens <= 0 && req.DefaultMaxTokens <= 0 {
		req.DefaultMaxTokens = kernel.DefaultOutputBound
	}
	req.MaxTokens = satMul(req.MaxTokens, choices)
	req.DefaultMaxTokens = satMul(req.DefaultMaxTokens, choices)
}

// perChoice is the max_tokens each choice may use when the kernel reserved
// for bound output tokens in all: bound / choices, rounded down.
func perChoice(bound, choices int64) int64 { return bound / max(choices, 1) }

func satMul(a, b int64) int64 {
	if a <= 0 {
		return a
	}
	if a > (1<<63-1)/b {
		return 1<<63 - 1
	}
	return a * b
}

// budgetRefusal is the decision for a budget that affords less than one
// output token per choice.
func budgetRefusal(scopes []kernel.Scope) kernel.Decision {
	d := kernel.Decision{Reason: kernel.ReasonBudgetExceeded}
	if len(scopes) > 0 {
		d.Scope = scopes[0].Ref
	}
	return d
}
