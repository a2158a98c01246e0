package mockllm

import (
	"encoding/json"
	"strings"
)

// toolCall is the single tool call of an x-mock-tool-call reply.
type toolCall struct {
	name   string
	args   string // JSON arguments / input: {"city":"<last word>"}
	output int64  // ceil(len(args) / 4)
}

// newToolCall returns the tool call for the x-mock-tool-call header value name
// when the request defines a tool of that name (names lists the tools), else nil.
func newToolCall(name string, names []string, lastUser string) *toolCall {
	if name == "" {
		return nil
	}
	found := false
	for _, n := range names {
		if n == name {
			found = true
			break
		}
	}
	if !found {
		return nil
	}
	city := "mock"
	if w := strings.Fields(lastUser); len(w) > 0 {
		city = w[len(w)-1]
	}
	args, _ := json.Marshal(map[string]string{"city": city})
	return &toolCall{name: name, args: string(args), output: tokensOf(len(args))}
}

// pieces splits the arguments in two streamed pieces and their output tokens.
func (tc *toolCall) pieces() (texts [2]string, tokens [2]int64) {
	h := len(tc.args) / 2
	texts = [2]string{tc.args[:h], tc.args[h:]}
	tokens = [2]int64{tc.output / 2, tc.output - tc.output/2}
	return texts, tokens
}
