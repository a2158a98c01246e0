package edge

import (
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/edge/extprocfilter"
	"github.com/tollgate-ai/tollgate/envoy"
	"github.com/tollgate-ai/tollgate/xds"
)

// redirectProc plays the processor's side of a fallback redirect: the
// router-level stream routes to x-pick, or to "big" when the request has
// the retry token; a try replaces the client's credential and path with the
// provider's (as a try does, on the router's own headers) and answers a 400
// with the redirect. It records what each router-level stream saw.
type redirectProc struct {
	mu      sync.Mutex
	routers []string // per router-level stream: its token, and "+response" when a response reached it
}

func (p *redirectProc) Process(stream extprocv3.ExternalProcessor_ProcessServer) error {
	var try bool
	var pick, token, scheme, authority, path string
	idx := -1
	set := func(kvs ...string) *extprocv3.HeaderMutation {
		m := &extprocv3.HeaderMutation{}
		for i := 0; i < len(kvs); i += 2 {
			m.SetHeaders = append(m.SetHeaders, &corev3.HeaderValueOption{Header: &corev3.HeaderValue{Key: kvs[i], RawValue: []byte(kvs[i+1])}})
		}
		return m
	}
	return serveProcessor(stream, func(req *extprocv3.ProcessingRequest, cr *extprocv3.CommonResponse) {
		switch r := req.GetRequest().(type) {
		case *extprocv3.ProcessingRequest_RequestHeaders:
			try = req.GetAttributes()["envoy.filters.http.ext_proc"].GetFields()[envoy.TryAttribute].GetStringValue() != ""
			h := extprocfilter.HeadersFromProto(r.RequestHeaders.GetHeaders())
			pick, token = h.Value("x-pick"), h.Value(envoy.RetryHeader)
			scheme, authority, path = h.Value(":scheme"), h.Value(":authority"), h.Value(":path")
			if !try {
				p.mu.Lock()
				idx = len(p.routers)
				p.routers = append(p.routers, token)
				p.mu.Unlock()
			}
		case *extprocv3.ProcessingRequest_RequestBody:
			switch {
			case try:
				cr.HeaderMutation = set("authorization", "Bearer provider", ":path", "/provider/path")
			case token != "":
				cr.HeaderMutation, cr.ClearRouteCache = setRoute("big"), true
			default:
				cr.HeaderMutation, cr.ClearRouteCache = setRoute(pick), true
			}
		case *extprocv3.ProcessingRequest_ResponseHeaders:
			if !try {
				p.mu.Lock()
				p.routers[idx] += "+response"
				p.mu.Unlock()
			}
		case *extprocv3.ProcessingRequest_ResponseBody:
			if try && strings.Contains(string(r.ResponseBody.GetBody()), "context_length_exceeded") {
				cr.HeaderMutation = set(":status", strconv.Itoa(envoy.FallbackRedirectStatus), "location", scheme+"://"+authority+path,
					envoy.RetryHeader, "tok", "authorization", "Bearer client")
			}
		}
	})
}

func (p *redirectProc) list() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.routers...)
}

// TestInternalRedirectOnTollgateXDS: the edge runs the internal redirect
// policy of a per-try route of Tollgate's xDS (a group with
// context-window fallbacks) as Envoy's router does: the try's 307 does not
// reach the client nor the router-level filter (its stream ends with no
// response); the request is recreated from the router's headers as the try
// left them, the copied headers replacing the try's (the client's
// credential back, the provider's gone), the location's path, and the body;
// it goes through the router-level filter again, which routes it to the
// fallback. A 307 on a route without the policy goes to the client.
func TestInternalRedirectOnTollgateXDS(t *testing.T) {
	small := upstream(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("x-self-redirect") != "" {
			w.Header().Set("location", "http://127.0.0.1:9/x")
			w.WriteHeader(http.StatusTemporaryRedirect)
			return
		}
		w.Header().Set("content-type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = io.WriteString(w, `{"error":{"code":"context_length_exceeded"}}`)
	}))
	var mu sync.Mutex
	var atBig *http.Request
	var bigBody string
	big := upstream(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		atBig, bigBody = r, string(b)
		mu.Unlock()
		w.Header().Set("content-type", "application/json")
		_, _ = io.WriteString(w, `{"ok":true}`)
	}))
	in := loopbackInput(t, []xds.Group{
		{Name: "g", Deployments: []string{"small"}, Retries: 2, ContextWindowFallbacks: []string{"big"}},
		{Name: "big", Deployments: []string{"big"}},
	}, [2]string{"small", small}, [2]string{"big", big})
	proc := &redirectProc{}
	e := runEdge(t, serveTollgateXDS(t, in).conn, proc)
	c := client(t)
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	send := func(pick string, extra ...string) (*http.Response, string) {
		body := `{"model":"g","messages":[]}`
		req, err := http.NewRequest(http.MethodPost, "http://"+e.Addr().String()+"/v1/chat/completions", strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("content-type", "application/json")
		req.Header.Set("authorization", "Bearer client")
		req.Header.Set("x-pick", pick)
		for i := 0; i < len(extra); i += 2 {
			req.Header.Set(extra[i], extra[i+1])
		}
		resp, err := c.Do(req)
		require.NoError(t, err)
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		require.NoError(t, resp.Body.Close())
		return resp, string(b)
	}

	resp, body := send(envoy.TryKey("g", "small", 0))
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	require.JSONEq(t, `{"ok":true}`, body)
	require.Equal(t, []string{"", "tok+response"}, proc.list(), "the first router-level stream got no response; the recreated one has the token")
	mu.Lock()
	require.Equal(t, "/v1/chat/completions", atBig.URL.Path, "the location's path, not the try's")
	require.Equal(t, "Bearer client", atBig.Header.Get("authorization"), "the copied header replaces the try's")
	require.Equal(t, `{"model":"g","messages":[]}`, bigBody, "the body the router buffered")
	require.Equal(t, "tok", atBig.Header.Get(envoy.RetryHeader))
	require.Contains(t, atBig.Header.Get("x-envoy-original-url"), "/provider/path", "Envoy keeps the URL it redirected from")
	mu.Unlock()

	resp, _ = send("small", "x-self-redirect", "1")
	require.Equal(t, http.StatusTemporaryRedirect, resp.StatusCode, "no policy on the plain route: the client gets the 307")
	require.Equal(t, "http://127.0.0.1:9/x", resp.Header.Get("location"))
}
