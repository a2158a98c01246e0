package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// Environment variables read by the CLI.
const (
	EnvAddr     = "TOLLGATE_ADDR"
	EnvAdminKey = "TOLLGATE_ADMIN_KEY"
)

// DefaultAddr is the admin API address when neither --addr nor TOLLGATE_ADDR is set.
const DefaultAddr = "127.0.0.1:9090"

// Errors.
var (
	// ErrUsage: the command line is wrong; the message says how to fix it.
	ErrUsage = errors.New("usage")
)

// command is one `tollgate NOUN VERB`: setup declares its flags and returns
// the function that runs it with the positional arguments.
type command struct {
	noun, verb string
	args       string // positional arguments, for the usage line
	help       string
	setup      func(fs *flag.FlagSet) func(r *runner, pos []string) error
}

func (c *command) name() string { return c.noun + " " + c.verb }

// commands is every command, in the order Usage lists them.
var commands []*command

func register(cs ...*command) { commands = append(commands, cs...) }

// nouns orders the command list.
var nouns = []string{"key", "team", "user", "org", "customer", "provider", "deployment", "model", "price", "guardrail", "spend", "alert", "alert sink", "reconcile", "audit", "admin-key", "apply"}

// Usage prints the command list.
func Usage(w io.Writer) {
	var b strings.Builder
	sorted := slices.Clone(commands)
	slices.SortStableFunc(sorted, func(a, b *command) int {
		return slices.Index(nouns, a.noun) - slices.Index(nouns, b.noun)
	})
	lines := make([]string, len(sorted))
	width := 0
	for i, c := range sorted {
		lines[i] = "tollgate " + c.name()
		if c.args != "" {
			lines[i] += " " + c.args
		}
		width = max(width, len(lines[i]))
	}
	for i, c := range sorted {
		_, _ = fmt.Fprintf(&b, "  %-*s  %s\n", width, lines[i], c.help)
	}
	b.WriteString(`
  Flags of every command, before or after it: --addr HOST:PORT (or TOLLGATE_ADDR, default
  127.0.0.1:9090), --admin-key SECRET (or TOLLGATE_ADMIN_KEY), -o table|json. Money is in dollars.
  Run "tollgate NOUN VERB -h" for the flags of a command.
`)
	_, _ = io.WriteString(w, b.String())
}

// runner carries what a command needs to run.
type runner struct {
	ctx    context.Context
	conn   *grpc.ClientConn
	addr   string
	json   bool
	out    io.Writer
	errOut io.Writer
	set    map[string]bool // flags given on the command line
	now    func() time.Time
}

// Main runs one command line, e.g. ["key", "create", "--budget", "10"].
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || slices.Contains([]string{"help", "-h", "--help"}, args[0]) {
		Usage(stdout)
		return nil
	}
	args = hoistGlobalFlags(args)
	noun := args[0]
	if noun == "reconcile" && (len(args) == 1 || strings.HasPrefix(args[1], "-")) {
		args = append([]string{"reconcile", "run"}, args[1:]...) // `tollgate reconcile --provider …`
	}
	if noun == "alert" && len(args) > 1 && args[1] == "sink" { // alerts.go
		noun, args = "alert sink", append([]string{"alert sink"}, args[2:]...)
	}
	if noun == "apply" && len(args) > 1 {
		if f, ok := strings.CutPrefix(args[1], "-f="); ok {
			args = append([]string{"apply", "-f", f}, args[2:]...)
		}
	}
	var verbs []*command
	for _, c := range commands {
		if c.noun == noun {
			verbs = append(verbs, c)
		}
	}
	if len(verbs) == 0 {
		return fmt.Errorf("%w: unknown command %q: run `tollgate help` for the list", ErrUsage, noun)
	}
	var cmd *command
	if len(args) > 1 {
		for _, c := range verbs {
			if c.verb == args[1] {
				cmd = c
			}
		}
	}
	if cmd == nil {
		names := make([]string, 0, len(verbs))
		for _, c := range verbs {
			names = append(names, c.verb)
		}
		return fmt.Errorf("%w: tollgate %s needs one of: %s", ErrUsage, noun, strings.Join(names, ", "))
	}
	return runCommand(ctx, withGuardrailsFlag(cmd), args[2:], stdout, stderr) // guardrails.go
}

func runCommand(ctx context.Context, cmd *command, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("tollgate "+cmd.name(), flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", envOr(EnvAddr, DefaultAddr), "admin API address (env "+EnvAddr+")")
	// The secret's default is read after parsing, so that -h never prints it.
	key := fs.String("admin-key", "", "admin credential (default: env "+EnvAdminKey+")")
	output := fs.String("o", "table", "output format: table or json")
	transport := tlsFlags(fs)
	run := cmd.setup(fs)
	fs.Usage = func() {
		_, _ = fmt.Fprintf(stderr, "usage: tollgate %s %s\n  %s\n\nflags:\n", cmd.name(), cmd.args, cmd.help)
		fs.PrintDefaults()
	}
	pos, err := parseInterspersed(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("%w: %w (run `tollgate %s -h`)", ErrUsage, err, cmd.name())
	}
	if want := countArgs(cmd.args); len(pos) != want && !strings.Contains(cmd.args, "...") {
		return fmt.Errorf("%w: tollgate %s takes %s (got %d arguments)", ErrUsage, cmd.name(), argsOrNone(cmd.args), len(pos))
	}
	if *key == "" {
		*key = os.Getenv(EnvAdminKey)
	}
	if *output != "table" && *output != "json" {
		return fmt.Errorf("%w: -o must be table or json, not %q", ErrUsage, *output)
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })

	creds, err := transport()
	if err != nil {
		return err
	}
	conn, err := grpc.NewClient(*addr, creds)
	if err != nil {
		return fmt.Errorf("invalid admin API address %q: %w (set --addr or %s)", *addr, err, EnvAddr)
	}
	defer func() { _ = conn.Close() }()
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	if *key != "" {
		ctx = metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+*key)
	}
	r := &runner{ctx: ctx, conn: conn, addr: *addr, json: *output == "json", out: stdout, errOut: stderr, set: set, now: time.Now}
	return explain(run(r, pos), *addr, *key != "")
}

func argsOrNone(a string) string {
	if a == "" {
		return "no arguments"
	}
	return a
}

// countArgs counts the positional arguments of a usage string like "TEAM USER".
func countArgs(a string) int {
	n := 0
	for f := range strings.FieldsSeq(a) {
		if !strings.HasPrefix(f, "[") {
			n++
		}
	}
	return n
}

// parseInterspersed parses flags placed before, between or after positional arguments.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// explain turns gRPC errors into messages that say what to do.
func explain(err error, addr string, haveKey bool) error {
	if err == nil {
		return nil
	}
	st, ok := status.FromError(err)
	if !ok {
		return err
	}
	msg := st.Message()
	switch st.Code() {
	case codes.Unavailable:
		return fmt.Errorf("cannot reach the admin API at %s: is `tollgate run` running? set --addr or %s; an admin API with TLS needs --tls-ca, --tls-cert and --tls-key (%s)", addr, EnvAddr, msg)
	case codes.DeadlineExceeded:
		return fmt.Errorf("the admin API at %s did not answer in time: is it overloaded or behind a firewall? (%s)", addr, msg)
	case codes.Unauthenticated:
		if !haveKey {
			return fmt.Errorf("no admin key: set --admin-key or %s (`tollgate run` prints the first one at its first start)", EnvAdminKey)
		}
		return fmt.Errorf("the admin API refused the admin key: check --admin-key or %s (%s)", EnvAdminKey, msg)
	case codes.PermissionDenied:
		return fmt.Errorf("not allowed: %s (use an admin key with a role that may do this)", msg)
	case codes.InvalidArgument:
		return fmt.Errorf("invalid request: %s", msg)
	case codes.NotFound:
		return fmt.Errorf("not found: %s", msg)
	case codes.AlreadyExists:
		return fmt.Errorf("already exists: %s (use update, or choose another id)", msg)
	case codes.FailedPrecondition:
		return fmt.Errorf("the gateway cannot do this: %s", msg)
	case codes.Aborted:
		return fmt.Errorf("conflict: %s (try again)", msg)
	default:
		return fmt.Errorf("admin API error (%s): %s", st.Code(), msg)
	}
}
