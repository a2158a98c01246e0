package mockllm

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"hash/fnv"
	"math"
	"net/http"
	"strconv"
)

// openAIRequest is the part of a chat completions or completions request the
// mock reads.
type openAIRequest struct {
	Model    string        `json:"model"`
	Messages []chatMessage `json:"messages"`
	Tools    []struct {
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	} `json:"tools"`
	Prompt              stringOrList   `json:"prompt"`
	Stream              bool           `json:"stream"`
	StreamOptions       *streamOptions `json:"stream_options"`
	MaxTokens           *int64         `json:"max_tokens"`
	MaxCompletionTokens *int64         `json:"max_completion_tokens"`
}

type chatMessage struct {
	Role    string  `json:"role"`
	Content content `json:"content"`
}

type streamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

// generation is a reply being produced for an OpenAI-format request.
type generation struct {
	chat         bool
	id           string
	model        string
	created      int64
	prompt       int64 // prompt tokens, cached ones included
	cached       int64
	output       int64
	capped       bool
	reply        reply
	tool         *toolCall // x-mock-tool-call: the reply is this tool call
	includeUsage bool
}

func (s *Server) chat(c *call) { s.generate(c, true) }

func (s *Server) completions(c *call) { s.generate(c, false) }

func (s *Server) generate(c *call, chat bool) {
	var req openAIRequest
	if !c.decode(&req) {
		return
	}
	if req.Model == "" && c.deployment == "" {
		writeError(c.w, c.flavor, http.StatusBadRequest, "you must provide a model parameter")
		return
	}
	var text []byte
	var last, lastUser string
	if chat {
		if len(req.Messages) == 0 {
			writeError(c.w, c.flavor, http.StatusBadRequest, "'messages' must contain at least one message")
			return
		}
		for i := range req.Messages {
			n := len(text)
			text = req.Messages[i].Content.appendText(text)
			last = string(text[n:])
			if req.Messages[i].Role == "user" {
				lastUser = last
			}
		}
	} else {
		for _, p := range req.Prompt {
			text = append(text, p...)
		}
		last = string(text)
	}
	g := &generation{
		chat: chat, model: req.Model, created: s.now().Unix(), prompt: tokensOf(len(text)),
		includeUsage: req.StreamOptions != nil && req.StreamOptions.IncludeUsage,
	}
	if g.model == "" {
		g.model = c.deployment
	}
	if c.replyModel != "" {
		g.model = c.replyModel
	}
	c.model = g.model
	g.cached = min(c.cached, g.prompt)
	maxTokens := req.MaxTokens
	if req.MaxCompletionTokens != nil {
		maxTokens = req.MaxCompletionTokens
	}
	g.output, g.capped = outputTokens(maxTokens, c.output)
	g.reply = newReply(last, g.output)
	if chat && c.toolCall != "" {
		names := make([]string, len(req.Tools))
		for i := range req.Tools {
			names[i] = req.Tools[i].Function.Name
		}
		if g.tool = newToolCall(c.toolCall, names, lastUser); g.tool != nil {
			g.output, g.capped = g.tool.output, false
		}
	}
	seq := strconv.FormatUint(s.seq.Add(1), 10)
	if chat {
		g.id = "chatcmpl-mock-" + seq
	} else {
		g.id = "cmpl-mock-" + seq
	}
	b := billed{input: g.prompt - g.cached, cached: g.cached}
	if req.Stream {
		s.streamOpenAI(c, g, b)
		return
	}
	s.writeJSON(c, g.appendJSON(make([]byte, 0, 1024)), b, g.output)
}

func (g *generation) finishReason() string {
	if g.tool != nil {
		return "tool_calls"
	}
	if g.capped {
		return "length"
	}
	return "stop"
}

func (g *generation) appendUsage(b []byte) []byte {
	b = append(b, `{"prompt_tokens":`...)
	b = appendInt(b, g.prompt)
	b = append(b, `,"completion_tokens":`...)
	b = appendInt(b, g.output)
	b = append(b, `,"total_tokens":`...)
	b = appendInt(b, g.prompt+g.output)
	if g.chat {
		b = append(b, `,"prompt_tokens_details":{"cached_tokens":`...)
		b = appendInt(b, g.cached)
		b = append(b, `},"completion_tokens_details":{"reasoning_tokens":0}`...)
	}
	return append(b, '}')
}

// appendHead appends `{"id":…,"object":…,"created":…,"model":…,`.
func (g *generation) appendHead(b []byte, object string) []byte {
	b = append(b, `{"id":`...)
	b = appendString(b, g.id)
	b = append(b, `,"object":`...)
	b = appendString(b, object)
	b = append(b, `,"created":`...)
	b = appendInt(b, g.created)
	b = append(b, `,"model":`...)
	b = appendString(b, g.model)
	return append(b, ',')
}

// appendJSON appends the non-streaming reply.
func (g *generation) appendJSON(b []byte) []byte {
	if g.chat {
		b = g.appendHead(b, "chat.completion")
		b = append(b, `"choices":[{"index":0,"message":{"role":"assistant","content":`...)
		if g.tool != nil {
			b = append(b, `null,"tool_calls":[{"id":"call_mock_1","type":"function","function":{"name":`...)
			b = appendString(b, g.tool.name)
			b = append(b, `,"arguments":`...)
			b = appendString(b, g.tool.args)
			b = append(b, `}}]`...)
		} else {
			b = appendString(b, g.reply.text())
		}
		b = append(b, `,"refusal":null},"logprobs":null,"finish_reason":`...)
	} else {
		b = g.appendHead(b, "text_completion")
		b = append(b, `"choices":[{"text":`...)
		b = appendString(b, g.reply.text())
		b = append(b, `,"index":0,"logprobs":null,"finish_reason":`...)
	}
	b = appendString(b, g.finishReason())
	b = append(b, `}],"usage":`...)
	b = g.appendUsage(b)
	return append(b, '}')
}

// appendToolChunk appends a streamed tool_calls delta: the first (with id,
// type and name, empty arguments) when first, else an arguments piece.
func (g *generation) appendToolChunk(b []byte, first bool, args string) []byte {
	b = g.appendHead(b, "chat.completion.chunk")
	b = append(b, `"system_fingerprint":null,"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,`...)
	if first {
		b = append(b, `"id":"call_mock_1","type":"function","function":{"name":`...)
		b = appendString(b, g.tool.name)
		b = append(b, `,"arguments":""}`...)
	} else {
		b = append(b, `"function":{"arguments":`...)
		b = appendString(b, args)
		b = append(b, '}')
	}
	b = append(b, `}]},"logprobs":null,"finish_reason":null}]`...)
	if g.includeUsage {
		b = append(b, `,"usage":null`...)
	}
	return append(b, '}')
}

// appendChunk appends one streamed chunk: a role delta (role), a content delta
// (text), or the finish chunk (finish).
func (g *generation) appendChunk(b []byte, role bool, text string, finish bool) []byte {
	if g.chat {
		b = g.appendHead(b, "chat.completion.chunk")
		b = append(b, `"system_fingerprint":null,"choices":[{"index":0,"delta":{`...)
		switch {
		case role:
			b = append(b, `"role":"assistant","content":""`...)
		case !finish:
			b = append(b, `"content":`...)
			b = appendString(b, text)
		}
		b = append(b, `},"logprobs":null,"finish_reason":`...)
	} else {
		b = g.appendHead(b, "text_completion")
		b = append(b, `"choices":[{"text":`...)
		b = appendString(b, text)
		b = append(b, `,"index":0,"logprobs":null,"finish_reason":`...)
	}
	if finish {
		b = appendString(b, g.finishReason())
	} else {
		b = append(b, "null"...)
	}
	b = append(b, `}]`...)
	if g.includeUsage {
		b = append(b, `,"usage":null`...)
	}
	return append(b, '}')
}

func (s *Server) streamOpenAI(c *call, g *generation, b billed) {
	st, ok := s.startStream(c, b)
	if !ok {
		return
	}
	buf := make([]byte, 0, 512)
	if g.chat && !st.send("", g.appendChunk(buf[:0], true, "", false)) {
		return
	}
	if g.tool != nil {
		if !st.send("", g.appendToolChunk(buf[:0], true, "")) {
			return
		}
		texts, tokens := g.tool.pieces()
		for i, t := range texts {
			buf = g.appendToolChunk(buf[:0], false, t)
			if !st.content(i+1, "", buf, tokens[i]) {
				return
			}
		}
	} else {
		texts, words := g.reply.chunks(s.cfg.Chunks)
		for i, t := range texts {
			buf = g.appendChunk(buf[:0], false, t, false)
			if !st.content(i, "", buf, words[i]) {
				return
			}
		}
	}
	if !st.send("", g.appendChunk(buf[:0], false, "", true)) {
		return
	}
	if g.includeUsage {
		object := "text_completion"
		if g.chat {
			object = "chat.completion.chunk"
		}
		buf = g.appendHead(buf[:0], object)
		if g.chat {
			buf = append(buf, `"system_fingerprint":null,`...)
		}
		buf = append(buf, `"choices":[],"usage":`...)
		buf = g.appendUsage(buf)
		buf = append(buf, '}')
		if !st.send("", buf) {
			return
		}
	}
	st.send("", []byte("[DONE]"))
}

// embeddingsRequest is the part of an embeddings request the mock reads.
type embeddingsRequest struct {
	Model          string          `json:"model"`
	Input          json.RawMessage `json:"input"`
	EncodingFormat string          `json:"encoding_format"`
	Dimensions     int             `json:"dimensions"`

	// Set by decodeFast when Input is one string without escapes: its text.
	text   string
	isText bool
}

// embeddingInputs parses input: a string, strings, tokens or token lists. It
// returns each input's bytes (the seed of its vector) and tokens.
func embeddingInputs(raw json.RawMessage) (seeds [][]byte, tokens []int64, ok bool) {
	var one string
	if json.Unmarshal(raw, &one) == nil {
		return [][]byte{[]byte(one)}, []int64{tokensOf(len(one))}, true
	}
	var many []string
	if json.Unmarshal(raw, &many) == nil && len(many) > 0 {
		for _, s := range many {
			seeds = append(seeds, []byte(s))
			tokens = append(tokens, tokensOf(len(s)))
		}
		return seeds, tokens, true
	}
	var ids []int64
	if json.Unmarshal(raw, &ids) == nil && len(ids) > 0 {
		return [][]byte{[]byte(string(raw))}, []int64{int64(len(ids))}, true
	}
	var lists [][]int64
	if json.Unmarshal(raw, &lists) == nil && len(lists) > 0 {
		for _, l := range lists {
			seeds = append(seeds, []byte(strconv.Itoa(len(seeds))+":"+strconv.Itoa(len(l))))
			tokens = append(tokens, int64(len(l)))
		}
		return seeds, tokens, true
	}
	return nil, nil, false
}

// embedding is the deterministic unit-range vector of seed.
func embedding(seed []byte, dims int) []float32 {
	h := fnv.New64a()
	_, _ = h.Write(seed)
	x := h.Sum64() | 1
	v := make([]float32, dims)
	for i := range v {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		v[i] = float32(int64(x>>11)-(1<<52)) / float32(1<<52)
	}
	return v
}

func (s *Server) embeddings(c *call) {
	var req embeddingsRequest
	if !c.decode(&req) {
		return
	}
	var seeds [][]byte
	var tokens []int64
	ok := true
	if req.isText { // what embeddingInputs makes of one string, without decoding it again
		seeds, tokens = [][]byte{[]byte(req.text)}, []int64{tokensOf(len(req.text))}
	} else {
		seeds, tokens, ok = embeddingInputs(req.Input)
	}
	if !ok {
		writeError(c.w, c.flavor, http.StatusBadRequest, "'input' must be a string, strings, tokens or token lists")
		return
	}
	if req.Model == "" && c.deployment == "" {
		writeError(c.w, c.flavor, http.StatusBadRequest, "you must provide a model parameter")
		return
	}
	model := req.Model
	if model == "" {
		model = c.deployment
	}
	c.model = model
	dims := s.cfg.EmbeddingDimensions
	if req.Dimensions > 0 {
		dims = req.Dimensions
	}
	var total int64
	b := []byte(`{"object":"list","data":[`)
	for i, seed := range seeds {
		total += tokens[i]
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"object":"embedding","index":`...)
		b = strconv.AppendInt(b, int64(i), 10)
		b = append(b, `,"embedding":`...)
		v := embedding(seed, dims)
		if req.EncodingFormat == "base64" {
			raw := make([]byte, 4*len(v))
			for j, f := range v {
				binary.LittleEndian.PutUint32(raw[4*j:], math.Float32bits(f))
			}
			b = append(b, '"')
			b = base64.StdEncoding.AppendEncode(b, raw)
			b = append(b, '"')
		} else {
			b = append(b, '[')
			for j, f := range v {
				if j > 0 {
					b = append(b, ',')
				}
				b = strconv.AppendFloat(b, float64(f), 'g', -1, 32)
			}
			b = append(b, ']')
		}
		b = append(b, '}')
	}
	b = append(b, `],"model":`...)
	b = appendString(b, model)
	b = append(b, `,"usage":{"prompt_tokens":`...)
	b = appendInt(b, total)
	b = append(b, `,"total_tokens":`...)
	b = appendInt(b, total)
	b = append(b, `}}`...)
	s.writeJSON(c, b, billed{input: total}, 0)
}

func (s *Server) models(w http.ResponseWriter, _ *http.Request) {
	b := []byte(`{"object":"list","data":[`)
	for i, m := range s.cfg.Models {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"id":`...)
		b = appendString(b, m)
		b = append(b, `,"object":"model","created":1700000000,"owned_by":"mockllm"}`...)
	}
	b = append(b, `]}`...)
	setJSON(w.Header(), len(b))
	_, _ = w.Write(b)
}
