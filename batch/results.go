package batch

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"

	"github.com/tollgate-ai/tollgate/kernel"
)

// Line is what ran of one line of a batch.
type Line struct {
	CustomID   string
	Usage      kernel.Usage
	HTTPStatus int
	Status     kernel.Status
}

// openAIUsage is the usage of a chat completion, a completion, embeddings
// (prompt_tokens only) or a response (input_tokens, output_tokens).
type openAIUsage struct {
	PromptTokens        int64 `json:"prompt_tokens"`
	CompletionTokens    int64 `json:"completion_tokens"`
	PromptTokensDetails struct {
		CachedTokens int64 `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
	CompletionTokensDetails struct {
		ReasoningTokens int64 `json:"reasoning_tokens"`
	} `json:"completion_tokens_details"`
	InputTokens        int64 `json:"input_tokens"`
	OutputTokens       int64 `json:"output_tokens"`
	InputTokensDetails struct {
		CachedTokens int64 `json:"cached_tokens"`
	} `json:"input_tokens_details"`
	OutputTokensDetails struct {
		ReasoningTokens int64 `json:"reasoning_tokens"`
	} `json:"output_tokens_details"`
}

// usage normalises to kernel.Usage's disjoint kinds.
func (u *openAIUsage) usage() kernel.Usage {
	in, out := u.PromptTokens+u.InputTokens, u.CompletionTokens+u.OutputTokens
	cached := u.PromptTokensDetails.CachedTokens + u.InputTokensDetails.CachedTokens
	reasoning := u.CompletionTokensDetails.ReasoningTokens + u.OutputTokensDetails.ReasoningTokens
	return kernel.Usage{Input: in - cached, CachedInput: cached, Output: out - reasoning, Reasoning: reasoning}
}

// jsonl calls each for every non-empty line of r.
func jsonl(r io.Reader, each func(n int, line []byte) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for n := 1; sc.Scan(); n++ {
		if len(sc.Bytes()) == 0 {
			continue
		}
		if err := each(n, sc.Bytes()); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("%w: reading results: %w", ErrProvider, err)
	}
	return nil
}

// ParseOpenAIOutput reads a Batch API output or error file: one
// {custom_id, response: {status_code, body}, error} per line.
func ParseOpenAIOutput(r io.Reader) ([]Line, error) {
	var out []Line
	err := jsonl(r, func(n int, raw []byte) error {
		var l struct {
			CustomID string `json:"custom_id"`
			Response *struct {
				StatusCode int `json:"status_code"`
				Body       struct {
					Usage openAIUsage `json:"usage"`
				} `json:"body"`
			} `json:"response"`
		}
		if err := json.Unmarshal(raw, &l); err != nil || l.CustomID == "" {
			return fmt.Errorf("%w: output line %d is not a batch result", ErrProvider, n)
		}
		line := Line{CustomID: l.CustomID, Status: kernel.StatusFailed}
		if l.Response != nil {
			line.HTTPStatus = l.Response.StatusCode
			line.Usage = l.Response.Body.Usage.usage()
			if line.HTTPStatus/100 == 2 {
				line.Status = kernel.StatusCompleted
			}
		}
		out = append(out, line)
		return nil
	})
	return out, err
}

// ParseAnthropicResults reads a Message Batches results file: one
// {custom_id, result: {type, message}} per line; only "succeeded" lines
// used tokens.
func ParseAnthropicResults(r io.Reader) ([]Line, error) {
	var out []Line
	err := jsonl(r, func(n int, raw []byte) error {
		var l struct {
			CustomID string `json:"custom_id"`
			Result   struct {
				Type    string `json:"type"`
				Message struct {
					Usage struct {
						InputTokens              int64 `json:"input_tokens"`
						OutputTokens             int64 `json:"output_tokens"`
						CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
						CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
					} `json:"usage"`
				} `json:"message"`
			} `json:"result"`
		}
		if err := json.Unmarshal(raw, &l); err != nil || l.CustomID == "" || l.Result.Type == "" {
			return fmt.Errorf("%w: results line %d is not a batch result", ErrProvider, n)
		}
		line := Line{CustomID: l.CustomID, Status: kernel.StatusFailed, HTTPStatus: 400}
		switch l.Result.Type {
		case "succeeded":
			u := l.Result.Message.Usage
			line.Usage = kernel.Usage{Input: u.InputTokens, CachedInput: u.CacheReadInputTokens, CacheWrite: u.CacheCreationInputTokens, Output: u.OutputTokens}
			line.Status, line.HTTPStatus = kernel.StatusCompleted, 200
		case "canceled", "expired":
			return nil // never ran: nothing to settle
		}
		out = append(out, line)
		return nil
	})
	return out, err
}
