package translate

import (
	"encoding/json"
	"errors"
	"strings"

	"github.com/tollgate-ai/tollgate/schema/openai"
)

// Reasoning in the translated Responses API:
//
//   - reasoning.effort → the chat request's reasoning_effort: passed to a chat
//     upstream as is (reasoning models take it), and turned into Anthropic's
//     thinking by the chat → Messages translator (anthropic_reasoning.go).
//     reasoning.summary is not sent: Anthropic's thinking is its own summary.
//   - The reply's reasoning (a chat upstream's reasoning_content, Anthropic's
//     thinking blocks) → one reasoning output item before the message, its
//     text as one summary_text part; Anthropic's signature is the item's
//     encrypted_content. Streamed: response.output_item.added,
//     response.reasoning_summary_part.added,
//     response.reasoning_summary_text.delta…, .done,
//     response.reasoning_summary_part.done, response.output_item.done.
//   - output_tokens_details.reasoning_tokens is the upstream's when it reports
//     them; Anthropic counts thinking in output_tokens without a split, so it
//     is then estimated from the thinking text (4 bytes a token, at most the
//     output tokens). Only the reply shows it: billing uses the upstream's
//     usage, where thinking is output.
//   - reasoning input items: for Anthropic, an item with encrypted_content
//     (a signature) becomes a thinking block at the start of the assistant
//     turn that follows, so a tool loop with thinking continues; an item
//     without it is dropped (Anthropic refuses unsigned thinking). A chat
//     upstream takes no reasoning input: the items are dropped.

// reasoningEffort reads reasoning.effort ("" when absent).
func reasoningEffort(raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var r struct {
		Effort *string `json:"effort"`
	}
	if json.Unmarshal(raw, &r) != nil {
		return "", errors.New("reasoning must be an object")
	}
	if r.Effort == nil {
		return "", nil
	}
	return *r.Effort, nil
}

// appendReasoningItem opens the assistant turn of a signed reasoning item
// with its thinking block (Anthropic upstreams).
func appendReasoningItem(msgs []openai.UpstreamChatMessage, it openai.InputItem) []openai.UpstreamChatMessage {
	if it.EncryptedContent == "" {
		return msgs
	}
	var parts []openai.SummaryPart
	_ = json.Unmarshal(it.Summary, &parts)
	var text strings.Builder
	for _, p := range parts {
		text.WriteString(p.Text)
	}
	b := openai.ThinkingBlock{Type: "thinking", Thinking: text.String(), Signature: it.EncryptedContent}
	if n := len(msgs); n > 0 && onlyThinking(msgs[n-1]) {
		msgs[n-1].ThinkingBlocks = append(msgs[n-1].ThinkingBlocks, b)
		return msgs
	}
	return append(msgs, openai.UpstreamChatMessage{Role: "assistant", ThinkingBlocks: []openai.ThinkingBlock{b}})
}

// onlyThinking reports whether m is an assistant turn holding only thinking
// so far.
func onlyThinking(m openai.UpstreamChatMessage) bool {
	return m.Role == "assistant" && len(m.ThinkingBlocks) > 0 && m.Content == nil && len(m.ToolCalls) == 0
}

// reasoningItem is a reasoning output item.
func (t *responsesViaChat) reasoningItem(text, signature, status string) openai.OutputItem {
	summary := []openai.SummaryPart{}
	if text != "" {
		summary = append(summary, openai.SummaryPart{Type: "summary_text", Text: text})
	}
	return openai.OutputItem{
		Type: "reasoning", ID: "rs_" + t.base, Status: status, Summary: &summary, EncryptedContent: signature,
	}
}

// reasoningItems adds the reasoning item of a complete reply.
func (t *responsesViaChat) reasoningItems(text string, blocks []openai.ThinkingBlock) {
	var sig string
	for _, b := range blocks {
		if b.Signature != "" {
			sig = b.Signature
		}
	}
	if text == "" && sig == "" {
		return
	}
	t.thought += int64(len(text))
	t.items = append(t.items, t.reasoningItem(text, sig, "completed"))
}

// withReasoning fills reasoning_tokens with the estimate when the upstream
// reported none.
func (t *responsesViaChat) withReasoning(u *openai.ResponsesUsage) *openai.ResponsesUsage {
	if u != nil && u.OutputTokensDetails.ReasoningTokens == 0 && t.thought > 0 {
		u.OutputTokensDetails.ReasoningTokens = min(EstimateTokens(t.thought), u.OutputTokens)
	}
	return u
}

// reasoningDelta streams reasoning text into the open reasoning item,
// opening one (and its summary part) first.
func (t *responsesViaChat) reasoningDelta(d string) {
	it := t.openReasoning()
	t.thought += int64(len(d))
	(*it.Summary)[0].Text += d
	t.emit(&openai.ResponseEvent{
		Type: "response.reasoning_summary_text.delta", ItemID: it.ID, OutputIndex: intp(t.cur), SummaryIndex: intp(0), Delta: strp(d),
	})
}

// reasoningSignature keeps the signature of the thinking in the open
// reasoning item.
func (t *responsesViaChat) reasoningSignature(sig string) {
	if sig == "" {
		return
	}
	t.openReasoning().EncryptedContent = sig
}

// openReasoning is the open reasoning item, opened if need be.
func (t *responsesViaChat) openReasoning() *openai.OutputItem {
	if t.cur < 0 || t.items[t.cur].Type != "reasoning" {
		t.closeItem()
		t.cur = len(t.items)
		item := t.reasoningItem("", "", "in_progress")
		added := item
		t.items = append(t.items, item)
		t.emit(&openai.ResponseEvent{Type: "response.output_item.added", OutputIndex: intp(t.cur), Item: &added})
		*t.items[t.cur].Summary = []openai.SummaryPart{{Type: "summary_text"}}
		part := openai.SummaryPart{Type: "summary_text"}
		t.emit(&openai.ResponseEvent{
			Type: "response.reasoning_summary_part.added", ItemID: item.ID, OutputIndex: intp(t.cur), SummaryIndex: intp(0), Part: &part,
		})
	}
	return &t.items[t.cur]
}

// closeReasoning sends the done events of the reasoning item at idx.
func (t *responsesViaChat) closeReasoning(idx int) {
	it := &t.items[idx]
	part := (*it.Summary)[0]
	t.emit(&openai.ResponseEvent{
		Type: "response.reasoning_summary_text.done", ItemID: it.ID, OutputIndex: intp(idx), SummaryIndex: intp(0), Text: strp(part.Text),
	})
	t.emit(&openai.ResponseEvent{
		Type: "response.reasoning_summary_part.done", ItemID: it.ID, OutputIndex: intp(idx), SummaryIndex: intp(0), Part: &part,
	})
}
