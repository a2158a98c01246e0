package translate

import (
	"fmt"

	"github.com/tollgate-ai/tollgate/schema/anthropic"
	"github.com/tollgate-ai/tollgate/schema/openai"
)

// Structured outputs and reasoning on Anthropic, for the chat → Messages
// translator (and the Responses API through it):
//
//   - response_format json_schema → output_config.format {type: json_schema,
//     schema} (Anthropic's generally available structured outputs; the
//     reply's text is the JSON). json_object has no Anthropic counterpart
//     and is dropped; text is the default.
//   - reasoning_effort → thinking {type: enabled, budget_tokens}: minimal and
//     low 1024, medium 8192, high 24576 tokens, at most half of max_tokens
//     (the other half is left for the answer);
//     none, or a max_tokens that leaves less than Anthropic's minimum of
//     1024, sends no thinking.
//   - thinking blocks of the reply → reasoning_content and thinking_blocks
//     (with the signature); thinking_blocks of an assistant message → its
//     thinking blocks again, first in the turn, so a tool loop with thinking
//     keeps its signatures.

// anthropicThinkingBudgets maps reasoning_effort to budget_tokens.
var anthropicThinkingBudgets = map[string]int64{"minimal": 1024, "low": 1024, "medium": 8192, "high": 24576}

// anthropicMinThinking is Anthropic's least budget_tokens.
const anthropicMinThinking = 1024

// anthropicExtras sets the output format and thinking of the Messages request.
func anthropicExtras(out *anthropic.UpstreamRequest, req *openai.ChatRequest) error {
	if f := req.ResponseFormat; f != nil {
		switch f.Type {
		case "", "text", "json_object":
		case "json_schema":
			if f.JSONSchema == nil || len(f.JSONSchema.Schema) == 0 {
				return fmt.Errorf("response_format: json_schema needs a schema")
			}
			out.OutputConfig = &anthropic.OutputConfig{Format: &anthropic.OutputFormat{Type: "json_schema", Schema: f.JSONSchema.Schema}}
		default:
			return fmt.Errorf("response_format: type %q is not supported", f.Type)
		}
	}
	switch e := req.ReasoningEffort; e {
	case "", "none":
	default:
		budget, ok := anthropicThinkingBudgets[e]
		if !ok {
			return fmt.Errorf("reasoning_effort %q is not supported by this model", e)
		}
		budget = min(budget, out.MaxTokens/2)
		if budget >= anthropicMinThinking {
			out.Thinking = &anthropic.Thinking{Type: "enabled", BudgetTokens: budget}
		}
	}
	return nil
}

// thinkingBlocks are the Anthropic blocks of an assistant message's
// thinking_blocks: those with a signature (Anthropic refuses others).
func thinkingBlocks(tb []openai.ThinkingBlock) []anthropic.UpstreamBlock {
	var out []anthropic.UpstreamBlock
	for _, b := range tb {
		if b.Signature != "" && (b.Type == "" || b.Type == "thinking") {
			out = append(out, anthropic.UpstreamBlock{Type: "thinking", Thinking: b.Thinking, Signature: b.Signature})
		}
	}
	return out
}
