// Command loadgen drives an OpenAI-compatible endpoint with a fixed number of
// concurrent connections for a fixed time and reports throughput and latency
// percentiles as one JSON line. It is the load generator of bench/run.sh.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

type result struct {
	Scenario    string  `json:"scenario"`
	Target      string  `json:"target"`
	Connections int     `json:"connections"`
	Seconds     float64 `json:"seconds"`
	Requests    int64   `json:"requests"`
	Errors      int64   `json:"errors"`
	RPS         float64 `json:"rps"`
	P50ms       float64 `json:"p50_ms"`
	P99ms       float64 `json:"p99_ms"`
	MaxMs       float64 `json:"max_ms"`
	FirstError  string  `json:"first_error,omitempty"`
}

func main() {
	url := flag.String("url", "http://127.0.0.1:8080", "base URL (without /v1)")
	key := flag.String("key", "", "API key (Bearer)")
	model := flag.String("model", "demo", "model name")
	scenario := flag.String("scenario", "chat", "chat, stream or embeddings")
	conns := flag.Int("c", 64, "concurrent connections")
	dur := flag.Duration("d", 10*time.Second, "duration")
	warm := flag.Duration("warmup", time.Second, "warm-up before measuring")
	flag.Parse()

	path, body := request(*scenario, *model)
	if path == "" {
		fmt.Fprintln(os.Stderr, "loadgen: unknown scenario", *scenario)
		os.Exit(2)
	}
	tr := &http.Transport{
		MaxIdleConns: *conns, MaxIdleConnsPerHost: *conns, MaxConnsPerHost: *conns,
		DialContext: (&net.Dialer{Timeout: 5 * time.Second}).DialContext, IdleConnTimeout: time.Minute,
	}
	client := &http.Client{Transport: tr, Timeout: 60 * time.Second}

	var measuring atomic.Bool
	var reqs, errs atomic.Int64
	var firstErr atomic.Value
	lats := make([][]time.Duration, *conns)
	ctx, cancel := context.WithTimeout(context.Background(), *warm+*dur)
	defer cancel()
	var wg sync.WaitGroup
	for i := range *conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				t0 := time.Now()
				err := do(ctx, client, *url+path, *key, body)
				if ctx.Err() != nil {
					return
				}
				if !measuring.Load() {
					continue
				}
				if err != nil {
					errs.Add(1)
					firstErr.CompareAndSwap(nil, err.Error())
					continue
				}
				reqs.Add(1)
				lats[i] = append(lats[i], time.Since(t0))
			}
		}()
	}
	time.Sleep(*warm)
	measuring.Store(true)
	start := time.Now()
	wg.Wait()
	elapsed := time.Since(start).Seconds()

	var all []time.Duration
	for _, l := range lats {
		all = append(all, l...)
	}
	slices.Sort(all)
	pct := func(p float64) float64 {
		if len(all) == 0 {
			return 0
		}
		return float64(all[min(len(all)-1, int(float64(len(all))*p))]) / 1e6
	}
	r := result{
		Scenario: *scenario, Target: *url, Connections: *conns, Seconds: elapsed,
		Requests: reqs.Load(), Errors: errs.Load(), RPS: float64(reqs.Load()) / elapsed,
		P50ms: pct(0.50), P99ms: pct(0.99), MaxMs: pct(1),
	}
	if v, ok := firstErr.Load().(string); ok {
		r.FirstError = v
	}
	_ = json.NewEncoder(os.Stdout).Encode(r)
}

func request(scenario, model string) (string, []byte) {
	switch scenario {
	case "chat":
		return "/v1/chat/completions", []byte(`{"model":"` + model + `","messages":[{"role":"user","content":"Say hello to the benchmark"}],"max_tokens":16}`)
	case "stream":
		return "/v1/chat/completions", []byte(`{"model":"` + model + `","stream":true,"messages":[{"role":"user","content":"Say hello to the benchmark"}],"max_tokens":16}`)
	case "embeddings":
		return "/v1/embeddings", []byte(`{"model":"` + model + `","input":"embed this sentence for the benchmark"}`)
	}
	return "", nil
}

func do(ctx context.Context, c *http.Client, url, key string, body []byte) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("status %d", resp.StatusCode)
	}
	return nil
}
