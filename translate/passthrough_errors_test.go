package translate

import (
	"errors"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// Each catalog refusal of a pass-through call has its status and code;
// anything else is the gateway's 503.
func TestErrPassthrough(t *testing.T) {
	for err, want := range map[error]struct {
		status int
		code   string
	}{
		ErrProviderNotFound:       {http.StatusNotFound, "provider_not_found"},
		ErrPassthroughDenied:      {http.StatusForbidden, "passthrough_not_allowed"},
		ErrPassthroughUnsupported: {http.StatusBadRequest, "passthrough_unsupported"},
	} {
		e := ErrPassthrough("openai", "/v1/files", err)
		require.Equal(t, want.status, e.Status, err)
		require.Equal(t, want.code, e.Code, err)
	}
	require.Contains(t, ErrPassthrough("p", "/x", ErrPassthroughDenied).Message, "--passthrough 'p:/x'")
	require.Equal(t, http.StatusServiceUnavailable, ErrPassthrough("p", "/x", errors.New("store down")).Status)
}
