package ownership

import "github.com/tollgate-ai/tollgate/translate"

// Request is what a Responses request's body says about ownership.
type Request struct {
	Store      bool   // store (default true)
	Background bool   // background (default false)
	Previous   string // previous_response_id, "" when none
	// Conversation is the request's conversation: an id, or the id of a
	// {"id": …} object; "" when none.
	Conversation string
}

// ScanRequest reads the four members of a Responses request body that
// ownership needs, in one scan.
func ScanRequest(body []byte) Request {
	r := Request{Store: true}
	_, _ = translate.ScanObject(body, 0, true, func(key []byte, v translate.Span) error {
		switch {
		case translate.KeyIs(key, "store"):
			r.Store = boolValue(body, v, r.Store)
		case translate.KeyIs(key, "background"):
			r.Background = boolValue(body, v, r.Background)
		case translate.KeyIs(key, "previous_response_id"):
			r.Previous, _ = translate.StringValue(body, v)
		case translate.KeyIs(key, "conversation"): // an id, or {"id": …}
			if r.Conversation, _ = translate.StringValue(body, v); r.Conversation == "" {
				r.Conversation = StringMember(body[v.Start:v.End], "id")
			}
		}
		return nil
	})
	return r
}

// StringMember is the string value of a top-level member of a JSON object,
// "" when absent, null or not a string.
func StringMember(body []byte, name string) string {
	m, err := translate.TopLevelMember(body, name)
	if err != nil || !m.OK() {
		return ""
	}
	v, _ := translate.StringValue(body, m)
	return v
}

// boolValue is the boolean at v, or def when it is not a boolean.
func boolValue(body []byte, v translate.Span, def bool) bool {
	switch string(body[v.Start:v.End]) {
	case "true":
		return true
	case "false":
		return false
	}
	return def
}
