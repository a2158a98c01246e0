package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/accounting"
	"github.com/tollgate-ai/tollgate/gateway"
	"github.com/tollgate-ai/tollgate/internal/mockllm"
	"github.com/tollgate-ai/tollgate/internal/secret"
	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/store"
	"github.com/tollgate-ai/tollgate/store/memstore"
)

// running is a whole gateway in this process: memory store, mock provider,
// processor, xDS and the built-in data plane.
type running struct {
	g    *gateway.Gateway
	st   store.Store
	mock *mockllm.Server
	url  string
	// mockURL is the mock provider's base URL (http://host:port).
	mockURL string
	done    chan error
}

func start(t *testing.T, overGRPC bool) *running {
	t.Helper()
	return startWith(t, overGRPC, memstore.New(), nil)
}

func startWith(t *testing.T, overGRPC bool, st store.Store, counters accounting.Counters, with ...func(*gateway.Config, *gateway.Options)) *running {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())

	mock := mockllm.New(mockllm.DefaultConfig())
	ml, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go func() { _ = mock.Serve(ctx, ml) }()

	cfg := gateway.DefaultConfig()
	cfg.Listen, cfg.AdminAddr, cfg.XDSAddr, cfg.ExtProcAddr = "127.0.0.1:0", "127.0.0.1:0", "127.0.0.1:0", "127.0.0.1:0"
	cfg.MetricsAddr = "127.0.0.1:0"
	cfg.MasterKey = make([]byte, 32)
	cfg.AdminKey = "tga-test-admin-secret"
	cfg.ProcessorOverGRPC = overGRPC
	cfg.MaxBodyBytes = 1 << 20

	started := make(chan *gateway.Gateway, 1)
	r := &running{st: st, mock: mock, mockURL: "http://" + ml.Addr().String(), done: make(chan error, 1)}
	opts := gateway.Options{
		Log:      slog.New(slog.NewTextHandler(io.Discard, nil)),
		Counters: counters,
		OnStart: []gateway.StartHook{func(_ context.Context, g *gateway.Gateway) error {
			started <- g
			return nil
		}},
	}
	for _, f := range with {
		f(&cfg, &opts)
	}
	go func() { r.done <- gateway.Run(ctx, cfg, st, opts) }()
	select {
	case r.g = <-started:
	case err := <-r.done:
		t.Fatalf("gateway did not start: %v", err)
	case <-time.After(20 * time.Second):
		t.Fatal("gateway did not start within 20s")
	}
	r.url = "http://" + r.g.ListenAddr
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-r.done:
			require.NoError(t, err)
		case <-time.After(30 * time.Second):
			t.Error("gateway did not stop within 30s")
		}
	})

	// Provider, deployment, model group, price.
	sealer, err := secret.NewSealer(cfg.MasterKey)
	require.NoError(t, err)
	put(t, st, "mock", &store.Provider{ID: "mock", Type: store.ProviderOpenAI, BaseURL: "http://" + ml.Addr().String() + "/v1", Credential: sealer.Seal([]byte("sk-upstream"))})
	put(t, st, "mock-1", &store.Deployment{ID: "mock-1", Provider: "mock", ProviderModel: "mock-gpt"})
	put(t, st, "demo", &store.ModelGroup{ID: "demo", Deployments: []string{"mock-1"}})
	put(t, st, "demo", &store.ModelPrice{ID: "demo", Price: kernel.Price{Input: kernel.Dollar, Output: 2 * kernel.Dollar}})
	return r
}

func put[T store.Entity](t *testing.T, st store.Store, id string, v *T) {
	t.Helper()
	_, err := store.Put(context.Background(), st, id, v, -1)
	require.NoError(t, err)
}

func (r *running) key(t *testing.T, id string, lim kernel.Limits) string {
	t.Helper()
	s := secret.New("tg-")
	put(t, r.st, id, &store.Key{ID: id, Prefix: secret.Display(s), Hashes: []store.KeyHash{{Hash: secret.Hash(s)}}, Limits: lim})
	return s
}

// eventually polls cond until it holds or 5 s pass.
// eventually waits for cond: the first snapshot and its xDS push take
// milliseconds on an idle machine, seconds on a CI machine running other
// packages' tests at the same time.
func eventually(t *testing.T, cond func() bool) {
	t.Helper()
	require.Eventually(t, cond, 20*time.Second, 10*time.Millisecond)
}

func (r *running) post(t *testing.T, key, path, body string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, r.url+path, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, b
}

// warm posts body until the replica answers 200, for up to a minute, and
// fails with the last answer: a replica's first request waits for the
// snapshot and its xDS push, seconds on a CI machine running other
// packages' tests. Transport errors are retried, not fatal.
func (r *running) warm(t *testing.T, key, body string) {
	t.Helper()
	var last string
	client := &http.Client{Timeout: 15 * time.Second}
	deadline := time.Now().Add(time.Minute)
	for i := 0; time.Now().Before(deadline); i++ {
		req, err := http.NewRequest(http.MethodPost, r.url+"/v1/chat/completions", strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		start := time.Now()
		resp, err := client.Do(req)
		if err != nil {
			last = fmt.Sprintf("attempt %d: %v after %v", i, err, time.Since(start))
		} else {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
			last = fmt.Sprintf("attempt %d: %d %s after %v", i, resp.StatusCode, b, time.Since(start))
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("replica %s never answered 200; last: %s", r.url, last)
}

// status posts a chat request from any goroutine: it reports transport
// failures as status 0 instead of failing the test.
func (r *running) status(key, body string) int {
	req, err := http.NewRequest(http.MethodPost, r.url+"/v1/chat/completions", strings.NewReader(body))
	if err != nil {
		return 0
	}
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode
}

func TestGatewayServesChatAndSettlesIntoTheLedger(t *testing.T) {
	for _, overGRPC := range []bool{false, true} {
		name := "in-process"
		if overGRPC {
			name = "grpc"
		}
		t.Run(name, func(t *testing.T) {
			r := start(t, overGRPC)
			key := r.key(t, "k1", kernel.Limits{})
			body := `{"model":"demo","messages":[{"role":"user","content":"hello there gateway"}],"max_tokens":5}`
			// Warm up with another key, put after k1: once it serves, the
			// model and k1 are in the snapshot and the data plane, and the
			// ledger holds k1's one request only. warm says why it did not
			// serve (a CI run once saw 20 s go by without a 200).
			r.warm(t, r.key(t, "k0", kernel.Limits{}), body)
			resp, b := r.post(t, key, "/v1/chat/completions", body)
			require.Equal(t, http.StatusOK, resp.StatusCode, string(b))
			var out struct {
				Model string `json:"model"`
				Usage struct {
					Prompt     int64 `json:"prompt_tokens"`
					Completion int64 `json:"completion_tokens"`
				} `json:"usage"`
			}
			require.NoError(t, json.Unmarshal(b, &out), string(b))
			require.Equal(t, "demo", out.Model, "the name the client asked for, on every route (translate/reply_model.go)")
			require.Positive(t, out.Usage.Completion)

			require.NoError(t, r.st.Flush(context.Background()))
			var entries []store.LedgerEntry
			for _, e := range completed(t, r.st) {
				if e.KeyID == "k1" {
					entries = append(entries, e)
				}
			}
			require.Len(t, entries, 1)
			e := entries[0]
			require.Equal(t, out.Usage.Prompt, e.Usage.Input+e.Usage.CachedInput)
			require.Equal(t, out.Usage.Completion, e.Usage.Output+e.Usage.Reasoning)
			want := kernel.Cost(kernel.Price{Input: kernel.Dollar, Output: 2 * kernel.Dollar}, e.Usage)
			require.Equal(t, want, e.Cost)

			// The provider saw its own key, never the client's.
			stats := r.mock.Stats()
			require.Contains(t, stats.Keys, "sk-upstream")
			require.NotContains(t, stats.Keys, key)
		})
	}
}

func TestGatewayRejectsAndPropagatesRevocation(t *testing.T) {
	r := start(t, false)
	key := r.key(t, "k2", kernel.Limits{RPM: 100})
	body := `{"model":"demo","messages":[{"role":"user","content":"hi"}],"max_tokens":3}`
	r.warm(t, key, body)

	resp, b := r.post(t, "tg-wrong", "/v1/chat/completions", body)
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode, string(b))
	require.Contains(t, string(b), `"error"`)

	resp, b = r.post(t, key, "/v1/chat/completions", `{"model":"nope","messages":[]}`)
	require.Equal(t, http.StatusNotFound, resp.StatusCode, string(b))

	resp, b = r.post(t, key, "/v1/chat/completions", `{"model":`)
	require.Equal(t, http.StatusBadRequest, resp.StatusCode, string(b))

	resp, _ = r.post(t, key, "/v1/chat/completions", `{"model":"demo","messages":[{"role":"user","content":"`+strings.Repeat("x", 2<<20)+`"}]}`)
	require.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode)

	// Revoke: the next request is refused within a second.
	k, v, err := store.Get[store.Key](context.Background(), r.st, "k2")
	require.NoError(t, err)
	k.Revoked = true
	_, err = store.Put(context.Background(), r.st, "k2", &k, v)
	require.NoError(t, err)
	revoked := time.Now()
	eventually(t, func() bool {
		resp, _ := r.post(t, key, "/v1/chat/completions", body)
		return resp.StatusCode == http.StatusUnauthorized
	})
	require.Less(t, time.Since(revoked), time.Second)
}

func TestGatewayStreamsAndCountsUsage(t *testing.T) {
	r := start(t, false)
	key := r.key(t, "k3", kernel.Limits{})
	body := `{"model":"demo","stream":true,"messages":[{"role":"user","content":"stream please"}],"max_tokens":6}`
	var b []byte
	eventually(t, func() bool {
		var resp *http.Response
		resp, b = r.post(t, key, "/v1/chat/completions", body)
		return resp.StatusCode == http.StatusOK
	})
	require.True(t, bytes.HasSuffix(bytes.TrimSpace(b), []byte("data: [DONE]")), string(b))
	// The client did not ask for usage: Tollgate asked upstream and still settled exactly.
	require.NoError(t, r.st.Flush(context.Background()))
	entries := completed(t, r.st)
	require.Len(t, entries, 1)
	require.True(t, entries[0].Stream)
	served := r.mock.Stats().Keys["sk-upstream"]
	require.Equal(t, served.OutputTokens, entries[0].Usage.Output+entries[0].Usage.Reasoning)
	require.Equal(t, served.InputTokens, entries[0].Usage.Input+entries[0].Usage.CachedInput)
}

// completed lists the ledger rows of completed requests (while the first
// snapshot propagates, a request may end in a 404 that is recorded as failed).
func completed(t *testing.T, st store.Store) []store.LedgerEntry {
	t.Helper()
	all, err := st.Entries(context.Background(), store.LedgerFilter{})
	require.NoError(t, err)
	var out []store.LedgerEntry
	for _, e := range all {
		if e.Status == kernel.StatusCompleted {
			out = append(out, e)
		}
	}
	return out
}
