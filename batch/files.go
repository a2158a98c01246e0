package batch

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/tollgate-ai/tollgate/store"
)

// OpenAI's Files API, for batch input files: an upload goes to the provider
// of the lines' model with each line's model rewritten to the deployment's,
// and is recorded as the key's, with the worst case of its lines; the other
// calls serve only the key's own files (another key's: 404, as OpenAI
// answers an unknown id).

// maxMemory is how much of a multipart upload stays in memory (the rest
// goes to temporary files).
const maxMemory = 32 << 20

func (s *Service) uploadFile(w http.ResponseWriter, r *http.Request) {
	c := callerOf(r)
	r.Body = http.MaxBytesReader(w, r.Body, s.maxUpload+1<<20)
	if err := r.ParseMultipartForm(maxMemory); err != nil {
		if errors.As(err, new(*http.MaxBytesError)) {
			fail(w, APIOpenAI, &apiError{status: http.StatusRequestEntityTooLarge, code: "request_too_large", msg: fmt.Sprintf("The file is larger than %d bytes.", s.maxUpload)})
			return
		}
		fail(w, APIOpenAI, &apiError{status: http.StatusBadRequest, msg: "Files are uploaded as multipart/form-data with the fields 'file' and 'purpose'."})
		return
	}
	defer func() { _ = r.MultipartForm.RemoveAll() }()
	purpose := r.FormValue("purpose")
	f, hdr, err := r.FormFile("file")
	switch {
	case err != nil:
		fail(w, APIOpenAI, &apiError{status: http.StatusBadRequest, param: "file", msg: "The field 'file' is required."})
		return
	case purpose != "batch":
		_ = f.Close()
		fail(w, APIOpenAI, &apiError{status: http.StatusBadRequest, param: "purpose", msg: fmt.Sprintf("Tollgate accepts files for batches only: purpose must be 'batch', not %q.", purpose)})
		return
	}
	content, err := io.ReadAll(io.LimitReader(f, s.maxUpload+1))
	_ = f.Close()
	if err != nil {
		fail(w, APIOpenAI, &apiError{status: http.StatusBadRequest, param: "file", msg: "The file could not be read."})
		return
	}
	if int64(len(content)) > s.maxUpload {
		fail(w, APIOpenAI, &apiError{status: http.StatusRequestEntityTooLarge, code: "request_too_large", msg: fmt.Sprintf("The file is larger than %d bytes.", s.maxUpload)})
		return
	}
	endpoint := firstURL(content)
	est, err := EstimateOpenAI(content, endpoint)
	if err != nil {
		fail(w, APIOpenAI, inputError(err, "file"))
		return
	}
	route, err := s.cat.Route(r.Context(), c, est.Model, APIOpenAI, "")
	if err != nil {
		fail(w, APIOpenAI, routeError(err, est.Model))
		return
	}
	up, contentType := uploadBody(hdr.Filename, content, route.ProviderModel)
	resp, err := s.call(r.Context(), route.Endpoint, APIOpenAI, http.MethodPost, "/files", up, contentType)
	if err != nil {
		s.unreachable(r, w, err)
		return
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		upstreamError(w, APIOpenAI, resp, route.Endpoint.APIKey)
		return
	}
	raw, err := readOK(resp)
	var obj struct {
		ID string `json:"id"`
	}
	if err == nil {
		err = json.Unmarshal(raw, &obj)
	}
	if err != nil || obj.ID == "" {
		s.internal(r, w, "read the provider's file", noID(err))
		return
	}
	rec := &FileRecord{
		ID: obj.ID, KeyID: c.KeyID, Provider: route.Provider, Deployment: route.Deployment, Model: route.Model,
		Endpoint: endpoint, Estimate: &est, Object: raw, CreatedAt: s.now().UTC(),
	}
	if err := s.st.AddFile(r.Context(), rec); err != nil {
		s.drop(r, route.Endpoint, APIOpenAI, "/files/"+obj.ID, http.MethodDelete)
		s.internal(r, w, "record the file", err)
		return
	}
	writeJSON(w, http.StatusOK, raw)
}

// drop undoes at the provider what the gateway could not record (best
// effort: a file or batch nobody can reach through the gateway).
func (s *Service) drop(r *http.Request, ep Endpoint, api API, path, method string) {
	resp, err := s.call(r.Context(), ep, api, method, path, nil, "")
	if err != nil {
		s.log.WarnContext(r.Context(), "batch: undo at the provider", "path", path, "error", err)
		return
	}
	_ = resp.Body.Close()
}

// firstURL is the url of the first line of a batch input file ("" when
// there is none: the estimate says what is wrong).
func firstURL(jsonl []byte) string {
	sc := bufio.NewScanner(bytes.NewReader(jsonl))
	sc.Buffer(make([]byte, 0, 64<<10), 8<<20)
	for sc.Scan() {
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		var l struct {
			URL string `json:"url"`
		}
		_ = json.Unmarshal(sc.Bytes(), &l)
		return l.URL
	}
	return ""
}

// rewriteOpenAIModels writes the lines with every body.model set to the
// deployment's model (the estimate has checked every line).
func rewriteOpenAIModels(out io.Writer, jsonl []byte, model string) error {
	m, _ := json.Marshal(model)
	sc := bufio.NewScanner(bytes.NewReader(jsonl))
	sc.Buffer(make([]byte, 0, 64<<10), 8<<20)
	for sc.Scan() {
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		var line, body map[string]json.RawMessage
		_ = json.Unmarshal(sc.Bytes(), &line)
		_ = json.Unmarshal(line["body"], &body)
		body["model"] = m
		line["body"], _ = json.Marshal(body)
		b, _ := json.Marshal(line)
		if _, err := out.Write(append(b, '\n')); err != nil {
			return err
		}
	}
	return sc.Err()
}

// uploadBody is the provider's upload, purpose "batch" and the file with
// its lines rewritten for model, written as the request is sent (no copy of
// the file in memory beside the one read). The client closing the reader
// (a failed request) ends the writer.
//
// Its length is measured first by a dry run (providers may refuse a chunked
// upload), so the request carries a Content-Length.
func uploadBody(name string, jsonl []byte, model string) (*sizedBody, string) {
	if name == "" {
		name = "batch.jsonl"
	}
	var n countingWriter
	dry := multipart.NewWriter(&n)
	_ = writeUpload(dry, name, jsonl, model) // a counter does not fail
	pr, pw := io.Pipe()
	mw := multipart.NewWriter(pw)
	_ = mw.SetBoundary(dry.Boundary()) // a boundary NewWriter made is valid
	go func() { pw.CloseWithError(writeUpload(mw, name, jsonl, model)) }()
	return &sizedBody{ReadCloser: pr, n: int64(n)}, mw.FormDataContentType()
}

func writeUpload(mw *multipart.Writer, name string, jsonl []byte, model string) error {
	if err := mw.WriteField("purpose", "batch"); err != nil {
		return err
	}
	fw, err := mw.CreateFormFile("file", name)
	if err != nil {
		return err
	}
	if err := rewriteOpenAIModels(fw, jsonl, model); err != nil {
		return err
	}
	return mw.Close()
}

type countingWriter int64

func (c *countingWriter) Write(p []byte) (int, error) {
	*c += countingWriter(len(p))
	return len(p), nil
}

// sizedBody is a request body of a known length (call sets it).
type sizedBody struct {
	io.ReadCloser
	n int64
}

// Size is the body's length.
func (b *sizedBody) Size() int64 { return b.n }

// ownedFile is the key's file id, or the 404 another key's or an unknown
// id gets.
func (s *Service) ownedFile(r *http.Request, id, param string) (FileRecord, *apiError) {
	f, err := s.st.File(r.Context(), id)
	switch {
	case errors.Is(err, store.ErrNotFound) || (err == nil && f.KeyID != callerOf(r).KeyID):
		return f, &apiError{status: http.StatusNotFound, param: param, msg: "No such File object: " + id}
	case err != nil:
		return f, &apiError{status: http.StatusServiceUnavailable, msg: "The gateway's store is unavailable."}
	}
	return f, nil
}

// listFiles lists the key's files from their records (purpose, order,
// after and limit as OpenAI's list takes them).
func (s *Service) listFiles(w http.ResponseWriter, r *http.Request) {
	recs, err := s.st.Files(r.Context(), callerOf(r).KeyID)
	if err != nil {
		s.internal(r, w, "list the files", err)
		return
	}
	type item struct {
		id      string
		created int64
		obj     json.RawMessage
	}
	q := r.URL.Query()
	items := make([]item, 0, len(recs))
	for _, f := range recs {
		var o struct {
			Purpose   string `json:"purpose"`
			CreatedAt int64  `json:"created_at"`
		}
		if json.Unmarshal(f.Object, &o) != nil {
			continue
		}
		if p := q.Get("purpose"); p == "" || p == o.Purpose {
			items = append(items, item{f.ID, o.CreatedAt, f.Object})
		}
	}
	desc := q.Get("order") != "asc"
	slices.SortStableFunc(items, func(a, b item) int {
		c := a.created - b.created
		if c == 0 {
			c = int64(strings.Compare(a.id, b.id))
		}
		if desc {
			c = -c
		}
		return int(max(min(c, 1), -1))
	})
	if after := q.Get("after"); after != "" {
		if i := slices.IndexFunc(items, func(it item) bool { return it.id == after }); i >= 0 {
			items = items[i+1:]
		}
	}
	limit := 10000
	if n, err := strconv.Atoi(q.Get("limit")); err == nil && n > 0 {
		limit = n
	}
	more := len(items) > limit
	items = items[:min(len(items), limit)]
	data := make([]json.RawMessage, len(items))
	for i, it := range items {
		data[i] = it.obj
	}
	page := map[string]any{"object": "list", "data": data, "has_more": more, "first_id": nil, "last_id": nil}
	if len(items) > 0 {
		page["first_id"], page["last_id"] = items[0].id, items[len(items)-1].id
	}
	writeJSON(w, http.StatusOK, page)
}

func (s *Service) retrieveFile(w http.ResponseWriter, r *http.Request) {
	s.fileCall(w, r, http.MethodGet, "")
}

func (s *Service) fileContent(w http.ResponseWriter, r *http.Request) {
	s.fileCall(w, r, http.MethodGet, "/content")
}

// deleteFile deletes the key's file at the provider and forgets it; the
// output of a batch not settled yet stays (the poller reads it).
func (s *Service) deleteFile(w http.ResponseWriter, r *http.Request) {
	f, e := s.ownedFile(r, r.PathValue("id"), "id")
	if e == nil && f.BatchID != "" {
		if _, err := s.st.Get(r.Context(), f.BatchID); err == nil {
			e = &apiError{status: http.StatusConflict, param: "id", msg: "The file is the output of batch " + f.BatchID + ", which the gateway has not settled yet; delete it once the batch is settled."}
		}
	}
	if e != nil {
		fail(w, APIOpenAI, e)
		return
	}
	if s.relayCall(w, r, f.Provider, "file", APIOpenAI, http.MethodDelete, "/files/"+f.ID) {
		if err := s.st.RemoveFile(r.Context(), f.ID); err != nil {
			s.log.ErrorContext(r.Context(), "batch: forget a deleted file", "file", f.ID, "error", err)
		}
	}
}

// fileCall forwards a call on the key's file to its provider and relays the
// answer.
func (s *Service) fileCall(w http.ResponseWriter, r *http.Request, method, suffix string) {
	f, e := s.ownedFile(r, r.PathValue("id"), "id")
	if e != nil {
		fail(w, APIOpenAI, e)
		return
	}
	s.relayCall(w, r, f.Provider, "file", APIOpenAI, method, "/files/"+f.ID+suffix)
}

// relayCall makes one call to a provider (what: the file or batch it is
// on, for the error) and relays its answer (streamed: a file's content may
// be large); it reports whether the provider answered 2xx.
func (s *Service) relayCall(w http.ResponseWriter, r *http.Request, provider, what string, api API, method, path string) bool {
	ep, err := s.cat.Endpoint(r.Context(), provider)
	if err != nil {
		s.internal(r, w, "find the "+what+"'s provider", err)
		return false
	}
	resp, err := s.call(r.Context(), ep, api, method, path, nil, "")
	if err != nil {
		s.unreachable(r, w, err)
		return false
	}
	defer resp.Body.Close()
	return relay(w, api, resp, ep.APIKey)
}

// relay streams a provider's 2xx answer to the client, or relays its error;
// it reports whether it was a 2xx.
func relay(w http.ResponseWriter, api API, resp *http.Response, key string) bool {
	if resp.StatusCode/100 != 2 {
		upstreamError(w, api, resp, key)
		return false
	}
	for _, h := range []string{"Content-Type", "Content-Length", "Content-Disposition"} {
		if v := resp.Header.Get(h); v != "" {
			w.Header().Set(h, v)
		}
	}
	w.WriteHeader(resp.StatusCode)
	_, _ = io.Copy(w, resp.Body)
	return true
}
