package mockllm

import (
	"encoding/json"
	"net/http"
	"time"
)

// responsesRequest is the part of a Responses API request the mock reads.
type responsesRequest struct {
	Model              string          `json:"model"`
	Input              json.RawMessage `json:"input"`
	Instructions       string          `json:"instructions"`
	MaxOutputTokens    *int64          `json:"max_output_tokens"`
	Stream             bool            `json:"stream"`
	Store              *bool           `json:"store"`
	PreviousResponseID *string         `json:"previous_response_id"`
	Background         bool            `json:"background"`
	Conversation       json.RawMessage `json:"conversation"`
	Tools              []struct {
		Type string `json:"type"`
		Name string `json:"name"`
	} `json:"tools"`
}

// responsesItem is an input item: a message (content a string or parts) or a
// function_call_output (output).
type responsesItem struct {
	Type    string          `json:"type"`
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
	Output  json.RawMessage `json:"output"`
}

// prompt is the request's prompt text (instructions, the text of every
// message item's content, every function_call_output's output string), the
// last message's text and the last user message's text.
func (req *responsesRequest) prompt() (text []byte, last, lastUser string, ok bool) {
	text = append(text, req.Instructions...)
	var s string
	if json.Unmarshal(req.Input, &s) == nil {
		return append(text, s...), s, s, true
	}
	var items []responsesItem
	if json.Unmarshal(req.Input, &items) != nil {
		return nil, "", "", false
	}
	for _, it := range items {
		n := len(text)
		switch it.Type {
		case "", "message":
			if json.Unmarshal(it.Content, &s) == nil {
				text = append(text, s...)
			} else {
				var parts []struct {
					Text string `json:"text"`
				}
				_ = json.Unmarshal(it.Content, &parts)
				for _, p := range parts {
					text = append(text, p.Text...)
				}
			}
			last = string(text[n:])
			if it.Role == "user" {
				lastUser = last
			}
		case "function_call_output":
			if json.Unmarshal(it.Output, &s) == nil {
				text = append(text, s...)
			}
		}
	}
	return text, last, lastUser, true
}

// response is a reply being produced for a Responses request.
type response struct {
	req      *responsesRequest
	id       string
	created  int64
	input    int64 // input tokens, cached ones included
	cached   int64
	output   int64
	capped   bool
	reply    reply
	tool     *toolCall
	sequence int64
	// conversation is the id of the conversation it belongs to ("": none).
	conversation string
}

// conversationParam is a response's conversation as the object shows it.
type conversationParam struct {
	ID string `json:"id"`
}

// responses answers POST /v1/responses (and Azure's /openai/v1/responses):
// the reply is one message item with an output_text part (or one
// function_call item under x-mock-tool-call), usage as for chat completions
// (input_tokens = prompt tokens, cached included; output capped by
// max_output_tokens, the response then "incomplete"). Streams send
// response.created, response.in_progress, output_item.added,
// content_part.added, output_text.delta per chunk, output_text.done,
// content_part.done, output_item.done and response.completed (or
// response.incomplete), each with the next sequence_number. Responses are
// kept (responses_store.go): previous_response_id must name one of the
// key's.
func (s *Server) responses(c *call) {
	var req responsesRequest
	if !c.decode(&req) {
		return
	}
	if req.Model == "" {
		writeError(c.w, c.flavor, http.StatusBadRequest, "you must provide a model parameter")
		return
	}
	c.model = req.Model
	text, last, lastUser, ok := req.prompt()
	if !ok || len(text) == 0 && len(req.Input) == 0 {
		writeError(c.w, c.flavor, http.StatusBadRequest, "input must be a string or an array of input items")
		return
	}
	if p := req.PreviousResponseID; p != nil && *p != "" && s.kept.get(c.key, *p) == nil {
		writeError(c.w, c.flavor, http.StatusNotFound, "Previous response with id '"+*p+"' not found.")
		return
	}
	conv := conversationRef(req.Conversation)
	if conv != "" && !s.convs.exists(c.key, conv) {
		writeError(c.w, c.flavor, http.StatusNotFound, "Conversation with id '"+conv+"' not found.")
		return
	}
	s.seq.Add(1)
	r := &response{req: &req, id: newResponseID(), created: time.Now().Unix(), input: tokensOf(len(text))}
	r.cached = min(c.cached, r.input)
	r.output, r.capped = outputTokens(req.MaxOutputTokens, c.output)
	r.reply = newReply(last, r.output)
	if c.toolCall != "" {
		var names []string
		for _, t := range req.Tools {
			names = append(names, t.Name)
		}
		if r.tool = newToolCall(c.toolCall, names, lastUser); r.tool != nil {
			r.output, r.capped = r.tool.output, false
		}
	}
	b := billed{input: r.input - r.cached, cached: r.cached}
	if conv != "" {
		r.conversation = conv
		s.convs.append(c.key, conv, inputItems(r), r.items("completed"))
	}
	if req.Store == nil || *req.Store || req.Background {
		sr := s.kept.keep(c.key, r, b, req.Background && !req.Stream)
		if sr.background { // billed when a poll finds it completed (responses_store.go)
			body, _ := json.Marshal(sr.object())
			s.writeJSON(c, body, billed{}, 0)
			return
		}
	}
	if req.Stream {
		s.streamResponse(c, r, b)
		return
	}
	body, _ := json.Marshal(r.object("", r.items("completed")))
	s.writeJSON(c, body, b, r.output)
}

type responsesOutputItem struct {
	Type      string               `json:"type"`
	ID        string               `json:"id"`
	Status    string               `json:"status"`
	Role      string               `json:"role,omitempty"`
	Content   *[]responsesTextPart `json:"content,omitempty"`
	CallID    string               `json:"call_id,omitempty"`
	Name      string               `json:"name,omitempty"`
	Arguments *string              `json:"arguments,omitempty"`
}

type responsesTextPart struct {
	Type        string `json:"type"`
	Text        string `json:"text"`
	Annotations []any  `json:"annotations"`
	Logprobs    []any  `json:"logprobs"`
}

type responsesUsage struct {
	InputTokens        int64 `json:"input_tokens"`
	InputTokensDetails struct {
		CachedTokens int64 `json:"cached_tokens"`
	} `json:"input_tokens_details"`
	OutputTokens        int64 `json:"output_tokens"`
	OutputTokensDetails struct {
		ReasoningTokens int64 `json:"reasoning_tokens"`
	} `json:"output_tokens_details"`
	TotalTokens int64 `json:"total_tokens"`
}

type responsesObject struct {
	ID                 string                `json:"id"`
	Object             string                `json:"object"`
	CreatedAt          int64                 `json:"created_at"`
	Status             string                `json:"status"`
	Error              any                   `json:"error"`
	IncompleteDetails  any                   `json:"incomplete_details"`
	Model              string                `json:"model"`
	Output             []responsesOutputItem `json:"output"`
	PreviousResponseID *string               `json:"previous_response_id"`
	Conversation       *conversationParam    `json:"conversation,omitempty"`
	Store              bool                  `json:"store"`
	Usage              *responsesUsage       `json:"usage"`
}

func (r *response) text() string {
	if r.tool != nil {
		return ""
	}
	return r.reply.text()
}

// items is the output in a status; in_progress items carry no text yet.
func (r *response) items(status string) []responsesOutputItem {
	if r.tool != nil {
		args := r.tool.args
		if status == "in_progress" {
			args = ""
		}
		return []responsesOutputItem{{
			Type: "function_call", ID: "fc_mock_1", Status: status, CallID: "call_mock_1", Name: r.tool.name, Arguments: &args,
		}}
	}
	content := []responsesTextPart{}
	if status != "in_progress" {
		content = append(content, responsesTextPart{Type: "output_text", Text: r.text(), Annotations: []any{}, Logprobs: []any{}})
	}
	return []responsesOutputItem{{Type: "message", ID: "msg_" + r.id[len("resp_"):], Status: status, Role: "assistant", Content: &content}}
}

// object is the response object; status "" means the final one.
func (r *response) object(status string, output []responsesOutputItem) *responsesObject {
	o := &responsesObject{
		ID: r.id, Object: "response", CreatedAt: r.created, Status: status, Model: r.req.Model,
		Output: output, PreviousResponseID: r.req.PreviousResponseID, Store: r.req.Store == nil || *r.req.Store,
	}
	if r.conversation != "" {
		o.Conversation = &conversationParam{ID: r.conversation}
	}
	if status == "" {
		o.Status = "completed"
		if r.capped {
			o.Status = "incomplete"
			o.IncompleteDetails = map[string]string{"reason": "max_output_tokens"}
		}
		u := &responsesUsage{InputTokens: r.input, OutputTokens: r.output, TotalTokens: r.input + r.output}
		u.InputTokensDetails.CachedTokens = r.cached
		o.Usage = u
	}
	if o.Output == nil {
		o.Output = []responsesOutputItem{}
	}
	return o
}

// event marshals one stream event with the next sequence number.
func (r *response) event(typ string, fields map[string]any) []byte {
	fields["type"] = typ
	fields["sequence_number"] = r.sequence
	r.sequence++
	b, _ := json.Marshal(fields)
	return b
}

func (s *Server) streamResponse(c *call, r *response, b billed) {
	st, ok := s.startStream(c, b)
	if !ok {
		return
	}
	send := func(typ string, fields map[string]any) bool { return st.send(typ, r.event(typ, fields)) }
	if !send("response.created", map[string]any{"response": r.object("in_progress", nil)}) ||
		!send("response.in_progress", map[string]any{"response": r.object("in_progress", nil)}) {
		return
	}
	item := r.items("in_progress")[0]
	if !send("response.output_item.added", map[string]any{"output_index": 0, "item": item}) {
		return
	}
	if r.tool != nil {
		texts, tokens := r.tool.pieces()
		for i, t := range texts {
			if !st.content(i, "response.function_call_arguments.delta", r.event("response.function_call_arguments.delta",
				map[string]any{"item_id": item.ID, "output_index": 0, "delta": t}), tokens[i]) {
				return
			}
		}
		if !send("response.function_call_arguments.done", map[string]any{"item_id": item.ID, "output_index": 0, "name": r.tool.name, "arguments": r.tool.args}) {
			return
		}
	} else {
		empty := responsesTextPart{Type: "output_text", Annotations: []any{}, Logprobs: []any{}}
		if !send("response.content_part.added", map[string]any{"item_id": item.ID, "output_index": 0, "content_index": 0, "part": empty}) {
			return
		}
		texts, words := r.reply.chunks(s.cfg.Chunks)
		for i, t := range texts {
			if !st.content(i, "response.output_text.delta", r.event("response.output_text.delta",
				map[string]any{"item_id": item.ID, "output_index": 0, "content_index": 0, "delta": t, "logprobs": []any{}}), words[i]) {
				return
			}
		}
		full := responsesTextPart{Type: "output_text", Text: r.text(), Annotations: []any{}, Logprobs: []any{}}
		if !send("response.output_text.done", map[string]any{"item_id": item.ID, "output_index": 0, "content_index": 0, "text": full.Text, "logprobs": []any{}}) ||
			!send("response.content_part.done", map[string]any{"item_id": item.ID, "output_index": 0, "content_index": 0, "part": full}) {
			return
		}
	}
	done := r.items("completed")
	if !send("response.output_item.done", map[string]any{"output_index": 0, "item": done[0]}) {
		return
	}
	final := r.object("", done)
	send("response."+final.Status, map[string]any{"response": final})
}
