package extprocfilter

import (
	"errors"
	"fmt"
	"slices"
	"time"

	extprocfilterv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_proc/v3"
	"google.golang.org/protobuf/proto"
)

// Config is the ext_proc filter configuration the client plays, plus the
// version toggles of spec §8. DefaultConfig returns Tollgate's production
// settings (spec §6).
type Config struct {
	// Mode is the filter-level processing_mode. Nil means all DEFAULT (headers
	// SEND, bodies NONE, trailers SKIP). FULL_DUPLEX_STREAMED and GRPC are not
	// supported.
	Mode *extprocfilterv3.ProcessingMode
	// AllowModeOverride honours mode_override in headers replies (R2.7).
	AllowModeOverride bool
	// AllowedOverrideModes, when non-empty, restricts mode_override to these
	// modes, compared on every field but request_header_mode (R2.7).
	AllowedOverrideModes []*extprocfilterv3.ProcessingMode
	// MessageTimeout is the per-direction message timer (N4.1). 0 fires at once.
	MessageTimeout time.Duration
	// MaxMessageTimeout bounds override_message_timeout; 0 disables it (R2.2).
	MaxMessageTimeout time.Duration
	// FailureModeAllow continues without the processor on gRPC errors,
	// timeouts and spurious replies (§4).
	FailureModeAllow bool
	// StatusOnError is the local reply status for gRPC errors, spurious replies
	// and invalid mutations (§4). 0 means 500.
	StatusOnError int
	// RouteCacheAction: DEFAULT clears on clear_route_cache, CLEAR on every
	// request reply with a header_mutation, RETAIN never (R3.2).
	RouteCacheAction extprocfilterv3.ExternalProcessor_RouteCacheAction

	// DisableImmediateResponse makes an immediate_response spurious (R2.1).
	DisableImmediateResponse bool
	// ReceivingNamespaces are metadata_options.receiving_namespaces.untyped:
	// the dynamic_metadata namespaces kept from replies (R2.6).
	ReceivingNamespaces []string

	// Mutation rules (HeaderMutationRules) (R2.9.6).
	DisallowIsError bool // a denied mutation is an error (500), not ignored
	AllowAllRouting bool // allow host, :authority, :method, :scheme
	AllowEnvoy      bool // allow x-envoy-*
	DisallowSystem  bool // deny every ':' header
	DisallowAll     bool // deny everything

	// RequestBufferLimit: a BUFFERED request body above it gets a 413 (R1.5b).
	RequestBufferLimit int
	// ResponseBufferLimit: a BUFFERED response body above it gets a 500, or a
	// reset when the response headers already went downstream (R1.5b).
	ResponseBufferLimit int
	// MaxHeadersCount and MaxHeadersKB are the HCM header limits checked on
	// header mutations (R2.9.2, R2.9.10). 0 means Envoy's 100 and 60.
	MaxHeadersCount int
	MaxHeadersKB    int
	// MaxOutstandingChunks is how many STREAMED chunks of one direction may
	// await their replies before a body call blocks; Envoy itself never waits
	// (R1.5c). 0 means 1. The end-of-stream chunk always waits for every reply.
	MaxOutstandingChunks int

	// §8 toggles.

	// SpuriousFailsClosed: a spurious reply gets status_on_error (1.35+); off,
	// it is ignored and the processor detached (R2.1, §4).
	SpuriousFailsClosed bool
	// StreamCloseOptimization: close the gRPC stream right after the last
	// expected reply (1.37+, R1.8a).
	StreamCloseOptimization bool
	// GracefulClose: half-close and wait up to RemoteCloseTimeout for the
	// server's status before the reset (R1.8).
	GracefulClose      bool
	RemoteCloseTimeout time.Duration
	// AllowContentLengthHeader keeps content-length in the modes that strip it
	// (1.38+, R2.10).
	AllowContentLengthHeader bool
}

// DefaultConfig returns the production filter settings of spec §6.
func DefaultConfig() Config {
	return Config{
		Mode: &extprocfilterv3.ProcessingMode{
			RequestHeaderMode:   extprocfilterv3.ProcessingMode_SEND,
			RequestBodyMode:     extprocfilterv3.ProcessingMode_BUFFERED,
			RequestTrailerMode:  extprocfilterv3.ProcessingMode_SKIP,
			ResponseHeaderMode:  extprocfilterv3.ProcessingMode_SEND,
			ResponseBodyMode:    extprocfilterv3.ProcessingMode_BUFFERED,
			ResponseTrailerMode: extprocfilterv3.ProcessingMode_SEND,
		},
		AllowModeOverride:       true,
		MessageTimeout:          5 * time.Second,
		MaxMessageTimeout:       60 * time.Second,
		FailureModeAllow:        false,
		StatusOnError:           500,
		RouteCacheAction:        extprocfilterv3.ExternalProcessor_DEFAULT,
		ReceivingNamespaces:     []string{"ai_gateway"},
		DisallowIsError:         true,
		RequestBufferLimit:      1 << 20,
		ResponseBufferLimit:     1 << 20,
		MaxHeadersCount:         100,
		MaxHeadersKB:            60,
		MaxOutstandingChunks:    1,
		SpuriousFailsClosed:     true,
		StreamCloseOptimization: true,
		RemoteCloseTimeout:      time.Second,
	}
}

// Validate reports settings the client cannot play.
func (c Config) Validate() error {
	var errs []error
	for _, m := range []extprocfilterv3.ProcessingMode_BodySendMode{c.mode().GetRequestBodyMode(), c.mode().GetResponseBodyMode()} {
		switch m {
		case extprocfilterv3.ProcessingMode_NONE, extprocfilterv3.ProcessingMode_STREAMED,
			extprocfilterv3.ProcessingMode_BUFFERED, extprocfilterv3.ProcessingMode_BUFFERED_PARTIAL:
		default:
			errs = append(errs, fmt.Errorf("extprocfilter: body mode %v not supported", m))
		}
	}
	if c.MessageTimeout < 0 || c.MaxMessageTimeout < 0 || c.RemoteCloseTimeout < 0 {
		errs = append(errs, errors.New("extprocfilter: negative timeout"))
	}
	if c.RequestBufferLimit <= 0 || c.ResponseBufferLimit <= 0 {
		errs = append(errs, errors.New("extprocfilter: buffer limits must be positive"))
	}
	if c.StatusOnError != 0 && (c.StatusOnError < 200 || c.StatusOnError > 599) {
		errs = append(errs, fmt.Errorf("extprocfilter: status_on_error %d out of range", c.StatusOnError))
	}
	if c.MaxOutstandingChunks < 0 || c.MaxHeadersCount < 0 || c.MaxHeadersKB < 0 {
		errs = append(errs, errors.New("extprocfilter: negative limit"))
	}
	return errors.Join(errs...)
}

func (c Config) mode() *extprocfilterv3.ProcessingMode {
	if c.Mode == nil {
		return &extprocfilterv3.ProcessingMode{}
	}
	return c.Mode
}

func (c Config) statusOnError() int {
	if c.StatusOnError == 0 {
		return 500
	}
	return c.StatusOnError
}

func (c Config) maxHeadersCount() int {
	if c.MaxHeadersCount == 0 {
		return 100
	}
	return c.MaxHeadersCount
}

func (c Config) maxHeadersBytes() int {
	if c.MaxHeadersKB == 0 {
		return 60 * 1024
	}
	return c.MaxHeadersKB * 1024
}

func (c Config) window() int {
	if c.MaxOutstandingChunks <= 0 {
		return 1
	}
	return c.MaxOutstandingChunks
}

func (c Config) clone() Config {
	out := c
	if c.Mode != nil {
		out.Mode = proto.Clone(c.Mode).(*extprocfilterv3.ProcessingMode)
	}
	out.ReceivingNamespaces = slices.Clone(c.ReceivingNamespaces)
	out.AllowedOverrideModes = make([]*extprocfilterv3.ProcessingMode, len(c.AllowedOverrideModes))
	for i, m := range c.AllowedOverrideModes {
		out.AllowedOverrideModes[i] = proto.Clone(m).(*extprocfilterv3.ProcessingMode)
	}
	return out
}

// effectiveModeOverride merges a mode_override into the filter-level mode:
// DEFAULT header and trailer modes keep the base value, body modes are taken
// literally, so an unset body mode means NONE (R2.7).
func effectiveModeOverride(override, base *extprocfilterv3.ProcessingMode) *extprocfilterv3.ProcessingMode {
	out := proto.Clone(override).(*extprocfilterv3.ProcessingMode)
	if out.RequestHeaderMode == extprocfilterv3.ProcessingMode_DEFAULT {
		out.RequestHeaderMode = base.GetRequestHeaderMode()
	}
	if out.ResponseHeaderMode == extprocfilterv3.ProcessingMode_DEFAULT {
		out.ResponseHeaderMode = base.GetResponseHeaderMode()
	}
	if out.RequestTrailerMode == extprocfilterv3.ProcessingMode_DEFAULT {
		out.RequestTrailerMode = base.GetRequestTrailerMode()
	}
	if out.ResponseTrailerMode == extprocfilterv3.ProcessingMode_DEFAULT {
		out.ResponseTrailerMode = base.GetResponseTrailerMode()
	}
	return out
}

// overrideAllowed applies allowed_override_modes (R2.7).
func (c Config) overrideAllowed(m *extprocfilterv3.ProcessingMode) bool {
	if len(c.AllowedOverrideModes) == 0 {
		return true
	}
	for _, o := range c.AllowedOverrideModes {
		if m.GetRequestBodyMode() == o.GetRequestBodyMode() &&
			m.GetRequestTrailerMode() == o.GetRequestTrailerMode() &&
			m.GetResponseHeaderMode() == o.GetResponseHeaderMode() &&
			m.GetResponseBodyMode() == o.GetResponseBodyMode() &&
			m.GetResponseTrailerMode() == o.GetResponseTrailerMode() {
			return true
		}
	}
	return false
}
