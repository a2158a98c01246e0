package h1

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// pipelineSeeds are pipelined byte strings: well-formed ones and the
// smuggling shapes of edge's suite (the committed corpus in
// testdata/fuzz/FuzzPipelined holds more).
var pipelineSeeds = []string{
	"GET /1 HTTP/1.1\r\nHost: a\r\n\r\nGET /2 HTTP/1.1\r\nHost: a\r\n\r\n",
	"POST /1 HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n\r\nabcGET /2 HTTP/1.1\r\nHost: a\r\n\r\n",
	"POST /1 HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\nGET /2 HTTP/1.1\r\nHost: a\r\n\r\n",
	"POST /1 HTTP/1.1\r\nHost: a\r\nContent-Length: 6\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET /s HTTP/1.1\r\nHost: a\r\n\r\n",
	"POST /1 HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n0\r\n\r\nGET /s HTTP/1.1\r\nHost: a\r\n\r\n",
	"POST /1 HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\nContent-Length: 30\r\n\r\nabcGET /s HTTP/1.1\r\nHost: a\r\n\r\n",
	"POST /1 HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nabc\r\n0\r\n\r\nGET /2 HTTP/1.1\r\nHost: a\r\n\r\n",
	"POST /1 HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabcX\r\n0\r\n\r\nGET /2 HTTP/1.1\r\nHost: a\r\n\r\n",
	"POST /1 HTTP/1.0\r\nHost: a\r\nConnection: keep-alive\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET /2 HTTP/1.1\r\nHost: a\r\n\r\n",
	"GET /1 HTTP/1.1\r\nHost: a\r\nX: a\r\n b\r\n\r\nGET /2 HTTP/1.1\r\nHost: a\r\n\r\n",
	"GET /1 HTTP/1.1\nHost: a\n\nGET /2 HTTP/1.1\r\nHost: a\r\n\r\n",
	"POST /1 HTTP/1.1\r\nHost: a\r\nContent-Length: 10\r\n\r\nabc",
	"GET /1 HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\nGET /2 HTTP/1.1\r\nHost: a\r\n\r\n",
	"POST /1 HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\nabGET /2 HTTP/1.1\r\nHost: a\r\n\r\n",
}

// served is one request as the handler saw it.
type served struct {
	method, uri, body string
	broken            bool // its body ended in an error
}

// pipelineServer is one server for every fuzz input; each input gets its
// own connection, told apart by the client's address.
type pipelineServer struct {
	addr string
	mu   sync.Mutex
	by   map[string][]served
}

func startPipelineServer(t testing.TB) *pipelineServer {
	p := &pipelineServer{by: map[string][]served{}}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p.addr = lis.Addr().String()
	s := NewServer(func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		p.mu.Lock()
		p.by[r.RemoteAddr] = append(p.by[r.RemoteAddr], served{r.Method, r.RequestURI, string(b), err != nil})
		p.mu.Unlock()
		if err != nil {
			return // the server answers a broken body itself
		}
		_, _ = w.Write([]byte("ok"))
	}, Limits{MaxHeaderBytes: 8 << 10, MaxHeaders: 20, HeadersTimeout: 5 * time.Second}, slog.New(slog.DiscardHandler))
	go func() { _ = s.Serve(lis) }()
	t.Cleanup(func() { _ = s.Shutdown(context.Background()) })
	return p
}

// run sends raw on a fresh connection, half-closes, and returns what the
// handler saw and the statuses the client read (informational ones
// skipped), and whether the output parsed as responses to its end.
func (p *pipelineServer) run(t *testing.T, raw []byte) ([]served, []int) {
	c, err := net.Dial("tcp", p.addr)
	require.NoError(t, err)
	defer func() { _ = c.Close() }()
	require.NoError(t, c.SetDeadline(time.Now().Add(10*time.Second)))
	// A closed connection's port comes back: forget what it recorded.
	p.mu.Lock()
	delete(p.by, c.LocalAddr().String())
	p.mu.Unlock()
	go func() {
		_, _ = c.Write(raw)
		_ = c.(*net.TCPConn).CloseWrite()
	}()
	out, err := io.ReadAll(c)
	require.NoError(t, err, "the server ends every connection")
	var statuses []int
	br := bufio.NewReader(bytes.NewReader(out))
	for {
		if _, err := br.Peek(1); errors.Is(err, io.EOF) {
			break
		}
		resp, err := http.ReadResponse(br, nil)
		require.NoError(t, err, "output %q", out)
		_, err = io.Copy(io.Discard, resp.Body)
		require.NoError(t, err)
		if resp.StatusCode >= 200 {
			statuses = append(statuses, resp.StatusCode)
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.by[c.LocalAddr().String()], statuses
}

// fromNetHTTPPipeline is what net/http's parser reads from raw, one request
// after another, until it refuses one or the connection would end.
func fromNetHTTPPipeline(raw []byte) []served {
	var out []served
	br := bufio.NewReader(bytes.NewReader(raw))
	for {
		req, err := http.ReadRequest(br)
		if err != nil {
			return out
		}
		b, err := io.ReadAll(req.Body)
		out = append(out, served{req.Method, req.RequestURI, string(b), err != nil})
		if err != nil || req.Close {
			return out
		}
	}
}

// FuzzPipelined feeds arbitrary pipelined bytes to the server. Whatever they
// are: the server answers with well-formed responses and ends the
// connection; each request the handler sees is the one net/http's parser
// reads at the same place (the server's rules only refuse more, so what it
// serves is a prefix of net/http's reading: nothing is smuggled past it);
// only the last request seen may have a broken body; and a response the
// server makes itself for a refusal (4xx/5xx) is the last one.
func FuzzPipelined(f *testing.F) {
	for _, s := range pipelineSeeds {
		f.Add([]byte(s))
	}
	p := startPipelineServer(f)
	f.Fuzz(func(t *testing.T, raw []byte) {
		if bytes.HasPrefix(raw, []byte("PRI")) || len(raw) > 64<<10 {
			return // HTTP/2 prior knowledge goes to net/http's h2 server
		}
		got, statuses := p.run(t, raw)
		ref := fromNetHTTPPipeline(raw)
		for i, s := range got {
			if s.broken {
				require.Equal(t, len(got)-1, i, "only the last request may have a broken body")
				continue
			}
			require.Less(t, i, len(ref), "served %+v, which net/http does not read (%q)", s, raw)
			require.Equal(t, ref[i].method, s.method)
			require.Equal(t, ref[i].uri, s.uri)
			if !ref[i].broken {
				require.Equal(t, ref[i].body, s.body)
			}
		}
		ok := 0
		for i, st := range statuses {
			if st == http.StatusOK {
				ok++
				continue
			}
			require.Equal(t, len(statuses)-1, i, "a refusal (%d) is the last response: %v for %q", st, statuses, raw)
		}
		whole := 0
		for _, s := range got {
			if !s.broken {
				whole++
			}
		}
		require.Equal(t, whole, ok, "one 200 per request served whole: %v for %q", statuses, raw)
	})
}
