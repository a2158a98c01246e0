package cli

import (
	"flag"
	"fmt"
	"strconv"
	"strings"
	"time"

	adminv1 "github.com/tollgate-ai/tollgate/proto/tollgate/admin/v1"
)

func init() {
	register(
		&command{noun: "guardrail", verb: "create", args: "NAME", help: "add a guardrail (--kind, --action, --on pre,post,stream)", setup: guardrailCreate},
		&command{noun: "guardrail", verb: "list", help: "list guardrails", setup: guardrailList},
		&command{noun: "guardrail", verb: "get", args: "NAME", help: "show a guardrail", setup: guardrailGet},
		&command{noun: "guardrail", verb: "update", args: "NAME", help: "replace a guardrail (same flags as create)", setup: guardrailUpdate},
		&command{noun: "guardrail", verb: "delete", args: "NAME", help: "delete a guardrail", setup: guardrailDelete},
		&command{noun: "guardrail", verb: "attach", args: "SCOPE ID", help: "set the guardrails of a key, team, org or model (--guardrails A,B,-C)", setup: guardrailAttach},
	)
}

// guardrailFlags are the fields of a guardrail.
type guardrailFlags struct {
	kind, action, on, types, words, patterns, url, provider, model string
	maxBytes                                                       int64
	timeout                                                        time.Duration
	mandatory, failOpen                                            bool
}

func (f *guardrailFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.kind, "kind", "", "pii, secrets, words, size, webhook or moderation (required)")
	fs.StringVar(&f.action, "action", "", "block, redact or log (required)")
	fs.StringVar(&f.on, "on", "pre", "where it runs: pre, post, stream, comma-separated")
	fs.BoolVar(&f.mandatory, "mandatory", false, "keys below the team, org or model it is attached to cannot remove it")
	fs.StringVar(&f.types, "types", "", "pii/secrets: only these types, comma-separated (EMAIL, PHONE, CREDIT_CARD, IBAN, SSN, IP_ADDRESS; API_KEY, AWS_KEY, PRIVATE_KEY, JWT, SECRET)")
	fs.StringVar(&f.words, "words", "", "words: blocked words or phrases, comma-separated")
	fs.StringVar(&f.patterns, "patterns", "", "words: Go regular expressions, comma-separated")
	fs.Int64Var(&f.maxBytes, "max-bytes", 0, "size: the largest text allowed")
	fs.StringVar(&f.url, "url", "", "webhook: the URL the check is POSTed to")
	fs.StringVar(&f.provider, "provider", "", "moderation: the provider whose /v1/moderations is called")
	fs.StringVar(&f.model, "model", "", "moderation: the model (default omni-moderation-latest)")
	fs.DurationVar(&f.timeout, "timeout", 0, "webhook, moderation: how long to wait (default 2s)")
	fs.BoolVar(&f.failOpen, "fail-open", false, "webhook, moderation: let the text through when the check fails (default: block)")
}

func (f *guardrailFlags) guardrail(name string) (*adminv1.Guardrail, error) {
	if f.kind == "" || f.action == "" {
		return nil, fmt.Errorf("%w: --kind and --action are required", ErrUsage)
	}
	return &adminv1.Guardrail{
		Name: name, Kind: f.kind, Action: f.action, On: splitList(f.on), Mandatory: f.mandatory,
		Types: splitList(f.types), Words: splitList(f.words), Patterns: splitList(f.patterns), MaxBytes: f.maxBytes,
		Url: f.url, Provider: f.provider, Model: f.model, TimeoutMs: f.timeout.Milliseconds(), FailOpen: f.failOpen,
	}, nil
}

func (r *runner) guardrail(g *adminv1.Guardrail) {
	pairs := [][2]string{
		{"NAME", g.GetName()},
		{"KIND", g.GetKind()},
		{"ACTION", g.GetAction()},
		{"ON", strings.Join(g.GetOn(), ",")},
		{"MANDATORY", strconv.FormatBool(g.GetMandatory())},
	}
	for _, kv := range [][2]string{
		{"TYPES", strings.Join(g.GetTypes(), ",")},
		{"WORDS", strings.Join(g.GetWords(), ",")},
		{"PATTERNS", strings.Join(g.GetPatterns(), ",")},
		{"URL", g.GetUrl()},
		{"PROVIDER", g.GetProvider()},
		{"MODEL", g.GetModel()},
	} {
		if kv[1] != "" {
			pairs = append(pairs, kv)
		}
	}
	if g.GetMaxBytes() > 0 {
		pairs = append(pairs, [2]string{"MAX BYTES", strconv.FormatInt(g.GetMaxBytes(), 10)})
	}
	if g.GetKind() == "webhook" || g.GetKind() == "moderation" {
		pairs = append(pairs, [2]string{"FAIL OPEN", strconv.FormatBool(g.GetFailOpen())})
	}
	r.fields(pairs)
}

func guardrailCreate(fs *flag.FlagSet) func(*runner, []string) error {
	var gf guardrailFlags
	gf.register(fs)
	return func(r *runner, pos []string) error {
		g, err := gf.guardrail(pos[0])
		if err != nil {
			return err
		}
		resp, err := adminv1.NewGuardrailServiceClient(r.conn).CreateGuardrail(r.ctx, &adminv1.CreateGuardrailRequest{Guardrail: g})
		if err != nil {
			return err
		}
		return r.emit(resp, func() { r.guardrail(resp.GetGuardrail()) })
	}
}

func guardrailUpdate(fs *flag.FlagSet) func(*runner, []string) error {
	var gf guardrailFlags
	gf.register(fs)
	return func(r *runner, pos []string) error {
		g, err := gf.guardrail(pos[0])
		if err != nil {
			return err
		}
		resp, err := adminv1.NewGuardrailServiceClient(r.conn).UpdateGuardrail(r.ctx, &adminv1.UpdateGuardrailRequest{Guardrail: g})
		if err != nil {
			return err
		}
		return r.emit(resp, func() { r.guardrail(resp.GetGuardrail()) })
	}
}

func guardrailList(fs *flag.FlagSet) func(*runner, []string) error {
	var pf pageFlags
	pf.register(fs)
	return func(r *runner, _ []string) error {
		all := &adminv1.ListGuardrailsResponse{}
		err := pf.each(r, func(token string, size int32) (string, error) {
			resp, err := adminv1.NewGuardrailServiceClient(r.conn).ListGuardrails(r.ctx, &adminv1.ListGuardrailsRequest{PageSize: size, PageToken: token})
			all.Guardrails = append(all.Guardrails, resp.GetGuardrails()...)
			return resp.GetNextPageToken(), err
		})
		if err != nil {
			return err
		}
		return r.emit(all, func() {
			var rows [][]string
			for _, g := range all.GetGuardrails() {
				rows = append(rows, []string{g.GetName(), g.GetKind(), g.GetAction(), strings.Join(g.GetOn(), ","), strconv.FormatBool(g.GetMandatory())})
			}
			r.table([]string{"NAME", "KIND", "ACTION", "ON", "MANDATORY"}, rows)
		})
	}
}

func guardrailGet(*flag.FlagSet) func(*runner, []string) error {
	return func(r *runner, pos []string) error {
		resp, err := adminv1.NewGuardrailServiceClient(r.conn).GetGuardrail(r.ctx, &adminv1.GetGuardrailRequest{Name: pos[0]})
		if err != nil {
			return err
		}
		return r.emit(resp, func() { r.guardrail(resp.GetGuardrail()) })
	}
}

func guardrailDelete(*flag.FlagSet) func(*runner, []string) error {
	return func(r *runner, pos []string) error {
		_, err := adminv1.NewGuardrailServiceClient(r.conn).DeleteGuardrail(r.ctx, &adminv1.DeleteGuardrailRequest{Name: pos[0]})
		return deleted(r, "guardrail", pos[0], err)
	}
}

func guardrailAttach(fs *flag.FlagSet) func(*runner, []string) error {
	names := fs.String("guardrails", "", "guardrail names, comma-separated; on a key, -NAME removes an inherited one (empty: detach all)")
	return func(r *runner, pos []string) error {
		return setGuardrails(r, pos[0], pos[1], *names)
	}
}

func setGuardrails(r *runner, scope, id, names string) error {
	resp, err := adminv1.NewGuardrailServiceClient(r.conn).SetGuardrails(r.ctx, &adminv1.SetGuardrailsRequest{Scope: scope, Id: id, Guardrails: splitList(names)})
	if err != nil {
		return err
	}
	return r.emit(resp, func() {
		_, _ = fmt.Fprintf(r.out, "%s %s: guardrails %s\n", scope, id, strings.Join(resp.GetGuardrails(), ","))
	})
}

// withGuardrailsFlag gives key, team, org and model create and update a
// --guardrails flag: once the command succeeded, the scope's guardrails are
// set to the list (the object's id is its argument; a key created without
// --id has none yet, so it is refused).
func withGuardrailsFlag(cmd *command) *command {
	switch cmd.noun {
	case "key", "team", "org", "model":
	default:
		return cmd
	}
	if cmd.verb != "create" && cmd.verb != "update" {
		return cmd
	}
	c := *cmd
	c.setup = func(fs *flag.FlagSet) func(*runner, []string) error {
		run := cmd.setup(fs)
		names := fs.String("guardrails", "", "guardrails to attach, comma-separated (on a key, -NAME removes an inherited one)")
		return func(r *runner, pos []string) error {
			id := ""
			if len(pos) > 0 {
				id = pos[0]
			} else if f := fs.Lookup("id"); f != nil {
				id = f.Value.String()
			}
			if r.set["guardrails"] && id == "" {
				return fmt.Errorf("%w: --guardrails on %s needs --id", ErrUsage, cmd.name())
			}
			if err := run(r, pos); err != nil || !r.set["guardrails"] {
				return err
			}
			if r.json { // one JSON document per command: the object's
				_, err := adminv1.NewGuardrailServiceClient(r.conn).SetGuardrails(r.ctx, &adminv1.SetGuardrailsRequest{Scope: cmd.noun, Id: id, Guardrails: splitList(*names)})
				return err
			}
			return setGuardrails(r, cmd.noun, id, *names)
		}
	}
	return &c
}
