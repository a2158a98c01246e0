package extprocfilter

import (
	extprocfilterv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_proc/v3"
	"google.golang.org/protobuf/types/known/structpb"
)

// AttrCodeDetails is Envoy's attribute for why a response ended as it did;
// ResponseReset sends it.
const AttrCodeDetails = "response.code_details"

// DetailsUpstreamReset is Envoy's response code details for an upstream that
// reset a response whose headers had gone downstream.
const DetailsUpstreamReset = "upstream_reset_after_response_started{connection_termination}"

// ResponseReset tells the filter that the upstream broke off a response body
// after its headers went downstream. Envoy resets the downstream stream then
// and tells the processor nothing more; this is the built-in data plane's
// extension (docs/extproc.md, "A stream cut mid-way"): in STREAMED mode, with
// the processor still attached, it sends one last empty body message with
// end_of_stream and the attribute response.code_details = details, so that
// the processor may end the stream in the client's format. The Result's Body
// is what to write before ending the response cleanly; empty (any other
// mode, or a processor that sends nothing) means the caller resets the
// stream as Envoy does.
func (s *Stream) ResponseReset(details string) (*Result, error) {
	s.mu.Lock()
	s.checkLive()
	d := &s.resp
	ok := !s.complete && !s.streamClosed && d.started && !d.bodyEnded && !d.bodyReplaced &&
		d.bodyMode == extprocfilterv3.ProcessingMode_STREAMED
	if ok {
		d.attrs = &structpb.Struct{Fields: map[string]*structpb.Value{AttrCodeDetails: structpb.NewStringValue(details)}}
		d.attrsSent = false
	}
	s.mu.Unlock()
	if !ok {
		return &Result{}, nil
	}
	return s.onBody(d, nil, true)
}
