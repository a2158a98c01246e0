package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"strings"
	"time"

	"github.com/tollgate-ai/tollgate/internal/tlsconf"
)

// serveDebug serves the Go profiler on addr until ctx ends.
func serveDebug(ctx context.Context, addr string, log *slog.Logger) error {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	if !tlsconf.Loopback(addr) || strings.HasPrefix(addr, "unix:") {
		return fmt.Errorf("--debug-addr %q: the profiler serves without authentication, so it listens on loopback only (e.g. 127.0.0.1:6060 or [::1]:6060); reach it remotely through an SSH tunnel", addr)
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("--debug-addr: %w", err)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(l) }()
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
	log.Info("profiler listening", "addr", l.Addr().String())
	return nil
}
