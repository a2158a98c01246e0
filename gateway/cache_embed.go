package gateway

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/tollgate-ai/tollgate/cache"
	"github.com/tollgate-ai/tollgate/extproc"
	"github.com/tollgate-ai/tollgate/kernel"
)

// groupEmbedder embeds the semantic cache's prompts with a model group, on
// behalf of the request's key: the catalog picks the group's deployment
// (its weights, the key's model access), the accountant admits and settles
// the embedding like any request of that key (its rpm, tpm and budgets; a
// ledger row at the embedding model's price), and the provider's
// embeddings endpoint is called directly. OpenAI-compatible providers only.
type groupEmbedder struct {
	cat    *Catalog
	acct   extproc.Accountant
	client *http.Client
	now    func() time.Time
}

var errEmbedRefused = errors.New("gateway: the embedding request was not admitted")

// forKey is the Embedder of one request's key.
func (e *groupEmbedder) forKey(p *extproc.Principal) cache.Embedder {
	if e == nil || p == nil {
		return nil
	}
	return cache.EmbedderFunc(func(ctx context.Context, model, text string) ([]float32, error) {
		return e.embed(ctx, p, model, text)
	})
}

func (e *groupEmbedder) embed(ctx context.Context, p *extproc.Principal, model, text string) ([]float32, error) {
	t, err := e.cat.Resolve(ctx, p, model)
	if err != nil {
		return nil, err
	}
	if t.Provider != extproc.ProviderOpenAI {
		return nil, fmt.Errorf("gateway: embedding model %s: provider type %s is not supported for the semantic cache", model, t.Provider)
	}
	up, ok := e.cat.upstream(t.Deployment)
	if !ok {
		return nil, fmt.Errorf("gateway: deployment %s has no upstream", t.Deployment)
	}
	var idb [12]byte
	_, _ = rand.Read(idb[:])
	id := "cache-embed-" + hex.EncodeToString(idb[:])
	started := e.now()
	d, err := e.acct.Admit(ctx, &kernel.AdmitRequest{
		ID: id, Scopes: p.Scopes, Model: t.Model, PromptBytes: int64(len(text)), DefaultMaxTokens: 1, Price: t.Price,
	})
	if err != nil {
		return nil, err
	}
	if !d.Admitted {
		return nil, errEmbedRefused
	}
	vec, usage, status, callErr := e.call(ctx, up, t, text)
	rec := &extproc.Record{
		RequestID: id, Principal: p, Model: t.Model, Deployment: t.Deployment, Usage: usage,
		Status: kernel.StatusCompleted, HTTPStatus: status, StartedAt: started, EndedAt: e.now(),
	}
	if callErr != nil {
		rec.Status = kernel.StatusFailed
	}
	_, err = e.acct.Settle(context.WithoutCancel(ctx), rec)
	return vec, errors.Join(callErr, err)
}

// call posts one embeddings request to the deployment.
func (e *groupEmbedder) call(ctx context.Context, up Upstream, t *extproc.Target, text string) ([]float32, kernel.Usage, int, error) {
	body, _ := json.Marshal(map[string]any{"model": t.ProviderModel, "input": text})
	url := up.Scheme + "://" + up.Host + ":" + strconv.Itoa(int(up.Port)) + t.BasePath + "/embeddings"
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, kernel.Usage{}, 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+t.APIKey)
	resp, err := e.client.Do(req)
	if err != nil {
		return nil, kernel.Usage{}, 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return nil, kernel.Usage{}, resp.StatusCode, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, kernel.Usage{}, resp.StatusCode, fmt.Errorf("gateway: embedding model answered %d", resp.StatusCode)
	}
	var out struct {
		Data []struct {
			Embedding []float32 `json:"embedding"`
		} `json:"data"`
		Usage struct {
			Prompt int64 `json:"prompt_tokens"`
		} `json:"usage"`
	}
	if err := json.Unmarshal(b, &out); err != nil || len(out.Data) == 0 || len(out.Data[0].Embedding) == 0 {
		return nil, kernel.Usage{}, resp.StatusCode, errors.New("gateway: the embedding model's reply has no embedding")
	}
	return out.Data[0].Embedding, kernel.Usage{Input: out.Usage.Prompt}, resp.StatusCode, nil
}

// upstream is the address of a deployment in the current snapshot.
func (c *Catalog) upstream(deployment string) (Upstream, bool) {
	s := c.Snapshot()
	if s == nil {
		return Upstream{}, false
	}
	for _, u := range s.Upstreams {
		if u.Deployment == deployment {
			return u, true
		}
	}
	return Upstream{}, false
}
