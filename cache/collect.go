package cache

import (
	"bytes"
	"encoding/json"
	"errors"
	"sort"

	"github.com/tollgate-ai/tollgate/kernel"
)

// Collector folds a streamed reply, as the client receives it, into the
// API's non-stream reply: what an Entry stores. Write takes the stream's
// bytes split anywhere; Body gives the reply once the stream ended. A stream
// that is malformed, failed or larger than the cap is not stored.
type Collector struct {
	api       API
	jsonArray bool
	limit     int
	n         int
	pending   []byte // an SSE event not ended yet, or the whole JSON array
	err       error

	chat     *chatCompletion
	chatCall map[[2]int]*chatToolCall // (choice, tool call index)
	compl    *completion
	final    json.RawMessage // Responses: the response of its last event
	anth     *anthState
	gemini   []json.RawMessage
}

var errStream = errors.New("cache: the stream cannot be stored")

// NewCollector returns the collector of a streamed reply to a request the
// plan stores, nil when it stores nothing or the request is not a stream.
func NewCollector(p *Plan) *Collector {
	if !p.Store || !p.stream {
		return nil
	}
	return &Collector{api: p.api, jsonArray: p.jsonArray, limit: 4 * DefaultMaxEntry}
}

// Write takes the next bytes of the stream.
func (c *Collector) Write(b []byte) {
	if c.err != nil {
		return
	}
	c.n += len(b)
	if c.n > c.limit {
		c.err, c.pending = ErrTooLarge, nil
		return
	}
	c.pending = append(c.pending, b...)
	if c.jsonArray {
		return // parsed whole at the end
	}
	for {
		i, l := eventEnd(c.pending)
		if i < 0 {
			return
		}
		c.event(c.pending[:i])
		c.pending = c.pending[i+l:]
	}
}

// eventEnd finds the blank line that ends an SSE event: its index and length.
func eventEnd(b []byte) (int, int) {
	for i := 0; i < len(b); i++ {
		if b[i] != '\n' && b[i] != '\r' {
			continue
		}
		// a line ends at i; a blank line follows when the next line is empty
		j := i + 1
		if b[i] == '\r' && j < len(b) && b[j] == '\n' {
			j++
		}
		if j < len(b) && (b[j] == '\n' || b[j] == '\r') {
			k := j + 1
			if b[j] == '\r' {
				if k >= len(b) {
					return -1, 0 // a CR may be followed by its LF
				}
				if b[k] == '\n' {
					k++
				}
			}
			return i, k - i
		}
		i = j - 1
	}
	return -1, 0
}

// nextLine splits the first line off b; lines end with CRLF, LF or CR.
func nextLine(b []byte) (line, rest []byte) {
	i := bytes.IndexAny(b, "\r\n")
	if i < 0 {
		return b, nil
	}
	line, rest = b[:i], b[i+1:]
	if b[i] == '\r' && len(rest) > 0 && rest[0] == '\n' {
		rest = rest[1:]
	}
	return line, rest
}

// event handles one SSE event's lines.
func (c *Collector) event(ev []byte) {
	var name string
	var data []byte
	for len(ev) > 0 {
		var line []byte
		line, ev = nextLine(ev)
		field, value, _ := bytes.Cut(line, []byte{':'})
		value = bytes.TrimPrefix(value, []byte{' '})
		switch string(field) {
		case "event":
			name = string(value)
		case "data":
			if data != nil {
				data = append(data, '\n')
			}
			data = append(data, value...)
		}
	}
	if len(data) == 0 || c.err != nil {
		return
	}
	switch c.api {
	case APIChat:
		c.chatEvent(data)
	case APICompletions:
		c.completionsEvent(data)
	case APIResponses:
		c.responsesEvent(name, data)
	case APIMessages:
		c.anthEvent(data)
	case APIGeminiGenerate:
		c.gemini = append(c.gemini, append(json.RawMessage(nil), data...))
	default:
		c.err = ErrUnsupported
	}
}

// Body is the non-stream reply the stream amounts to; u is the usage the
// gateway settled, written into replies whose stream carried none (the
// client did not ask for the usage chunk).
func (c *Collector) Body(u kernel.Usage) ([]byte, error) {
	if c.err != nil {
		return nil, c.err
	}
	if c.jsonArray {
		if err := json.Unmarshal(c.pending, &c.gemini); err != nil {
			return nil, errStream
		}
	} else if len(bytes.TrimSpace(c.pending)) > 0 {
		c.event(c.pending) // a last event without its blank line
		if c.err != nil {
			return nil, c.err
		}
	}
	switch c.api {
	case APIChat:
		return c.chatBody(u)
	case APICompletions:
		return c.completionsBody(u)
	case APIResponses:
		if c.final == nil {
			return nil, errStream
		}
		return c.final, nil
	case APIMessages:
		return c.anthBody()
	case APIGeminiGenerate:
		return geminiMerge(c.gemini)
	}
	return nil, ErrUnsupported
}

// --- chat and completions ---------------------------------------------------

func (c *Collector) chatEvent(data []byte) {
	if string(data) == "[DONE]" {
		return
	}
	var ch chatChunk
	if err := json.Unmarshal(data, &ch); err != nil || ch.Object != "chat.completion.chunk" {
		c.err = errStream // an error event, or not a chunk
		return
	}
	if c.chat == nil {
		c.chat = &chatCompletion{ID: ch.ID, Object: "chat.completion", Created: ch.Created, Model: ch.Model}
		c.chatCall = map[[2]int]*chatToolCall{}
	}
	if ch.SystemFingerprint != nil {
		c.chat.SystemFingerprint = ch.SystemFingerprint
	}
	if ch.ServiceTier != nil {
		c.chat.ServiceTier = ch.ServiceTier
	}
	if !isNull(ch.Usage) {
		c.chat.Usage = ch.Usage
	}
	for _, d := range ch.Choices {
		cc := c.chatChoice(d.Index)
		m := &cc.Message
		if d.Delta.Role != "" {
			m.Role = d.Delta.Role
		}
		m.Content = appendPtr(m.Content, d.Delta.Content)
		m.Refusal = appendPtr(m.Refusal, d.Delta.Refusal)
		m.ReasoningContent = appendPtr(m.ReasoningContent, d.Delta.ReasoningContent)
		for _, tc := range d.Delta.ToolCalls {
			j := 0
			if tc.Index != nil {
				j = *tc.Index
			}
			call := c.chatCall[[2]int{d.Index, j}]
			if call == nil {
				call = &chatToolCall{Index: &j, Type: "function"}
				c.chatCall[[2]int{d.Index, j}] = call
			}
			if tc.ID != "" {
				call.ID = tc.ID
			}
			if tc.Type != "" {
				call.Type = tc.Type
			}
			call.Function.Name += tc.Function.Name
			call.Function.Arguments += tc.Function.Arguments
		}
		if !isNull(d.Logprobs) {
			cc.Logprobs = mergeLogprobs(cc.Logprobs, d.Logprobs)
		}
		if d.FinishReason != nil {
			cc.FinishReason = d.FinishReason
		}
	}
}

func (c *Collector) chatChoice(i int) *chatChoice {
	for k := range c.chat.Choices {
		if c.chat.Choices[k].Index == i {
			return &c.chat.Choices[k]
		}
	}
	c.chat.Choices = append(c.chat.Choices, chatChoice{Index: i, Message: chatMessage{Role: "assistant"}})
	return &c.chat.Choices[len(c.chat.Choices)-1]
}

func appendPtr(dst, add *string) *string {
	if add == nil {
		return dst
	}
	if dst == nil {
		s := *add
		return &s
	}
	s := *dst + *add
	return &s
}

// mergeLogprobs concatenates the content (and refusal) token lists of two
// logprobs objects.
func mergeLogprobs(a, b json.RawMessage) json.RawMessage {
	if isNull(a) {
		return append(json.RawMessage(nil), b...)
	}
	var x, y map[string][]json.RawMessage
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return a
	}
	for k, v := range y {
		x[k] = append(x[k], v...)
	}
	out, _ := json.Marshal(x)
	return out
}

func (c *Collector) chatBody(u kernel.Usage) ([]byte, error) {
	if c.chat == nil || len(c.chat.Choices) == 0 {
		return nil, errStream
	}
	calls := make([][2]int, 0, len(c.chatCall))
	for k := range c.chatCall {
		calls = append(calls, k)
	}
	sort.Slice(calls, func(i, j int) bool {
		return calls[i][0] < calls[j][0] || calls[i][0] == calls[j][0] && calls[i][1] < calls[j][1]
	})
	for _, k := range calls {
		call := *c.chatCall[k]
		call.Index = nil
		cc := c.chatChoice(k[0])
		cc.Message.ToolCalls = append(cc.Message.ToolCalls, call)
	}
	sort.Slice(c.chat.Choices, func(i, j int) bool { return c.chat.Choices[i].Index < c.chat.Choices[j].Index })
	for _, cc := range c.chat.Choices {
		if cc.FinishReason == nil {
			return nil, errStream // cut before its end
		}
	}
	if isNull(c.chat.Usage) {
		c.chat.Usage = openAIUsage(u)
	}
	return json.Marshal(c.chat)
}

func (c *Collector) completionsEvent(data []byte) {
	if string(data) == "[DONE]" {
		return
	}
	var ch completion
	if err := json.Unmarshal(data, &ch); err != nil || ch.Object != "text_completion" {
		c.err = errStream
		return
	}
	if c.compl == nil {
		c.compl = &completion{ID: ch.ID, Object: "text_completion", Created: ch.Created, Model: ch.Model}
	}
	if ch.SystemFingerprint != nil {
		c.compl.SystemFingerprint = ch.SystemFingerprint
	}
	if !isNull(ch.Usage) {
		c.compl.Usage = ch.Usage
	}
	for _, d := range ch.Choices {
		var cc *completionChoice
		for k := range c.compl.Choices {
			if c.compl.Choices[k].Index == d.Index {
				cc = &c.compl.Choices[k]
			}
		}
		if cc == nil {
			c.compl.Choices = append(c.compl.Choices, completionChoice{Index: d.Index})
			cc = &c.compl.Choices[len(c.compl.Choices)-1]
		}
		cc.Text += d.Text
		if !isNull(d.Logprobs) {
			cc.Logprobs = d.Logprobs // legacy logprobs are not concatenable: keep none rather than a part
			c.err = ErrUnsupported
		}
		if d.FinishReason != nil {
			cc.FinishReason = d.FinishReason
		}
	}
}

func (c *Collector) completionsBody(u kernel.Usage) ([]byte, error) {
	if c.compl == nil || len(c.compl.Choices) == 0 {
		return nil, errStream
	}
	sort.Slice(c.compl.Choices, func(i, j int) bool { return c.compl.Choices[i].Index < c.compl.Choices[j].Index })
	for _, cc := range c.compl.Choices {
		if cc.FinishReason == nil {
			return nil, errStream
		}
	}
	if isNull(c.compl.Usage) {
		c.compl.Usage = openAIUsage(u)
	}
	return json.Marshal(c.compl)
}

// --- Responses ----------------------------------------------------------------

// responsesEvent keeps the response of response.completed or
// response.incomplete, which carries the whole response; response.failed
// and error events are not stored.
func (c *Collector) responsesEvent(name string, data []byte) {
	var ev struct {
		Type     string          `json:"type"`
		Response json.RawMessage `json:"response"`
	}
	if err := json.Unmarshal(data, &ev); err != nil {
		c.err = errStream
		return
	}
	switch ev.Type {
	case "response.completed", "response.incomplete":
		if isNull(ev.Response) {
			c.err = errStream
			return
		}
		c.final = append(json.RawMessage(nil), ev.Response...)
	case "response.failed", "error":
		c.err = errStream
	}
	_ = name
}

// --- Anthropic ----------------------------------------------------------------

type anthState struct {
	msg    object
	usage  object
	blocks []anthBlock
	stop   json.RawMessage
	seq    json.RawMessage
	ended  bool
}

type anthBlock struct {
	start             object
	text, json, think []byte
	sig               string
	hasText, hasInput bool
	hasThink, hasSig  bool
}

func (c *Collector) anthEvent(data []byte) {
	var ev struct {
		Type         string `json:"type"`
		Message      object `json:"message"`
		Index        int    `json:"index"`
		ContentBlock object `json:"content_block"`
		Delta        object `json:"delta"`
		Usage        object `json:"usage"`
	}
	if err := json.Unmarshal(data, &ev); err != nil {
		c.err = errStream
		return
	}
	a := c.anth
	if a == nil && ev.Type != "message_start" && ev.Type != "ping" {
		c.err = errStream
		return
	}
	switch ev.Type {
	case "message_start":
		if ev.Message == nil {
			c.err = errStream
			return
		}
		c.anth = &anthState{msg: ev.Message, usage: object{}}
		_ = json.Unmarshal(ev.Message["usage"], &c.anth.usage)
	case "content_block_start":
		if ev.Index != len(a.blocks) || ev.ContentBlock == nil {
			c.err = errStream
			return
		}
		a.blocks = append(a.blocks, anthBlock{start: ev.ContentBlock})
	case "content_block_delta":
		if ev.Index < 0 || ev.Index >= len(a.blocks) {
			c.err = errStream
			return
		}
		b := &a.blocks[ev.Index]
		switch ev.Delta.str("type") {
		case "text_delta":
			b.text, b.hasText = append(b.text, ev.Delta.str("text")...), true
		case "input_json_delta":
			b.json, b.hasInput = append(b.json, ev.Delta.str("partial_json")...), true
		case "thinking_delta":
			b.think, b.hasThink = append(b.think, ev.Delta.str("thinking")...), true
		case "signature_delta":
			b.sig, b.hasSig = b.sig+ev.Delta.str("signature"), true
		default: // citations_delta and others the entry cannot replay
			c.err = ErrUnsupported
		}
	case "message_delta":
		a.stop, a.seq = ev.Delta["stop_reason"], ev.Delta["stop_sequence"]
		for k, v := range ev.Usage {
			if !isNull(v) {
				a.usage[k] = v
			}
		}
	case "message_stop":
		a.ended = true
	case "error":
		c.err = errStream
	}
}

func (c *Collector) anthBody() ([]byte, error) {
	a := c.anth
	if a == nil || !a.ended || isNull(a.stop) {
		return nil, errStream
	}
	content := make([]json.RawMessage, 0, len(a.blocks))
	for _, b := range a.blocks {
		var kv []string
		if b.hasText {
			kv = append(kv, "text", quote(string(b.text)))
		}
		if b.hasInput {
			in := b.json
			if len(bytes.TrimSpace(in)) == 0 {
				in = []byte("{}")
			}
			if !json.Valid(in) {
				return nil, errStream
			}
			kv = append(kv, "input", string(in))
		}
		if b.hasThink {
			kv = append(kv, "thinking", quote(string(b.think)))
		}
		if b.hasSig {
			kv = append(kv, "signature", quote(b.sig))
		}
		content = append(content, b.start.with(kv...))
	}
	cb, _ := json.Marshal(content)
	ub, _ := json.Marshal(a.usage)
	seq := a.seq
	if isNull(seq) {
		seq = json.RawMessage("null")
	}
	return a.msg.with("content", string(cb), "stop_reason", string(a.stop), "stop_sequence", string(seq), "usage", string(ub)), nil
}

// --- Gemini -------------------------------------------------------------------

// geminiMerge folds a Gemini stream's chunks into one GenerateContentResponse:
// each candidate's parts concatenated (consecutive text parts of the same
// kind — thought or not — joined into one), the last finishReason,
// usageMetadata, modelVersion and responseId.
func geminiMerge(chunks []json.RawMessage) ([]byte, error) {
	if len(chunks) == 0 {
		return nil, errStream
	}
	type candidate struct {
		c     object
		parts []object
	}
	var cands []*candidate
	top := object{}
	for _, raw := range chunks {
		var ch object
		if err := json.Unmarshal(raw, &ch); err != nil {
			return nil, errStream
		}
		if _, bad := ch["error"]; bad {
			return nil, errStream
		}
		var cs []object
		_ = json.Unmarshal(ch["candidates"], &cs)
		for k, v := range ch {
			if k != "candidates" {
				top[k] = v
			}
		}
		for i, cnd := range cs {
			idx := i
			if n, ok := cnd["index"]; ok {
				_ = json.Unmarshal(n, &idx)
			}
			for len(cands) <= idx {
				cands = append(cands, &candidate{c: object{}})
			}
			cd := cands[idx]
			var content struct {
				Parts []object        `json:"parts"`
				Role  json.RawMessage `json:"role"`
			}
			_ = json.Unmarshal(cnd["content"], &content)
			for k, v := range cnd {
				if k != "content" {
					cd.c[k] = v
				}
			}
			if content.Role != nil {
				cd.c["role"] = content.Role
			}
			for _, p := range content.Parts {
				n := len(cd.parts)
				if _, isText := p["text"]; isText && len(p) <= 2 && n > 0 {
					prev := cd.parts[n-1]
					_, prevText := prev["text"]
					if prevText && len(prev) <= 2 && string(prev["thought"]) == string(p["thought"]) {
						cd.parts[n-1] = object{"text": json.RawMessage(quote(prev.str("text") + p.str("text")))}
						if t, ok := p["thought"]; ok {
							cd.parts[n-1]["thought"] = t
						}
						continue
					}
				}
				cd.parts = append(cd.parts, p)
			}
		}
	}
	out := make([]json.RawMessage, 0, len(cands))
	for _, cd := range cands {
		role := cd.c["role"]
		delete(cd.c, "role")
		if role == nil {
			role = json.RawMessage(`"model"`)
		}
		pb, _ := json.Marshal(cd.parts)
		cd.c["content"] = json.RawMessage(`{"parts":` + string(pb) + `,"role":` + string(role) + `}`)
		if _, ok := cd.c["finishReason"]; !ok {
			return nil, errStream
		}
		b, _ := json.Marshal(cd.c)
		out = append(out, b)
	}
	cb, _ := json.Marshal(out)
	top["candidates"] = cb
	return json.Marshal(top)
}
