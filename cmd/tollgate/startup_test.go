package main

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/internal/testenv"
)

// envTestMain makes this test binary behave as the tollgate command: a test
// runs os.Args[0] with it set and the command line as arguments, and so
// observes main itself (exit status, stderr, signals).
const envTestMain = "TOLLGATE_TEST_MAIN"

// exitBound bounds how long a tollgate process may take to exit; a start-up
// error must end it within a few seconds.
const exitBound = 20 * time.Second

func TestMain(m *testing.M) {
	if os.Getenv(envTestMain) == "1" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// tollgateCmd is the command `tollgate args...`, with no TOLLGATE_
// environment but env.
func tollgateCmd(ctx context.Context, env []string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, os.Args[0], args...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "TOLLGATE_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(append(cmd.Env, envTestMain+"=1"), env...)
	return cmd
}

// exited is how a tollgate process ended.
type exited struct {
	code           int
	stdout, stderr string
}

// runMain runs `tollgate args...` to its end, failing the test when it does not
// exit within exitBound.
func runMain(t *testing.T, env []string, args ...string) exited {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), exitBound)
	defer cancel()
	cmd := tollgateCmd(ctx, env, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	require.NoError(t, ctx.Err(), "tollgate %v did not exit within %v\nstderr:\n%s", args, exitBound, stderr.String())
	res := exited{stdout: stdout.String(), stderr: stderr.String()}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		res.code = ee.ExitCode()
	} else {
		require.NoError(t, err)
	}
	return res
}

// runArgs is `tollgate run` on a fresh embedded store and free ports for the
// admin API, xDS and ext_proc, then extra (a later flag wins).
func runArgs(t *testing.T, extra ...string) []string {
	t.Helper()
	return append([]string{
		"run", "--db", filepath.Join(t.TempDir(), "tollgate.db"), "--listen", testenv.FreeAddr(t),
		"--admin-addr", testenv.FreeAddr(t), "--xds-addr", testenv.FreeAddr(t), "--extproc-addr", testenv.FreeAddr(t),
		"--dataplane", "builtin",
	}, extra...)
}

// Each start-up error ends the process with the error and status 1, instead of
// hanging with nothing said.
func TestStartupErrorsExitWithTheError(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer taken.Close()
	demoDB := filepath.Join(t.TempDir(), "tollgate.db")
	// The demo key file cannot be written (a directory is in its place), so
	// the demo's start hook fails after every service has started.
	require.NoError(t, os.Mkdir(filepath.Join(filepath.Dir(demoDB), ".tollgate-demo-key"), 0o700))

	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{
			name: "data plane port in use",
			args: runArgs(t, "--listen", taken.Addr().String()),
			want: "tollgate: data plane listener: listen tcp " + taken.Addr().String() + ": bind: address already in use",
		},
		{
			name: "no envoy binary",
			args: runArgs(t, "--dataplane", "envoy", "--envoy", filepath.Join(t.TempDir(), "envoy")),
			want: "tollgate: data plane: start envoy (",
		},
		{
			name: "demo with a database URL",
			args: runArgs(t, "--db", "postgres://tollgate@127.0.0.1:1/tollgate", "--demo-upstream", "http://127.0.0.1:1"),
			want: "tollgate: --demo-upstream keeps the demo key in a file beside the --db file",
		},
		{
			name: "start hook fails",
			args: runArgs(t, "--db", demoDB, "--demo-upstream", "http://127.0.0.1:1"),
			want: "tollgate: start hook: demo key created but not saved",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := runMain(t, nil, append(tc.args, "--log-level", "info")...)
			require.Equal(t, 1, res.code, "stderr:\n%s", res.stderr)
			require.Contains(t, res.stderr, tc.want)
			require.Less(t, strings.Count(res.stderr, "\n"), 30, "the log is not flooded:\n%s", res.stderr)
		})
	}
}

// The bootstrap admin key is printed only once the gateway serves: a start
// that fails prints none, so the next start creates and prints it.
func TestBootstrapKeyOnlyOnceServing(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer taken.Close()
	args := runArgs(t, "--listen", taken.Addr().String())
	res := runMain(t, nil, args...)
	require.Equal(t, 1, res.code, "stderr:\n%s", res.stderr)
	require.NotContains(t, res.stdout, "Bootstrap admin key")

	// Same store, a free port: the key is printed, and the data plane already
	// accepts connections when it is.
	listen := testenv.FreeAddr(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*exitBound)
	defer cancel()
	cmd := tollgateCmd(ctx, nil, append(args, "--listen", listen, "--log-level", "error")...)
	var stdout, stderr syncBuffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Start())
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	require.Eventually(t, func() bool { return strings.Contains(stdout.String(), "Bootstrap admin key") },
		exitBound, 20*time.Millisecond, "stderr:\n%s", stderr.String())
	conn, err := net.Dial("tcp", listen)
	require.NoError(t, err, "the data plane serves when the key is printed")
	require.NoError(t, conn.Close())

	// Ctrl-C stops it cleanly.
	require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
	select {
	case err := <-done:
		require.NoError(t, err, "exit after SIGINT; stderr:\n%s", stderr.String())
	case <-time.After(exitBound):
		t.Fatalf("tollgate did not stop within %v of SIGINT", exitBound)
	}
}

// -h lists the flags without the secrets the environment holds.
func TestHelpDoesNotPrintSecrets(t *testing.T) {
	const secretValue = "s3cret-from-env"
	t.Setenv("TOLLGATE_ADMIN_KEY", "tga-"+secretValue)
	t.Setenv("TOLLGATE_DB", "postgres://tollgate:"+secretValue+"@127.0.0.1:1/tollgate")
	t.Setenv("TOLLGATE_REDIS", "redis://:"+secretValue+"@127.0.0.1:1")
	for _, tc := range []struct {
		args []string
		flag string // a flag the help lists
	}{
		{[]string{"key", "list", "-h"}, "-admin-key"},
		{[]string{"key", "create", "--help"}, "-admin-key"},
		{[]string{"run", "-h"}, "-redis"},
	} {
		var out bytes.Buffer
		require.NoError(t, Run(context.Background(), tc.args, &out, &out), "%v", tc.args)
		require.Contains(t, out.String(), tc.flag, "%v prints the flags", tc.args)
		require.NotContains(t, out.String(), secretValue, "%v", tc.args)
	}
}

// Global flags of the admin commands may come before the noun as well as after
// the verb.
func TestGlobalFlagsBeforeTheNoun(t *testing.T) {
	closed := testenv.FreeAddr(t) // nothing listens there
	for _, args := range [][]string{
		{"--addr", closed, "--admin-key", "x", "key", "list"},
		{"key", "list", "--addr", closed, "--admin-key", "x"},
	} {
		var out bytes.Buffer
		err := Run(context.Background(), args, &out, &out)
		require.ErrorContains(t, err, "cannot reach the admin API at "+closed, "%v", args)
	}
}
