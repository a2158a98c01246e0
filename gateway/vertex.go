package gateway

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/google"

	"github.com/tollgate-ai/tollgate/extproc"
)

// vertexScope is the OAuth2 scope of Vertex AI's API.
const vertexScope = "https://www.googleapis.com/auth/cloud-platform"

// vertexRefreshEarly is how long before its expiry an access token is
// replaced, so a request never leaves with a token about to expire.
const vertexRefreshEarly = 5 * time.Minute

// newVertexSigner makes the token source of a vertex provider: its sealed
// credential is a service-account key (JSON), exchanged for access tokens at
// the key's token_uri; without one, application default credentials
// (GOOGLE_APPLICATION_CREDENTIALS, gcloud's ADC file, the metadata server).
// Tokens are cached and refreshed five minutes before they expire
// (oauth2.ReuseTokenSourceWithExpiry); they are never logged.
func newVertexSigner(ctx context.Context, credential string) (*googleSigner, error) {
	// The token source keeps ctx for every refresh: it must outlive the
	// snapshot build that made it.
	ctx = context.WithoutCancel(ctx)
	var creds *google.Credentials
	var err error
	if s := strings.TrimSpace(credential); s != "" {
		creds, err = google.CredentialsFromJSONWithType(ctx, []byte(s), google.ServiceAccount, vertexScope)
		if err != nil {
			// The error may quote the key file: say only what is wrong.
			return nil, errors.New("vertex provider: the credential is not a service-account key (JSON)")
		}
	} else if creds, err = google.FindDefaultCredentials(ctx, vertexScope); err != nil {
		return nil, fmt.Errorf("vertex provider: application default credentials: %w", err)
	}
	return &googleSigner{ts: oauth2.ReuseTokenSourceWithExpiry(nil, creds.TokenSource, vertexRefreshEarly)}, nil
}

// googleSigner sets a Google OAuth2 access token on each request.
type googleSigner struct {
	ts oauth2.TokenSource
}

var _ extproc.RequestSigner = (*googleSigner)(nil)

// SignRequest returns "authorization: Bearer <access token>".
func (g *googleSigner) SignRequest(_ context.Context, _ *extproc.UpstreamRequest) ([][2]string, error) {
	tok, err := g.ts.Token()
	if err != nil {
		return nil, fmt.Errorf("google access token: %w", err)
	}
	return [][2]string{{"authorization", "Bearer " + tok.AccessToken}}, nil
}
