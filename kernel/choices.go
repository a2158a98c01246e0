package kernel

// Requests for several choices (OpenAI's n, Gemini's candidateCount): the
// provider bills each choice up to max_tokens, so the output bound reserved
// is the per-choice bound times the choices, and a strict budget's clamp is
// shared out between them.

// ReserveChoices makes req's output bound cover every choice: the provider
// bills each of them up to max_tokens (or the default bound).
func ReserveChoices(req *AdmitRequest, choices int64) {
	if choices <= 1 {
		return
	}
	if req.MaxTokens <= 0 && req.DefaultMaxTokens <= 0 {
		req.DefaultMaxTokens = DefaultOutputBound
	}
	req.MaxTokens = SatMul(req.MaxTokens, choices)
	req.DefaultMaxTokens = SatMul(req.DefaultMaxTokens, choices)
}

// PerChoice is the max_tokens each choice may use when the kernel reserved
// for bound output tokens in all: bound / choices, rounded down.
func PerChoice(bound, choices int64) int64 { return bound / max(choices, 1) }

// SatMul is a × b for b > 0, saturating at the largest int64; a ≤ 0 (no
// bound) stays as it is.
func SatMul(a, b int64) int64 {
	if a <= 0 {
		return a
	}
	if a > (1<<63-1)/b {
		return 1<<63 - 1
	}
	return a * b
}

// BudgetRefusal is the decision for a budget that affords less than one
// output token per choice: the first scope's budget is exceeded.
func BudgetRefusal(scopes []Scope) Decision {
	d := Decision{Reason: ReasonBudgetExceeded}
	if len(scopes) > 0 {
		d.Scope = scopes[0].Ref
	}
	return d
}
