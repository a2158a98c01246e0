package mockllm

import (
	"encoding/json"
	"net/http"
	"strconv"
)

// messagesRequest is the part of an Anthropic Messages request the mock reads.
type messagesRequest struct {
	Model     string  `json:"model"`
	MaxTokens *int64  `json:"max_tokens"`
	Stream    bool    `json:"stream"`
	System    content `json:"system"`
	Messages  []struct {
		Role    string  `json:"role"`
		Content content `json:"content"`
	} `json:"messages"`
	Tools []struct {
		Name string `json:"name"`
	} `json:"tools"`
	CacheControl json.RawMessage `json:"cache_control"`
}

// prompt is the prompt text of a Messages request and its cacheable prefix.
type prompt struct {
	text     []byte
	last     string
	lastUser string
	prefix   int  // bytes of text that form the cacheable prefix
	cacheReq bool // the request asked for caching
}

func (req *messagesRequest) prompt() prompt {
	var p prompt
	add := func(c *content) {
		p.text = append(p.text, c.Text...)
		for i := range c.Parts {
			if c.Parts[i].Type == "" || c.Parts[i].Type == "text" {
				p.text = append(p.text, c.Parts[i].Text...)
			}
			if len(c.Parts[i].CacheControl) > 0 && string(c.Parts[i].CacheControl) != "null" {
				p.prefix = len(p.text)
				p.cacheReq = true
			}
		}
	}
	add(&req.System)
	for i := range req.Messages {
		n := len(p.text)
		add(&req.Messages[i].Content)
		p.last = string(p.text[n:])
		if req.Messages[i].Role == "user" {
			p.lastUser = p.last
		}
	}
	if len(req.CacheControl) > 0 && string(req.CacheControl) != "null" {
		p.prefix = len(p.text)
		p.cacheReq = true
	}
	return p
}

// cacheKey identifies a cached prompt prefix of one API key.
type cacheKey struct {
	key  string
	hash uint64
}

// anthropicMessage is a reply being produced for a Messages request.
type anthropicMessage struct {
	id, model     string
	input         int64
	cacheRead     int64
	cacheCreation int64
	cacheReq      bool
	output        int64
	capped        bool
	reply         reply
	tool          *toolCall // x-mock-tool-call: the reply is this tool_use
}

func (s *Server) messages(c *call) {
	var req messagesRequest
	if !c.decode(&req) {
		return
	}
	switch {
	case req.Model == "":
		writeError(c.w, c.flavor, http.StatusBadRequest, "model: Field required")
		return
	case req.MaxTokens == nil:
		writeError(c.w, c.flavor, http.StatusBadRequest, "max_tokens: Field required")
		return
	case len(req.Messages) == 0:
		writeError(c.w, c.flavor, http.StatusBadRequest, "messages: Field required")
		return
	}
	c.model = req.Model
	if c.replyModel != "" {
		c.model = c.replyModel
	}
	p := req.prompt()
	m := &anthropicMessage{
		id: "msg_mock_" + strconv.FormatUint(s.seq.Add(1), 10), model: c.model,
		cacheReq: p.cacheReq,
	}
	total := tokensOf(len(p.text))
	if p.prefix > 0 {
		prefix := tokensOf(p.prefix)
		k := cacheKey{key: c.key, hash: hashBytes(s, p.text[:p.prefix])}
		if _, seen := s.cache.LoadOrStore(k, struct{}{}); seen {
			m.cacheRead = prefix
		} else {
			m.cacheCreation = prefix
		}
		m.input = total - prefix
	} else {
		m.input = total
	}
	m.output, m.capped = outputTokens(req.MaxTokens, c.output)
	m.reply = newReply(p.last, m.output)
	if c.toolCall != "" {
		names := make([]string, len(req.Tools))
		for i := range req.Tools {
			names[i] = req.Tools[i].Name
		}
		if m.tool = newToolCall(c.toolCall, names, p.lastUser); m.tool != nil {
			m.output, m.capped = m.tool.output, false
		}
	}
	b := billed{input: m.input, cached: m.cacheRead, creation: m.cacheCreation}
	if req.Stream {
		s.streamAnthropic(c, m, b)
		return
	}
	s.writeJSON(c, m.appendJSON(nil), b, m.output)
}

func (m *anthropicMessage) stopReason() string {
	if m.tool != nil {
		return "tool_use"
	}
	if m.capped {
		return "max_tokens"
	}
	return "end_turn"
}

// appendUsage appends the usage object with output tokens out.
func (m *anthropicMessage) appendUsage(b []byte, out int64) []byte {
	b = append(b, `{"input_tokens":`...)
	b = appendInt(b, m.input)
	if m.cacheReq {
		b = append(b, `,"cache_creation_input_tokens":`...)
		b = appendInt(b, m.cacheCreation)
		b = append(b, `,"cache_read_input_tokens":`...)
		b = appendInt(b, m.cacheRead)
	}
	b = append(b, `,"output_tokens":`...)
	b = appendInt(b, out)
	return append(b, '}')
}

// appendMessage appends the message object with the given content, stop
// reason (JSON) and output tokens.
func (m *anthropicMessage) appendMessage(b []byte, contentJSON []byte, stop string, out int64) []byte {
	b = append(b, `{"id":`...)
	b = appendString(b, m.id)
	b = append(b, `,"type":"message","role":"assistant","model":`...)
	b = appendString(b, m.model)
	b = append(b, `,"content":`...)
	b = append(b, contentJSON...)
	b = append(b, `,"stop_reason":`...)
	b = append(b, stop...)
	b = append(b, `,"stop_sequence":null,"usage":`...)
	b = m.appendUsage(b, out)
	return append(b, '}')
}

func (m *anthropicMessage) appendJSON(b []byte) []byte {
	var content []byte
	if m.tool != nil {
		content = appendString([]byte(`[{"type":"tool_use","id":"toolu_mock_1","name":`), m.tool.name)
		content = append(content, `,"input":`...)
		content = append(content, m.tool.args...)
		content = append(content, `}]`...)
	} else {
		content = appendString([]byte(`[{"type":"text","text":`), m.reply.text())
		content = append(content, `}]`...)
	}
	return m.appendMessage(b, content, string(appendString(nil, m.stopReason())), m.output)
}

func (s *Server) streamAnthropic(c *call, m *anthropicMessage, b billed) {
	st, ok := s.startStream(c, b)
	if !ok {
		return
	}
	buf := append([]byte(nil), `{"type":"message_start","message":`...)
	buf = m.appendMessage(buf, []byte(`[]`), "null", min(1, m.output))
	buf = append(buf, '}')
	if !st.send("message_start", buf) {
		return
	}
	if m.tool != nil {
		streamToolUse(st, m, buf[:0])
		return
	}
	if !st.send("content_block_start", []byte(`{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`)) ||
		!st.send("ping", []byte(`{"type":"ping"}`)) {
		return
	}
	texts, words := m.reply.chunks(s.cfg.Chunks)
	for i, t := range texts {
		buf = append(buf[:0], `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":`...)
		buf = appendString(buf, t)
		buf = append(buf, `}}`...)
		if !st.content(i, "content_block_delta", buf, words[i]) {
			return
		}
	}
	m.streamEnd(st, buf[:0])
}

// streamToolUse streams the tool_use block of an x-mock-tool-call reply and
// the end of the message.
func streamToolUse(st *stream, m *anthropicMessage, buf []byte) {
	tc := m.tool
	buf = appendString(append(buf, `{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_mock_1","name":`...), tc.name)
	buf = append(buf, `,"input":{}}}`...)
	if !st.send("content_block_start", buf) {
		return
	}
	texts, tokens := tc.pieces()
	for i, t := range texts {
		buf = append(buf[:0], `{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":`...)
		buf = appendString(buf, t)
		buf = append(buf, `}}`...)
		if !st.content(i, "content_block_delta", buf, tokens[i]) {
			return
		}
	}
	m.streamEnd(st, buf[:0])
}

// streamEnd sends content_block_stop, message_delta and message_stop.
func (m *anthropicMessage) streamEnd(st *stream, buf []byte) {
	if !st.send("content_block_stop", []byte(`{"type":"content_block_stop","index":0}`)) {
		return
	}
	buf = append(buf[:0], `{"type":"message_delta","delta":{"stop_reason":`...)
	buf = appendString(buf, m.stopReason())
	buf = append(buf, `,"stop_sequence":null},"usage":{"output_tokens":`...)
	buf = appendInt(buf, m.output)
	buf = append(buf, `}}`...)
	if !st.send("message_delta", buf) {
		return
	}
	st.send("message_stop", []byte(`{"type":"message_stop"}`))
}

// countTokens answers POST /v1/messages/count_tokens with the total input
// tokens (cached prefix included); it is free and not billed.
func (s *Server) countTokens(c *call) {
	var req messagesRequest
	if !c.decode(&req) {
		return
	}
	if len(req.Messages) == 0 {
		writeError(c.w, c.flavor, http.StatusBadRequest, "messages: Field required")
		return
	}
	p := req.prompt()
	b := appendInt([]byte(`{"input_tokens":`), tokensOf(len(p.text)))
	b = append(b, '}')
	setJSON(c.w.Header(), len(b))
	_, _ = c.w.Write(b)
}
