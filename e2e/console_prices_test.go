package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/internal/testenv"
)

// TestConsoleUnitPrices: the Models page shows each model's prices per unit
// (one set with the CLI), an admin sets per-image (by size and quality) and
// search-unit prices there, the model's token prices kept; a malformed
// per-image entry is refused in the page; a viewer sees the prices but no
// form.
func TestConsoleUnitPrices(t *testing.T) {
	chromium := testenv.Chromium(t)
	nodeBin := testenv.Node(t)
	testenv.NodePackage(t, "playwright-core")
	s := startSystem(t)
	s.cli(nil, nil, "price", "set", "whisper-1", "--per-second", "0.0001")
	s.cli(nil, nil, "price", "set", "imagen", "--input", "2", "--output", "8")
	var viewer struct {
		Secret string `json:"secret"`
	}
	s.cli(&viewer, nil, "admin-key", "create", "--role", "viewer")

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, nodeBin, "console_prices.mjs")
	cmd.Env = append(os.Environ(), "CONSOLE_URL=http://"+s.admin+"/ui/", "ADMIN_KEY="+adminKey, "VIEWER_KEY="+viewer.Secret, "CHROMIUM="+chromium)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), "node console_prices.mjs: %s", stderr.String())
	var got struct {
		Errors     []string `json:"console_errors"`
		Preset     string   `json:"preset"`
		Set        string   `json:"set"`
		SetRow     string   `json:"set_row"`
		Bad        string   `json:"bad"`
		ViewerForm int      `json:"viewer_form"`
	}
	require.NoError(t, json.Unmarshal([]byte(lastLine(stdout.String())), &got), "console_prices.mjs printed %q", stdout.String())
	require.Empty(t, got.Errors)
	require.Equal(t, "second $0.0001", got.Preset)
	require.Equal(t, "image $0.04 · image 1024x1024/hd $0.08 · search unit $0.002", got.Set)
	require.Contains(t, got.SetRow, "$2.00", "the token prices kept")
	require.Contains(t, got.SetRow, "$8.00")
	require.Contains(t, got.Bad, `"huge" is not PRICE`)
	require.Zero(t, got.ViewerForm)

	var price struct {
		Price struct {
			Input         struct{ Dollars string }            `json:"input"`
			PerImage      map[string]struct{ Dollars string } `json:"per_image"`
			PerSearchUnit struct{ Dollars string }            `json:"per_search_unit"`
		} `json:"price"`
	}
	s.cli(&price, nil, "price", "get", "imagen")
	require.Equal(t, "2", price.Price.Input.Dollars)
	require.Equal(t, "0.08", price.Price.PerImage["1024x1024/hd"].Dollars)
	require.Equal(t, "0.04", price.Price.PerImage["*"].Dollars)
	require.Equal(t, "0.002", price.Price.PerSearchUnit.Dollars)
}
