package responsesapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/tollgate-ai/tollgate/translate"
	"github.com/tollgate-ai/tollgate/translate/responses"
)

// Stored responses of the Responses API on translated providers
// (translate/responses holds the store interface and the history; the
// processor calls Prepare before admission and the translator saves the
// finished response).

// Prepare runs before admission for a request whose translator is tr, on
// target, of body: on a translated provider the history of
// previous_response_id is loaded (it counts as input for the reservation:
// its bytes are added to *promptBytes) and the finished response will be
// stored.
func (sv *Service[R]) Prepare(ctx context.Context, s Stream[R], st *State, tr translate.Translator, target *translate.Target, body []byte, promptBytes *int64) *translate.APIError {
	rt, ok := tr.(translate.ResponsesTranslator)
	if !ok {
		return nil
	}
	v := rt.ChatPath(target)
	if v == nil {
		return nil
	}
	var prev string
	if m, err := translate.TopLevelMember(body, "previous_response_id"); err == nil && m.OK() && !m.IsNull(body) {
		var ok bool
		if prev, ok = translate.StringValue(body, m); !ok {
			return translate.ErrInvalidRequest("Invalid 'previous_response_id': must be a string.", "previous_response_id")
		}
	}
	rs := sv.Store
	if prev != "" {
		sr, err := st.prevStored, error(nil)
		switch {
		case sr != nil && sr.ID == prev: // read by PinPrevious (owner.go)
		case rs != nil:
			sr, err = rs.GetResponse(ctx, s.KeyID(), prev)
		default:
			err = responses.ErrNotFound
		}
		switch {
		case errors.Is(err, responses.ErrNotFound):
			return &translate.APIError{
				Status: http.StatusNotFound, Type: translate.TypeInvalidRequest, Code: "previous_response_not_found", Param: "previous_response_id",
				Message: fmt.Sprintf("Previous response with id '%s' not found.", prev),
			}
		case err != nil:
			sv.Log.Warn("read stored response failed", "request_id", s.RequestID(), "err", err)
			return translate.ErrUnavailable()
		}
		history, err := responses.History(sr)
		if err != nil {
			sv.Log.Warn("stored response unreadable", "request_id", s.RequestID(), "response", prev, "err", err)
			return translate.ErrUnavailable()
		}
		v.History = history
		*promptBytes += int64(len(sr.Input) + len(sr.Response)) // the history is input too
		st.continues(prev, sr.Run)
	}
	if rs != nil {
		id := s.RequestID()
		v.Done = responses.SaveFunc(ctx, runStore{rs, st}, s.KeyID(), sv.SettleTimeout, sv.Now, func(resp string, err error) {
			sv.Log.Warn("store response failed", "request_id", id, "response", resp, "err", err)
		})
	}
	return nil
}

// Serve answers GET and DELETE /v1/responses/{id} and
// GET /v1/responses/{id}/input_items from the key's stored responses.
func (sv *Service[R]) Serve(ctx context.Context, s Stream[R], method, path string) (status int, body []byte) {
	status, body, err := responses.Serve(ctx, sv.Store, s.KeyID(), method, path)
	if err != nil {
		var se *responses.StoreError
		if errors.As(err, &se) && se.Op != "" {
			sv.Log.Warn(se.Op+" stored response failed", "request_id", s.RequestID(), "err", se.Err)
		}
		e := translate.ErrUnavailable()
		return e.Status, e.OpenAIBody()
	}
	return status, body
}
