package mockllm

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strconv"
	"sync"
)

// The mock keeps the Responses it served, as OpenAI does with store true
// (the default): GET /v1/responses/{id}, DELETE, GET …/input_items and
// POST …/cancel answer them, previous_response_id must name one, and a
// response is visible only to the API key that made it (OpenAI scopes them
// to the project): another key gets 404, as an unknown id. Each response gets
// a random id, so that two mock servers never share one. A background
// response (background: true) is queued: the first GET finds it in_progress,
// the next completed (its usage billed then), unless it was cancelled.

// storedResponse is one response the mock keeps.
type storedResponse struct {
	key   string
	r     *response
	input []json.RawMessage // the input items, each with an id
	// background: polled counts the GETs; state is queued, in_progress,
	// completed or cancelled.
	background bool
	state      string
	billed     billed
}

// responseStore is the mock's kept responses: the newest maxKept, so that
// a load test does not grow the mock without bound.
type responseStore struct {
	mu    sync.Mutex
	byID  map[string]*storedResponse
	order []string // ids, oldest first
}

// maxKept bounds the responses kept.
const maxKept = 100_000

func newResponseID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return "resp_" + hex.EncodeToString(b[:])
}

// keep stores r (its request's store is not false) for key.
func (rs *responseStore) keep(key string, r *response, b billed, background bool) *storedResponse {
	sr := &storedResponse{key: key, r: r, input: inputItems(r), background: background, state: "completed", billed: b}
	if background {
		sr.state = "queued"
	}
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if rs.byID == nil {
		rs.byID = map[string]*storedResponse{}
	}
	rs.byID[r.id] = sr
	rs.order = append(rs.order, r.id)
	if len(rs.order) > maxKept {
		delete(rs.byID, rs.order[0])
		rs.order = rs.order[1:]
	}
	return sr
}

// get returns the key's response of that id.
func (rs *responseStore) get(key, id string) *storedResponse {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	sr := rs.byID[id]
	if sr == nil || sr.key != key {
		return nil
	}
	return sr
}

// inputItems are the request's input as items with ids.
func inputItems(r *response) []json.RawMessage {
	var s string
	if json.Unmarshal(r.req.Input, &s) == nil {
		b, _ := json.Marshal(map[string]any{
			"type": "message", "id": "msg_" + r.id[len("resp_"):] + "_in0", "role": "user", "status": "completed",
			"content": []map[string]string{{"type": "input_text", "text": s}},
		})
		return []json.RawMessage{b}
	}
	var items []map[string]any
	_ = json.Unmarshal(r.req.Input, &items)
	out := make([]json.RawMessage, 0, len(items))
	for i, it := range items {
		if _, ok := it["id"]; !ok {
			it["id"] = "msg_" + r.id[len("resp_"):] + "_in" + strconv.Itoa(i)
		}
		if _, ok := it["type"]; !ok {
			it["type"] = "message"
		}
		b, _ := json.Marshal(it)
		out = append(out, b)
	}
	return out
}

// object is the stored response as GET shows it.
func (sr *storedResponse) object() *responsesObject {
	switch sr.state {
	case "completed":
		return sr.r.object("", sr.r.items("completed"))
	default:
		return sr.r.object(sr.state, nil)
	}
}

// storedResponseCall answers GET/DELETE /v1/responses/{id},
// GET /v1/responses/{id}/input_items and POST /v1/responses/{id}/cancel
// (and Azure's /openai/v1/… of each).
func (s *Server) storedResponseCall(w http.ResponseWriter, r *http.Request) {
	key, id, sub := apiKey(r), r.PathValue("id"), r.PathValue("sub")
	sr := s.kept.get(key, id)
	if sr == nil {
		writeError(w, flavorOpenAI, http.StatusNotFound, "Response with id '"+id+"' not found.")
		return
	}
	s.kept.mu.Lock()
	defer s.kept.mu.Unlock()
	var v any
	switch {
	case sub == "" && r.Method == http.MethodGet:
		if sr.background {
			switch sr.state {
			case "queued":
				sr.state = "in_progress"
			case "in_progress":
				sr.state = "completed"
				ctr := s.counters(key) // the request was counted when queued
				ctr.input.Add(sr.billed.input)
				ctr.cached.Add(sr.billed.cached)
				ctr.output.Add(sr.r.output)
			}
		}
		v = sr.object()
	case sub == "" && r.Method == http.MethodDelete:
		delete(s.kept.byID, id)
		v = map[string]any{"id": id, "object": "response", "deleted": true}
	case sub == "input_items" && r.Method == http.MethodGet:
		v = itemList(ordered(sr.input, r))
	case sub == "cancel" && r.Method == http.MethodPost:
		if !sr.background {
			writeError(w, flavorOpenAI, http.StatusBadRequest, "Only responses created with background=true can be cancelled.")
			return
		}
		if sr.state == "completed" {
			writeError(w, flavorOpenAI, http.StatusBadRequest, "Cannot cancel a completed response.")
			return
		}
		sr.state = "cancelled"
		v = sr.object()
	default:
		writeError(w, flavorOpenAI, http.StatusNotFound, "Invalid URL ("+r.Method+" "+r.URL.Path+")")
		return
	}
	body, _ := json.Marshal(v)
	setJSON(w.Header(), len(body))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body)
}
