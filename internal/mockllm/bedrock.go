package mockllm

import (
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// Amazon Bedrock runtime, as documented in the Bedrock API reference:
// POST /model/{modelId}/converse, /converse-stream (an AWS event stream,
// application/vnd.amazon.eventstream, framed with the SDK's encoder) and
// /invoke (Titan and Cohere embeddings).
//
// Every request must carry a valid SigV4 signature (service bedrock, any
// region) by one of the mock's access keys, BedrockAccessKeys: the mock
// signs the request again with aws-sdk-go-v2's signer, the key's secret and
// the request's own x-amz-date, and compares; a wrong or missing signature
// is refused as Bedrock does (403, x-amzn-ErrorType
// InvalidSignatureException or UnrecognizedClientException). Usage is
// billed to the access key id.
//
// Determinism: the prompt text is every text block of system and messages;
// inputTokens = ceil(bytes/4) minus the cache reads (x-mock-cached-tokens,
// reported as cacheReadInputTokens); outputTokens = min(maxTokens, default),
// stopReason max_tokens when capped, else end_turn; x-mock-tool-call answers
// with one toolUse block (tool_use). A stream sends messageStart, the text
// chunks as contentBlockDelta (or contentBlockStart and two toolUse input
// deltas), contentBlockStop, messageStop and metadata with the usage.
// Embeddings bill ceil(bytes/4) per text; Titan reports it as
// inputTextTokenCount.

// BedrockAccessKeys are the mock's AWS access keys: id → secret.
var BedrockAccessKeys = map[string]string{
	"AKIAMOCKLLMEXAMPLE01": "mockllm/bedrock/secret/access/key/0001",
	"AKIAMOCKLLMEXAMPLE02": "mockllm/bedrock/secret/access/key/0002", // a second principal (a shared-config profile's, in e2e)
}

// awsAccessKey is the access key id of a SigV4 Authorization header ("" for
// any other scheme).
func awsAccessKey(auth string) string {
	rest, ok := strings.CutPrefix(auth, "AWS4-HMAC-SHA256 ")
	if !ok {
		return ""
	}
	for _, f := range strings.Split(rest, ",") {
		if c, ok := strings.CutPrefix(strings.TrimSpace(f), "Credential="); ok {
			id, _, _ := strings.Cut(c, "/")
			return id
		}
	}
	return ""
}

// sigV4Fields parses a SigV4 Authorization header.
func sigV4Fields(auth string) (id, region, service string, signed []string, ok bool) {
	rest, ok := strings.CutPrefix(auth, "AWS4-HMAC-SHA256 ")
	if !ok {
		return "", "", "", nil, false
	}
	for _, f := range strings.Split(rest, ",") {
		f = strings.TrimSpace(f)
		switch {
		case strings.HasPrefix(f, "Credential="):
			parts := strings.Split(strings.TrimPrefix(f, "Credential="), "/")
			if len(parts) != 5 || parts[4] != "aws4_request" {
				return "", "", "", nil, false
			}
			id, region, service = parts[0], parts[2], parts[3]
		case strings.HasPrefix(f, "SignedHeaders="):
			signed = strings.Split(strings.TrimPrefix(f, "SignedHeaders="), ";")
		}
	}
	return id, region, service, signed, id != "" && len(signed) > 0
}

// verifySigV4 checks r's signature over body; it returns Bedrock's error
// type and message when it is wrong.
func verifySigV4(r *http.Request, body []byte) (errType, msg string) {
	auth := header(r.Header, "Authorization")
	id, region, service, signed, ok := sigV4Fields(auth)
	if !ok {
		return "MissingAuthenticationTokenException", "Missing Authentication Token"
	}
	secret, known := BedrockAccessKeys[id]
	if !known {
		return "UnrecognizedClientException", "The security token included in the request is invalid."
	}
	at, err := time.Parse("20060102T150405Z", header(r.Header, "X-Amz-Date"))
	if err != nil {
		return "InvalidSignatureException", "x-amz-date is missing or malformed"
	}
	req := &http.Request{
		Method: r.Method, Host: r.Host, Header: http.Header{},
		URL: &url.URL{Scheme: "https", Host: r.Host, Path: r.URL.Path, RawPath: r.URL.RawPath, RawQuery: r.URL.RawQuery},
	}
	for _, h := range signed {
		switch h {
		case "host", "x-amz-date", "x-amz-security-token": // set by the signer
		case "content-length": // net/http moves it out of the header map
			req.ContentLength = int64(len(body))
		default:
			req.Header[http.CanonicalHeaderKey(h)] = r.Header.Values(h)
		}
	}
	sum := sha256.Sum256(body)
	creds := aws.Credentials{AccessKeyID: id, SecretAccessKey: secret, SessionToken: header(r.Header, "X-Amz-Security-Token")}
	if err := v4.NewSigner().SignHTTP(r.Context(), creds, req, hex.EncodeToString(sum[:]), service, region, at); err != nil {
		return "InvalidSignatureException", err.Error()
	}
	if subtle.ConstantTimeCompare([]byte(req.Header.Get("Authorization")), []byte(auth)) != 1 {
		return "InvalidSignatureException", "The request signature we calculated does not match the signature you provided. Check your AWS Secret Access Key and signing method."
	}
	return "", ""
}

// bedrock wraps a Bedrock handler: the signature is verified (403 when
// wrong) before anything else.
func (s *Server) bedrock(h handler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
		if err != nil {
			writeError(w, flavorBedrock, http.StatusBadRequest, "cannot read the body: "+err.Error())
			return
		}
		if typ, msg := verifySigV4(r, body); typ != "" {
			writeBedrockError(w, http.StatusForbidden, typ, msg)
			s.counters(awsAccessKey(header(r.Header, "Authorization"))).errors.Add(1)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		s.serve(w, r, flavorBedrock, r.PathValue("model"), h)
	}
}

// bedrockErrorType is Bedrock's error type of a status.
func bedrockErrorType(status int) string {
	switch status {
	case http.StatusBadRequest:
		return "ValidationException"
	case http.StatusForbidden:
		return "AccessDeniedException"
	case http.StatusNotFound:
		return "ResourceNotFoundException"
	case http.StatusRequestTimeout:
		return "ModelTimeoutException"
	case http.StatusFailedDependency:
		return "ModelErrorException"
	case http.StatusTooManyRequests:
		return "ThrottlingException"
	case http.StatusServiceUnavailable:
		return "ServiceUnavailableException"
	}
	return "InternalServerException"
}

// writeBedrockError writes Bedrock's error reply: the type in
// x-amzn-ErrorType, {"message":…} in the body.
func writeBedrockError(w http.ResponseWriter, status int, typ, msg string) {
	b := appendString([]byte(`{"message":`), msg)
	b = append(b, '}')
	w.Header()["X-Amzn-Errortype"] = []string{typ}
	setJSON(w.Header(), len(b))
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// converseRequest is the part of a Converse request the mock reads.
type converseRequest struct {
	Messages []struct {
		Role    string `json:"role"`
		Content []struct {
			Text *string `json:"text"`
		} `json:"content"`
	} `json:"messages"`
	System []struct {
		Text string `json:"text"`
	} `json:"system"`
	InferenceConfig *struct {
		MaxTokens *int64 `json:"maxTokens"`
	} `json:"inferenceConfig"`
	ToolConfig *struct {
		Tools []struct {
			ToolSpec struct {
				Name string `json:"name"`
			} `json:"toolSpec"`
		} `json:"tools"`
	} `json:"toolConfig"`
}

// prompt is the request's text (system, then every turn's text blocks), the
// last turn's text and the last user turn's.
func (req *converseRequest) prompt() (text []byte, last, lastUser string) {
	for _, b := range req.System {
		text = append(text, b.Text...)
	}
	for _, m := range req.Messages {
		n := len(text)
		for _, b := range m.Content {
			if b.Text != nil {
				text = append(text, *b.Text...)
			}
		}
		last = string(text[n:])
		if m.Role == "user" {
			lastUser = last
		}
	}
	return text, last, lastUser
}

// bedrockCountTokens answers CountTokens (POST /model/{modelId}/count-tokens) for
// a Converse input: the input tokens Converse would bill (cached prefix
// included), free. Only Anthropic's models count tokens; others get
// Bedrock's ValidationException, as does an InvokeModel input (the mock
// reads Converse only).
func (s *Server) bedrockCountTokens(c *call) {
	var req struct {
		Input struct {
			Converse *converseRequest `json:"converse"`
		} `json:"input"`
	}
	if !c.decode(&req) {
		return
	}
	if !strings.HasPrefix(c.deployment, "anthropic.") {
		writeBedrockError(c.w, http.StatusBadRequest, "ValidationException", "The provided model doesn't support counting tokens.")
		return
	}
	if req.Input.Converse == nil || len(req.Input.Converse.Messages) == 0 {
		writeBedrockError(c.w, http.StatusBadRequest, "ValidationException", "input.converse.messages: a conversation is required.")
		return
	}
	text, _, _ := req.Input.Converse.prompt()
	b := appendInt([]byte(`{"inputTokens":`), tokensOf(len(text)))
	b = append(b, '}')
	setJSON(c.w.Header(), len(b))
	_, _ = c.w.Write(b)
}

// converseReply is a reply being produced for a Converse request.
type converseReply struct {
	input, cached, output int64
	capped                bool
	reply                 reply
	tool                  *toolCall
}

func (s *Server) converse(c *call)       { s.converseGenerate(c, false) }
func (s *Server) converseStream(c *call) { s.converseGenerate(c, true) }

func (s *Server) converseGenerate(c *call, stream bool) {
	var req converseRequest
	if !c.decode(&req) {
		return
	}
	if len(req.Messages) == 0 {
		writeError(c.w, c.flavor, http.StatusBadRequest, "A conversation must start with a user message.")
		return
	}
	text, last, lastUser := req.prompt()
	sys := make([]string, 0, len(req.System))
	for _, b := range req.System {
		sys = append(sys, b.Text)
	}
	s.received.noteSystem("bedrock", sys)
	total := tokensOf(len(text))
	g := &converseReply{cached: min(c.cached, total)}
	g.input = total - g.cached
	var maxTokens *int64
	if req.InferenceConfig != nil {
		maxTokens = req.InferenceConfig.MaxTokens
	}
	g.output, g.capped = outputTokens(maxTokens, c.output)
	g.reply = newReply(last, g.output)
	if c.toolCall != "" && req.ToolConfig != nil {
		var names []string
		for _, t := range req.ToolConfig.Tools {
			names = append(names, t.ToolSpec.Name)
		}
		if g.tool = newToolCall(c.toolCall, names, lastUser); g.tool != nil {
			g.output, g.capped = g.tool.output, false
		}
	}
	b := billed{input: g.input, cached: g.cached}
	if stream {
		s.streamConverse(c, g, b)
		return
	}
	out := []byte(`{"output":{"message":{"role":"assistant","content":[`)
	if g.tool != nil {
		out = g.appendToolUse(out)
	} else {
		out = append(appendString(append(out, `{"text":`...), g.reply.text()), '}')
	}
	out = append(out, `]}},"stopReason":`...)
	out = appendString(out, g.stopReason())
	out = append(out, `,"usage":`...)
	out = g.appendUsage(out)
	out = append(out, `,"metrics":{"latencyMs":1}}`...)
	s.writeJSON(c, out, b, g.output)
}

func (g *converseReply) stopReason() string {
	switch {
	case g.tool != nil:
		return "tool_use"
	case g.capped:
		return "max_tokens"
	}
	return "end_turn"
}

func (g *converseReply) appendToolUse(b []byte) []byte {
	b = append(b, `{"toolUse":{"toolUseId":"tooluse_mock_1","name":`...)
	b = appendString(b, g.tool.name)
	b = append(b, `,"input":`...)
	b = append(b, g.tool.args...)
	return append(b, `}}`...)
}

func (g *converseReply) appendUsage(b []byte) []byte {
	b = append(b, `{"inputTokens":`...)
	b = appendInt(b, g.input)
	b = append(b, `,"outputTokens":`...)
	b = appendInt(b, g.output)
	b = append(b, `,"totalTokens":`...)
	b = appendInt(b, g.input+g.cached+g.output)
	if g.cached > 0 {
		b = append(b, `,"cacheReadInputTokens":`...)
		b = appendInt(b, g.cached)
	}
	return append(b, '}')
}

// streamConverse streams the reply as ConverseStream's event stream.
func (s *Server) streamConverse(c *call, g *converseReply, b billed) {
	if !sleep(c.r.Context(), c.latency) {
		return
	}
	st := &stream{c: c, ctr: s.counters(c.key), rc: http.NewResponseController(c.w)}
	c.w.Header()["Content-Type"] = []string{"application/vnd.amazon.eventstream"}
	c.w.WriteHeader(http.StatusOK)
	if err := st.rc.Flush(); err != nil {
		st.ctr.aborted.Add(1)
		return
	}
	b.record(st.ctr)
	enc := eventstream.NewEncoder()
	var msg eventstream.Message
	fs := &frameStream{st: st}
	var typ string
	fs.frame = func(out, data []byte, _ int) []byte {
		msg.Headers = msg.Headers[:0]
		msg.Headers.Set(":event-type", eventstream.StringValue(typ))
		msg.Headers.Set(":content-type", eventstream.StringValue("application/json"))
		msg.Headers.Set(":message-type", eventstream.StringValue("event"))
		msg.Payload = data
		buf := bytes.NewBuffer(out)
		_ = enc.Encode(buf, msg)
		return buf.Bytes()
	}
	send := func(t string, data []byte) bool { typ = t; return fs.send(data) }
	content := func(i int, t string, data []byte, words int64) bool { typ = t; return fs.content(i, data, words) }
	if !send("messageStart", []byte(`{"p":"abcdefgh","role":"assistant"}`)) {
		return
	}
	if g.tool != nil {
		start := appendString([]byte(`{"contentBlockIndex":0,"start":{"toolUse":{"toolUseId":"tooluse_mock_1","name":`), g.tool.name)
		if !send("contentBlockStart", append(start, `}}}`...)) {
			return
		}
		texts, tokens := g.tool.pieces()
		for i, t := range texts {
			d := appendString([]byte(`{"contentBlockIndex":0,"delta":{"toolUse":{"input":`), t)
			if !content(i, "contentBlockDelta", append(d, `}}}`...), tokens[i]) {
				return
			}
		}
	} else {
		texts, words := g.reply.chunks(s.cfg.Chunks)
		for i, t := range texts {
			d := appendString([]byte(`{"contentBlockIndex":0,"delta":{"text":`), t)
			if !content(i, "contentBlockDelta", append(d, `},"p":"abc"}`...), words[i]) {
				return
			}
		}
	}
	if !send("contentBlockStop", []byte(`{"contentBlockIndex":0}`)) {
		return
	}
	stop := appendString([]byte(`{"stopReason":`), g.stopReason())
	if !send("messageStop", append(stop, '}')) {
		return
	}
	meta := g.appendUsage([]byte(`{"usage":`))
	send("metadata", append(meta, `,"metrics":{"latencyMs":1}}`...))
}

// invoke answers InvokeModel for Titan and Cohere embeddings.
func (s *Server) invoke(c *call) {
	model := c.deployment
	var raw json.RawMessage
	if !c.decode(&raw) {
		return
	}
	switch {
	case strings.Contains(model, "titan-embed"):
		var req struct {
			InputText  string `json:"inputText"`
			Dimensions int    `json:"dimensions"`
		}
		if json.Unmarshal(raw, &req) != nil || req.InputText == "" {
			writeError(c.w, c.flavor, http.StatusBadRequest, "Malformed input request: inputText is required")
			return
		}
		dims := s.cfg.EmbeddingDimensions
		if req.Dimensions > 0 {
			dims = req.Dimensions
		}
		n := tokensOf(len(req.InputText))
		b := appendFloats([]byte(`{"embedding":`), embedding([]byte(req.InputText), dims))
		b = append(b, `,"inputTextTokenCount":`...)
		b = appendInt(b, n)
		s.writeJSON(c, append(b, '}'), billed{input: n}, 0)
	case strings.Contains(model, "cohere.embed"):
		var req struct {
			Texts []string `json:"texts"`
		}
		if json.Unmarshal(raw, &req) != nil || len(req.Texts) == 0 {
			writeError(c.w, c.flavor, http.StatusBadRequest, "Malformed input request: texts is required")
			return
		}
		var n int64
		b := []byte(`{"id":"mock","response_type":"embeddings_floats","embeddings":[`)
		for i, t := range req.Texts {
			n += tokensOf(len(t))
			if i > 0 {
				b = append(b, ',')
			}
			b = appendFloats(b, embedding([]byte(t), s.cfg.EmbeddingDimensions))
		}
		b = append(b, `],"texts":`...)
		texts, _ := json.Marshal(req.Texts)
		b = append(append(b, texts...), '}')
		s.writeJSON(c, b, billed{input: n}, 0)
	default:
		writeError(c.w, c.flavor, http.StatusBadRequest, "The provided model identifier is invalid.")
	}
}

func appendFloats(b []byte, v []float32) []byte {
	b = append(b, '[')
	for j, f := range v {
		if j > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendFloat(b, float64(f), 'g', -1, 32)
	}
	return append(b, ']')
}
