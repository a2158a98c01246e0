package extprocfilter

import (
	"fmt"

	extprocfilterv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_proc/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
)

// attributesKey is the key of the attributes Envoy's ext_proc filter sends
// (R5.3).
const attributesKey = "envoy.filters.http.ext_proc"

// StartOption sets per-request settings of a Stream.
type StartOption func(*startOptions)

type startOptions struct {
	ownHeaders   bool
	routeMode    *extprocfilterv3.ProcessingMode
	reqAttrs     *structpb.Struct
	respAttrs    *structpb.Struct
	attrsInvalid error
}

// WithOwnedHeaders hands the stream the header lists given to
// RequestHeaders and ResponseHeaders: the caller neither reads nor changes
// them afterwards. A list already in Envoy's form (names lower-case,
// pseudo-headers first) is then kept and changed in place rather than
// copied. The built-in data plane builds a fresh list for every call.
func WithOwnedHeaders() StartOption { return func(o *startOptions) { o.ownHeaders = true } }

// WithRouteMode is a per-route ExtProcPerRoute processing_mode. It replaces the
// whole filter-level mode for this request, so unset fields are DEFAULT or
// NONE; mode_override still merges into the filter-level mode (R1.2, R2.7, §6).
func WithRouteMode(m *extprocfilterv3.ProcessingMode) StartOption {
	return func(o *startOptions) { o.routeMode = proto.Clone(m).(*extprocfilterv3.ProcessingMode) }
}

// WithRequestAttributes sets the values of request_attributes, expression →
// value (for example "xds.route_name"), sent in the first request-direction
// message (R5.3). Values are converted with structpb.NewValue.
func WithRequestAttributes(attrs map[string]any) StartOption {
	return func(o *startOptions) { o.reqAttrs = o.attributes(attrs) }
}

// WithResponseAttributes is WithRequestAttributes for response_attributes,
// sent in the first response-direction message.
func WithResponseAttributes(attrs map[string]any) StartOption {
	return func(o *startOptions) { o.respAttrs = o.attributes(attrs) }
}

func (o *startOptions) attributes(attrs map[string]any) *structpb.Struct {
	st, err := structpb.NewStruct(attrs)
	if err != nil {
		o.attrsInvalid = fmt.Errorf("extprocfilter: attributes: %w", err)
		return nil
	}
	return st
}
