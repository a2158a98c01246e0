package extproc

import (
	"fmt"
	"net/http"

	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/translate"
)

// unpricedError is the refusal of a model without a price under a strict
// budget (kernel.ReasonUnpriced), before any provider call: HTTP 400 (a retry
// cannot help, an operator must act), type invalid_request_error, code
// model_price_missing, naming the model the price is missing for and the
// scope whose budget could not be enforced. The endpoint renders it in its
// API's error shape (OpenAI, Anthropic, Gemini).
func unpricedError(t *translate.Target, d kernel.Decision) *translate.APIError {
	name := t.ProviderModel
	if name == "" {
		name = t.Model
	}
	what := fmt.Sprintf("The model `%s`", name)
	if t.Model != "" && t.Model != name {
		what = fmt.Sprintf("The model `%s` (served as `%s`)", t.Model, name)
	}
	msg := fmt.Sprintf("%s has no price, so the %s's budget cannot be enforced: the gateway refuses it "+
		"rather than charge $0. An operator must set its price (tollgate price set %s …) or declare "+
		"the deployment free (--free).", what, d.Scope.Noun(), name)
	return &translate.APIError{
		Status: http.StatusBadRequest, Type: translate.TypeInvalidRequest, Code: translate.CodeModelUnpriced, Param: "model",
		Message: msg,
	}
}
