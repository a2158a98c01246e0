package responses

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/tollgate-ai/tollgate/schema/openai"
	"github.com/tollgate-ai/tollgate/translate"
)

// Stored responses of the Responses API. For a translated provider the
// gateway keeps each response made with store (the default) true, so that
// previous_response_id works by prepending the stored history (its input
// items and output), and GET/DELETE /v1/responses/{id} and
// GET /v1/responses/{id}/input_items answer. A stored response is visible to
// the key that made it only: another key gets 404. Native upstreams keep
// their own responses: previous_response_id passes through to them, once
// the processor checked that the key owns it (responsesapi/owner.go).

// ErrNotFound is what a Store returns for an unknown, expired or another
// key's response.
var ErrNotFound = errors.New("extproc: response not found")

// Stored is one stored response: the response object and the input items
// (history included) it was made from, both JSON.
type Stored struct {
	ID        string
	KeyID     string
	Response  []byte
	Input     []byte
	Run       string // the run it belongs to (ownership.Owner.Run)
	CreatedAt time.Time
}

// Store keeps stored responses (the gateway adapts the store's, with its
// retention).
type Store interface {
	PutResponse(ctx context.Context, r *Stored) error
	// GetResponse returns ErrNotFound for an unknown, expired or another
	// key's response.
	GetResponse(ctx context.Context, keyID, id string) (*Stored, error)
	DeleteResponse(ctx context.Context, keyID, id string) error
}

// History is a stored response as input items: its input, then its output
// (messages as assistant messages, function calls as function_call items).
func History(sr *Stored) ([]openai.InputItem, error) {
	var items []openai.InputItem
	if err := json.Unmarshal(sr.Input, &items); err != nil {
		return nil, err
	}
	var r openai.Response
	if err := json.Unmarshal(sr.Response, &r); err != nil {
		return nil, err
	}
	for _, o := range r.Output {
		switch o.Type {
		case "message":
			var parts []openai.InputContent
			if o.Content != nil {
				for _, c := range *o.Content {
					parts = append(parts, openai.InputContent{Type: "output_text", Text: c.Text})
				}
			}
			content, err := json.Marshal(parts)
			if err != nil {
				return nil, err
			}
			items = append(items, openai.InputItem{Type: "message", ID: o.ID, Role: "assistant", Content: content})
		case "function_call":
			it := openai.InputItem{Type: "function_call", ID: o.ID, CallID: o.CallID, Name: o.Name}
			if o.Arguments != nil {
				it.Arguments = *o.Arguments
			}
			items = append(items, it)
		}
	}
	return items, nil
}

// SaveFunc returns what a Responses translator calls with its finished
// response: Save under keyID, within timeout and whatever becomes of ctx's
// cancellation (the request may be over), a failure told to failed.
func SaveFunc(ctx context.Context, rs Store, keyID string, timeout time.Duration, now func() time.Time, failed func(id string, err error)) func(*openai.Response, []openai.InputItem) {
	base := context.WithoutCancel(ctx)
	return func(r *openai.Response, input []openai.InputItem) {
		ctx, cancel := context.WithTimeout(base, timeout)
		defer cancel()
		if err := Save(ctx, rs, keyID, r, input, now()); err != nil {
			failed(r.ID, err)
		}
	}
}

// Save stores a response; input items without an id get one, as
// input_items lists them with ids.
func Save(ctx context.Context, rs Store, keyID string, r *openai.Response, input []openai.InputItem, now time.Time) error {
	base := strings.TrimPrefix(r.ID, "resp_")
	for i := range input {
		if input[i].ID != "" {
			continue
		}
		prefix := "msg_"
		switch input[i].Type {
		case "function_call":
			prefix = "fc_"
		case "function_call_output":
			prefix = "fco_"
		case "reasoning":
			prefix = "rs_"
		}
		input[i].ID = prefix + base + "_in" + strconv.Itoa(i)
		if input[i].Type == "" {
			input[i].Type = "message"
		}
	}
	in, err := json.Marshal(input)
	if err != nil {
		return err
	}
	resp, err := json.Marshal(r)
	if err != nil {
		return err
	}
	return rs.PutResponse(ctx, &Stored{ID: r.ID, KeyID: keyID, Response: resp, Input: in, CreatedAt: now})
}

// inputItemList is the page of GET /v1/responses/{id}/input_items: the whole
// list in one page.
type inputItemList struct {
	Object  string            `json:"object"`
	Data    []json.RawMessage `json:"data"`
	FirstID *string           `json:"first_id"`
	LastID  *string           `json:"last_id"`
	HasMore bool              `json:"has_more"`
}

// StoreError is a failure to read the store or a stored record: the caller
// answers it as unavailable. Op is what failed ("read", "delete"), "" for a
// stored record that does not decode.
type StoreError struct {
	Op  string
	Err error
}

func (e *StoreError) Error() string { return e.Op + " stored response: " + e.Err.Error() }

func (e *StoreError) Unwrap() error { return e.Err }

// Serve answers GET and DELETE /v1/responses/{id} and
// GET /v1/responses/{id}/input_items (order=asc|desc, desc by default as in
// OpenAI's API) from the key's stored responses (rs nil: none is stored).
// An error is a *StoreError.
func Serve(ctx context.Context, rs Store, keyID, method, rawPath string) (status int, body []byte, err error) {
	path, query, _ := strings.Cut(rawPath, "?")
	rest := strings.TrimPrefix(path, "/v1/responses/")
	id, sub, _ := strings.Cut(rest, "/")
	id, err = url.PathUnescape(id)
	switch {
	case err != nil || id == "" || (sub != "" && sub != "input_items"),
		sub == "" && method != http.MethodGet && method != http.MethodDelete,
		sub != "" && method != http.MethodGet:
		return errorReply(&translate.APIError{
			Status: http.StatusNotFound, Type: translate.TypeInvalidRequest, Code: translate.CodeUnknownURL,
			Message: fmt.Sprintf("Invalid URL (%s %s)", method, path),
		})
	}
	notFound := &translate.APIError{
		Status: http.StatusNotFound, Type: translate.TypeInvalidRequest,
		Message: fmt.Sprintf("Response with id '%s' not found.", id),
	}
	if rs == nil {
		return errorReply(notFound)
	}
	if method == http.MethodDelete {
		err := rs.DeleteResponse(ctx, keyID, id)
		switch {
		case errors.Is(err, ErrNotFound):
			return errorReply(notFound)
		case err != nil:
			return 0, nil, &StoreError{"delete", err}
		}
		return jsonReply(struct {
			ID      string `json:"id"`
			Object  string `json:"object"`
			Deleted bool   `json:"deleted"`
		}{id, "response", true})
	}
	sr, err := rs.GetResponse(ctx, keyID, id)
	switch {
	case errors.Is(err, ErrNotFound):
		return errorReply(notFound)
	case err != nil:
		return 0, nil, &StoreError{"read", err}
	}
	if sub == "" {
		return http.StatusOK, sr.Response, nil
	}
	list := inputItemList{Object: "list", Data: []json.RawMessage{}}
	if err := json.Unmarshal(sr.Input, &list.Data); err != nil {
		return 0, nil, &StoreError{"", err}
	}
	if q, _ := url.ParseQuery(query); q.Get("order") != "asc" {
		for i, j := 0, len(list.Data)-1; i < j; i, j = i+1, j-1 {
			list.Data[i], list.Data[j] = list.Data[j], list.Data[i]
		}
	}
	if n := len(list.Data); n > 0 {
		var first, last struct {
			ID string `json:"id"`
		}
		_ = json.Unmarshal(list.Data[0], &first)
		_ = json.Unmarshal(list.Data[n-1], &last)
		list.FirstID, list.LastID = &first.ID, &last.ID
	}
	return jsonReply(list)
}

func errorReply(e *translate.APIError) (int, []byte, error) {
	return e.Status, e.OpenAIBody(), nil
}

// jsonReply is v as a 200 JSON body (the processor's jsonReply).
func jsonReply(v any) (int, []byte, error) {
	body, err := json.Marshal(v)
	if err != nil {
		return errorReply(&translate.APIError{Status: 500, Type: translate.TypeServer, Message: "internal error"})
	}
	return http.StatusOK, body, nil
}
