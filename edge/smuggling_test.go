package edge

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/tollgate-ai/tollgate/edge/h1/h1test"
)

// The request-smuggling suite: each vector is the byte string of two or
// more pipelined messages on one connection, and says exactly which
// requests reach the upstream and what the client reads. The rules behind
// each verdict are docs/dataplane.md's (F1–F7, L1–L2).

// smuggle is one vector.
type smuggle struct {
	name string
	wire string
	// halfClose: the client ends its side after the bytes (a body cut
	// short ends with the connection).
	halfClose bool
	// upstream are the requests the upstream receives, "METHOD /path body".
	upstream []string
	// statuses are the responses the client reads, in order.
	statuses []int
	// open: the connection stays usable (a probe request is served next);
	// otherwise the server closes it after the last status.
	open bool
}

// get is a routed GET; postCL a routed POST framed by Content-Length; both
// carry X-Pick so that the fake processor routes them to the upstream.
func get(path string) string {
	return "GET " + path + " HTTP/1.1\r\nHost: gw\r\nX-Pick: a\r\n\r\n"
}

func postCL(path, body string) string {
	return "POST " + path + " HTTP/1.1\r\nHost: gw\r\nX-Pick: a\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body
}

// withHead is a routed POST whose framing fields and body are given as is.
func withHead(path, fields, body string) string {
	return "POST " + path + " HTTP/1.1\r\nHost: gw\r\nX-Pick: a\r\n" + fields + "\r\n" + body
}

func smuggleVectors() []smuggle {
	hidden := get("/smuggled")
	many := strings.Repeat("X-Many: 1\r\n", 101)
	big := "X-Big: " + strings.Repeat("b", 61<<10) + "\r\n"
	return []smuggle{
		// Well-formed pipelines are served in order and keep the connection.
		{name: "two GETs", wire: get("/1") + get("/2"), upstream: []string{"GET /1 ", "GET /2 "}, statuses: []int{200, 200}, open: true},
		{name: "POST then GET", wire: postCL("/1", "abc") + get("/2"), upstream: []string{"POST /1 abc", "GET /2 "}, statuses: []int{200, 200}, open: true},
		{name: "chunked then GET", wire: withHead("/1", "Transfer-Encoding: chunked\r\n", "3\r\nabc\r\n0\r\n\r\n") + get("/2"), upstream: []string{"POST /1 abc", "GET /2 "}, statuses: []int{200, 200}, open: true},
		{name: "chunk extension and trailer", wire: withHead("/1", "Transfer-Encoding: chunked\r\n", "3;x=1\r\nabc\r\n0\r\nX-T: 1\r\n\r\n") + get("/2"), upstream: []string{"POST /1 abc", "GET /2 "}, statuses: []int{200, 200}, open: true},
		{name: "a request inside a Content-Length body is body", wire: postCL("/1", hidden) + get("/2"), upstream: []string{"POST /1 " + hidden, "GET /2 "}, statuses: []int{200, 200}, open: true},
		{name: "TE value with spaces", wire: withHead("/1", "Transfer-Encoding:  chunked \r\n", "1\r\na\r\n0\r\n\r\n") + get("/2"), upstream: []string{"POST /1 a", "GET /2 "}, statuses: []int{200, 200}, open: true},
		{name: "Connection: close ends the pipeline", wire: "GET /1 HTTP/1.1\r\nHost: gw\r\nX-Pick: a\r\nConnection: close\r\n\r\n" + get("/2"), upstream: []string{"GET /1 "}, statuses: []int{200}},
		{name: "HTTP/1.0 without keep-alive ends the pipeline", wire: "GET /1 HTTP/1.0\r\nHost: gw\r\nX-Pick: a\r\n\r\n" + get("/2"), upstream: []string{"GET /1 "}, statuses: []int{200}},

		// F1: Content-Length with Transfer-Encoding, in either order.
		{name: "CL.TE", wire: withHead("/1", "Content-Length: 6\r\nTransfer-Encoding: chunked\r\n", "0\r\n\r\n"+hidden), statuses: []int{400}},
		{name: "TE.CL", wire: withHead("/1", "Transfer-Encoding: chunked\r\nContent-Length: "+strconv.Itoa(len(hidden)+5)+"\r\n", "0\r\n\r\n"+hidden), statuses: []int{400}},
		{name: "CL.TE with a zero length", wire: withHead("/1", "Content-Length: 0\r\nTransfer-Encoding: chunked\r\n", "3\r\nabc\r\n0\r\n\r\n") + get("/2"), statuses: []int{400}},
		{name: "TE.CL with a folded TE", wire: withHead("/1", "Transfer-Encoding:\r\n chunked\r\nContent-Length: 3\r\n", "abc") + get("/2"), statuses: []int{400}},

		// F2: Content-Length more than once, or not a number.
		{name: "differing Content-Lengths", wire: withHead("/1", "Content-Length: 3\r\nContent-Length: "+strconv.Itoa(3+len(hidden))+"\r\n", "abc"+hidden), statuses: []int{400}},
		{name: "repeated equal Content-Lengths", wire: withHead("/1", "Content-Length: 3\r\nContent-Length: 3\r\n", "abc") + get("/2"), statuses: []int{400}},
		{name: "Content-Length list", wire: withHead("/1", "Content-Length: 3, 3\r\n", "abc") + get("/2"), statuses: []int{400}},
		{name: "Content-Length with a sign", wire: withHead("/1", "Content-Length: +3\r\n", "abc") + get("/2"), statuses: []int{400}},
		{name: "negative Content-Length", wire: withHead("/1", "Content-Length: -1\r\n", "") + get("/2"), statuses: []int{400}},
		{name: "Content-Length of 2^64", wire: withHead("/1", "Content-Length: 18446744073709551616\r\n", "abc") + get("/2"), statuses: []int{400}},

		// F3: Transfer-Encoding on HTTP/1.0; unsupported codings (501).
		{name: "TE on HTTP/1.0", wire: "POST /1 HTTP/1.0\r\nHost: gw\r\nX-Pick: a\r\nConnection: keep-alive\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n" + get("/2"), statuses: []int{400}},
		{name: "TE and CL on HTTP/1.0", wire: "POST /1 HTTP/1.0\r\nHost: gw\r\nX-Pick: a\r\nConnection: keep-alive\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\nabc" + get("/2"), statuses: []int{400}},
		{name: "TE gzip", wire: withHead("/1", "Transfer-Encoding: gzip\r\n", "abc") + get("/2"), statuses: []int{501}},
		{name: "TE xchunked", wire: withHead("/1", "Transfer-Encoding: xchunked\r\n", "3\r\nabc\r\n0\r\n\r\n") + get("/2"), statuses: []int{501}},
		{name: "TE chunked twice in one field", wire: withHead("/1", "Transfer-Encoding: chunked, chunked\r\n", "3\r\nabc\r\n0\r\n\r\n") + get("/2"), statuses: []int{501}},
		{name: "TE in two fields", wire: withHead("/1", "Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n", "3\r\nabc\r\n0\r\n\r\n") + get("/2"), statuses: []int{501}},

		// F4, F5: bare LF and obs-fold; F8: field name syntax.
		{name: "bare LF head", wire: "GET /1 HTTP/1.1\nHost: gw\nX-Pick: a\n\n" + get("/2"), statuses: []int{400}},
		{name: "one bare LF field", wire: "GET /1 HTTP/1.1\r\nHost: gw\nX-Pick: a\r\n\r\n" + get("/2"), statuses: []int{400}},
		{name: "obs-fold", wire: "GET /1 HTTP/1.1\r\nHost: gw\r\nX-Pick: a\r\nX-Folded: a\r\n b\r\n\r\n" + get("/2"), statuses: []int{400}},
		{name: "space before the colon of TE", wire: withHead("/1", "Transfer-Encoding : chunked\r\nContent-Length: 3\r\n", "abc") + get("/2"), statuses: []int{400}},
		{name: "NUL in a value", wire: "GET /1 HTTP/1.1\r\nHost: gw\r\nX-Pick: a\r\nX-N: a\x00b\r\n\r\n" + get("/2"), statuses: []int{400}},
		{name: "two Hosts", wire: "GET /1 HTTP/1.1\r\nHost: gw\r\nHost: other\r\nX-Pick: a\r\n\r\n" + get("/2"), statuses: []int{400}},
		{name: "space in the target", wire: "GET /1 x HTTP/1.1\r\nHost: gw\r\nX-Pick: a\r\n\r\n" + get("/2"), statuses: []int{400}},

		// F6, F7: broken chunked bodies and bodies cut short: 400 and close,
		// the rest never read as a request.
		{name: "chunk size zz", wire: withHead("/1", "Transfer-Encoding: chunked\r\n", "zz\r\nabc\r\n0\r\n\r\n") + get("/2"), statuses: []int{400}},
		{name: "chunk size -5", wire: withHead("/1", "Transfer-Encoding: chunked\r\n", "-5\r\nabcde\r\n0\r\n\r\n") + get("/2"), statuses: []int{400}},
		{name: "chunk size 2^64", wire: withHead("/1", "Transfer-Encoding: chunked\r\n", "10000000000000000\r\nabc\r\n0\r\n\r\n") + get("/2"), statuses: []int{400}},
		{name: "chunk data without CRLF", wire: withHead("/1", "Transfer-Encoding: chunked\r\n", "3\r\nabcX\r\n0\r\n\r\n") + get("/2"), statuses: []int{400}},
		{name: "chunk longer than its size", wire: withHead("/1", "Transfer-Encoding: chunked\r\n", "2\r\nabc\r\n0\r\n\r\n") + get("/2"), statuses: []int{400}},
		{name: "chunked body cut short", wire: withHead("/1", "Transfer-Encoding: chunked\r\n", "3\r\nabc\r\n"), halfClose: true, statuses: []int{400}},
		{name: "Content-Length body cut short", wire: withHead("/1", "Content-Length: 10\r\n", "abc"), halfClose: true, statuses: []int{400}},

		// L1, L2: header limits answer 431 before the filter sees anything.
		{name: "101 headers", wire: "GET /1 HTTP/1.1\r\nHost: gw\r\n" + many + "\r\n" + get("/2"), statuses: []int{431}},
		{name: "61 KiB of headers", wire: "GET /1 HTTP/1.1\r\nHost: gw\r\n" + big + "\r\n" + get("/2"), statuses: []int{431}},
	}
}

// recorder is an upstream that records "METHOD /path body" per request.
type recorder struct {
	mu   sync.Mutex
	seen []string
	hdrs []http.Header
}

func (u *recorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	u.mu.Lock()
	u.seen = append(u.seen, r.Method+" "+r.URL.RequestURI()+" "+string(b))
	u.hdrs = append(u.hdrs, r.Header.Clone())
	u.mu.Unlock()
	_, _ = w.Write([]byte("ok"))
}

// take returns what was recorded and starts afresh.
func (u *recorder) take() ([]string, []http.Header) {
	u.mu.Lock()
	defer u.mu.Unlock()
	s, h := u.seen, u.hdrs
	u.seen, u.hdrs = nil, nil
	return s, h
}

// smugglingEdge starts an edge in front of a recording upstream, its
// processor the fake one, in-process as in production.
func smugglingEdge(t *testing.T) (*Edge, *recorder, *fakeProc) {
	t.Helper()
	rec := &recorder{}
	a := upstream(t, rec)
	x := startXDS(t)
	x.set(t, listener(t, 1<<20, extProcFilter()), routes(deployment{id: "a", host: "a"}), upstreamCluster(t, "a", a, clusterOpts{}))
	proc := newFakeProc()
	return startEdge(t, proc.sync(), x), rec, proc
}

func (p *fakeProc) streamCount() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.streams
}

const probe = "GET /probe HTTP/1.1\r\nHost: gw\r\nX-Pick: a\r\nConnection: close\r\n\r\n"

func TestRequestSmuggling(t *testing.T) {
	e, rec, proc := smugglingEdge(t)
	vectors := smuggleVectors()
	require.GreaterOrEqual(t, len(vectors), 30)
	for _, v := range vectors {
		t.Run(v.name, func(t *testing.T) {
			before := proc.streamCount()
			c := h1test.Dial(t, e.Addr().String())
			c.Send(t, v.wire)
			if v.halfClose {
				require.NoError(t, c.Conn.(*net.TCPConn).CloseWrite())
			}
			var got []int
			for range v.statuses {
				resp, err := http.ReadResponse(c.BR, nil)
				require.NoError(t, err, "responses so far: %v", got)
				_, _ = io.Copy(io.Discard, resp.Body)
				_ = resp.Body.Close()
				got = append(got, resp.StatusCode)
			}
			require.Equal(t, v.statuses, got)
			want := v.upstream
			if v.open {
				c.Send(t, probe)
				resp, body := c.Response(t, http.MethodGet)
				require.Equal(t, http.StatusOK, resp.StatusCode)
				require.Equal(t, "ok", body)
				want = append(append([]string(nil), want...), "GET /probe ")
			}
			// Then the server closes: nothing more is read as a request.
			b, err := c.BR.ReadByte()
			require.ErrorIs(t, err, io.EOF, "after the last response the server closes, nothing more (read %q)", b)
			seen, _ := rec.take()
			require.Equal(t, want, seen)
			if v.statuses[0] == http.StatusRequestHeaderFieldsTooLarge {
				require.Equal(t, before, proc.streamCount(), "the filter saw a request refused for its head")
			}
		})
	}
}

// Every field a Connection field names is hop-by-hop (RFC 9110 §7.6.1),
// like the standard hop-by-hop fields: none reaches the upstream.
func TestConnectionNominatedFieldsNotForwarded(t *testing.T) {
	e, rec, _ := smugglingEdge(t)
	c := h1test.Dial(t, e.Addr().String())
	c.Send(t, "GET /1 HTTP/1.1\r\nHost: gw\r\nX-Pick: a\r\nConnection: keep-alive, X-Secret\r\nX-Secret: s\r\n"+
		"Keep-Alive: timeout=5\r\nTE: trailers\r\nUpgrade: h2c\r\nProxy-Connection: keep-alive\r\nX-Kept: k\r\n\r\n")
	resp, _ := c.Response(t, http.MethodGet)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	seen, hdrs := rec.take()
	require.Equal(t, []string{"GET /1 "}, seen)
	for _, k := range []string{"X-Secret", "Keep-Alive", "Te", "Upgrade", "Proxy-Connection"} {
		require.NotContains(t, hdrs[0], k)
	}
	require.Equal(t, "k", hdrs[0].Get("X-Kept"))
}

// L3: a client that sends its head a byte at a time is cut off by the
// request headers timeout (408, connection closed), however many such
// clients there are, and the listener keeps serving others meanwhile.
func TestSlowHeaderClientsAreCutOff(t *testing.T) {
	rec := &recorder{}
	a := upstream(t, rec)
	x := startXDS(t)
	l := listener(t, 1<<20, extProcFilter())
	setHCM(t, l, func(h *hcmv3.HttpConnectionManager) { h.RequestHeadersTimeout = durationpb.New(300 * time.Millisecond) })
	x.set(t, l, routes(deployment{id: "a", host: "a"}), upstreamCluster(t, "a", a, clusterOpts{}))
	proc := newFakeProc()
	e := startEdge(t, proc.sync(), x)

	const slow = 50
	head := get("/slow")
	var wg sync.WaitGroup
	errs := make(chan error, slow)
	for range slow {
		c := h1test.Dial(t, e.Addr().String())
		stop := make(chan struct{})
		// The writer sends the head a byte every 20 ms, round and round:
		// it never completes within the timeout.
		wg.Go(func() {
			for i := 0; ; i = (i + 1) % len(head) {
				select {
				case <-stop:
					return
				case <-time.After(20 * time.Millisecond):
				}
				if _, err := c.Write([]byte{head[i]}); err != nil {
					return
				}
			}
		})
		wg.Go(func() {
			defer close(stop)
			resp, err := http.ReadResponse(c.BR, nil)
			if err != nil {
				errs <- err
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			if resp.StatusCode != http.StatusRequestTimeout {
				errs <- fmt.Errorf("status %d", resp.StatusCode)
				return
			}
			if _, err := c.BR.ReadByte(); !errors.Is(err, io.EOF) {
				errs <- fmt.Errorf("connection not closed: %w", err)
			}
		})
	}
	// Meanwhile a normal client is served.
	ok := h1test.Dial(t, e.Addr().String())
	ok.Send(t, probe)
	resp, body := ok.Response(t, http.MethodGet)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "ok", body)
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	seen, _ := rec.take()
	require.Equal(t, []string{"GET /probe "}, seen)
	require.Zero(t, proc.streamCount()-1, "only the probe reached the filter")
}

// setHCM changes the HTTP connection manager of a test listener.
func setHCM(t *testing.T, l *listenerv3.Listener, change func(*hcmv3.HttpConnectionManager)) {
	t.Helper()
	f := l.GetFilterChains()[0].GetFilters()[0]
	var hcm hcmv3.HttpConnectionManager
	require.NoError(t, f.GetTypedConfig().UnmarshalTo(&hcm))
	change(&hcm)
	f.ConfigType = listenerTyped(t, &hcm)
}
