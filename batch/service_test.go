package batch_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/batch"
	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/store"
	"github.com/tollgate-ai/tollgate/store/memstore"
)

// fakeCatalog knows one key ("tg-k", id "k") and one model ("m") on the
// mock's OpenAI and Anthropic APIs.
type fakeCatalog struct{ base string }

func (c fakeCatalog) Authenticate(_ context.Context, secret string) (*batch.Caller, error) {
	if secret != "tg-k" {
		return nil, batch.ErrUnauthorized
	}
	return &batch.Caller{KeyID: "k", Scopes: []kernel.Scope{{Ref: kernel.ScopeRef{Kind: kernel.ScopeKey, ID: "k"}}}}, nil
}

func (c fakeCatalog) Route(ctx context.Context, _ *batch.Caller, model string, api batch.API, _ string) (*batch.Route, error) {
	if model != "m" && model != "m-group" { // a name and its group
		return nil, batch.ErrModelNotFound
	}
	ep, _ := c.Endpoint(ctx, "p")
	pm := "mock-gpt"
	if api == batch.APIAnthropic {
		pm = "mock-claude"
	}
	return &batch.Route{Model: "m-group", Deployment: "d", Provider: "p", ProviderModel: pm, Price: kernel.Price{Input: kernel.Dollar, Output: kernel.Dollar}, Endpoint: ep}, nil
}

func (c fakeCatalog) Endpoint(context.Context, string) (batch.Endpoint, error) {
	return batch.Endpoint{BaseURL: c.base + "/v1", APIKey: "sk-svc"}, nil
}

// fakeAdmitter decides as told and records what it admitted and released.
type fakeAdmitter struct {
	mu       sync.Mutex
	decide   kernel.Decision
	admitted []*kernel.AdmitRequest
	released []string
}

func (a *fakeAdmitter) Admit(_ context.Context, req *kernel.AdmitRequest) (kernel.Decision, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.admitted = append(a.admitted, req)
	return a.decide, nil
}

func (a *fakeAdmitter) SettleBatch(_ context.Context, id string, entries []store.LedgerEntry) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(entries) == 0 {
		a.released = append(a.released, id)
	}
	return nil
}

func serve(t *testing.T, svc http.Handler, method, path, contentType string, body io.Reader) (int, map[string]any) {
	t.Helper()
	req := httptest.NewRequest(method, path, body)
	req.Header.Set("Authorization", "Bearer tg-k")
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	rec := httptest.NewRecorder()
	svc.ServeHTTP(rec, req)
	var out map[string]any
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &out), rec.Body.String())
	return rec.Code, out
}

func uploadTo(t *testing.T, svc http.Handler, jsonl string) string {
	t.Helper()
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	require.NoError(t, mw.WriteField("purpose", "batch"))
	fw, err := mw.CreateFormFile("file", "in.jsonl")
	require.NoError(t, err)
	_, err = fw.Write([]byte(jsonl))
	require.NoError(t, err)
	require.NoError(t, mw.Close())
	status, out := serve(t, svc, http.MethodPost, "/v1/files", mw.FormDataContentType(), &body)
	require.Equal(t, http.StatusOK, status, out)
	return out["id"].(string)
}

const twoLines = `{"custom_id":"a","method":"POST","url":"/v1/chat/completions","body":{"model":"m","max_tokens":4,"messages":[{"role":"user","content":"hi"}]}}
{"custom_id":"b","method":"POST","url":"/v1/chat/completions","body":{"model":"m","messages":[{"role":"user","content":"there"}]}}
`

// The admission of a batch: its worst case at the batch price with the
// batch lease (a line without max tokens bounded by the kernel's default);
// a clamped admission is refused and released (a batch's lines cannot be
// shortened), as is one the provider then refuses; nothing is left
// pending by either.
func TestServiceAdmission(t *testing.T) {
	base := mock(t)
	st := memstore.New()
	acct := &fakeAdmitter{decide: kernel.Decision{Admitted: true, Reserved: 7}}
	svc := batch.NewService(fakeCatalog{base}, acct, batch.NewStore(st))
	file := uploadTo(t, svc, twoLines)
	create := func(window string) (int, map[string]any) {
		return serve(t, svc, http.MethodPost, "/v1/batches", "application/json",
			strings.NewReader(`{"input_file_id":"`+file+`","endpoint":"/v1/chat/completions","completion_window":"`+window+`"}`))
	}

	status, out := create("24h")
	require.Equal(t, http.StatusOK, status, out)
	require.Len(t, acct.admitted, 1)
	req := acct.admitted[0]
	require.Equal(t, batch.Lease, req.Lease)
	require.Equal(t, "m-group", req.Model, "the group's name, not the name the lines used")
	require.Equal(t, batch.Price(kernel.Price{Input: kernel.Dollar, Output: kernel.Dollar}), req.Price)
	require.Equal(t, int64(4+kernel.DefaultOutputBound), req.MaxTokens, "a line without max_tokens is bounded by the default")
	require.Empty(t, acct.released)
	pending, err := batch.NewStore(st).List(context.Background())
	require.NoError(t, err)
	require.Len(t, pending, 1)
	require.Equal(t, out["id"], pending[0].ID)
	require.Equal(t, req.ID, pending[0].ReservationID)
	require.Equal(t, kernel.Money(7), pending[0].Reserved)

	// The provider refuses: released, its error relayed, nothing pending.
	status, out = create("1h")
	require.Equal(t, http.StatusBadRequest, status)
	require.Contains(t, out["error"].(map[string]any)["message"], "completion_window")
	require.Equal(t, []string{acct.admitted[1].ID}, acct.released)

	// Clamped: refused before the provider, released.
	acct.decide = kernel.Decision{Admitted: true, Clamped: true}
	status, out = create("24h")
	require.Equal(t, http.StatusBadRequest, status)
	require.Equal(t, "budget_exceeded", out["error"].(map[string]any)["code"])
	require.Equal(t, []string{acct.admitted[1].ID, acct.admitted[2].ID}, acct.released)

	pending, err = batch.NewStore(st).List(context.Background())
	require.NoError(t, err)
	require.Len(t, pending, 1, "only the batch the provider took")
}

// Requests the service refuses before anything else, each in its client's
// error shape.
func TestServiceRefusals(t *testing.T) {
	svc := batch.NewService(fakeCatalog{"http://127.0.0.1:1"}, &fakeAdmitter{}, batch.NewStore(memstore.New()))
	for _, c := range []struct {
		name, method, path, body string
		status                   int
		anthropic                bool
	}{
		{"unknown path", http.MethodGet, "/v1/files/x/y/z", "", http.StatusNotFound, false},
		{"unknown file", http.MethodGet, "/v1/files/file-nope", "", http.StatusNotFound, false},
		{"unknown batch", http.MethodGet, "/v1/batches/batch_nope", "", http.StatusNotFound, false},
		{"batch of an unknown file", http.MethodPost, "/v1/batches", `{"input_file_id":"f","endpoint":"/v1/chat/completions"}`, http.StatusNotFound, false},
		{"not JSON", http.MethodPost, "/v1/batches", `{`, http.StatusBadRequest, false},
		{"not multipart", http.MethodPost, "/v1/files", `{}`, http.StatusBadRequest, false},
		{"unknown message batch", http.MethodGet, "/v1/messages/batches/msgbatch_nope", "", http.StatusNotFound, true},
		{"no requests", http.MethodPost, "/v1/messages/batches", `{"requests":[]}`, http.StatusBadRequest, true},
		{"two models", http.MethodPost, "/v1/messages/batches", `{"requests":[{"custom_id":"a","params":{"model":"m"}},{"custom_id":"b","params":{"model":"n"}}]}`, http.StatusBadRequest, true},
		{"unknown model", http.MethodPost, "/v1/messages/batches", `{"requests":[{"custom_id":"a","params":{"model":"n"}}]}`, http.StatusNotFound, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			status, out := serve(t, svc, c.method, c.path, "application/json", strings.NewReader(c.body))
			require.Equal(t, c.status, status, out)
			if c.anthropic {
				require.Equal(t, "error", out["type"])
				require.NotEmpty(t, out["error"].(map[string]any)["type"])
			} else {
				require.NotEmpty(t, out["error"].(map[string]any)["message"])
				require.Contains(t, out["error"], "code")
			}
		})
	}

	req := httptest.NewRequest(http.MethodGet, "/v1/messages/batches", nil)
	req.Header.Set("X-Api-Key", "tg-wrong")
	rec := httptest.NewRecorder()
	svc.ServeHTTP(rec, req)
	require.Equal(t, http.StatusUnauthorized, rec.Code)
	require.JSONEq(t, `{"type":"error","error":{"type":"authentication_error","message":"Invalid API key."}}`, rec.Body.String())
}
