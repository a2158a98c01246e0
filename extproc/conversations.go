package extproc

import (
	"context"
	"fmt"
	"net/http"

	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"

	"github.com/tollgate-ai/tollgate/ownership"
	"github.com/tollgate-ai/tollgate/translate"
)

// OpenAI's Conversations API (issue 37) on providers that serve the
// Responses API natively. The provider keeps the conversations; the gateway
// owns their ids as it owns native response ids (ResponseOwners): POST
// /v1/conversations goes to a native deployment of the model group the
// x-tollgate-model header names (or of the key's only native group) and the
// id it hands out is recorded for the key and that deployment; every other
// call (GET, POST and DELETE /v1/conversations/{id}, its items) is admitted
// only for the owning key — another key, or an id the gateway never handed
// out, gets 404 before anything reaches the provider — and forwarded to the
// deployment holding it, with its credential. A response made with
// `conversation` is pinned to that deployment (responses_owner.go). None of
// these calls is charged: the provider bills the responses, not the
// conversations.

// hdrModel names the model group of a request that has no body member for
// it (POST /v1/conversations).
const hdrModel = "x-tollgate-model"

func init() {
	registerEndpoint(&endpoint{Path: "/v1/conversations", Reply: conversationReply})
	registerEndpoint(&endpoint{Path: "/v1/conversations/", Prefix: true, Reply: conversationReply})
}

// conversationReply answers what forwardConversation did not forward: an
// unknown conversation (the gateway keeps none of its own).
func conversationReply(_ context.Context, s *stream) *apiReply {
	id, _, _ := ownership.ConversationPath(s.path)
	e := ownership.NotFoundConversationPath(id)
	return &apiReply{Status: e.Status, Body: e.OpenAIBody()}
}

// forwardConversation answers, at request headers, a Conversations API
// call: the creation sent to a native deployment of the chosen group, any
// other call to the deployment holding the conversation (404 for another
// key's or an unknown one, 503 while its deployment cools down).
func (s *stream) forwardConversation(ctx context.Context) *extprocv3.ProcessingResponse {
	id, rest, ok := ownership.ConversationPath(s.path)
	if !ok {
		return nil
	}
	if id == "" {
		if s.method != http.MethodPost {
			return nil // the endpoint's 404
		}
		return s.createConversation(ctx, rest)
	}
	o, e := s.keyOwner(ctx, id, "conversation", ownership.NotFoundConversationPath)
	switch {
	case e != nil:
		return s.reject(e)
	case o == nil:
		return s.reject(ownership.NotFoundConversationPath(id))
	}
	target, err := s.resolvePinned(ctx, o)
	if err != nil || target == nil {
		return s.reject(pinnedError(err, id))
	}
	// A DELETE of the conversation itself forgets it (not of one of its items).
	s.own.forget = ownership.DeletesConversation(s.method, rest)
	return s.forwardTo(target, o, rest, true)
}

// createConversation sends POST /v1/conversations to a native deployment of
// the group x-tollgate-model names, or of the key's only native group; its
// reply's id is recorded for the key (forwardedBody).
func (s *stream) createConversation(ctx context.Context, rest string) *extprocv3.ProcessingResponse {
	model := s.own.model
	if model == "" {
		var native []string
		for _, m := range s.p.cat.Models(ctx, s.principal) {
			if t, err := s.p.cat.Resolve(ctx, s.principal, m.ID); err == nil && t != nil && translate.NativeResponses(t) {
				native = append(native, m.ID)
			}
		}
		if len(native) != 1 {
			return s.reject(translate.ErrInvalidRequest(fmt.Sprintf(
				"Name the model group that holds the conversation in the %s header: this key may use %d groups whose provider serves conversations.", hdrModel, len(native)), ""))
		}
		model = native[0]
	}
	target, err := s.resolve(ctx, model)
	if err != nil || target == nil {
		return s.reject(resolveError(s.id, s.p.log, model, err))
	}
	if !translate.NativeResponses(target) {
		return s.reject(translate.ErrInvalidRequest(fmt.Sprintf(
			"The model `%s` cannot hold conversations: its provider does not serve the Responses API natively.", model), hdrModel))
	}
	o := &ResponseOwner{KeyID: s.principal.KeyID, Deployment: target.Deployment, Model: model, Store: true}
	s.own.create = true
	return s.forwardTo(target, o, rest, true)
}
