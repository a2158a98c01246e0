package extprocfilter

import (
	"errors"
	"fmt"
	"strings"
	"unicode"
)

// Errors. The processor failures (everything but ErrOutOfOrder and
// ErrFinished) are reported in Result.Failure, wrapped with the details, next
// to the local reply or fail-open continue that Envoy would produce; they are
// never returned as the error of a Stream method.
var (
	// ErrOutOfOrder: the caller drove the stream out of HTTP order (body before
	// headers, a second end of stream, …). A caller bug, not a processor one.
	ErrOutOfOrder = errors.New("extprocfilter: call out of order")
	// ErrFinished: the stream already ended with a local reply or reset, or was
	// closed.
	ErrFinished = errors.New("extprocfilter: stream finished")

	// ErrSpurious: a reply that does not fit the state of its direction (R2.1).
	ErrSpurious = errors.New("extprocfilter: spurious message")
	// ErrDisallowedMutation: a header mutation denied by the mutation rules,
	// reported as an error because disallow_is_error is set (R2.9.6–9).
	ErrDisallowedMutation = errors.New("extprocfilter: disallowed header mutation")
	// ErrInvalidMutation: a malformed header mutation (both value and raw_value,
	// invalid characters, header limits) (R2.9.2, R2.9.3, R2.9.10).
	ErrInvalidMutation = errors.New("extprocfilter: invalid header mutation")
	// ErrContentLengthMismatch: a buffered body mutation whose length does not
	// match the content-length header (R2.10).
	ErrContentLengthMismatch = errors.New("extprocfilter: mismatch between content length and the length of the mutated body")
	// ErrMessageTimeout: the processor did not reply within message_timeout
	// (§4, N4.1).
	ErrMessageTimeout = errors.New("extprocfilter: per-message timeout exceeded")
	// ErrGRPC: the stream could not open or ended with a non-OK status (§4).
	ErrGRPC = errors.New("extprocfilter: gRPC error")
	// ErrBufferLimit: a buffered body exceeded its buffer limit (R1.5b).
	ErrBufferLimit = errors.New("extprocfilter: body exceeds buffer limit")
	// ErrProcessorClosed: the processor ended the stream with OK; processing
	// continues without it (R1.9). Not a failure: reported for visibility.
	ErrProcessorClosed = errors.New("extprocfilter: processor closed the stream")
)

// failure is a processor failure: its kind is one of the Err values, its
// message Envoy's, which becomes the local reply details.
type failure struct {
	kind error
	msg  string
}

func failuref(kind error, format string, args ...any) error {
	return &failure{kind: kind, msg: fmt.Sprintf(format, args...)}
}

func (f *failure) Error() string { return f.kind.Error() + ": " + f.msg }
func (f *failure) Unwrap() error { return f.kind }

// details turns a message into %RESPONSE_CODE_DETAILS% (whitespace → '_').
func details(msg string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsSpace(r) {
			return '_'
		}
		return r
	}, msg)
}

// failureMsg is the message of a failure made by failuref.
func failureMsg(err error) string {
	var f *failure
	if errors.As(err, &f) {
		return f.msg
	}
	return ""
}
