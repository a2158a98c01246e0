package mockllm

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Files and batches: OpenAI's Files API (POST/GET /v1/files, GET and DELETE
// /v1/files/{id}, GET /v1/files/{id}/content) and Batch API (POST/GET
// /v1/batches, GET /v1/batches/{id}, POST /v1/batches/{id}/cancel), and
// Anthropic's Message Batches API (POST/GET /v1/messages/batches, GET and
// DELETE /v1/messages/batches/{id}, POST …/cancel, GET …/results).
//
// Files and batches belong to the API key that created them: another key
// gets 404. A batch of n lines takes Config.BatchDelay (or the creating
// request's x-mock-batch-delay) to run: line i (from 0) completes at
// created + delay×(i+1)/n, and is served then, lazily, on the next read of
// the batch, through the mock's own handler for its URL, so its reply and
// usage are what the same request sent alone gets (its x-mock-* headers do
// not apply). Batch lines are billed at half the model's price and appear
// in the usage report with batch=true. Cancelling stops the lines that have
// not completed (they end "cancelled", OpenAI keeps no record of them,
// Anthropic reports them "canceled"); a cancelled batch is "cancelled"
// ("ended") at once.

type batchLineKey struct{}

// isBatchLine reports whether r is a batch line the mock serves to itself.
func isBatchLine(r *http.Request) bool { return r.Context().Value(batchLineKey{}) != nil }

type mockFile struct {
	ID        string `json:"id"`
	Object    string `json:"object"`
	Bytes     int    `json:"bytes"`
	CreatedAt int64  `json:"created_at"`
	Filename  string `json:"filename"`
	Purpose   string `json:"purpose"`
	Status    string `json:"status"`
	key       string
	content   []byte
}

// batchLine is one request of a batch and, once served, its reply.
type batchLine struct {
	customID string
	url      string
	body     json.RawMessage
	status   int             // 0 until served
	reply    json.RawMessage // the reply body once served
}

type mockBatch struct {
	mu        sync.Mutex
	id        string
	key       string
	anthropic bool
	endpoint  string
	inputFile string
	metadata  json.RawMessage
	created   time.Time
	delay     time.Duration
	cancelled time.Time // zero unless cancelled
	lines     []batchLine
	outFile   string
	errFile   string
}

// batches is the mock's files and batches.
type batches struct {
	mu      sync.Mutex
	files   map[string]*mockFile
	batches map[string]*mockBatch
	order   []string // batch ids, oldest first
}

func (s *Server) registerBatches() {
	s.bat.files, s.bat.batches = map[string]*mockFile{}, map[string]*mockBatch{}
	for _, v1 := range []string{"/v1", "/openai/v1"} { // OpenAI's, and Azure's v1 API (api-key header)
		s.mux.HandleFunc("POST "+v1+"/files", s.uploadFile)
		s.mux.HandleFunc("GET "+v1+"/files", s.listFiles)
		s.mux.HandleFunc("GET "+v1+"/files/{id}", s.fileOp(func(w http.ResponseWriter, f *mockFile) { writeReport(w, f) }))
		s.mux.HandleFunc("GET "+v1+"/files/{id}/content", s.fileOp(func(w http.ResponseWriter, f *mockFile) {
			w.Header().Set("content-type", "application/jsonl")
			_, _ = w.Write(f.content)
		}))
		s.mux.HandleFunc("DELETE "+v1+"/files/{id}", s.deleteFile)
		s.mux.HandleFunc("POST "+v1+"/batches", s.createBatch)
		s.mux.HandleFunc("GET "+v1+"/batches", s.listBatches(false))
		s.mux.HandleFunc("GET "+v1+"/batches/{id}", s.batchOp(false, nil))
		s.mux.HandleFunc("POST "+v1+"/batches/{id}/cancel", s.batchOp(false, (*mockBatch).cancel))
	}
	s.mux.HandleFunc("POST /v1/messages/batches", s.createMessageBatch)
	s.mux.HandleFunc("GET /v1/messages/batches", s.listBatches(true))
	s.mux.HandleFunc("GET /v1/messages/batches/{id}", s.batchOp(true, nil))
	s.mux.HandleFunc("POST /v1/messages/batches/{id}/cancel", s.batchOp(true, (*mockBatch).cancel))
	s.mux.HandleFunc("DELETE /v1/messages/batches/{id}", s.deleteMessageBatch)
	s.mux.HandleFunc("GET /v1/messages/batches/{id}/results", s.messageBatchResults)
}

// SetClock sets the mock's clock (tests: a batch completes when the clock
// passes its delay). Call it before serving; now must be safe for
// concurrent use.
func (s *Server) SetClock(now func() time.Time) { s.now = now }

func (s *Server) newID(prefix string) string { return prefix + strconv.FormatUint(s.seq.Add(1), 10) }

func (s *Server) uploadFile(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, maxBody)
	if ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); ct != "multipart/form-data" {
		writeError(w, flavorOpenAI, http.StatusBadRequest, "files are uploaded as multipart/form-data with 'file' and 'purpose'")
		return
	}
	purpose := r.FormValue("purpose")
	file, hdr, err := r.FormFile("file")
	if err != nil || purpose == "" {
		writeError(w, flavorOpenAI, http.StatusBadRequest, "'file' and 'purpose' are required")
		return
	}
	defer file.Close()
	content, err := io.ReadAll(file)
	if err != nil {
		writeError(w, flavorOpenAI, http.StatusBadRequest, err.Error())
		return
	}
	writeReport(w, s.storeFile(apiKey(r), hdr.Filename, purpose, content))
}

func (s *Server) storeFile(key, name, purpose string, content []byte) *mockFile {
	f := &mockFile{
		ID: s.newID("file-mock-"), Object: "file", Bytes: len(content), CreatedAt: s.now().Unix(),
		Filename: name, Purpose: purpose, Status: "processed", key: key, content: content,
	}
	s.bat.mu.Lock()
	s.bat.files[f.ID] = f
	s.bat.mu.Unlock()
	return f
}

// file returns the file id of key, or nil.
func (s *Server) file(key, id string) *mockFile {
	s.bat.mu.Lock()
	defer s.bat.mu.Unlock()
	if f := s.bat.files[id]; f != nil && f.key == key {
		return f
	}
	return nil
}

func (s *Server) fileOp(do func(http.ResponseWriter, *mockFile)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		f := s.file(apiKey(r), r.PathValue("id"))
		if f == nil {
			writeError(w, flavorOpenAI, http.StatusNotFound, "No such File object: "+r.PathValue("id"))
			return
		}
		do(w, f)
	}
}

func (s *Server) listFiles(w http.ResponseWriter, r *http.Request) {
	key := apiKey(r)
	s.bat.mu.Lock()
	var out []*mockFile
	for _, f := range s.bat.files {
		if f.key == key {
			out = append(out, f)
		}
	}
	s.bat.mu.Unlock()
	slices.SortFunc(out, func(a, b *mockFile) int { return strings.Compare(a.ID, b.ID) })
	writeReport(w, map[string]any{"object": "list", "data": out, "has_more": false})
}

func (s *Server) deleteFile(w http.ResponseWriter, r *http.Request) {
	f := s.file(apiKey(r), r.PathValue("id"))
	if f == nil {
		writeError(w, flavorOpenAI, http.StatusNotFound, "No such File object: "+r.PathValue("id"))
		return
	}
	s.bat.mu.Lock()
	delete(s.bat.files, f.ID)
	s.bat.mu.Unlock()
	writeReport(w, map[string]any{"id": f.ID, "object": "file", "deleted": true})
}

func (s *Server) batchDelay(r *http.Request) (time.Duration, error) {
	if v := header(r.Header, "X-Mock-Batch-Delay"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			return 0, fmt.Errorf("x-mock-batch-delay: bad duration %q", v)
		}
		return d, nil
	}
	return s.cfg.BatchDelay, nil
}

func (s *Server) addBatch(b *mockBatch) {
	s.bat.mu.Lock()
	s.bat.batches[b.id] = b
	s.bat.order = append(s.bat.order, b.id)
	s.bat.mu.Unlock()
}

func (s *Server) createBatch(w http.ResponseWriter, r *http.Request) {
	var req struct {
		InputFileID      string          `json:"input_file_id"`
		Endpoint         string          `json:"endpoint"`
		CompletionWindow string          `json:"completion_window"`
		Metadata         json.RawMessage `json:"metadata"`
	}
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBody)).Decode(&req); err != nil {
		writeError(w, flavorOpenAI, http.StatusBadRequest, "invalid JSON body: "+err.Error())
		return
	}
	delay, err := s.batchDelay(r)
	switch {
	case err != nil:
		writeError(w, flavorOpenAI, http.StatusBadRequest, err.Error())
		return
	case req.CompletionWindow != "24h":
		writeError(w, flavorOpenAI, http.StatusBadRequest, "completion_window: must be '24h'")
		return
	case !slices.Contains([]string{"/v1/chat/completions", "/v1/completions", "/v1/embeddings", "/v1/responses"}, req.Endpoint):
		writeError(w, flavorOpenAI, http.StatusBadRequest, "endpoint: unsupported "+strconv.Quote(req.Endpoint))
		return
	}
	key := apiKey(r)
	f := s.file(key, req.InputFileID)
	if f == nil {
		writeError(w, flavorOpenAI, http.StatusNotFound, "No such File object: "+req.InputFileID)
		return
	}
	b := &mockBatch{id: s.newID("batch_mock_"), key: key, endpoint: req.Endpoint, inputFile: f.ID, metadata: req.Metadata, created: s.now(), delay: delay}
	for i, raw := range bytes.Split(bytes.TrimSpace(f.content), []byte("\n")) {
		var l struct {
			CustomID string          `json:"custom_id"`
			Method   string          `json:"method"`
			URL      string          `json:"url"`
			Body     json.RawMessage `json:"body"`
		}
		if err := json.Unmarshal(raw, &l); err != nil || l.CustomID == "" || l.Method != http.MethodPost || l.URL != req.Endpoint {
			writeError(w, flavorOpenAI, http.StatusBadRequest, fmt.Sprintf("input file line %d: want {custom_id, method POST, url %s, body}", i+1, req.Endpoint))
			return
		}
		b.lines = append(b.lines, batchLine{customID: l.CustomID, url: l.URL, body: l.Body})
	}
	s.addBatch(b)
	writeReport(w, s.openAIBatch(b))
}

func (s *Server) createMessageBatch(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Requests []struct {
			CustomID string          `json:"custom_id"`
			Params   json.RawMessage `json:"params"`
		} `json:"requests"`
	}
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBody)).Decode(&req); err != nil || len(req.Requests) == 0 {
		writeError(w, flavorAnthropic, http.StatusBadRequest, "requests: Field required")
		return
	}
	delay, err := s.batchDelay(r)
	if err != nil {
		writeError(w, flavorAnthropic, http.StatusBadRequest, err.Error())
		return
	}
	b := &mockBatch{id: s.newID("msgbatch_mock_"), key: apiKey(r), anthropic: true, endpoint: "/v1/messages", created: s.now(), delay: delay}
	for i, q := range req.Requests {
		if q.CustomID == "" || len(q.Params) == 0 {
			writeError(w, flavorAnthropic, http.StatusBadRequest, fmt.Sprintf("requests.%d: custom_id and params are required", i))
			return
		}
		b.lines = append(b.lines, batchLine{customID: q.CustomID, url: "/v1/messages", body: q.Params})
	}
	s.addBatch(b)
	writeReport(w, s.messageBatch(r, b))
}

// batch returns the batch id of key (of the API asked), advanced to now.
func (s *Server) batch(r *http.Request, anthropic bool) *mockBatch {
	s.bat.mu.Lock()
	b := s.bat.batches[r.PathValue("id")]
	s.bat.mu.Unlock()
	if b == nil || b.key != apiKey(r) || b.anthropic != anthropic {
		return nil
	}
	s.advance(r.Context(), b)
	return b
}

// doneAt is when line i completes.
func (b *mockBatch) doneAt(i int) time.Time {
	return b.created.Add(b.delay * time.Duration(i+1) / time.Duration(len(b.lines)))
}

// advance serves every line whose time has come (and that was not
// cancelled), and writes the output and error files of an OpenAI batch once
// it ended. A line runs to its end even when the reader of the batch goes
// away (ctx's values, not its cancellation).
func (s *Server) advance(ctx context.Context, b *mockBatch) {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := s.now()
	for i := range b.lines {
		l := &b.lines[i]
		at := b.doneAt(i)
		if l.status != 0 || at.After(now) || !b.cancelled.IsZero() && !at.Before(b.cancelled) {
			continue
		}
		req := httptest.NewRequestWithContext(context.WithValue(context.WithoutCancel(ctx), batchLineKey{}, true), http.MethodPost, l.url, bytes.NewReader(l.body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+b.key)
		if b.anthropic {
			req.Header.Del("Authorization")
			req.Header.Set("X-Api-Key", b.key)
			req.Header.Set("Anthropic-Version", "2023-06-01")
		}
		rec := httptest.NewRecorder()
		s.mux.ServeHTTP(rec, req)
		l.status, l.reply = rec.Code, bytes.TrimSpace(rec.Body.Bytes())
	}
	if b.anthropic || b.outFile != "" || !b.ended(now) {
		return
	}
	var out, errs bytes.Buffer
	for i := range b.lines {
		l := &b.lines[i]
		if l.status == 0 {
			continue
		}
		line := map[string]any{
			"id": "batch_req_mock_" + strconv.Itoa(i+1), "custom_id": l.customID,
			"response": map[string]any{"status_code": l.status, "request_id": "req_mock_" + strconv.Itoa(i+1), "body": l.reply}, "error": nil,
		}
		enc, _ := json.Marshal(line)
		if l.status < 300 {
			out.Write(enc)
			out.WriteByte('\n')
		} else {
			errs.Write(enc)
			errs.WriteByte('\n')
		}
	}
	b.outFile = s.storeFile(b.key, b.id+"_output.jsonl", "batch_output", out.Bytes()).ID
	if errs.Len() > 0 {
		b.errFile = s.storeFile(b.key, b.id+"_error.jsonl", "batch_output", errs.Bytes()).ID
	}
}

// ended: every line completed, or the batch was cancelled.
func (b *mockBatch) ended(now time.Time) bool {
	return !b.cancelled.IsZero() || !b.doneAt(len(b.lines)-1).After(now)
}

func (b *mockBatch) cancel(now time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.cancelled.IsZero() && !b.ended(now) {
		b.cancelled = now
	}
}

func (s *Server) batchOp(anthropic bool, do func(*mockBatch, time.Time)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		b := s.batch(r, anthropic)
		if b == nil {
			f := flavorOpenAI
			if anthropic {
				f = flavorAnthropic
			}
			writeError(w, f, http.StatusNotFound, "No such batch: "+r.PathValue("id"))
			return
		}
		if do != nil {
			do(b, s.now())
			s.advance(r.Context(), b)
		}
		if anthropic {
			writeReport(w, s.messageBatch(r, b))
			return
		}
		writeReport(w, s.openAIBatch(b))
	}
}

func (s *Server) listBatches(anthropic bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		key := apiKey(r)
		s.bat.mu.Lock()
		var list []*mockBatch
		for _, id := range slices.Backward(s.bat.order) {
			if b := s.bat.batches[id]; b != nil && b.key == key && b.anthropic == anthropic {
				list = append(list, b)
			}
		}
		s.bat.mu.Unlock()
		data := []any{}
		for _, b := range list {
			s.advance(r.Context(), b)
			if anthropic {
				data = append(data, s.messageBatch(r, b))
			} else {
				data = append(data, s.openAIBatch(b))
			}
		}
		page := map[string]any{"data": data, "has_more": false, "first_id": nil, "last_id": nil}
		if !anthropic {
			page["object"] = "list"
		}
		if len(list) > 0 {
			page["first_id"], page["last_id"] = list[0].id, list[len(list)-1].id
		}
		writeReport(w, page)
	}
}

func nullTime(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.Unix()
}

// openAIBatch is the Batch object of b.
func (s *Server) openAIBatch(b *mockBatch) map[string]any {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := s.now()
	var completed, failed int
	for i := range b.lines {
		switch st := b.lines[i].status; {
		case st == 0:
		case st < 300:
			completed++
		default:
			failed++
		}
	}
	status, ended := "in_progress", b.ended(now)
	var completedAt, cancelledAt, cancellingAt time.Time
	switch {
	case !b.cancelled.IsZero():
		status, cancellingAt, cancelledAt = "cancelled", b.cancelled, b.cancelled
	case ended:
		status, completedAt = "completed", b.doneAt(len(b.lines)-1)
	}
	var out, errFile any
	if b.outFile != "" {
		out = b.outFile
	}
	if b.errFile != "" {
		errFile = b.errFile
	}
	meta := any(nil)
	if len(b.metadata) > 0 {
		meta = b.metadata
	}
	return map[string]any{
		"id": b.id, "object": "batch", "endpoint": b.endpoint, "errors": nil, "input_file_id": b.inputFile,
		"completion_window": "24h", "status": status, "output_file_id": out, "error_file_id": errFile,
		"created_at": b.created.Unix(), "in_progress_at": b.created.Unix(), "expires_at": b.created.Add(24 * time.Hour).Unix(),
		"finalizing_at": nullTime(completedAt), "completed_at": nullTime(completedAt), "failed_at": nil, "expired_at": nil,
		"cancelling_at": nullTime(cancellingAt), "cancelled_at": nullTime(cancelledAt),
		"request_counts": map[string]int{"total": len(b.lines), "completed": completed, "failed": failed},
		"metadata":       meta,
	}
}

// messageBatch is the MessageBatch object of b; results_url is on the
// host the request came to.
func (s *Server) messageBatch(r *http.Request, b *mockBatch) map[string]any {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := s.now()
	counts := map[string]int{"processing": 0, "succeeded": 0, "errored": 0, "canceled": 0, "expired": 0}
	for i := range b.lines {
		counts[b.lines[i].result(b.ended(now))]++
	}
	status, ended := "in_progress", b.ended(now)
	var endedAt, cancelAt any
	if !b.cancelled.IsZero() {
		cancelAt = b.cancelled.UTC().Format(time.RFC3339)
	}
	var results any
	if ended {
		status = "ended"
		end := b.cancelled
		if end.IsZero() {
			end = b.doneAt(len(b.lines) - 1)
		}
		endedAt = end.UTC().Format(time.RFC3339)
		results = "http://" + r.Host + "/v1/messages/batches/" + b.id + "/results"
	}
	return map[string]any{
		"id": b.id, "type": "message_batch", "processing_status": status, "request_counts": counts,
		"ended_at": endedAt, "created_at": b.created.UTC().Format(time.RFC3339),
		"expires_at": b.created.Add(24 * time.Hour).UTC().Format(time.RFC3339), "archived_at": nil,
		"cancel_initiated_at": cancelAt, "results_url": results,
	}
}

// result is the Anthropic result type of a line.
func (l *batchLine) result(ended bool) string {
	switch {
	case l.status == 0 && ended:
		return "canceled"
	case l.status == 0:
		return "processing"
	case l.status < 300:
		return "succeeded"
	default:
		return "errored"
	}
}

func (s *Server) messageBatchResults(w http.ResponseWriter, r *http.Request) {
	b := s.batch(r, true)
	if b == nil {
		writeError(w, flavorAnthropic, http.StatusNotFound, "No such batch: "+r.PathValue("id"))
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.ended(s.now()) {
		writeError(w, flavorAnthropic, http.StatusBadRequest, "Batch "+b.id+" has not ended: results are not available yet")
		return
	}
	w.Header().Set("content-type", "application/x-jsonl")
	for i := range b.lines {
		l := &b.lines[i]
		res := map[string]any{"type": l.result(true)}
		switch res["type"] {
		case "succeeded":
			res["message"] = l.reply
		case "errored":
			var e struct {
				Error json.RawMessage `json:"error"`
			}
			_ = json.Unmarshal(l.reply, &e)
			res["error"] = map[string]any{"type": "error", "error": e.Error}
		}
		enc, _ := json.Marshal(map[string]any{"custom_id": l.customID, "result": res})
		_, _ = w.Write(append(enc, '\n'))
	}
}

func (s *Server) deleteMessageBatch(w http.ResponseWriter, r *http.Request) {
	b := s.batch(r, true)
	if b == nil {
		writeError(w, flavorAnthropic, http.StatusNotFound, "No such batch: "+r.PathValue("id"))
		return
	}
	b.mu.Lock()
	ended := b.ended(s.now())
	b.mu.Unlock()
	if !ended {
		writeError(w, flavorAnthropic, http.StatusBadRequest, "Batch "+b.id+" is still in progress: cancel it first")
		return
	}
	s.bat.mu.Lock()
	delete(s.bat.batches, b.id)
	s.bat.mu.Unlock()
	writeReport(w, map[string]any{"id": b.id, "type": "message_batch_deleted"})
}
