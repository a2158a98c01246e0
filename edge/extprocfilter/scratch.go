package extprocfilter

import (
	"sync"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
)

// scratch holds the request messages of a Sync stream and the arrays of
// their header values: its processor keeps nothing of a message once Handle
// returned and never writes into it (SyncStream), and the client never
// touches a message after sending it. A stream takes a scratch for each
// message it builds and gives it back once the message was handled
// (Stream.msgScratch, Stream.handled), so that a request waiting for its
// upstream holds none. Over gRPC every message is its own.
type scratch struct {
	req   extprocv3.ProcessingRequest
	reqH  extprocv3.ProcessingRequest_RequestHeaders
	respH extprocv3.ProcessingRequest_ResponseHeaders
	reqB  extprocv3.ProcessingRequest_RequestBody
	respB extprocv3.ProcessingRequest_ResponseBody
	reqT  extprocv3.ProcessingRequest_RequestTrailers
	respT extprocv3.ProcessingRequest_ResponseTrailers
	hh    extprocv3.HttpHeaders
	body  extprocv3.HttpBody
	tr    extprocv3.HttpTrailers
	hmap  corev3.HeaderMap
	meta  corev3.Metadata // R5.4: always empty
	ptrs  []*corev3.HeaderValue
	vals  []corev3.HeaderValue
	raw   []byte
}

// headerMap encodes h as toProto does, into the reused arrays.
func (sc *scratch) headerMap(h Headers) *corev3.HeaderMap {
	n := 0
	for _, e := range h {
		n += len(e.Value)
	}
	// Sized first: the values are slices of raw, which must not move.
	if cap(sc.raw) < n {
		sc.raw = make([]byte, 0, n)
	}
	if cap(sc.vals) < len(h) {
		sc.vals = make([]corev3.HeaderValue, len(h))
		sc.ptrs = make([]*corev3.HeaderValue, len(h))
	}
	raw, vals, ptrs := sc.raw[:0], sc.vals[:len(h)], sc.ptrs[:len(h)]
	for i, e := range h {
		start := len(raw)
		raw = append(raw, e.Value...)
		v := &vals[i]
		v.Key, v.Value, v.RawValue = e.Key, "", raw[start:len(raw):len(raw)]
		ptrs[i] = v
	}
	sc.hmap.Reset()
	sc.hmap.Headers = ptrs
	return &sc.hmap
}

// scratches are the free scratch sets.
var scratches = sync.Pool{New: func() any { return new(scratch) }}

// maxScratchBytes bounds the header bytes a pooled scratch keeps.
const maxScratchBytes = 16 << 10

func getScratch() *scratch { return scratches.Get().(*scratch) }

// putScratch gives sc back once its message was handled. Its messages
// point only into sc itself (and each is emptied before it is built
// again), except for the header names and the body, which are dropped
// here.
func putScratch(sc *scratch) {
	if cap(sc.raw) > maxScratchBytes {
		sc.raw, sc.vals, sc.ptrs = nil, nil, nil
	}
	for i := range sc.vals {
		sc.vals[i].Key = ""
	}
	sc.body.Body = nil
	scratches.Put(sc)
}

func (sc *scratch) headers(request bool, h Headers, eos bool) *extprocv3.ProcessingRequest {
	sc.hh.Reset()
	sc.hh.Headers, sc.hh.EndOfStream = sc.headerMap(h), eos
	return sc.message(request, partHeaders)
}

func (sc *scratch) bodyChunk(request bool, data []byte, eos bool) *extprocv3.ProcessingRequest {
	sc.body.Reset()
	sc.body.Body, sc.body.EndOfStream = data, eos
	return sc.message(request, partBody)
}

func (sc *scratch) trailers(request bool, h Headers) *extprocv3.ProcessingRequest {
	sc.tr.Reset()
	sc.tr.Trailers = sc.headerMap(h)
	return sc.message(request, partTrailers)
}

type part int

const (
	partHeaders part = iota
	partBody
	partTrailers
)

// message returns the message emptied, carrying the filled part of one
// direction.
func (sc *scratch) message(request bool, p part) *extprocv3.ProcessingRequest {
	sc.req.Reset()
	m := &sc.req
	switch {
	case p == partHeaders && request:
		sc.reqH.RequestHeaders, m.Request = &sc.hh, &sc.reqH
	case p == partHeaders:
		sc.respH.ResponseHeaders, m.Request = &sc.hh, &sc.respH
	case p == partBody && request:
		sc.reqB.RequestBody, m.Request = &sc.body, &sc.reqB
	case p == partBody:
		sc.respB.ResponseBody, m.Request = &sc.body, &sc.respB
	case request:
		sc.reqT.RequestTrailers, m.Request = &sc.tr, &sc.reqT
	default:
		sc.respT.ResponseTrailers, m.Request = &sc.tr, &sc.respT
	}
	return m
}
