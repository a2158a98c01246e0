package bedrock

import (
	"bytes"
	"encoding/binary"
	"errors"

	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"
)

// Event stream message headers.
const (
	HeaderMessageType   = ":message-type"   // event | exception | error
	HeaderEventType     = ":event-type"     // messageStart, contentBlockDelta, …
	HeaderExceptionType = ":exception-type" // throttlingException, …
	HeaderErrorCode     = ":error-code"
	HeaderErrorMessage  = ":error-message"
	HeaderContentType   = ":content-type"
)

// MaxMessage bounds one event-stream message the decoder holds.
const MaxMessage = 16 << 20

// ErrMessageTooLarge: a message's prelude announces more than MaxMessage
// bytes (or fewer than a message's minimum): the stream is not an event
// stream.
var ErrMessageTooLarge = errors.New("bedrock: event-stream message length out of range")

// minMessage is the size of an empty message: prelude (12) and message CRC (4).
const minMessage = 16

// StreamMessage is one decoded event-stream message: its type headers and payload.
type StreamMessage struct {
	MessageType   string // :message-type: event, exception or error
	EventType     string // :event-type
	ExceptionType string // :exception-type (or :error-code)
	ErrorMessage  string // :error-message
	Payload       []byte
}

// StreamDecoder decodes an event stream fed in chunks split anywhere: it
// holds the bytes of an incomplete message and hands each complete one to
// the SDK's decoder, which checks both CRCs.
type StreamDecoder struct {
	buf     []byte
	dec     *eventstream.Decoder
	payload []byte
}

// Feed adds chunk and calls fn for every message it completes (the message
// is valid only during the call). An error ends the stream: the bytes are
// not an event stream, or a CRC failed.
func (d *StreamDecoder) Feed(chunk []byte, fn func(m *StreamMessage)) error {
	if d.dec == nil {
		d.dec = eventstream.NewDecoder()
	}
	d.buf = append(d.buf, chunk...)
	for len(d.buf) >= 4 {
		// The prelude's first field is the total length (big-endian), which
		// says where the message ends; decoding is the SDK's.
		n := int(binary.BigEndian.Uint32(d.buf))
		if n < minMessage || n > MaxMessage {
			return ErrMessageTooLarge
		}
		if len(d.buf) < n {
			return nil
		}
		m, err := d.dec.Decode(bytes.NewReader(d.buf[:n]), d.payload[:0])
		if err != nil {
			return err
		}
		d.payload = m.Payload[:0]
		msg := StreamMessage{
			MessageType: headerString(&m, HeaderMessageType), EventType: headerString(&m, HeaderEventType),
			ExceptionType: headerString(&m, HeaderExceptionType), ErrorMessage: headerString(&m, HeaderErrorMessage),
			Payload: m.Payload,
		}
		if msg.ExceptionType == "" {
			msg.ExceptionType = headerString(&m, HeaderErrorCode)
		}
		fn(&msg)
		d.buf = append(d.buf[:0], d.buf[n:]...)
	}
	return nil
}

// Pending reports whether bytes of an incomplete message are held.
func (d *StreamDecoder) Pending() bool { return len(d.buf) > 0 }

// headerString is the string value of a message header ("" when absent).
func headerString(m *eventstream.Message, name string) string {
	if v := m.Headers.Get(name); v != nil {
		if s, ok := v.Get().(string); ok {
			return s
		}
	}
	return ""
}

// Encode writes one event-stream message (the mock's and the tests' side).
func Encode(dst *bytes.Buffer, headers map[string]string, payload []byte) error {
	var m eventstream.Message
	for _, k := range []string{HeaderMessageType, HeaderEventType, HeaderExceptionType, HeaderContentType} {
		if v, ok := headers[k]; ok {
			m.Headers.Set(k, eventstream.StringValue(v))
		}
	}
	m.Payload = payload
	return eventstream.NewEncoder().Encode(dst, m)
}
