package translate

import (
	"net/url"
	"strings"
)

// The Gemini API's key in the URL (?key=, as @google/genai and gemini-cli
// may send it): read for authentication, hidden in logs.

// QueryKey is the key= parameter of a :path ("" when absent).
func QueryKey(path string) string {
	_, q, ok := strings.Cut(path, "?")
	if !ok {
		return ""
	}
	v, err := url.ParseQuery(q)
	if err != nil {
		return ""
	}
	return v.Get("key")
}

// RedactQueryKey hides the value of a key= query parameter of a :path (the
// Gemini API's key in the URL) for logs.
func RedactQueryKey(path string) string {
	p, q, ok := strings.Cut(path, "?")
	if !ok || !strings.Contains(q, "key=") {
		return path
	}
	params := strings.Split(q, "&")
	for i, kv := range params {
		if strings.HasPrefix(kv, "key=") {
			params[i] = "key=[redacted]"
		}
	}
	return p + "?" + strings.Join(params, "&")
}
