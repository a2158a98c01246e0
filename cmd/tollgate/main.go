// Command tollgate runs the gateway (`tollgate run`), prints Envoy's bootstrap
// (`tollgate envoy bootstrap`) and manages it through the admin API (every other
// subcommand, see `tollgate help`).
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	_ "time/tzdata" // budget periods in any time zone, also where the OS has no zoneinfo

	"github.com/tollgate-ai/tollgate/cli"
)

// version is set with -ldflags "-X main.version=…".
var version = "dev"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := Run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintln(os.Stderr, "tollgate:", err)
		os.Exit(1)
	}
}

// Run dispatches a command line.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		usage(stdout)
		return nil
	}
	switch args[0] {
	case "run":
		return runGateway(ctx, args[1:], stdout, stderr)
	case "envoy":
		return runEnvoy(args[1:], stdout)
	case "version", "--version":
		_, err := fmt.Fprintln(stdout, "tollgate", version)
		return err
	case "help", "-h", "--help":
		usage(stdout)
		return nil
	default:
		return cli.Main(ctx, args, stdout, stderr)
	}
}

func usage(w io.Writer) {
	fmt.Fprint(w, `tollgate — an AI gateway

  tollgate run [flags]              start the gateway (admin API, xDS, ext_proc, data plane)
  tollgate envoy bootstrap [flags]  print the Envoy bootstrap that points Envoy at Tollgate
  tollgate version                  print the version

Administration (talks to the admin API of a running gateway):
`)
	cli.Usage(w)
}
