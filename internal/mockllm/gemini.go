package mockllm

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
)

// Google's Gemini API (generativelanguage.googleapis.com), as documented at
// ai.google.dev/api: POST /v1beta/models/{model}:{method} (and /v1/) for the
// methods generateContent, streamGenerateContent (SSE with alt=sse, "data: "
// events separated by CRLF CRLF; else one JSON array streamed, elements
// separated by ",\r\n"), countTokens, embedContent and batchEmbedContents;
// GET /v1beta/models. The key is read from x-goog-api-key or ?key=; errors
// are {"error":{"code","message","status"}}.
//
// Determinism, as for the other APIs: the prompt text is every text part of
// systemInstruction and contents; promptTokenCount = ceil(bytes/4), of which
// min(x-mock-cached-tokens, prompt) are reported as cachedContentTokenCount
// (and billed as cached); candidatesTokenCount = min(maxOutputTokens,
// default), finishReason MAX_TOKENS when capped, else STOP. A stream sends
// the chunks of the other APIs, each event with usageMetadata (the prompt
// counts; the last, which carries finishReason, the final counts too).
// x-mock-tool-call answers with one functionCall part {name, args:
// {"city":w}} (streamed whole in one event), finishReason STOP. No
// thoughts are reported. Embeddings bill ceil(bytes/4) per text.

// geminiPart, geminiContent and geminiRequest are the parts of a Gemini
// request the mock reads.
type geminiPart struct {
	Text string `json:"text"`
}

type geminiContent struct {
	Role  string       `json:"role"`
	Parts []geminiPart `json:"parts"`
}

type geminiRequest struct {
	Contents          []geminiContent `json:"contents"`
	SystemInstruction *geminiContent  `json:"systemInstruction"`
	Tools             []struct {
		FunctionDeclarations []struct {
			Name string `json:"name"`
		} `json:"functionDeclarations"`
	} `json:"tools"`
	GenerationConfig *struct {
		MaxOutputTokens *int64 `json:"maxOutputTokens"`
	} `json:"generationConfig"`
}

// prompt returns the prompt text, the last content's text and the last user
// content's text.
func (req *geminiRequest) prompt() (text []byte, last, lastUser string) {
	add := func(c *geminiContent) string {
		n := len(text)
		for _, p := range c.Parts {
			text = append(text, p.Text...)
		}
		return string(text[n:])
	}
	if req.SystemInstruction != nil {
		add(req.SystemInstruction)
	}
	for i := range req.Contents {
		last = add(&req.Contents[i])
		if req.Contents[i].Role != "model" {
			lastUser = last
		}
	}
	return text, last, lastUser
}

// geminiKey is the caller's key: x-goog-api-key, else ?key=.
func geminiKey(r *http.Request) string {
	if k := header(r.Header, "X-Goog-Api-Key"); k != "" {
		return k
	}
	return r.URL.Query().Get("key")
}

// gemini serves POST /{version}/models/{call} where call is model:method.
func (s *Server) gemini(w http.ResponseWriter, r *http.Request) {
	model, method, ok := strings.Cut(r.PathValue("call"), ":")
	if !ok || model == "" {
		writeError(w, flavorGemini, http.StatusNotFound, "Unknown request URL: "+r.Method+" "+r.URL.Path)
		return
	}
	var h handler
	switch method {
	case "generateContent":
		h = s.geminiGenerateJSON
	case "streamGenerateContent":
		h = s.geminiGenerateStream
	case "countTokens":
		h = s.geminiCount
	case "embedContent":
		h = s.geminiEmbedOne
	case "batchEmbedContents":
		h = s.geminiEmbedBatch
	case "predict": // Imagen (units.go)
		h = s.imagenPredict
	default:
		writeError(w, flavorGemini, http.StatusNotFound, "Method not found: "+method)
		return
	}
	s.serve(w, r, flavorGemini, model, h) // the model as the call's deployment
}

func (s *Server) geminiGenerateJSON(c *call)   { s.geminiGenerate(c, c.deployment, false) }
func (s *Server) geminiGenerateStream(c *call) { s.geminiGenerate(c, c.deployment, true) }
func (s *Server) geminiEmbedOne(c *call)       { s.geminiEmbed(c, c.deployment, false) }
func (s *Server) geminiEmbedBatch(c *call)     { s.geminiEmbed(c, c.deployment, true) }

// geminiReply is a reply being produced for a generateContent request.
type geminiReply struct {
	id, model      string
	prompt, cached int64
	output         int64
	capped         bool
	reply          reply
	tool           *toolCall
}

func (s *Server) geminiGenerate(c *call, model string, stream bool) {
	var req geminiRequest
	if !c.decode(&req) {
		return
	}
	if len(req.Contents) == 0 {
		writeError(c.w, c.flavor, http.StatusBadRequest, "* GenerateContentRequest.contents: contents is not specified")
		return
	}
	text, last, lastUser := req.prompt()
	var sys []string
	if req.SystemInstruction != nil {
		for _, p := range req.SystemInstruction.Parts {
			sys = append(sys, p.Text)
		}
	}
	s.received.noteSystem("gemini", sys)
	if c.replyModel != "" {
		model = c.replyModel
	}
	g := &geminiReply{id: "mock-" + strconv.FormatUint(s.seq.Add(1), 10), model: model, prompt: tokensOf(len(text))}
	g.cached = min(c.cached, g.prompt)
	var maxTokens *int64
	if req.GenerationConfig != nil {
		maxTokens = req.GenerationConfig.MaxOutputTokens
	}
	g.output, g.capped = outputTokens(maxTokens, c.output)
	g.reply = newReply(last, g.output)
	if c.toolCall != "" {
		var names []string
		for _, t := range req.Tools {
			for _, d := range t.FunctionDeclarations {
				names = append(names, d.Name)
			}
		}
		if g.tool = newToolCall(c.toolCall, names, lastUser); g.tool != nil {
			g.output, g.capped = g.tool.output, false
		}
	}
	b := billed{input: g.prompt - g.cached, cached: g.cached}
	if stream {
		s.streamGemini(c, g, b, c.r.URL.Query().Get("alt") == "sse")
		return
	}
	s.writeJSON(c, g.appendResponse(nil, g.partsJSON(), true, g.output), b, g.output)
}

// partsJSON is the whole reply's parts array.
func (g *geminiReply) partsJSON() []byte {
	if g.tool != nil {
		return g.toolParts()
	}
	return append(appendString([]byte(`[{"text":`), g.reply.text()), `}]`...)
}

func (g *geminiReply) toolParts() []byte {
	b := appendString([]byte(`[{"functionCall":{"name":`), g.tool.name)
	b = append(b, `,"args":`...)
	b = append(b, g.tool.args...)
	return append(b, `}}]`...)
}

// appendResponse appends a GenerateContentResponse with the parts; final
// adds the finish reason and the output counts (out tokens).
func (g *geminiReply) appendResponse(b, parts []byte, final bool, out int64) []byte {
	b = append(b, `{"candidates":[{"content":{"parts":`...)
	b = append(b, parts...)
	b = append(b, `,"role":"model"}`...)
	if final {
		b = append(b, `,"finishReason":`...)
		if g.capped {
			b = append(b, `"MAX_TOKENS"`...)
		} else {
			b = append(b, `"STOP"`...)
		}
	}
	b = append(b, `,"index":0}],"usageMetadata":{"promptTokenCount":`...)
	b = appendInt(b, g.prompt)
	if final {
		b = append(b, `,"candidatesTokenCount":`...)
		b = appendInt(b, out)
	}
	b = append(b, `,"totalTokenCount":`...)
	if final {
		b = appendInt(b, g.prompt+out)
	} else {
		b = appendInt(b, g.prompt)
	}
	if g.cached > 0 {
		b = append(b, `,"cachedContentTokenCount":`...)
		b = appendInt(b, g.cached)
	}
	b = append(b, `,"promptTokensDetails":[{"modality":"TEXT","tokenCount":`...)
	b = appendInt(b, g.prompt)
	b = append(b, `}]},"modelVersion":`...)
	b = appendString(b, g.model)
	b = append(b, `,"responseId":`...)
	b = appendString(b, g.id)
	return append(b, '}')
}

// streamGemini streams the reply as SSE (alt=sse) or as a JSON array.
func (s *Server) streamGemini(c *call, g *geminiReply, b billed, sse bool) {
	var st *stream
	var ok bool
	if sse {
		st, ok = s.startStream(c, b)
	} else {
		st, ok = s.startArrayStream(c, b)
	}
	if !ok {
		return
	}
	gs := newGeminiStream(st, sse)
	if g.tool != nil {
		data := g.appendResponse(nil, g.toolParts(), true, g.output)
		if gs.content(0, data, g.output) {
			gs.end()
		}
		return
	}
	texts, words := g.reply.chunks(s.cfg.Chunks)
	if len(texts) == 0 {
		texts, words = []string{""}, []int64{0}
	}
	var buf []byte
	for i, t := range texts {
		parts := appendString([]byte(`[{"text":`), t)
		parts = append(parts, `}]`...)
		buf = g.appendResponse(buf[:0], parts, i == len(texts)-1, g.output)
		if !gs.content(i, buf, words[i]) {
			return
		}
	}
	gs.end()
}

// startArrayStream is startStream for a JSON array stream (content type
// application/json).
func (s *Server) startArrayStream(c *call, b billed) (*stream, bool) {
	if !sleep(c.r.Context(), c.latency) {
		return nil, false
	}
	st := &stream{c: c, ctr: s.counters(c.key), rc: http.NewResponseController(c.w)}
	c.w.Header()["Content-Type"] = hvJSON
	c.w.WriteHeader(http.StatusOK)
	if err := st.rc.Flush(); err != nil {
		st.ctr.aborted.Add(1)
		return nil, false
	}
	b.record(st.ctr)
	return st, true
}

// frameStream writes the events of a stream whose framing is not plain SSE
// (Gemini's CRLF SSE or JSON array, Bedrock's event stream): frame appends
// the n-th event's bytes, honouring x-mock-disconnect-after and counting
// what was delivered as stream.content does.
type frameStream struct {
	st    *stream
	n     int
	out   []byte
	frame func(out, data []byte, n int) []byte
}

// content writes one content event after the chunk delay (not before the
// first) and counts its words as delivered; false when the stream ended.
func (fs *frameStream) content(i int, data []byte, words int64) bool {
	if i > 0 && !sleep(fs.st.c.r.Context(), fs.st.c.chunkDelay) {
		fs.st.ctr.aborted.Add(1)
		return false
	}
	if !fs.send(data) {
		return false
	}
	fs.st.ctr.output.Add(words)
	return true
}

// send writes one event.
func (fs *frameStream) send(data []byte) bool {
	st := fs.st
	if st.c.disconnect >= 0 && st.events >= st.c.disconnect {
		st.ctr.aborted.Add(1)
		abort(st.c.w)
		return false
	}
	fs.out = fs.frame(fs.out[:0], data, fs.n)
	fs.n++
	if !fs.write(fs.out) {
		return false
	}
	st.events++
	return true
}

func (fs *frameStream) write(b []byte) bool {
	if _, err := fs.st.c.w.Write(b); err != nil {
		fs.st.ctr.aborted.Add(1)
		return false
	}
	if err := fs.st.rc.Flush(); err != nil {
		fs.st.ctr.aborted.Add(1)
		return false
	}
	return true
}

// geminiStream writes a Gemini stream: "data: …\r\n\r\n" with alt=sse,
// else the elements of a JSON array.
type geminiStream struct {
	frameStream
	sse bool
}

func newGeminiStream(st *stream, sse bool) *geminiStream {
	gs := &geminiStream{frameStream: frameStream{st: st}, sse: sse}
	gs.frame = func(out, data []byte, n int) []byte {
		switch {
		case sse:
			out = append(out, "data: "...)
			out = append(out, data...)
			return append(out, "\r\n\r\n"...)
		case n == 0:
			return append(append(out, '['), data...)
		default:
			return append(append(out, ",\r\n"...), data...)
		}
	}
	return gs
}

// end closes a JSON array stream.
func (gs *geminiStream) end() {
	if !gs.sse {
		gs.write([]byte("]"))
	}
}

// geminiCount answers countTokens (contents or generateContentRequest): the
// prompt tokens, free.
func (s *Server) geminiCount(c *call) {
	var req struct {
		geminiRequest
		GenerateContentRequest *geminiRequest `json:"generateContentRequest"`
	}
	if !c.decode(&req) {
		return
	}
	r := &req.geminiRequest
	if req.GenerateContentRequest != nil {
		r = req.GenerateContentRequest
	}
	text, _, _ := r.prompt()
	b := appendInt([]byte(`{"totalTokens":`), tokensOf(len(text)))
	b = append(b, `,"promptTokensDetails":[{"modality":"TEXT","tokenCount":`...)
	b = appendInt(b, tokensOf(len(text)))
	b = append(b, `}]}`...)
	setJSON(c.w.Header(), len(b))
	_, _ = c.w.Write(b)
}

// geminiEmbed answers embedContent and batchEmbedContents.
func (s *Server) geminiEmbed(c *call, model string, batch bool) {
	type embedRequest struct {
		Model                string        `json:"model"`
		Content              geminiContent `json:"content"`
		OutputDimensionality int           `json:"outputDimensionality"`
	}
	var reqs []embedRequest
	if batch {
		var req struct {
			Requests []embedRequest `json:"requests"`
		}
		if !c.decode(&req) {
			return
		}
		reqs = req.Requests
	} else {
		var req embedRequest
		if !c.decode(&req) {
			return
		}
		reqs = []embedRequest{req}
	}
	if len(reqs) == 0 {
		writeError(c.w, c.flavor, http.StatusBadRequest, "* BatchEmbedContentsRequest.requests: requests is not specified")
		return
	}
	var total int64
	b := []byte(`{"embedding":`)
	if batch {
		b = []byte(`{"embeddings":[`)
	}
	for i, r := range reqs {
		if batch && r.Model != "models/"+model {
			writeError(c.w, c.flavor, http.StatusBadRequest, "* BatchEmbedContentsRequest.requests["+strconv.Itoa(i)+"].model: must be models/"+model)
			return
		}
		var text []byte
		for _, p := range r.Content.Parts {
			text = append(text, p.Text...)
		}
		total += tokensOf(len(text))
		dims := s.cfg.EmbeddingDimensions
		if r.OutputDimensionality > 0 {
			dims = r.OutputDimensionality
		}
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"values":[`...)
		for j, f := range embedding(text, dims) {
			if j > 0 {
				b = append(b, ',')
			}
			b = strconv.AppendFloat(b, float64(f), 'g', -1, 32)
		}
		b = append(b, `]}`...)
	}
	if batch {
		b = append(b, ']')
	}
	b = append(b, '}')
	s.writeJSON(c, b, billed{input: total}, 0)
}

// geminiModels answers GET /v1beta/models (models.list).
func (s *Server) geminiModels(w http.ResponseWriter, _ *http.Request) {
	type model struct {
		Name    string   `json:"name"`
		Methods []string `json:"supportedGenerationMethods"`
	}
	list := struct {
		Models []model `json:"models"`
	}{}
	for _, m := range s.cfg.Models {
		list.Models = append(list.Models, model{Name: "models/" + m, Methods: []string{"generateContent", "streamGenerateContent", "countTokens", "embedContent"}})
	}
	b, _ := json.Marshal(list)
	setJSON(w.Header(), len(b))
	_, _ = w.Write(b)
}

// appendGeminiError appends Google's error shape.
func appendGeminiError(b []byte, status int, msg string) []byte {
	b = append(b, `{"error":{"code":`...)
	b = appendInt(b, int64(status))
	b = append(b, `,"message":`...)
	b = appendString(b, msg)
	b = append(b, `,"status":`...)
	b = appendString(b, geminiStatus(status))
	return append(b, `}}`...)
}

// geminiStatus is the google.rpc.Code name of an HTTP status.
func geminiStatus(status int) string {
	switch status {
	case http.StatusBadRequest:
		return "INVALID_ARGUMENT"
	case http.StatusUnauthorized:
		return "UNAUTHENTICATED"
	case http.StatusForbidden:
		return "PERMISSION_DENIED"
	case http.StatusNotFound:
		return "NOT_FOUND"
	case http.StatusTooManyRequests:
		return "RESOURCE_EXHAUSTED"
	case http.StatusServiceUnavailable:
		return "UNAVAILABLE"
	case http.StatusGatewayTimeout:
		return "DEADLINE_EXCEEDED"
	}
	if status >= 500 {
		return "INTERNAL"
	}
	return "FAILED_PRECONDITION"
}
