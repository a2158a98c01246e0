package responsesapi

import (
	"context"
	"fmt"
	"net/http"

	"github.com/tollgate-ai/tollgate/ownership"
	"github.com/tollgate-ai/tollgate/translate"
)

// OpenAI's Conversations API (issue 37) on providers that serve the
// Responses API natively. The provider keeps the conversations; the gateway
// owns their ids as it owns native response ids (Owners): POST
// /v1/conversations goes to a native deployment of the model group the
// x-tollgate-model header names (or of the key's only native group) and the
// id it hands out is recorded for the key and that deployment; every other
// call (GET, POST and DELETE /v1/conversations/{id}, its items) is admitted
// only for the owning key — another key, or an id the gateway never handed
// out, gets 404 before anything reaches the provider — and forwarded to the
// deployment holding it, with its credential. A response made with
// `conversation` is pinned to that deployment (owner.go). None of
// these calls is charged: the provider bills the responses, not the
// conversations.

// HdrModel names the model group of a request that has no body member for
// it (POST /v1/conversations).
const HdrModel = "x-tollgate-model"

// UnknownConversation answers what Forward did not forward on
// /v1/conversations: an unknown conversation (the gateway keeps none of its
// own).
func UnknownConversation(path string) (status int, body []byte) {
	id, _, _ := ownership.ConversationPath(path)
	e := ownership.NotFoundConversationPath(id)
	return e.Status, e.OpenAIBody()
}

// forwardConversation answers, at request headers, a Conversations API
// call: the creation sent to a native deployment of the chosen group, any
// other call to the deployment holding the conversation (404 for another
// key's or an unknown one, 503 while its deployment cools down).
func (sv *Service[R]) forwardConversation(ctx context.Context, s Stream[R], st *State, method, path string) (*Forward, *translate.APIError) {
	id, rest, ok := ownership.ConversationPath(path)
	if !ok {
		return nil, nil
	}
	if id == "" {
		if method != http.MethodPost {
			return nil, nil // the endpoint's 404
		}
		return sv.createConversation(ctx, s, st, rest)
	}
	o, e := sv.keyOwner(ctx, s, id, "conversation", ownership.NotFoundConversationPath)
	switch {
	case e != nil:
		return nil, e
	case o == nil:
		return nil, ownership.NotFoundConversationPath(id)
	}
	target, err := sv.ResolvePinned(ctx, s, o)
	if err != nil || target == nil {
		return nil, pinnedError(err, id)
	}
	// A DELETE of the conversation itself forgets it (not of one of its items).
	st.forget = ownership.DeletesConversation(method, rest)
	return forwardTo(st, target, o, rest, true), nil
}

// createConversation sends POST /v1/conversations to a native deployment of
// the group x-tollgate-model names, or of the key's only native group; its
// reply's id is recorded for the key (ForwardedBody).
func (sv *Service[R]) createConversation(ctx context.Context, s Stream[R], st *State, rest string) (*Forward, *translate.APIError) {
	model := st.model
	if model == "" {
		var native []string
		for _, m := range s.Models(ctx) {
			if t, err := s.Resolve(ctx, m.ID); err == nil && t != nil && translate.NativeResponses(t) {
				native = append(native, m.ID)
			}
		}
		if len(native) != 1 {
			return nil, translate.ErrInvalidRequest(fmt.Sprintf(
				"Name the model group that holds the conversation in the %s header: this key may use %d groups whose provider serves conversations.", HdrModel, len(native)), "")
		}
		model = native[0]
	}
	target, err := s.Route(ctx, model)
	if err != nil || target == nil {
		return nil, s.ResolveError(model, err)
	}
	if !translate.NativeResponses(target) {
		return nil, translate.ErrInvalidRequest(fmt.Sprintf(
			"The model `%s` cannot hold conversations: its provider does not serve the Responses API natively.", model), HdrModel)
	}
	o := &Owner{KeyID: s.KeyID(), Deployment: target.Deployment, Model: model, Store: true}
	st.create = true
	return forwardTo(st, target, o, rest, true), nil
}
