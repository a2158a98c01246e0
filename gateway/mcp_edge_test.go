package gateway_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"testing"
	"time"

	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/tollgate-ai/tollgate/edge/extprocfilter"
	"github.com/tollgate-ai/tollgate/edge/extprocfilter/extprocfiltertest"
	"github.com/tollgate-ai/tollgate/internal/secret"
	"github.com/tollgate-ai/tollgate/mcp"
	"github.com/tollgate-ai/tollgate/store"
	"github.com/tollgate-ai/tollgate/xds"
)

// TestMCPRefusedByTheProcessor: the gateway's processor, as Envoy's /mcp
// route reaches it, refuses with the MCP service's own catalog: the key's
// and its team's grants, no key.
func TestMCPRefusedByTheProcessor(t *testing.T) {
	r := start(t, false)
	up := mcpUpstream(t, true)
	put(t, r.st, "db", &store.MCPServer{ID: "db", URL: up.URL})
	put(t, r.st, "eng", &store.Team{ID: "eng", MCPTools: []string{"db/echo"}})
	s := secret.New("tg-")
	put(t, r.st, "k1", &store.Key{
		ID: "k1", Prefix: secret.Display(s), Hashes: []store.KeyHash{{Hash: secret.Hash(s)}}, TeamID: "eng", MCPTools: []string{"db/*"},
	})

	cc, err := grpc.NewClient(r.g.ExtProcAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { _ = cc.Close() })
	client := extprocfilter.NewClient(extprocfilter.GRPC(extprocv3.NewExternalProcessorClient(cc)), extprocfilter.DefaultConfig())
	call := func(key, tool string) *extprocfiltertest.Response {
		body := `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"` + tool + `"}}`
		h := extprocfilter.Headers{
			{Key: ":method", Value: "POST"},
			{Key: ":path", Value: "/mcp"},
			{Key: ":authority", Value: "127.0.0.1"},
			{Key: ":scheme", Value: "http"},
			{Key: "content-type", Value: "application/json"},
			{Key: "content-length", Value: strconv.Itoa(len(body))},
		}
		if key != "" {
			h = append(h, extprocfilter.Header{Key: "authorization", Value: "Bearer " + key})
		}
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		resp, err := extprocfiltertest.DoWith(ctx, client, &extprocfiltertest.Request{Headers: h, Body: [][]byte{[]byte(body)}}, nil,
			extprocfilter.WithRouteMode(xds.MCPProcessingMode()))
		require.NoError(t, err)
		return resp
	}

	resp := call("", "db__echo")
	require.Equal(t, http.StatusUnauthorized, resp.Status)
	require.NotEmpty(t, resp.Headers.Value("www-authenticate"))

	var refused *extprocfiltertest.Response
	eventually(t, func() bool { // the store watch brings the grants in
		refused = call(s, "db__drop_tables")
		return refused.Forwarded == nil && refused.Status == http.StatusOK && call(s, "db__echo").Forwarded != nil
	})
	var rpc struct {
		ID    int `json:"id"`
		Error struct {
			Code    int64  `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	require.NoError(t, json.Unmarshal(refused.Body, &rpc))
	require.Equal(t, 3, rpc.ID)
	require.Equal(t, int64(mcp.CodeToolNotGranted), rpc.Error.Code)
	require.Contains(t, rpc.Error.Message, "team eng has no mcp-tools grant")
}
