package gateway

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/tollgate-ai/tollgate/envoy"
)

// childEnvoy is Envoy run by `tollgate run --dataplane envoy`.
type childEnvoy struct {
	cmd    *exec.Cmd
	exited chan struct{} // closed when Envoy ends; then err is its exit
	err    error
	dir    string
}

// startEnvoy writes a bootstrap pointing at the xDS server and starts Envoy
// with it. Envoy's output goes to out. With TLS, Envoy presents
// Config.DataPlaneTLS to xDS and to the processor at extProcAddr.
func startEnvoy(cfg Config, xdsAddr, extProcAddr string, out io.Writer) (*childEnvoy, error) {
	opts := envoy.BootstrapOptions{XDS: xdsAddr, NodeID: "tollgate-run", Admin: cfg.EnvoyAdmin}
	if cfg.XDSTLS.Enabled() {
		opts.ExtProc, opts.TLSCA, opts.TLSCert, opts.TLSKey = extProcAddr, cfg.DataPlaneTLS.CA, cfg.DataPlaneTLS.Cert, cfg.DataPlaneTLS.Key
	}
	b, err := envoy.Bootstrap(opts)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "tollgate-envoy")
	if err != nil {
		return nil, err
	}
	path := filepath.Join(dir, "bootstrap.yaml")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		return nil, errors.Join(err, os.RemoveAll(dir))
	}
	cmd := exec.Command(cfg.EnvoyPath, "-c", path, "--log-level", "warn", "--drain-time-s", "5")
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		return nil, errors.Join(fmt.Errorf("start envoy (%s): %w", cfg.EnvoyPath, err), os.RemoveAll(dir))
	}
	e := &childEnvoy{cmd: cmd, exited: make(chan struct{}), dir: dir}
	go func() {
		e.err = cmd.Wait()
		close(e.exited)
	}()
	return e, nil
}

// Exited is closed when Envoy ends; Err is then how it ended.
func (e *childEnvoy) Exited() <-chan struct{} { return e.exited }

// Err is Envoy's exit, once Exited is closed.
func (e *childEnvoy) Err() error { return e.err }

// Stop asks Envoy to drain and exit (SIGTERM), and kills it when ctx ends
// first. Envoy's exit status after SIGTERM is not an error.
func (e *childEnvoy) Stop(ctx context.Context) error {
	defer func() { _ = os.RemoveAll(e.dir) }()
	_ = e.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-e.exited:
		return nil
	case <-ctx.Done():
		_ = e.cmd.Process.Kill()
		select {
		case <-e.exited:
		case <-time.After(5 * time.Second):
		}
		return fmt.Errorf("envoy did not stop in time: %w", ctx.Err())
	}
}
