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
	"github.com/tollgate-ai/tollgate/translate"
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
	vec, prompt, err := parseEmbedding(b)
	if err != nil {
		return nil, kernel.Usage{}, resp.StatusCode, err
	}
	return vec, kernel.Usage{Input: prompt}, resp.StatusCode, nil
}

var errNoEmbedding = errors.New("gateway: the embedding model's reply has no embedding")

// parseEmbedding reads an OpenAI embeddings reply's first vector and
// usage.prompt_tokens, scanning it in place: decoding it with encoding/json
// was a quarter of a semantic lookup's embedding call (bench/README.md).
func parseEmbedding(b []byte) ([]float32, int64, error) {
	var data, usage translate.Span
	_, err := translate.ScanObject(b, 0, true, func(k []byte, v translate.Span) error {
		switch {
		case translate.KeyIs(k, "data"):
			data = v
		case translate.KeyIs(k, "usage"):
			usage = v
		}
		return nil
	})
	if err != nil || !data.OK() || b[data.Start] != '[' {
		return nil, 0, errNoEmbedding
	}
	i := translate.SkipSpace(b, data.Start+1)
	if i >= data.End || b[i] != '{' {
		return nil, 0, errNoEmbedding
	}
	var emb translate.Span
	if _, err := translate.ScanObject(b, i, false, func(k []byte, v translate.Span) error {
		if translate.KeyIs(k, "embedding") {
			emb = v
		}
		return nil
	}); err != nil || !emb.OK() || b[emb.Start] != '[' {
		return nil, 0, errNoEmbedding
	}
	vec := make([]float32, 0, bytes.Count(b[emb.Start:emb.End], []byte{','})+1)
	for i = translate.SkipSpace(b, emb.Start+1); i < emb.End && b[i] != ']'; {
		end, err := translate.SkipValue(b, i, 0)
		if err != nil {
			return nil, 0, errNoEmbedding
		}
		f, err := strconv.ParseFloat(string(b[i:end]), 32)
		if err != nil {
			return nil, 0, errNoEmbedding
		}
		vec = append(vec, float32(f))
		i = translate.SkipSpace(b, end)
		if i < emb.End && b[i] == ',' {
			i = translate.SkipSpace(b, i+1)
		}
	}
	if len(vec) == 0 {
		return nil, 0, errNoEmbedding
	}
	var prompt int64
	if usage.OK() && b[usage.Start] == '{' {
		_, _ = translate.ScanObject(b, usage.Start, false, func(k []byte, v translate.Span) error {
			if translate.KeyIs(k, "prompt_tokens") {
				prompt, _ = strconv.ParseInt(string(b[v.Start:v.End]), 10, 64)
			}
			return nil
		})
	}
	return vec, prompt, nil
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
