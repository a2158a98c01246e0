package extproc

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
// their own responses: previous_response_id passes through to them.

// ErrResponseNotFound is what a ResponseStore returns for an unknown, expired
// or another key's response.
var ErrResponseNotFound = errors.New("extproc: response not found")

// StoredResponse is one stored response: the response object and the input
// items (history included) it was made from, both JSON.
type StoredResponse struct {
	ID        string
	KeyID     string
	Response  []byte
	Input     []byte
	CreatedAt time.Time
}

// ResponseStore keeps stored responses (the gateway adapts the store's, with
// its retention).
type ResponseStore interface {
	PutResponse(ctx context.Context, r *StoredResponse) error
	// GetResponse returns ErrResponseNotFound for an unknown, expired or
	// another key's response.
	GetResponse(ctx context.Context, keyID, id string) (*StoredResponse, error)
	DeleteResponse(ctx context.Context, keyID, id string) error
}

// WithResponseStore keeps the Responses API's stored responses in rs; without
// it nothing is stored and previous_response_id is refused on translated
// providers.
func WithResponseStore(rs ResponseStore) Option {
	return func(p *Processor) { p.responses = rs }
}

func init() {
	registerEndpoint(&endpoint{Path: "/v1/responses/", Prefix: true, Reply: storedResponseReply})
}

// prepareResponses runs before admission for a Responses request on a
// translated provider: the history of previous_response_id is loaded (it
// counts as input for the reservation) and the finished response will be
// stored.
func (s *stream) prepareResponses(ctx context.Context) *translate.APIError {
	rt, ok := s.tr.(translate.ResponsesTranslator)
	if !ok {
		return nil
	}
	v := rt.ChatPath(s.target)
	if v == nil {
		return nil
	}
	var prev string
	if m, err := translate.TopLevelMember(s.in.Body, "previous_response_id"); err == nil && m.OK() && !m.IsNull(s.in.Body) {
		var ok bool
		if prev, ok = translate.StringValue(s.in.Body, m); !ok {
			return translate.ErrInvalidRequest("Invalid 'previous_response_id': must be a string.", "previous_response_id")
		}
	}
	rs := s.p.responses
	if prev != "" {
		var sr *StoredResponse
		err := ErrResponseNotFound
		if rs != nil {
			sr, err = rs.GetResponse(ctx, s.principal.KeyID, prev)
		}
		switch {
		case errors.Is(err, ErrResponseNotFound):
			return &translate.APIError{
				Status: http.StatusNotFound, Type: translate.TypeInvalidRequest, Code: "previous_response_not_found", Param: "previous_response_id",
				Message: fmt.Sprintf("Previous response with id '%s' not found.", prev),
			}
		case err != nil:
			s.p.log.Warn("read stored response failed", "request_id", s.id, "err", err)
			return errUnavailable()
		}
		history, err := historyOf(sr)
		if err != nil {
			s.p.log.Warn("stored response unreadable", "request_id", s.id, "response", prev, "err", err)
			return errUnavailable()
		}
		v.History = history
		s.promptBytes += int64(len(sr.Input) + len(sr.Response)) // the history is input too
	}
	if rs != nil {
		keyID, base := s.principal.KeyID, context.WithoutCancel(ctx)
		v.Done = func(r *openai.Response, input []openai.InputItem) {
			ctx, cancel := context.WithTimeout(base, s.p.settleTimeout)
			defer cancel()
			if err := saveResponse(ctx, rs, keyID, r, input, s.p.now()); err != nil {
				s.p.log.Warn("store response failed", "request_id", s.id, "response", r.ID, "err", err)
			}
		}
	}
	return nil
}

// historyOf is a stored response as input items: its input, then its output
// (messages as assistant messages, function calls as function_call items).
func historyOf(sr *StoredResponse) ([]openai.InputItem, error) {
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

// saveResponse stores a response; input items without an id get one, as
// input_items lists them with ids.
func saveResponse(ctx context.Context, rs ResponseStore, keyID string, r *openai.Response, input []openai.InputItem, now time.Time) error {
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
	return rs.PutResponse(ctx, &StoredResponse{ID: r.ID, KeyID: keyID, Response: resp, Input: in, CreatedAt: now})
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

// storedResponseReply answers GET and DELETE /v1/responses/{id} and
// GET /v1/responses/{id}/input_items (order=asc|desc, desc by default as in
// OpenAI's API) from the key's stored responses.
func storedResponseReply(ctx context.Context, s *stream) *apiReply {
	path, query, _ := strings.Cut(s.path, "?")
	rest := strings.TrimPrefix(path, "/v1/responses/")
	id, sub, _ := strings.Cut(rest, "/")
	id, err := url.PathUnescape(id)
	switch {
	case err != nil || id == "" || (sub != "" && sub != "input_items"),
		sub == "" && s.method != http.MethodGet && s.method != http.MethodDelete,
		sub != "" && s.method != http.MethodGet:
		return errorReply(&translate.APIError{
			Status: http.StatusNotFound, Type: translate.TypeInvalidRequest, Code: translate.CodeUnknownURL,
			Message: fmt.Sprintf("Invalid URL (%s %s)", s.method, path),
		})
	}
	notFound := errorReply(&translate.APIError{
		Status: http.StatusNotFound, Type: translate.TypeInvalidRequest,
		Message: fmt.Sprintf("Response with id '%s' not found.", id),
	})
	rs := s.p.responses
	if rs == nil {
		return notFound
	}
	if s.method == http.MethodDelete {
		err := rs.DeleteResponse(ctx, s.principal.KeyID, id)
		switch {
		case errors.Is(err, ErrResponseNotFound):
			return notFound
		case err != nil:
			s.p.log.Warn("delete stored response failed", "request_id", s.id, "err", err)
			return errorReply(errUnavailable())
		}
		return jsonReply(struct {
			ID      string `json:"id"`
			Object  string `json:"object"`
			Deleted bool   `json:"deleted"`
		}{id, "response", true})
	}
	sr, err := rs.GetResponse(ctx, s.principal.KeyID, id)
	switch {
	case errors.Is(err, ErrResponseNotFound):
		return notFound
	case err != nil:
		s.p.log.Warn("read stored response failed", "request_id", s.id, "err", err)
		return errorReply(errUnavailable())
	}
	if sub == "" {
		return &apiReply{Status: http.StatusOK, Body: sr.Response}
	}
	list := inputItemList{Object: "list", Data: []json.RawMessage{}}
	if err := json.Unmarshal(sr.Input, &list.Data); err != nil {
		return errorReply(errUnavailable())
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

func errorReply(e *translate.APIError) *apiReply {
	return &apiReply{Status: e.Status, Body: e.OpenAIBody()}
}
