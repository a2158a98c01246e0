package translate

import "strings"

// Client credentials as the client APIs send them (translator.go lists their
// headers): read for authentication, never logged.

// BearerToken returns the token of an "Authorization: Bearer <token>" value.
func BearerToken(v string) string {
	const prefix = "bearer "
	if len(v) > len(prefix) && strings.EqualFold(v[:len(prefix)], prefix) {
		return strings.TrimSpace(v[len(prefix):])
	}
	return ""
}

// IsSensitiveHeader reports headers whose values are never logged: the
// client credentials of every API and the cookies.
func IsSensitiveHeader(k string) bool {
	switch strings.ToLower(k) {
	case HdrAuthorization, HdrXAPIKey, HdrAPIKey, HdrGoogAPIKey, "proxy-authorization", "cookie", "set-cookie":
		return true
	}
	return false
}
