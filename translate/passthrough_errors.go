package translate

import (
	"errors"
	"fmt"
	"net/http"
)

// Errors of a pass-through catalog (extproc.PassthroughCatalog, which
// re-exports them; their text is unchanged).
var (
	// ErrPassthroughDenied: the key has no grant for this provider and path (403).
	ErrPassthroughDenied = errors.New("extproc: pass-through path not granted to this key")
	// ErrProviderNotFound: no provider of that id (404).
	ErrProviderNotFound = errors.New("extproc: provider not found")
	// ErrPassthroughUnsupported: the provider's type cannot be passed through (400).
	ErrPassthroughUnsupported = errors.New("extproc: provider type cannot be passed through")
)

// ErrPassthrough is the client's error of a pass-through call its
// catalog refused (err: ErrProviderNotFound, ErrPassthroughDenied,
// ErrPassthroughUnsupported; any other, 503).
func ErrPassthrough(provider, path string, err error) *APIError {
	switch {
	case errors.Is(err, ErrProviderNotFound):
		return &APIError{
			Status: http.StatusNotFound, Type: TypeInvalidRequest, Code: "provider_not_found",
			Message: fmt.Sprintf("There is no provider `%s` to pass through to.", provider),
		}
	case errors.Is(err, ErrPassthroughDenied):
		return &APIError{
			Status: http.StatusForbidden, Type: TypeInvalidRequest, Code: "passthrough_not_allowed",
			Message: fmt.Sprintf("This key may not call `%s` on provider `%s` (grant it with --passthrough '%s:%s').", path, provider, provider, path),
		}
	case errors.Is(err, ErrPassthroughUnsupported):
		return &APIError{
			Status: http.StatusBadRequest, Type: TypeInvalidRequest, Code: "passthrough_unsupported",
			Message: fmt.Sprintf("Provider `%s` cannot be passed through: %v", provider, err),
		}
	}
	return ErrUnavailable()
}
