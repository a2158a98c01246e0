package mockllm

import (
	"encoding/json"
	"net/http"
	"sync/atomic"
)

// Usage is what the mock served to one API key (see the package doc for what
// counts).
type Usage struct {
	Requests            int64 `json:"requests"`
	Errors              int64 `json:"errors"`
	Aborted             int64 `json:"aborted"`
	InputTokens         int64 `json:"input_tokens"`
	OutputTokens        int64 `json:"output_tokens"`
	CachedTokens        int64 `json:"cached_tokens"`
	CacheCreationTokens int64 `json:"cache_creation_tokens"`
	// The units of the routes billed per unit (units.go).
	Images      int64 `json:"images,omitempty"`
	Seconds     int64 `json:"seconds,omitempty"`
	Characters  int64 `json:"characters,omitempty"`
	SearchUnits int64 `json:"search_units,omitempty"`
}

// Stats is the body of GET /stats.
type Stats struct {
	Keys  map[string]Usage `json:"keys"`
	Total Usage            `json:"total"`
}

type counters struct {
	requests, errors, aborted, input, output, cached, creation atomic.Int64
	images, seconds, characters, searches                      atomic.Int64 // units.go
}

func (c *counters) usage() Usage {
	return Usage{
		Requests: c.requests.Load(), Errors: c.errors.Load(), Aborted: c.aborted.Load(),
		InputTokens: c.input.Load(), OutputTokens: c.output.Load(),
		CachedTokens: c.cached.Load(), CacheCreationTokens: c.creation.Load(),
		Images: c.images.Load(), Seconds: c.seconds.Load(), Characters: c.characters.Load(), SearchUnits: c.searches.Load(),
	}
}

func (s *Server) counters(key string) *counters {
	if v, ok := s.stats.Load(key); ok {
		return v.(*counters)
	}
	v, _ := s.stats.LoadOrStore(key, new(counters))
	return v.(*counters)
}

// Stats returns a snapshot of the bill.
func (s *Server) Stats() Stats {
	st := Stats{Keys: map[string]Usage{}}
	s.stats.Range(func(k, v any) bool {
		u := v.(*counters).usage()
		st.Keys[k.(string)] = u
		st.Total.Requests += u.Requests
		st.Total.Errors += u.Errors
		st.Total.Aborted += u.Aborted
		st.Total.InputTokens += u.InputTokens
		st.Total.OutputTokens += u.OutputTokens
		st.Total.CachedTokens += u.CachedTokens
		st.Total.CacheCreationTokens += u.CacheCreationTokens
		st.Total.Images += u.Images
		st.Total.Seconds += u.Seconds
		st.Total.Characters += u.Characters
		st.Total.SearchUnits += u.SearchUnits
		return true
	})
	return st
}

// ResetStats clears the bill and the prompt-cache memory.
func (s *Server) ResetStats() {
	s.stats.Clear()
	s.cache.Clear()
}

func (s *Server) getStats(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("content-type", "application/json")
	_ = json.NewEncoder(w).Encode(s.Stats())
}

func (s *Server) resetStats(w http.ResponseWriter, _ *http.Request) {
	s.ResetStats()
	w.WriteHeader(http.StatusNoContent)
}

// billed is the usage of one request, recorded when its reply starts.
type billed struct {
	input, cached, creation int64
}

func (b billed) record(c *counters) {
	c.requests.Add(1)
	c.input.Add(b.input)
	c.cached.Add(b.cached)
	c.creation.Add(b.creation)
}
