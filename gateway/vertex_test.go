package gateway

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/extproc"
)

// TestVertexSignerCachesTokens: a service-account key is exchanged for an
// access token at its token_uri once, and the token is reused while valid.
func TestVertexSignerCachesTokens(t *testing.T) {
	var issued atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ParseForm() != nil || r.PostForm.Get("grant_type") != "urn:ietf:params:oauth:grant-type:jwt-bearer" {
			http.Error(w, "bad grant", http.StatusBadRequest)
			return
		}
		issued.Add(1)
		w.Header().Set("content-type", "application/json")
		_, _ = w.Write([]byte(`{"access_token":"ya29.test-token","expires_in":3600,"token_type":"Bearer"}`))
	}))
	t.Cleanup(srv.Close)
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	der, err := x509.MarshalPKCS8PrivateKey(key)
	require.NoError(t, err)
	sa, err := json.Marshal(map[string]string{
		"type": "service_account", "project_id": "p", "private_key_id": "k",
		"private_key":  string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})),
		"client_email": "sa@p.iam.gserviceaccount.com", "token_uri": srv.URL,
	})
	require.NoError(t, err)
	s, err := newVertexSigner(context.Background(), string(sa))
	require.NoError(t, err)
	for range 3 {
		h, err := s.SignRequest(context.Background(), &extproc.UpstreamRequest{})
		require.NoError(t, err)
		require.Equal(t, [][2]string{{"authorization", "Bearer ya29.test-token"}}, h)
	}
	require.Equal(t, int64(1), issued.Load(), "the token is cached")

	_, err = newVertexSigner(context.Background(), `{"type":"authorized_user","private_key":"SECRET-MATERIAL"}`)
	require.Error(t, err)
	require.NotContains(t, err.Error(), "SECRET-MATERIAL")
}
