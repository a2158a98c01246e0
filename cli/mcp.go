package cli

import (
	"flag"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"

	"google.golang.org/protobuf/types/known/fieldmaskpb"

	adminv1 "github.com/tollgate-ai/tollgate/proto/tollgate/admin/v1"
)

func init() {
	register(
		&command{noun: "mcp-server", verb: "create", args: "ID", help: "add an upstream MCP server (--url, --credential-env, --price-per-call, --tool-price, --rpm)", setup: mcpServerCreate},
		&command{noun: "mcp-server", verb: "list", help: "list MCP servers (credentials are never shown)", setup: mcpServerList},
		&command{noun: "mcp-server", verb: "get", args: "ID", help: "show an MCP server", setup: mcpServerGet},
		&command{noun: "mcp-server", verb: "update", args: "ID", help: "change an MCP server's URL, credential, headers, prices or rpm", setup: mcpServerUpdate},
		&command{noun: "mcp-server", verb: "delete", args: "ID", help: "delete an MCP server", setup: mcpServerDelete},
		&command{noun: "mcp-tools", verb: "set", args: "key|user|team|org ID PATTERNS", help: "set the MCP tools a key (user, team, org) may call: SERVER/TOOL globs, comma-separated (\"\" for none)", setup: mcpToolsSet},
		&command{noun: "mcp-tools", verb: "get", args: "key|user|team|org ID", help: "show the MCP tool grants of a key (user, team, org)", setup: mcpToolsGet},
	)
	nouns = append(nouns, "mcp-server", "mcp-tools")
}

// mcpServerFlags are the flags create and update share.
type mcpServerFlags struct {
	url, credHeader, price string
	headers, toolPrices    multi
	rpm                    int64
	cred                   credentialFlags
}

func (f *mcpServerFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.url, "url", "", "the server's Streamable HTTP endpoint, e.g. https://mcp.example.com/mcp")
	fs.StringVar(&f.credHeader, "credential-header", "", "send the credential in this header (default: Authorization: Bearer …)")
	fs.Var(&f.headers, "header", "NAME=VALUE sent on every upstream request (repeatable; not secret)")
	fs.StringVar(&f.price, "price-per-call", "", "dollars charged per tools/call that ran, e.g. 0.002")
	fs.Var(&f.toolPrices, "tool-price", "TOOL=USD: the price of one tool (repeatable)")
	fs.Int64Var(&f.rpm, "rpm", 0, "calls per minute to this server, all keys together (0: no limit)")
	fs.StringVar(&f.cred.env, "credential-env", "", "read the upstream token from this environment variable")
	fs.StringVar(&f.cred.file, "credential-file", "", "read the upstream token from this file (- for stdin)")
}

func (f *mcpServerFlags) build(id string) (*adminv1.MCPServer, error) {
	s := &adminv1.MCPServer{Id: id, Url: f.url, CredentialHeader: f.credHeader, Rpm: f.rpm}
	var err error
	if s.Headers, err = pairs("header", f.headers); err != nil {
		return nil, err
	}
	if f.price != "" {
		if s.PricePerCall, err = dollars("price-per-call", f.price); err != nil {
			return nil, err
		}
	}
	tp, err := pairs("tool-price", f.toolPrices)
	if err != nil {
		return nil, err
	}
	for t, usd := range tp {
		if s.ToolPrices == nil {
			s.ToolPrices = map[string]*adminv1.Money{}
		}
		if s.ToolPrices[t], err = dollars("tool-price", usd); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// pairs reads NAME=VALUE flags.
func pairs(flagName string, list []string) (map[string]string, error) {
	if len(list) == 0 {
		return nil, nil
	}
	out := map[string]string{}
	for _, p := range list {
		k, v, ok := strings.Cut(p, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("%w: --%s %q: use NAME=VALUE", ErrUsage, flagName, p)
		}
		out[k] = v
	}
	return out, nil
}

func mcpServerFields(s *adminv1.MCPServer) [][2]string {
	cred := "none"
	if s.GetHasCredential() {
		cred = "set (write-only)"
		if h := s.GetCredentialHeader(); h != "" {
			cred += " in " + h
		}
	}
	var headers, prices []string
	for _, k := range slices.Sorted(mapsKeys(s.GetHeaders())) {
		headers = append(headers, k+"="+s.GetHeaders()[k])
	}
	for _, k := range slices.Sorted(mapsKeys(s.GetToolPrices())) {
		prices = append(prices, k+"=$"+s.GetToolPrices()[k].GetDollars())
	}
	rpm := "-"
	if s.GetRpm() > 0 {
		rpm = strconv.FormatInt(s.GetRpm(), 10)
	}
	return [][2]string{
		{"ID", s.GetId()},
		{"URL", s.GetUrl()},
		{"CREDENTIAL", cred},
		{"HEADERS", orDash(strings.Join(headers, ", "))},
		{"PRICE PER CALL", "$" + s.GetPricePerCall().GetDollars()},
		{"TOOL PRICES", orDash(strings.Join(prices, ", "))},
		{"RPM", rpm},
	}
}

func mapsKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

func mcpServerCreate(fs *flag.FlagSet) func(*runner, []string) error {
	var f mcpServerFlags
	f.register(fs)
	return func(r *runner, pos []string) error {
		if f.url == "" {
			return fmt.Errorf("%w: --url is required", ErrUsage)
		}
		s, err := f.build(pos[0])
		if err != nil {
			return err
		}
		cred, _, err := f.cred.read(os.Stdin)
		if err != nil {
			return err
		}
		resp, err := adminv1.NewMCPServiceClient(r.conn).CreateMCPServer(r.ctx, &adminv1.CreateMCPServerRequest{Server: s, Credential: cred})
		if err != nil {
			return err
		}
		return r.emit(resp, func() { r.fields(mcpServerFields(resp.GetServer())) })
	}
}

func mcpServerList(fs *flag.FlagSet) func(*runner, []string) error {
	var pf pageFlags
	pf.register(fs)
	return func(r *runner, _ []string) error {
		all := &adminv1.ListMCPServersResponse{}
		err := pf.each(r, func(token string, size int32) (string, error) {
			resp, err := adminv1.NewMCPServiceClient(r.conn).ListMCPServers(r.ctx, &adminv1.ListMCPServersRequest{PageSize: size, PageToken: token})
			all.Servers = append(all.Servers, resp.GetServers()...)
			return resp.GetNextPageToken(), err
		})
		if err != nil {
			return err
		}
		return r.emit(all, func() {
			var rows [][]string
			for _, s := range all.GetServers() {
				f := mcpServerFields(s)
				rows = append(rows, []string{f[0][1], f[1][1], f[2][1], f[4][1], f[6][1]})
			}
			r.table([]string{"ID", "URL", "CREDENTIAL", "PRICE PER CALL", "RPM"}, rows)
		})
	}
}

func mcpServerGet(*flag.FlagSet) func(*runner, []string) error {
	return func(r *runner, pos []string) error {
		resp, err := adminv1.NewMCPServiceClient(r.conn).GetMCPServer(r.ctx, &adminv1.GetMCPServerRequest{Id: pos[0]})
		if err != nil {
			return err
		}
		return r.emit(resp, func() { r.fields(mcpServerFields(resp.GetServer())) })
	}
}

func mcpServerUpdate(fs *flag.FlagSet) func(*runner, []string) error {
	var f mcpServerFlags
	f.register(fs)
	clearCred := fs.Bool("clear-credential", false, "remove the stored credential")
	return func(r *runner, pos []string) error {
		s, err := f.build(pos[0])
		if err != nil {
			return err
		}
		cred, given, err := f.cred.read(os.Stdin)
		if err != nil {
			return err
		}
		mask, err := updateMask(r.set, map[string]string{
			"url": "url", "credential-header": "credential_header", "header": "headers",
			"price-per-call": "price_per_call", "tool-price": "tool_prices", "rpm": "rpm",
		}, nil)
		if err != nil && !given && !*clearCred {
			return err
		}
		if mask == nil {
			mask = &fieldmaskpb.FieldMask{}
		}
		if given || *clearCred {
			mask.Paths = append(mask.Paths, "credential")
		}
		resp, err := adminv1.NewMCPServiceClient(r.conn).UpdateMCPServer(r.ctx, &adminv1.UpdateMCPServerRequest{Server: s, Credential: cred, UpdateMask: mask})
		if err != nil {
			return err
		}
		return r.emit(resp, func() { r.fields(mcpServerFields(resp.GetServer())) })
	}
}

func mcpServerDelete(*flag.FlagSet) func(*runner, []string) error {
	return func(r *runner, pos []string) error {
		_, err := adminv1.NewMCPServiceClient(r.conn).DeleteMCPServer(r.ctx, &adminv1.DeleteMCPServerRequest{Id: pos[0]})
		return deleted(r, "MCP server", pos[0], err)
	}
}

var mcpToolsOwners = map[string]adminv1.MCPToolsOwner{
	"key": adminv1.MCPToolsOwner_MCP_TOOLS_OWNER_KEY, "user": adminv1.MCPToolsOwner_MCP_TOOLS_OWNER_USER,
	"team": adminv1.MCPToolsOwner_MCP_TOOLS_OWNER_TEAM, "org": adminv1.MCPToolsOwner_MCP_TOOLS_OWNER_ORG,
}

func mcpToolsOwner(s string) (adminv1.MCPToolsOwner, error) {
	o, ok := mcpToolsOwners[s]
	if !ok {
		return 0, fmt.Errorf("%w: %q: the owner is key, user, team or org", ErrUsage, s)
	}
	return o, nil
}

// splitPatterns reads a comma list of grants ("" is none).
func splitPatterns(s string) []string {
	var out []string
	for p := range strings.SplitSeq(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func mcpToolsSet(*flag.FlagSet) func(*runner, []string) error {
	return func(r *runner, pos []string) error {
		if len(pos) != 3 {
			return fmt.Errorf("%w: want key|user|team|org ID PATTERNS", ErrUsage)
		}
		return setMCPTools(r, pos[0], pos[1], pos[2])
	}
}

// setMCPTools sets the grants of one owner and prints them.
func setMCPTools(r *runner, owner, id, patterns string) error {
	o, err := mcpToolsOwner(owner)
	if err != nil {
		return err
	}
	resp, err := adminv1.NewMCPServiceClient(r.conn).SetMCPTools(r.ctx, &adminv1.SetMCPToolsRequest{Owner: o, Id: id, Patterns: splitPatterns(patterns)})
	if err != nil {
		return err
	}
	return r.emit(resp, func() {
		fmt.Fprintf(r.out, "%s %s may call MCP tools: %s\n", owner, id, orDash(strings.Join(resp.GetPatterns(), ",")))
	})
}

func mcpToolsGet(*flag.FlagSet) func(*runner, []string) error {
	return func(r *runner, pos []string) error {
		if len(pos) != 2 {
			return fmt.Errorf("%w: want key|user|team|org ID", ErrUsage)
		}
		o, err := mcpToolsOwner(pos[0])
		if err != nil {
			return err
		}
		resp, err := adminv1.NewMCPServiceClient(r.conn).GetMCPTools(r.ctx, &adminv1.GetMCPToolsRequest{Owner: o, Id: pos[1]})
		if err != nil {
			return err
		}
		return r.emit(resp, func() { fmt.Fprintf(r.out, "%s\n", orDash(strings.Join(resp.GetPatterns(), ","))) })
	}
}

// mcpToolsFlag is --mcp-tools of the create and update commands of keys,
// users, teams and orgs.
func mcpToolsFlag(fs *flag.FlagSet) *string {
	return fs.String("mcp-tools", "", "MCP tools it may call: SERVER/TOOL globs, comma-separated (github/*,fs/read_*); none by default")
}

// grantMCPTools sets the grants given with --mcp-tools, if any (quietly:
// the command prints what it created).
func grantMCPTools(r *runner, owner adminv1.MCPToolsOwner, id, patterns string) error {
	if !r.set["mcp-tools"] {
		return nil
	}
	_, err := adminv1.NewMCPServiceClient(r.conn).SetMCPTools(r.ctx, &adminv1.SetMCPToolsRequest{Owner: owner, Id: id, Patterns: splitPatterns(patterns)})
	return err
}

// grantsOnly sets the grants of an update command's --mcp-tools first; it
// returns the mask of the rest of the update, nil when --mcp-tools was the
// only change (the caller then shows the owner as it is).
func grantsOnly(r *runner, owner adminv1.MCPToolsOwner, id, patterns string, mask *fieldmaskpb.FieldMask, maskErr error) (*fieldmaskpb.FieldMask, error) {
	if maskErr != nil && !r.set["mcp-tools"] {
		return nil, maskErr
	}
	if err := grantMCPTools(r, owner, id, patterns); err != nil {
		return nil, err
	}
	return mask, nil
}
