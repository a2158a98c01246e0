package h1

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/net/http/httpguts"
)

// headSeeds are requests net/http accepts and refuses, for the differential
// test and as the fuzz corpus.
var headSeeds = []string{
	"GET / HTTP/1.1\r\nHost: a\r\n\r\n",
	"POST /v1/chat/completions HTTP/1.1\r\nHost: gw:8080\r\nAuthorization: Bearer k\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}",
	"POST /x?a=1&b=%zz HTTP/1.1\r\nhost: a\r\ncontent-length: 3\r\ncontent-length: 3\r\n\r\nabc",
	"POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabcd",
	"POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: +3\r\n\r\nabc",
	"POST /x HTTP/1.1\r\nHost: a\r\nContent-Length:\r\n\r\n",
	"POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nab",
	"POST /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
	"POST /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nContent-Length: 9\r\nTrailer: X-T\r\n\r\n3\r\nabc\r\n0\r\nX-T: v\r\nX-U: w\r\n\r\n",
	"POST /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip\r\n\r\n",
	"POST /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
	"POST /x HTTP/1.0\r\nHost: a\r\nTransfer-Encoding: gzip\r\nContent-Length: 1\r\n\r\na",
	"POST /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nTrailer: Content-Length\r\n\r\n0\r\n\r\n",
	"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",
	"GET / HTTP/1.0\r\n\r\n",
	"GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n",
	"GET / HTTP/1.1\r\nHost: a\r\nConnection: foo, close\r\n\r\n",
	"GET / HTTP/1.1\r\nHost: a\r\nX-Folded: one\r\n  two\r\n\tthree \r\nX-Next: n\r\n\r\n",
	"GET / HTTP/1.1\r\n Host: a\r\n\r\n",
	"GET / HTTP/1.1\r\nHost : a\r\n\r\n",
	"GET / HTTP/1.1\r\nHo(st: a\r\n\r\n",
	"GET / HTTP/1.1\r\n: a\r\n\r\n",
	"GET / HTTP/1.1\r\nNoColon\r\n\r\n",
	"GET / HTTP/1.1\r\nX: a\x01b\r\n\r\n",
	"GET / HTTP/1.1\r\nX: caf\xc3\xa9\r\nHost: a\r\n\r\n",
	"GET / HTTP/1.1\nHost: a\nX-Lf: only\n\n",
	"GET /a\x7fb HTTP/1.1\r\nHost: a\r\n\r\n",
	"GET  / HTTP/1.1\r\nHost: a\r\n\r\n",
	"GET / HTTP/1.1 \r\nHost: a\r\n\r\n",
	"GET / HTTP/1.2\r\nHost: a\r\n\r\n",
	"GET / HTTP/2.0\r\nHost: a\r\n\r\n",
	"G@T / HTTP/1.1\r\nHost: a\r\n\r\n",
	" GET / HTTP/1.1\r\nHost: a\r\n\r\n",
	"\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n",
	"GET * HTTP/1.1\r\nHost: a\r\n\r\n",
	"OPTIONS * HTTP/1.1\r\nHost: a\r\n\r\n",
	"GET http://example.com:81/p?q HTTP/1.1\r\nHost: other\r\n\r\n",
	"GET example.com HTTP/1.1\r\nHost: a\r\n\r\n",
	"CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n",
	"GET /%41%2f?x HTTP/1.1\r\nHost: a\r\n\r\n",
	"GET /x? HTTP/1.1\r\nHost: a\r\n\r\n",
	"GET /x HTTP/1.1\r\nHost: a\r\nPragma: no-cache\r\n\r\n",
	"GET /x HTTP/1.1\r\nHost: a\r\nX-Empty:\r\nX-Spaces:    \r\n\r\n",
	"GET /x HTTP/1.1\r\nHost: a\r\nX: 1\r\nx: 2\r\nX-Y: 3\r\n\r\n",
	"GET /x HTTP/1.1\r\nHost: a\r\n",
	"GET /x HTTP/1.1\r\nHo",
	"GET /x",
	"",
	"POST /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n",
	"POST /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nabc\r\n0\r\n\r\n",
	"POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 99999999999999999999\r\n\r\n",
	"PRI * HTTP/2.0\r\n\r\n",
}

// parsed is what both parsers agree on for one request.
type parsed struct {
	err, eof, te             bool
	method, uri, proto, host string
	major, minor             int
	close                    bool
	contentLength            int64
	path, rawQuery, urlHost  string
	header                   http.Header
	body                     string
	bodyErr                  bool
	trailer                  http.Header
	transferEncodingDeclared []string
	trailerDeclared          []string
}

func fromNetHTTP(raw []byte) parsed {
	req, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(raw)))
	if err != nil {
		return parsed{
			err: true, eof: errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF),
			te: strings.Contains(err.Error(), "transfer encoding"),
		}
	}
	for k := range req.Header {
		if !httpguts.ValidHeaderFieldName(k) {
			// ReadRequest lets "Name : v" through; the server's checks
			// (checkRequest) refuse it.
			return parsed{err: true}
		}
	}
	p := parsed{
		method: req.Method, uri: req.RequestURI, proto: req.Proto, host: req.Host,
		major: req.ProtoMajor, minor: req.ProtoMinor, close: req.Close, contentLength: req.ContentLength,
		path: req.URL.Path, rawQuery: req.URL.RawQuery, urlHost: req.URL.Host, header: req.Header,
		transferEncodingDeclared: req.TransferEncoding,
	}
	p.finish(req.Body, &req.Trailer)
	return p
}

// fromLean parses raw with headParser; strict applies the server's request
// rules (refusedByRule: a refusal those rules add to net/http's).
func fromLean(t *testing.T, raw []byte, strict bool) (p parsed, refusedByRule bool) {
	hp := headParser{strict: strict}
	if strict {
		hp.maxBytes, hp.maxFields = DefaultMaxHeaderBytes, DefaultMaxHeaders
	}
	br := bufio.NewReader(bytes.NewReader(raw))
	h, err := hp.read(br)
	if err != nil {
		var te *teError
		byRule := errors.Is(err, errStrict) || errors.Is(err, errTooManyHeaders) || errors.Is(err, errHeadersTooLarge)
		return parsed{err: true, eof: errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF), te: errors.As(err, &te)}, byRule
	}
	req := h.request(context.Background(), br)
	p = parsed{
		method: req.Method, uri: req.RequestURI, proto: req.Proto, host: req.Host,
		major: req.ProtoMajor, minor: req.ProtoMinor, close: req.Close, contentLength: req.ContentLength,
		path: req.URL.Path, rawQuery: req.URL.RawQuery, urlHost: req.URL.Host,
		transferEncodingDeclared: req.TransferEncoding,
	}
	// ReadRequest moves Host to Request.Host (the edge skips the field).
	p.header = leanHeader(t, h.fields, "Host")
	p.finish(req.Body, &req.Trailer)
	return p, false
}

// agreeOnOrder: a head with both an invalid header name and an unsupported
// Transfer-Encoding is refused by both, net/http for the encoding (it
// checks names later, in the server), headParser for the name.
func agreeOnOrder(want *parsed, got parsed) {
	if want.err && got.err && want.te && !got.te {
		want.te = false
	}
}

// finish records a message's declared trailers, reads its body, then takes
// the trailers that came with it.
func (p *parsed) finish(body io.Reader, trailer *http.Header) {
	for k := range *trailer {
		p.trailerDeclared = append(p.trailerDeclared, k)
	}
	slices.Sort(p.trailerDeclared)
	b, err := io.ReadAll(body)
	p.body, p.bodyErr = string(b), err != nil
	p.trailer = *trailer
}

// leanHeader is headParser's fields as net/http's header map would hold them
// (without the field named skip): names canonical, and Cache-Control added
// for "Pragma: no-cache" as net/http does (Envoy does not).
func leanHeader(t *testing.T, fields Fields, skip string) http.Header {
	h := http.Header{}
	for _, f := range fields {
		require.Equal(t, strings.ToLower(f.Key), f.Key)
		if k := http.CanonicalHeaderKey(f.Key); k != skip {
			h[k] = append(h[k], f.Value)
		}
	}
	if pr := h["Pragma"]; len(pr) > 0 && pr[0] == "no-cache" && h["Cache-Control"] == nil {
		h["Cache-Control"] = []string{"no-cache"}
	}
	return h
}

func checkSameAsNetHTTP(t *testing.T, raw []byte) {
	t.Helper()
	want := fromNetHTTP(raw)
	if !want.err && want.method == "PRI" {
		return // net/http's h2 upgrade marker; the server hands "PRI" to h2 first
	}
	got, _ := fromLean(t, raw, false)
	agreeOnOrder(&want, got)
	require.Equal(t, want, got, "request %q", raw)
	// The server's rules only add refusals (docs/dataplane.md): what they
	// accept, they parse as net/http does.
	strict, byRule := fromLean(t, raw, true)
	if byRule {
		return
	}
	agreeOnOrder(&want, strict)
	require.Equal(t, want, strict, "request %q with the server's rules", raw)
}

// go test runs the fuzz targets on their seeds (the tables above); -fuzz
// explores from there.
func FuzzHeadParser(f *testing.F) {
	for _, s := range headSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		checkSameAsNetHTTP(t, raw)
	})
}

func TestHeadParserLongLinesAndReuse(t *testing.T) {
	long := strings.Repeat("v", 10000)
	raw := "GET /a HTTP/1.1\r\nHost: a\r\nX-Long: " + long + "\r\n\r\n" +
		"GET /b HTTP/1.1\r\nHost: b\r\nX-Short: s\r\n\r\n"
	br := bufio.NewReaderSize(strings.NewReader(raw), 4096)
	var hp headParser
	h1, err := hp.read(br)
	require.NoError(t, err)
	h2, err := hp.read(br)
	require.NoError(t, err)
	// The first head's strings survive the parser's reuse of its buffer.
	require.Equal(t, "/a", h1.target)
	require.Equal(t, long, h1.fields[1].Value)
	require.Equal(t, "/b", h2.target)
	require.Equal(t, "s", h2.fields[1].Value)
	_, err = hp.read(br)
	require.ErrorIs(t, err, io.EOF)
}

// respSeeds are responses for the differential test and the fuzz corpus.
var respSeeds = []string{
	"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}",
	"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n5\r\ndata:\r\n0\r\n\r\n",
	"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTrailer: X-Cost\r\nContent-Length: 3\r\n\r\n1\r\na\r\n0\r\nX-Cost: 1\r\n\r\n",
	"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nuntil the end",
	"HTTP/1.0 200 OK\r\nContent-Length: 1\r\n\r\nx",
	"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\nx",
	"HTTP/1.1 204 No Content\r\nContent-Length: 10\r\nTransfer-Encoding: chunked\r\n\r\n",
	"HTTP/1.1 304 Not Modified\r\n\r\n",
	"HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n",
	"HTTP/1.1 404 Not Found\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\nnope!",
	"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nnope!",
	"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nshort",
	"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
	"HTTP/1.1 200\r\n\r\n",
	"HTTP/1.1 2000 OK\r\n\r\n",
	"HTTP/1.1 abc OK\r\n\r\n",
	"HTTP/1.1  200  OK\r\nContent-Length: 0\r\n\r\n",
	"HTTP/9.9 200 OK\r\nContent-Length: 0\r\n\r\n",
	"HTTP/1.1 200 OK\r\nX-Folded: a\r\n b\r\nContent-Length: 0\r\n\r\n",
	"HTTP/1.1 200 OK\r\nBad Name: x\r\n\r\n",
	"HTTP/1.1 200 OK\r\nPragma: no-cache\r\nContent-Length: 0\r\n\r\n",
	"HTTP/1.1 200 OK\r\n",
	"",
	"garbage",
}

func respFromNetHTTP(raw []byte, method string) parsed {
	resp, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(raw)), &http.Request{Method: method})
	if err != nil {
		return parsed{err: true, te: strings.Contains(err.Error(), "transfer encoding")}
	}
	for k := range resp.Header {
		if !httpguts.ValidHeaderFieldName(k) {
			return parsed{err: true} // the edge refuses what it could not forward
		}
	}
	p := parsed{
		uri: resp.Status, proto: resp.Proto, major: resp.ProtoMajor, minor: resp.ProtoMinor, close: resp.Close,
		contentLength: resp.ContentLength, header: resp.Header, transferEncodingDeclared: resp.TransferEncoding,
		method: strconv.Itoa(resp.StatusCode),
	}
	p.finish(resp.Body, &resp.Trailer)
	return p
}

func respFromLean(t *testing.T, raw []byte, method string) parsed {
	var hp headParser
	br := bufio.NewReader(bytes.NewReader(raw))
	h, err := hp.readResponse(br, method)
	if err != nil {
		var te *teError
		return parsed{err: true, te: errors.As(err, &te)}
	}
	resp := h.response(&http.Request{Method: method}, br)
	p := parsed{
		uri: resp.Status, proto: resp.Proto, major: resp.ProtoMajor, minor: resp.ProtoMinor, close: resp.Close,
		contentLength: resp.ContentLength, transferEncodingDeclared: resp.TransferEncoding,
		method: strconv.Itoa(resp.StatusCode),
	}
	p.header = leanHeader(t, h.fields, "")
	p.finish(resp.Body, &resp.Trailer)
	return p
}

func checkResponseSameAsNetHTTP(t *testing.T, raw []byte) {
	t.Helper()
	for _, method := range []string{http.MethodGet, http.MethodHead} {
		want, got := respFromNetHTTP(raw, method), respFromLean(t, raw, method)
		agreeOnOrder(&want, got)
		require.Equal(t, want, got, "%s response %q", method, raw)
	}
}

func FuzzResponseHeadParser(f *testing.F) {
	for _, s := range respSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		checkResponseSameAsNetHTTP(t, raw)
	})
}
