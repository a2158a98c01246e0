package extproc

import (
	"strconv"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	extprocfilterv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_proc/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"

	"github.com/tollgate-ai/tollgate/kernel"
)

// The processor's replies are built with few allocations: a reply's messages
// (ProcessingResponse, its oneof wrapper, Body/HeadersResponse,
// CommonResponse, HeaderMutation, BodyMutation) and its set_headers are one
// pooled object, given back once the data plane applied it (reply_pool.go);
// the others' set_headers come from a headerList in one allocation whatever
// their number. Replies are never touched while lent
// (extprocfiltertest.DirectOwned passes them to the data plane by pointer).

// The replies that are a plain CONTINUE are shared by every stream (the codec
// sends them pre-encoded).
var (
	replyContinueRequestHeaders = &extprocv3.ProcessingResponse{Response: &extprocv3.ProcessingResponse_RequestHeaders{
		RequestHeaders: &extprocv3.HeadersResponse{},
	}}
	replyContinueResponseHeaders = &extprocv3.ProcessingResponse{Response: &extprocv3.ProcessingResponse_ResponseHeaders{
		ResponseHeaders: &extprocv3.HeadersResponse{},
	}}
	replyContinueResponseBody = &extprocv3.ProcessingResponse{Response: &extprocv3.ProcessingResponse_ResponseBody{
		ResponseBody: &extprocv3.BodyResponse{},
	}}
	replyContinueRequestTrailers = &extprocv3.ProcessingResponse{Response: &extprocv3.ProcessingResponse_RequestTrailers{
		RequestTrailers: &extprocv3.TrailersResponse{},
	}}
	replyContinueResponseTrailers = &extprocv3.ProcessingResponse{Response: &extprocv3.ProcessingResponse_ResponseTrailers{
		ResponseTrailers: &extprocv3.TrailersResponse{},
	}}
)

// replyParts holds the CommonResponse of a reply and what it points to, and
// room for its set_headers (setHeaders); pooledReply holds it with the rest
// of the reply.
type replyParts struct {
	c  extprocv3.CommonResponse
	hm extprocv3.HeaderMutation
	bodyMutationParts
	hs replyHeaders
}

// bodyMutationParts holds a BodyMutation and its oneof wrappers.
type bodyMutationParts struct {
	bm    extprocv3.BodyMutation
	set   extprocv3.BodyMutation_Body
	clear extprocv3.BodyMutation_ClearBody
}

// mutation returns a BodyMutation replacing the body with b: ClearBody when b
// is empty.
func (p *bodyMutationParts) mutation(b []byte) *extprocv3.BodyMutation {
	if len(b) == 0 {
		p.clear.ClearBody = true
		p.bm.Mutation = &p.clear
	} else {
		p.set.Body = b
		p.bm.Mutation = &p.set
	}
	return &p.bm
}

// newRequestBodyReply returns a request-body reply and its parts, from the
// pool (reply_pool.go): its CommonResponse has its HeaderMutation, empty.
func (s *stream) newRequestBodyReply() (*extprocv3.ProcessingResponse, *replyParts) {
	x := s.lendReply()
	x.body.Response, x.reqBody.RequestBody, x.pr.Response = &x.c, &x.body, &x.reqBody
	return &x.pr, &x.replyParts
}

// newResponseBodyReply is newRequestBodyReply for the response body.
func (s *stream) newResponseBodyReply() (*extprocv3.ProcessingResponse, *replyParts) {
	x := s.lendReply()
	x.body.Response, x.respBody.ResponseBody, x.pr.Response = &x.c, &x.body, &x.respBody
	return &x.pr, &x.replyParts
}

// newResponseHeadersReply is newRequestBodyReply for the response headers.
func (s *stream) newResponseHeadersReply() (*extprocv3.ProcessingResponse, *replyParts) {
	x := s.lendReply()
	x.hdrs.Response, x.respHdrs.ResponseHeaders, x.pr.Response = &x.c, &x.hdrs, &x.respHdrs
	return &x.pr, &x.replyParts
}

// modeStreamed switches the response body to STREAMED (shared: read-only).
var modeStreamed = &extprocfilterv3.ProcessingMode{
	RequestBodyMode:  extprocfilterv3.ProcessingMode_BUFFERED,
	ResponseBodyMode: extprocfilterv3.ProcessingMode_STREAMED,
}

// headerList collects the headers a reply sets, to build their options at
// once (options). Its methods return the list, as append does, so that its
// slices may live on the caller's stack:
//
//	var kvs [8]headerKV
//	var vals [256]byte
//	l := headerList{kv: kvs[:0], vals: vals[:0]}
//	l = l.add(k, v)
type headerList struct {
	kv   []headerKV
	vals []byte // every value, back to back
}

// headerKV is one header of a headerList: its value is vals[start:end].
type headerKV struct {
	key        string
	start, end int
}

func (l headerList) add(k, v string) headerList {
	start := len(l.vals)
	l.vals = append(l.vals, v...)
	l.kv = append(l.kv, headerKV{k, start, len(l.vals)})
	return l
}

func (l headerList) addInt(k string, n int64) headerList {
	start := len(l.vals)
	l.vals = strconv.AppendInt(l.vals, n, 10)
	l.kv = append(l.kv, headerKV{k, start, len(l.vals)})
	return l
}

func (l headerList) addUSD(k string, m kernel.Money) headerList {
	start := len(l.vals)
	l.vals = appendUSD(l.vals, m)
	l.kv = append(l.kv, headerKV{k, start, len(l.vals)})
	return l
}

func (l headerList) addAll(kvs [][2]string) headerList {
	for _, kv := range kvs {
		l = l.add(kv[0], kv[1])
	}
	return l
}

// options returns the set_headers overwriting each header (raw_value only,
// append=false: R2.9), in order; nil when there are none.
func (l headerList) options() []*corev3.HeaderValueOption {
	if len(l.kv) == 0 {
		return nil
	}
	return l.fill(headerSets(len(l.kv), l.vals))
}

// fill points sets and out (one of each per header) at the headers, whose
// values are in vals, a copy of l.vals; it returns out.
func (l headerList) fill(sets []headerSet, out []*corev3.HeaderValueOption, vals []byte) []*corev3.HeaderValueOption {
	for i, kv := range l.kv {
		hs := &sets[i]
		hs.val.Key, hs.val.RawValue = kv.key, vals[kv.start:kv.end:kv.end]
		hs.opt.Header, hs.opt.Append = &hs.val, appendFalse
		out[i] = &hs.opt
	}
	return out
}

// pairs returns the headers as key-value pairs.
func (l headerList) pairs() [][2]string {
	if len(l.kv) == 0 {
		return nil
	}
	out := make([][2]string, len(l.kv))
	for i, kv := range l.kv {
		out[i] = [2]string{kv.key, string(l.vals[kv.start:kv.end])}
	}
	return out
}

// headerSets returns n headerSets, a list for their options and a copy of
// vals (the headers' values back to back), in one allocation for up to four
// headers whose values take up to 24 bytes a header (an immediate
// response's, and a pooled reply's that do not fit its room). Each value
// array fills its allocation's size class: 192, 384, 576
// and 768 bytes, what the headers alone took (without it, the copy of the
// values was an allocation of its own).
func headerSets(n int, vals []byte) ([]headerSet, []*corev3.HeaderValueOption, []byte) {
	var s []headerSet
	var p []*corev3.HeaderValueOption
	var v []byte
	switch n {
	case 1:
		x := &struct {
			s [1]headerSet
			p [1]*corev3.HeaderValueOption
			v [24]byte
		}{}
		s, p, v = x.s[:], x.p[:], x.v[:0]
	case 2:
		x := &struct {
			s [2]headerSet
			p [2]*corev3.HeaderValueOption
			v [48]byte
		}{}
		s, p, v = x.s[:], x.p[:], x.v[:0]
	case 3:
		x := &struct {
			s [3]headerSet
			p [3]*corev3.HeaderValueOption
			v [72]byte
		}{}
		s, p, v = x.s[:], x.p[:], x.v[:0]
	case 4:
		x := &struct {
			s [4]headerSet
			p [4]*corev3.HeaderValueOption
			v [96]byte
		}{}
		s, p, v = x.s[:], x.p[:], x.v[:0]
	default:
		s, p = make([]headerSet, n), make([]*corev3.HeaderValueOption, n)
	}
	if len(vals) > cap(v) {
		v = make([]byte, 0, len(vals))
	}
	return s, p, append(v, vals...)
}
