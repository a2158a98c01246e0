package e2e

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/internal/testenv"
)

// TestClaudeCodeDefaultModel: Claude Code (npm @anthropic-ai/claude-code) in
// non-interactive mode, with only the two environment variables the README
// gives and no --model, answers through the demo: whatever Claude model its
// release asks for by default is matched by the demo group's claude-*
// pattern. The ledger records the request under the demo group.
func TestClaudeCodeDefaultModel(t *testing.T) {
	testenv.NodePackage(t, "@anthropic-ai/claude-code")
	s := startSystem(t)
	s.runClaude(t, s.demoKey, []string{"Reply with the words claude through tollgate"})

	var rows []ledgerRow
	require.Eventually(t, func() bool {
		rows = s.ledger("demo")
		return len(rows) > 0
	}, 10*time.Second, 100*time.Millisecond, "the request is in the ledger")
	for _, r := range rows {
		require.Equal(t, "REQUEST_STATUS_COMPLETED", r.Status, "%+v", r)
		require.Equal(t, "demo", r.Model, "%+v", r)
	}
}

// runClaude runs Claude Code (npm @anthropic-ai/claude-code, pinned) in
// non-interactive mode, in a fresh home and working directory, against the
// gateway with key: args follow -p, env is added to the environment. It
// returns what Claude Code printed, failing the test when it failed or
// printed nothing.
func (s *system) runClaude(t *testing.T, key string, args []string, env ...string) string {
	t.Helper()
	testenv.NodePackage(t, "@anthropic-ai/claude-code")
	claude, err := filepath.Abs("node_modules/.bin/claude")
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, claude, append([]string{"-p"}, args...)...)
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir(),
		"ANTHROPIC_BASE_URL="+s.url, "ANTHROPIC_API_KEY="+key,
		// No calls home from the test machine (it has no network but loopback).
		"DISABLE_TELEMETRY=1", "DISABLE_AUTOUPDATER=1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "NO_COLOR=1")
	cmd.Env = append(cmd.Env, env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr, cmd.Stdin = &stdout, &stderr, strings.NewReader("")
	require.NoError(t, cmd.Run(), "claude -p: %s\n%s", stdout.String(), stderr.String())
	require.NotEmpty(t, strings.TrimSpace(stdout.String()), "stderr: %s", stderr.String())
	return stdout.String()
}
