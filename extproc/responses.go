package extproc

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/tollgate-ai/tollgate/translate"
	"github.com/tollgate-ai/tollgate/translate/responses"
)

// Stored responses of the Responses API (translate/responses holds the store
// interface and the history; the processor loads it before admission and
// saves the finished response).

// ErrResponseNotFound is what a ResponseStore returns for an unknown, expired
// or another key's response.
var ErrResponseNotFound = responses.ErrNotFound

// StoredResponse is one stored response (responses.Stored).
type StoredResponse = responses.Stored

// ResponseStore keeps stored responses (responses.Store; the gateway adapts
// the store's, with its retention).
type ResponseStore = responses.Store

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
			return translate.ErrUnavailable()
		}
		history, err := responses.History(sr)
		if err != nil {
			s.p.log.Warn("stored response unreadable", "request_id", s.id, "response", prev, "err", err)
			return translate.ErrUnavailable()
		}
		v.History = history
		s.promptBytes += int64(len(sr.Input) + len(sr.Response)) // the history is input too
	}
	if rs != nil {
		id := s.id
		v.Done = responses.SaveFunc(ctx, rs, s.principal.KeyID, s.p.settleTimeout, s.p.now, func(resp string, err error) {
			s.p.log.Warn("store response failed", "request_id", id, "response", resp, "err", err)
		})
	}
	return nil
}

// storedResponseReply answers GET and DELETE /v1/responses/{id} and
// GET /v1/responses/{id}/input_items from the key's stored responses.
func storedResponseReply(ctx context.Context, s *stream) *apiReply {
	status, body, err := responses.Serve(ctx, s.p.responses, s.principal.KeyID, s.method, s.path)
	if err != nil {
		var se *responses.StoreError
		if errors.As(err, &se) && se.Op != "" {
			s.p.log.Warn(se.Op+" stored response failed", "request_id", s.id, "err", se.Err)
		}
		e := translate.ErrUnavailable()
		return &apiReply{Status: e.Status, Body: e.OpenAIBody()}
	}
	return &apiReply{Status: status, Body: body}
}
