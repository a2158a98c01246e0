package translate

import (
	"encoding/json"
	"net/http"
	"strings"

	"github.com/tollgate-ai/tollgate/schema/anthropic"

	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/schema/bedrock"
)

// ProviderBedrock is the Amazon Bedrock runtime: Converse and ConverseStream
// for chat (any model family Bedrock serves through Converse), InvokeModel
// for Titan and Cohere embeddings. Requests are signed with SigV4 by the
// deployment's Target.Signer once their body is final; streams are AWS event
// streams, decoded with the SDK's decoder (schema/bedrock).
const ProviderBedrock ProviderType = "bedrock"

// bedrockPath is the path of an operation on the deployment's model:
// /model/{modelId}/{op}, the model id escaped as the AWS SDK escapes path
// labels (everything but unreserved characters, so "…-v1:0" → "…-v1%3A0").
func bedrockPath(t *Target, in *Inbound, op string) string {
	model := t.ProviderModel
	if model == "" {
		model = in.Model
	}
	return joinPath(t.BasePath, "/model/"+awsEscape(model)+"/"+op)
}

// awsEscape percent-encodes every byte but the unreserved characters of RFC
// 3986 §2.3, as the AWS SDKs encode path labels.
func awsEscape(s string) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~' {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hex[c>>4])
		b.WriteByte(hex[c&15])
	}
	return b.String()
}

// bedrockKernelUsage maps Converse's usage (input excludes cache reads and
// writes) onto the kernel's kinds.
func bedrockKernelUsage(u *bedrock.Usage) kernel.Usage {
	if u == nil {
		return kernel.Usage{}
	}
	return kernel.Usage{Input: u.InputTokens, CachedInput: u.CacheReadInputTokens, CacheWrite: u.CacheWriteInputTokens, Output: u.OutputTokens}
}

// bedrockFinishToOpenAI maps a stop reason to OpenAI's finish_reason.
func bedrockFinishToOpenAI(s string) string {
	switch s {
	case bedrock.StopMaxTokens:
		return "length"
	case bedrock.StopToolUse:
		return "tool_calls"
	case bedrock.StopGuardrailIntervened, bedrock.StopContentFiltered:
		return "content_filter"
	default:
		return "stop"
	}
}

// bedrockStopToAnthropic maps a stop reason to Anthropic's stop_reason.
func bedrockStopToAnthropic(s string) string {
	switch s {
	case bedrock.StopMaxTokens:
		return "max_tokens"
	case bedrock.StopToolUse:
		return "tool_use"
	case bedrock.StopSequence:
		return "stop_sequence"
	case bedrock.StopGuardrailIntervened, bedrock.StopContentFiltered:
		return "refusal"
	default:
		return "end_turn"
	}
}

// bedrockStatus is the client status of a Bedrock error status: a model's
// own failure (424 ModelErrorException) is a 502, its timeout (408
// ModelTimeoutException) a 504; the others pass (429 ThrottlingException,
// 400 ValidationException, 503 ServiceUnavailableException, …).
func bedrockStatus(status int) int {
	switch status {
	case http.StatusFailedDependency:
		return http.StatusBadGateway
	case http.StatusRequestTimeout:
		return http.StatusGatewayTimeout
	}
	return status
}

// bedrockExceptionStatus is the status of a stream exception (the
// :exception-type of an event-stream message).
func bedrockExceptionStatus(typ string) int {
	switch strings.ToLower(strings.TrimSuffix(strings.TrimSuffix(typ, "Exception"), "exception")) {
	case "throttling", "servicequotaexceeded":
		return http.StatusTooManyRequests
	case "validation":
		return http.StatusBadRequest
	case "accessdenied":
		return http.StatusForbidden
	case "modelstreamerror", "modelerror":
		return http.StatusBadGateway
	case "modeltimeout":
		return http.StatusGatewayTimeout
	case "serviceunavailable", "modelnotready":
		return http.StatusServiceUnavailable
	default:
		return http.StatusInternalServerError
	}
}

// upstreamBedrockError reads Bedrock's {"message":…} error into an apiError
// with the client status, sanitized as every upstream error (403
// AccessDenied/UnrecognizedClient/InvalidSignature: the gateway's
// credentials).
func upstreamBedrockError(status int, body []byte, key string) *APIError {
	var eb bedrock.ErrorBody
	if json.Unmarshal(body, &eb) != nil || eb.Text() == "" {
		e := upstreamOpenAIError(bedrockStatus(status), body, key)
		e.Status = bedrockStatus(status)
		return e
	}
	st := bedrockStatus(status)
	e := &APIError{Status: st, Type: statusType(st), Message: eb.Text()}
	e.sanitizeUpstream(key)
	return e
}

// bedrockEvents reads a ConverseStream: each event's type and payload go to
// onEvent, exceptions to onError; the usage of the metadata event is kept.
type bedrockEvents struct {
	dec      bedrock.StreamDecoder
	usage    *bedrock.Usage
	text     int64
	failed   bool
	onEvent  func(typ string, ev *bedrock.StreamEvent)
	onError  func(status int, msg string)
	errFatal error
}

// feed decodes chunk; after a framing or CRC error the rest is ignored.
func (b *bedrockEvents) feed(chunk []byte) error {
	if b.errFatal != nil {
		return nil
	}
	if err := b.dec.Feed(chunk, b.message); err != nil {
		b.errFatal = err
		return err
	}
	return nil
}

func (b *bedrockEvents) message(m *bedrock.StreamMessage) {
	switch m.MessageType {
	case "event":
		var ev bedrock.StreamEvent
		if json.Unmarshal(m.Payload, &ev) != nil {
			return
		}
		if m.EventType == bedrock.EventMetadata && ev.Usage != nil {
			b.usage = ev.Usage
		}
		if d := ev.Delta; d != nil {
			if d.Text != nil {
				b.text += int64(len(*d.Text))
			}
			if d.ToolUse != nil {
				b.text += int64(len(d.ToolUse.Input))
			}
			if d.ReasoningContent != nil {
				b.text += int64(len(d.ReasoningContent.Text))
			}
		}
		if b.onEvent != nil {
			b.onEvent(m.EventType, &ev)
		}
	case "exception", "error":
		b.failed = true
		msg := m.ErrorMessage
		var eb bedrock.ErrorBody
		if json.Unmarshal(m.Payload, &eb) == nil && eb.Text() != "" {
			msg = eb.Text()
		}
		if b.onError != nil {
			b.onError(bedrockExceptionStatus(m.ExceptionType), m.ExceptionType+": "+msg)
		}
	}
}

// result is the stream's usage: the metadata event's, else an estimate.
func (b *bedrockEvents) result() (kernel.Usage, bool) {
	if b.usage != nil {
		return bedrockKernelUsage(b.usage), true
	}
	return kernel.Usage{Output: EstimateTokens(b.text)}, false
}

// bedrockImage converts an image source (base64 only: Converse takes bytes).
func bedrockImage(src *anthropic.ImageSource) (*bedrock.ContentBlock, error) {
	if src == nil || src.Type != "base64" {
		return nil, errImageURL
	}
	format := strings.TrimPrefix(src.MediaType, "image/")
	if format == "jpg" {
		format = "jpeg"
	}
	img := &bedrock.ImageBlock{Format: format}
	img.Source.Bytes = src.Data
	return &bedrock.ContentBlock{Image: img}, nil
}

var errImageURL = &fieldError{"image", "this model takes images as base64 data only (data:<type>;base64,…)"}

// textBlock is a text content block.
func textBlock(s string) bedrock.ContentBlock { return bedrock.ContentBlock{Text: &s} }

// appendBedrockTurn adds blocks to the last message when it has the same
// role (Converse requires alternating roles), else a new message.
func appendBedrockTurn(out *bedrock.ConverseRequest, role string, blocks []bedrock.ContentBlock) {
	if len(blocks) == 0 {
		return
	}
	if n := len(out.Messages); n > 0 && out.Messages[n-1].Role == role {
		out.Messages[n-1].Content = append(out.Messages[n-1].Content, blocks...)
		return
	}
	out.Messages = append(out.Messages, bedrock.Message{Role: role, Content: blocks})
}

// bedrockTools converts tool declarations (name, description, JSON Schema).
func bedrockTools(names, descs []string, schemas []json.RawMessage) []bedrock.Tool {
	tools := make([]bedrock.Tool, len(names))
	for i := range names {
		tools[i].ToolSpec.Name, tools[i].ToolSpec.Description = names[i], descs[i]
		s := schemas[i]
		if len(s) == 0 || string(s) == "null" {
			s = json.RawMessage(`{"type":"object","properties":{}}`)
		}
		tools[i].ToolSpec.InputSchema.JSON = s
	}
	return tools
}

// sseContentType is the content type of the SSE a translator writes from an
// AWS event stream.
const sseContentType = "text/event-stream; charset=utf-8"

func (t *chatBedrock) StreamContentType() string { return sseContentType }
