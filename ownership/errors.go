package ownership

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/tollgate-ai/tollgate/translate"
)

// NotFoundPrevious is OpenAI's 404 for a previous_response_id.
func NotFoundPrevious(id string) *translate.APIError {
	return &translate.APIError{
		Status: http.StatusNotFound, Type: translate.TypeInvalidRequest, Code: "previous_response_not_found", Param: "previous_response_id",
		Message: fmt.Sprintf("Previous response with id '%s' not found.", id),
	}
}

// NotFoundResponse is OpenAI's 404 for a response id in the path.
func NotFoundResponse(id string) *translate.APIError {
	return &translate.APIError{
		Status: http.StatusNotFound, Type: translate.TypeInvalidRequest,
		Message: fmt.Sprintf("Response with id '%s' not found.", id),
	}
}

// NotFoundConversationPath is OpenAI's 404 for a conversation id in the
// path; NotFoundConversationParam for a Responses request's conversation
// member.
func NotFoundConversationPath(id string) *translate.APIError { return notFoundConversation(id, "") }

// NotFoundConversationParam: see NotFoundConversationPath.
func NotFoundConversationParam(id string) *translate.APIError {
	return notFoundConversation(id, "conversation")
}

func notFoundConversation(id, param string) *translate.APIError {
	return &translate.APIError{
		Status: http.StatusNotFound, Type: translate.TypeInvalidRequest, Param: param,
		Message: fmt.Sprintf("Conversation with id '%s' not found.", id),
	}
}

// ErrHolderGone: the deployment holding an id is no longer in its group.
var ErrHolderGone = errors.New("ownership: the deployment holding the response is gone")

// HolderCooling: the deployment holding an id is cooling down; RetryAfter is
// when it may serve again.
type HolderCooling struct {
	Deployment string
	RetryAfter time.Duration
}

func (e *HolderCooling) Error() string {
	return "ownership: deployment " + e.Deployment + " is cooling down"
}

// HolderMessage is the client's message when the deployment holding id
// cannot serve it: cooling down (err is a *HolderCooling) or gone.
func HolderMessage(err error, id string) string {
	var hc *HolderCooling
	if errors.As(err, &hc) {
		return fmt.Sprintf("The deployment holding %s '%s' is cooling down after failures; retry shortly (the conversation stays there).", HeldKind(id), id)
	}
	return fmt.Sprintf("The deployment holding %s '%s' is no longer available to this key (or not in the model group the request names).", HeldKind(id), id)
}
