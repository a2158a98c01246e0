package ownership

import (
	"net/http"
	"net/url"
	"strings"
)

// ResponsePath reads a call on a stored response: GET or DELETE
// /v1/responses/{id}, GET …/input_items, POST …/cancel. id is the response's,
// sub its sub-resource ("", "input_items" or "cancel"), rest the path after
// /v1/responses (as the provider's path takes it); ok is false for any other
// path or method.
func ResponsePath(method, path string) (id, sub, rest string, ok bool) {
	rest, ok = strings.CutPrefix(path, "/v1/responses")
	if !ok {
		return "", "", "", false
	}
	p, _, _ := strings.Cut(rest, "?")
	idPart, sub, _ := strings.Cut(strings.TrimPrefix(p, "/"), "/")
	id, err := url.PathUnescape(idPart)
	if err != nil || id == "" {
		return "", "", "", false
	}
	switch {
	case sub == "" && (method == http.MethodGet || method == http.MethodDelete),
		sub == "input_items" && method == http.MethodGet,
		sub == "cancel" && method == http.MethodPost:
		return id, sub, rest, true
	}
	return "", "", "", false
}

// ConversationPath splits /v1/conversations[/{id}[/rest]]: the id, the rest
// after /v1/conversations (as the provider's path takes it), and whether it
// is one of the Conversations API's paths.
func ConversationPath(path string) (id, rest string, ok bool) {
	rest, ok = strings.CutPrefix(path, "/v1/conversations")
	if !ok {
		return "", "", false
	}
	p, _, _ := strings.Cut(rest, "?")
	if p != "" && p[0] != '/' {
		return "", "", false
	}
	idPart, _, _ := strings.Cut(strings.TrimPrefix(p, "/"), "/")
	id, err := url.PathUnescape(idPart)
	if err != nil {
		return "", "", false
	}
	return id, rest, true
}

// DeletesConversation reports whether a call on a conversation (rest as
// ConversationPath returns it) deletes the conversation itself, not one of
// its items.
func DeletesConversation(method, rest string) bool {
	p, _, _ := strings.Cut(rest, "?")
	return method == http.MethodDelete && !strings.Contains(strings.TrimPrefix(p, "/"), "/")
}

// HeldKind names what an id is: a conversation (conv_…) or a response.
func HeldKind(id string) string {
	if strings.HasPrefix(id, "conv_") {
		return "conversation"
	}
	return "response"
}
