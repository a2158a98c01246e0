package batch_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"math"
	"mime/multipart"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/batch"
	"github.com/tollgate-ai/tollgate/internal/mockllm"
	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/store"
	"github.com/tollgate-ai/tollgate/store/memstore"
)

func mock(t *testing.T) string {
	t.Helper()
	srv := mockllm.New(mockllm.DefaultConfig())
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, lis) }()
	t.Cleanup(func() { cancel(); require.NoError(t, <-done) })
	return "http://" + lis.Addr().String()
}

// send does one request to the mock and decodes its JSON answer.
func send(t *testing.T, method, url string, body io.Reader, headers ...string) map[string]any {
	t.Helper()
	req, err := http.NewRequest(method, url, body)
	require.NoError(t, err)
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(raw))
	var out map[string]any
	require.NoError(t, json.Unmarshal(raw, &out))
	return out
}

// openAIBatch uploads n chat lines and creates a batch of them taking delay.
func openAIBatch(t *testing.T, base, key string, n int, delay string) string {
	t.Helper()
	return openAIBatchAt(t, base+"/v1", "Authorization", "Bearer "+key, n, delay)
}

// openAIBatchAt is openAIBatch on the OpenAI-shaped API at api (OpenAI's
// /v1, Azure's /openai/v1) with the credential header auth: value.
func openAIBatchAt(t *testing.T, api, auth, value string, n int, delay string) string {
	t.Helper()
	var in strings.Builder
	for i := range n {
		in.WriteString(`{"custom_id":"line-` + strconv.Itoa(i) + `","method":"POST","url":"/v1/chat/completions","body":{"model":"mock-gpt","max_tokens":` + strconv.Itoa(3+i) + `,"messages":[{"role":"user","content":"twelve bytes"}]}}` + "\n")
	}
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	require.NoError(t, mw.WriteField("purpose", "batch"))
	fw, err := mw.CreateFormFile("file", "in.jsonl")
	require.NoError(t, err)
	_, err = fw.Write([]byte(in.String()))
	require.NoError(t, err)
	require.NoError(t, mw.Close())
	f := send(t, http.MethodPost, api+"/files", &body, "Content-Type", mw.FormDataContentType(), auth, value)
	b := send(t, http.MethodPost, api+"/batches", strings.NewReader(`{"input_file_id":"`+f["id"].(string)+`","endpoint":"/v1/chat/completions","completion_window":"24h"}`),
		auth, value, "x-mock-batch-delay", delay)
	return b["id"].(string)
}

type clock struct{ ns atomic.Int64 }

func (c *clock) now() time.Time          { return time.Unix(0, c.ns.Load()) }
func (c *clock) advance(d time.Duration) { c.ns.Add(int64(d)) }

func pending(id string, api batch.API) *batch.Pending {
	return &batch.Pending{
		ID: id, API: api, Provider: "p", Deployment: "d", Model: "public", KeyID: "k1", TeamID: "t1",
		ReservationID: "res-" + id, Price: batch.Price(kernel.Price{Input: kernel.Dollar, Output: 2 * kernel.Dollar}),
		CreatedAt: time.Now().UTC(),
	}
}

func TestPollerSettlesEachLineOnceAtTheBatchPrice(t *testing.T) {
	base := mock(t)
	st := memstore.New()
	bs := batch.NewStore(st)
	ctx := context.Background()
	providers := func(_ context.Context, p *batch.Pending) (batch.Provider, error) {
		key := "sk-up"
		if p.API == batch.APIAnthropic {
			key = "sk-ant"
		}
		return batch.NewProvider(p.API, batch.Endpoint{BaseURL: base + "/v1", APIKey: key})
	}
	var released []string
	settler := batch.SettlerFunc(func(ctx context.Context, p *batch.Pending, entries []store.LedgerEntry) error {
		released = append(released, p.ReservationID)
		return batch.LedgerSettler{Ledger: st}.SettleBatch(ctx, p, entries)
	})
	var c clock
	c.ns.Store(time.Now().UnixNano())
	poller := batch.NewPoller(bs, "replica-1", providers, settler, batch.WithClock(c.now))

	slow := openAIBatch(t, base, "sk-up", 2, "24h")
	fast := openAIBatch(t, base, "sk-up", 3, "0s")
	ant := send(t, http.MethodPost, base+"/v1/messages/batches", strings.NewReader(`{"requests":[
		{"custom_id":"x","params":{"model":"mock-claude","max_tokens":4,"messages":[{"role":"user","content":"abcdabcd"}]}},
		{"custom_id":"y","params":{"model":"mock-claude","messages":[{"role":"user","content":"no max_tokens: errored"}]}}]}`),
		"x-api-key", "sk-ant", "anthropic-version", "2023-06-01")["id"].(string)
	for _, p := range []*batch.Pending{pending(slow, batch.APIOpenAI), pending(fast, batch.APIOpenAI), pending(ant, batch.APIAnthropic)} {
		require.NoError(t, bs.Add(ctx, p))
	}
	require.ErrorIs(t, bs.Add(ctx, pending(fast, batch.APIOpenAI)), store.ErrConflict, "recorded once")

	// A second replica does not poll while the first holds the lease.
	other := batch.NewPoller(bs, "replica-2", providers, settler, batch.WithClock(c.now))
	n, err := poller.Tick(ctx)
	require.NoError(t, err)
	require.Equal(t, 2, n, "the fast OpenAI batch and the Anthropic one ended; the slow one runs on")
	n, err = other.Tick(ctx)
	require.NoError(t, err)
	require.Zero(t, n)
	left, err := bs.List(ctx)
	require.NoError(t, err)
	require.Len(t, left, 1)
	require.Equal(t, slow, left[0].ID)
	require.ElementsMatch(t, []string{"res-" + fast, "res-" + ant}, released)

	rows, err := st.Entries(ctx, store.LedgerFilter{Limit: 100})
	require.NoError(t, err)
	byID := map[string]store.LedgerEntry{}
	var total kernel.Money
	for _, e := range rows {
		byID[e.RequestID] = e
		total += e.Cost
	}
	require.Len(t, byID, 5)
	// "twelve bytes": 3 prompt tokens; line i asks 3+i output tokens.
	for i := range 3 {
		e := byID[fast+"/line-"+strconv.Itoa(i)]
		require.Equal(t, kernel.Usage{Input: 3, Output: int64(3 + i)}, e.Usage)
		require.Equal(t, kernel.Cost(kernel.Price{Input: kernel.Dollar / 2, Output: kernel.Dollar}, e.Usage), e.Cost, "the batch price")
		require.Equal(t, "k1", e.KeyID)
		require.Equal(t, "t1", e.TeamID)
		require.Equal(t, kernel.StatusCompleted, e.Status)
	}
	require.Equal(t, kernel.Usage{Input: 2, Output: 4}, byID[ant+"/x"].Usage)
	require.Equal(t, kernel.StatusFailed, byID[ant+"/y"].Status)
	require.Zero(t, byID[ant+"/y"].Cost)

	// The ledger equals the mock's own bill of those lines at the batch
	// price (the Anthropic ones priced here at the OpenAI test price, so
	// compare the OpenAI bill only).
	costs := send(t, http.MethodGet, base+"/v1/organization/costs?start_time="+strconv.FormatInt(time.Now().UTC().Truncate(24*time.Hour).Unix(), 10), nil, "Authorization", "Bearer sk-admin-mock")
	billed := costs["data"].([]any)[0].(map[string]any)["results"].([]any)[0].(map[string]any)["amount"].(map[string]any)["value"].(float64)
	var openAICost kernel.Money
	for i := range 3 {
		openAICost += byID[fast+"/line-"+strconv.Itoa(i)].Cost
	}
	require.Equal(t, openAICost, kernel.Money(math.Round(billed*1e9)))

	// A restart: a new poller, once the lease ran out, settles the slow
	// batch after its cancellation (none of its lines ran), and settling the
	// fast one again changes nothing.
	c.advance(2 * time.Minute)
	send(t, http.MethodPost, base+"/v1/batches/"+slow+"/cancel", nil, "Authorization", "Bearer sk-up")
	require.NoError(t, bs.Add(ctx, pending(fast, batch.APIOpenAI)), "as if the first replica died before forgetting it")
	restarted := batch.NewPoller(bs, "replica-3", providers, settler, batch.WithClock(c.now))
	n, err = restarted.Tick(ctx)
	require.NoError(t, err)
	require.Equal(t, 2, n)
	left, err = bs.List(ctx)
	require.NoError(t, err)
	require.Empty(t, left)
	rows, err = st.Entries(ctx, store.LedgerFilter{Limit: 100})
	require.NoError(t, err)
	require.Len(t, rows, 5, "each line settled once")
	var again kernel.Money
	for _, e := range rows {
		again += e.Cost
	}
	require.Equal(t, total, again)
}

// With nothing pending a tick writes nothing (every write wakes every
// replica's configuration watch).
func TestIdlePollerOnlyReads(t *testing.T) {
	st := memstore.New()
	ctx := context.Background()
	before, err := st.Revision(ctx)
	require.NoError(t, err)
	providers := func(context.Context, *batch.Pending) (batch.Provider, error) {
		t.Fatal("no batch to poll")
		return nil, nil
	}
	p := batch.NewPoller(batch.NewStore(st), "r1", providers, batch.LedgerSettler{Ledger: st})
	n, err := p.Tick(ctx)
	require.NoError(t, err)
	require.Zero(t, n)
	after, err := st.Revision(ctx)
	require.NoError(t, err)
	require.Equal(t, before, after)
}

// work is deferred work that counts what it was asked.
type work struct {
	waiting      bool
	asked, doing atomic.Int32
}

func (w *work) Waiting(context.Context) (bool, error) { w.asked.Add(1); return w.waiting, nil }
func (w *work) Do(context.Context) (int, error)       { w.doing.Add(1); return 2, nil }

// TestPollerWorkUnderItsLease: the work of WithWork is done by the replica
// holding the poller's lease only, and idle work takes no lease.
func TestPollerWorkUnderItsLease(t *testing.T) {
	st := memstore.New()
	ctx := context.Background()
	var c clock
	c.advance(time.Hour)
	providers := func(context.Context, *batch.Pending) (batch.Provider, error) {
		t.Fatal("no batch to poll")
		return nil, nil
	}
	w1, w2 := &work{}, &work{}
	p1 := batch.NewPoller(batch.NewStore(st), "r1", providers, batch.LedgerSettler{Ledger: st}, batch.WithClock(c.now), batch.WithWork(w1))
	p2 := batch.NewPoller(batch.NewStore(st), "r2", providers, batch.LedgerSettler{Ledger: st}, batch.WithClock(c.now), batch.WithWork(w2))

	before, err := st.Revision(ctx)
	require.NoError(t, err)
	n, err := p1.Tick(ctx)
	require.NoError(t, err)
	require.Zero(t, n)
	after, err := st.Revision(ctx)
	require.NoError(t, err)
	require.Equal(t, before, after, "nothing waiting: no lease taken")
	require.Equal(t, int32(1), w1.asked.Load())
	require.Zero(t, w1.doing.Load())

	w1.waiting, w2.waiting = true, true
	n, err = p1.Tick(ctx)
	require.NoError(t, err)
	require.Equal(t, 2, n, "what the work settled")
	require.Equal(t, int32(1), w1.doing.Load())
	n, err = p2.Tick(ctx)
	require.NoError(t, err)
	require.Zero(t, n)
	require.Zero(t, w2.doing.Load(), "r1 holds the lease")

	c.advance(2 * time.Minute) // r1's lease (1 min) ran out: r2 takes over
	_, err = p2.Tick(ctx)
	require.NoError(t, err)
	require.Equal(t, int32(1), w2.doing.Load())
	_, err = p1.Tick(ctx)
	require.NoError(t, err)
	require.Equal(t, int32(1), w1.doing.Load(), "r2 holds it now")
}

// TestPollerAzureBatch (issue 35): a batch on an Azure OpenAI resource is
// polled on its v1 API (/openai/v1/batches, its files' content) with the
// key in api-key, whatever form of the resource's endpoint the provider
// names, and each line is settled as an OpenAI batch's.
func TestPollerAzureBatch(t *testing.T) {
	base := mock(t)
	ctx := context.Background()
	for _, endpoint := range []string{base, base + "/", base + "/openai", base + "/openai/v1"} {
		st := memstore.New()
		bs := batch.NewStore(st)
		providers := func(_ context.Context, p *batch.Pending) (batch.Provider, error) {
			return batch.NewProvider(p.API, batch.Endpoint{BaseURL: endpoint, APIKey: "az-key", Azure: true})
		}
		id := openAIBatchAt(t, base+"/openai/v1", "api-key", "az-key", 2, "0s")
		require.NoError(t, bs.Add(ctx, pending(id, batch.APIOpenAI)))
		n, err := batch.NewPoller(bs, "r1", providers, batch.LedgerSettler{Ledger: st}).Tick(ctx)
		require.NoError(t, err, endpoint)
		require.Equal(t, 1, n, endpoint)
		require.NoError(t, st.Flush(ctx))
		rows, err := st.Entries(ctx, store.LedgerFilter{})
		require.NoError(t, err)
		require.Len(t, rows, 2, "each line, %s", endpoint)
		for _, e := range rows {
			require.Positive(t, e.Usage.Output)
		}
	}
}
