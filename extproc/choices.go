package extproc

import "github.com/tollgate-ai/tollgate/kernel"

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
