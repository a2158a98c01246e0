package cli

import (
	"flag"
	"fmt"
	"maps"
	"slices"
	"strings"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	adminv1 "github.com/tollgate-ai/tollgate/proto/tollgate/admin/v1"
)

func init() {
	register(
		&command{noun: "key", verb: "create", help: "create a virtual key; prints its secret once", setup: keyCreate},
		&command{noun: "key", verb: "list", help: "list keys (--team, --user, --alias, --status)", setup: keyList},
		&command{noun: "key", verb: "get", args: "ID", help: "show a key", setup: keyGet},
		&command{noun: "key", verb: "update", args: "ID", help: "change a key's alias, metadata or limits", setup: keyUpdate},
		&command{noun: "key", verb: "revoke", args: "ID", help: "revoke a key: its secrets stop working", setup: keyRevoke},
		&command{noun: "key", verb: "rotate", args: "ID", help: "new secret; the old one works for --grace (24h)", setup: keyRotate},
	)
}

var keyStatusNames = map[adminv1.KeyStatus]string{
	adminv1.KeyStatus_KEY_STATUS_ACTIVE: "active", adminv1.KeyStatus_KEY_STATUS_REVOKED: "revoked",
	adminv1.KeyStatus_KEY_STATUS_EXPIRED: "expired",
}

func keyFields(k *adminv1.Key) [][2]string {
	meta := make([]string, 0, len(k.GetMetadata()))
	for _, name := range slices.Sorted(maps.Keys(k.GetMetadata())) {
		meta = append(meta, name+"="+k.GetMetadata()[name])
	}
	rows := [][2]string{
		{"ID", k.GetId()},
		{"ALIAS", orDash(k.GetAlias())},
		{"PREFIX", k.GetPrefix() + "…"},
		{"STATUS", keyStatusNames[k.GetStatus()]},
		{"TEAM", orDash(k.GetTeamId())},
		{"USER", orDash(k.GetUserId())},
		{"ORG", orDash(k.GetOrgId())},
		{"PASSTHROUGH", orDash(strings.Join(k.GetPassthrough(), ","))},
	}
	rows = append(rows, limitsFields(k.GetLimits())...)
	rows = append(rows, [][2]string{
		{"METADATA", orDash(strings.Join(meta, " "))}, {"CREATED", when(k.GetCreatedAt())},
	}...)
	if k.GetRevokedAt() != nil {
		rows = append(rows, [2]string{"REVOKED", when(k.GetRevokedAt())})
	}
	if k.GetPreviousSecretValidUntil() != nil {
		rows = append(rows, [2]string{"OLD SECRET VALID UNTIL", when(k.GetPreviousSecretValidUntil())})
	}
	return rows
}

// secretResponse is a response that carries a key and its one-time secret.
type secretResponse interface {
	proto.Message
	GetKey() *adminv1.Key
	GetSecret() string
}

// showSecret prints a key with its one-time secret.
func (r *runner) showSecret(resp secretResponse) error {
	return r.emit(resp, func() {
		r.fields(append([][2]string{{"SECRET", resp.GetSecret()}}, keyFields(resp.GetKey())...))
		_, _ = fmt.Fprintln(r.errOut, "The secret is shown only now: store it safely.")
	})
}

func keyCreate(fs *flag.FlagSet) func(*runner, []string) error {
	var lf limitsFlags
	var meta multi
	id := fs.String("id", "", "key id (default: generated)")
	alias := fs.String("alias", "", "human-readable name")
	team := fs.String("team", "", "team id")
	user := fs.String("user", "", "user id")
	org := fs.String("org", "", "organization id (default: the team's)")
	fs.Var(&meta, "meta", "metadata key=value (repeatable)")
	mcpTools := mcpToolsFlag(fs)
	pass := fs.String("passthrough", "", "pass-through grants 'PROVIDER_ID:PATH_GLOB,…' (docs/endpoints.md; default: none)")
	tagList := fs.String("tags", "", "default tags of the key's requests: 'name=value,…' (docs/governance.md)")
	lf.register(fs)
	return func(r *runner, _ []string) error {
		limits, err := lf.build(r.now())
		if err != nil {
			return err
		}
		tags, err := tagsMap(*tagList) // tags.go
		if err != nil {
			return err
		}
		md, err := parseMeta(meta)
		if err != nil {
			return err
		}
		resp, err := adminv1.NewKeyServiceClient(r.conn).CreateKey(r.ctx, &adminv1.CreateKeyRequest{
			Id: *id, Alias: *alias, TeamId: *team, UserId: *user, OrgId: *org, Limits: limits, Metadata: md,
			Passthrough: passthroughGrants(*pass), Tags: tags,
		})
		if err != nil {
			return err
		}
		if err := grantMCPTools(r, adminv1.MCPToolsOwner_MCP_TOOLS_OWNER_KEY, resp.GetKey().GetId(), *mcpTools); err != nil {
			return err
		}
		return r.showSecret(resp)
	}
}

func keyList(fs *flag.FlagSet) func(*runner, []string) error {
	var pf pageFlags
	team := fs.String("team", "", "only keys of this team")
	user := fs.String("user", "", "only keys of this user")
	alias := fs.String("alias", "", "only keys with this alias")
	statusName := fs.String("status", "", "only keys with this status: active, revoked or expired")
	pf.register(fs)
	return func(r *runner, _ []string) error {
		var st adminv1.KeyStatus
		if *statusName != "" {
			for k, v := range keyStatusNames {
				if v == *statusName {
					st = k
				}
			}
			if st == adminv1.KeyStatus_KEY_STATUS_UNSPECIFIED {
				return fmt.Errorf("%w: --status %q: use active, revoked or expired", ErrUsage, *statusName)
			}
		}
		all := &adminv1.ListKeysResponse{}
		err := pf.each(r, func(token string, size int32) (string, error) {
			resp, err := adminv1.NewKeyServiceClient(r.conn).ListKeys(r.ctx, &adminv1.ListKeysRequest{
				TeamId: *team, UserId: *user, Alias: *alias, Status: st, PageSize: size, PageToken: token,
			})
			all.Keys = append(all.Keys, resp.GetKeys()...)
			return resp.GetNextPageToken(), err
		})
		if err != nil {
			return err
		}
		return r.emit(all, func() {
			rows := make([][]string, 0, len(all.GetKeys()))
			for _, k := range all.GetKeys() {
				rows = append(rows, []string{
					k.GetId(), orDash(k.GetAlias()), k.GetPrefix() + "…", keyStatusNames[k.GetStatus()],
					orDash(k.GetTeamId()), orDash(k.GetUserId()), budgets(k.GetLimits()),
					num(k.GetLimits().GetRpm()), num(k.GetLimits().GetTpm()), models(k.GetLimits()),
				})
			}
			r.table([]string{"ID", "ALIAS", "PREFIX", "STATUS", "TEAM", "USER", "BUDGETS", "RPM", "TPM", "MODELS"}, rows)
		})
	}
}

func keyGet(*flag.FlagSet) func(*runner, []string) error {
	return func(r *runner, pos []string) error {
		resp, err := adminv1.NewKeyServiceClient(r.conn).GetKey(r.ctx, &adminv1.GetKeyRequest{Id: pos[0]})
		if err != nil {
			return err
		}
		return r.emit(resp, func() { r.fields(keyFields(resp.GetKey())) })
	}
}

func keyUpdate(fs *flag.FlagSet) func(*runner, []string) error {
	var lf limitsFlags
	var meta multi
	alias := fs.String("alias", "", "new alias")
	fs.Var(&meta, "meta", "metadata key=value (repeatable; replaces all metadata)")
	fs.Bool("clear-meta", false, "remove all metadata")
	pass := fs.String("passthrough", "", "replace the pass-through grants: 'PROVIDER_ID:PATH_GLOB,…' ('' removes them)")
	mcpTools := mcpToolsFlag(fs)
	tagList := fs.String("tags", "", "replace the key's default tags: 'name=value,…' ('' removes them)")
	lf.register(fs)
	return func(r *runner, pos []string) error {
		limits, err := lf.build(r.now())
		if err != nil {
			return err
		}
		tags, err := tagsMap(*tagList) // tags.go
		if err != nil {
			return err
		}
		md, err := parseMeta(meta)
		if err != nil {
			return err
		}
		mask, err := updateMask(r.set, map[string]string{"alias": "alias", "meta": "metadata", "clear-meta": "metadata", "passthrough": "passthrough", "tags": "tags"}, &lf)
		mask, err = grantsOnly(r, adminv1.MCPToolsOwner_MCP_TOOLS_OWNER_KEY, pos[0], *mcpTools, mask, err)
		if err != nil {
			return err
		}
		if mask == nil {
			return keyGet(nil)(r, pos)
		}
		resp, err := adminv1.NewKeyServiceClient(r.conn).UpdateKey(r.ctx, &adminv1.UpdateKeyRequest{
			Id: pos[0], Alias: *alias, Metadata: md, Limits: limits, UpdateMask: mask,
			Passthrough: passthroughGrants(*pass), Tags: tags,
		})
		if err != nil {
			return err
		}
		return r.emit(resp, func() { r.fields(keyFields(resp.GetKey())) })
	}
}

func keyRevoke(*flag.FlagSet) func(*runner, []string) error {
	return func(r *runner, pos []string) error {
		resp, err := adminv1.NewKeyServiceClient(r.conn).RevokeKey(r.ctx, &adminv1.RevokeKeyRequest{Id: pos[0]})
		if err != nil {
			return err
		}
		return r.emit(resp, func() { _, _ = fmt.Fprintf(r.out, "key %s revoked\n", resp.GetKey().GetId()) })
	}
}

func keyRotate(fs *flag.FlagSet) func(*runner, []string) error {
	grace := fs.String("grace", "24h", "how long the old secret keeps working (0 stops it at once)")
	return func(r *runner, pos []string) error {
		d, err := parseDuration(*grace)
		if err != nil {
			return fmt.Errorf("%w: --grace: %w", ErrUsage, err)
		}
		resp, err := adminv1.NewKeyServiceClient(r.conn).RotateKey(r.ctx, &adminv1.RotateKeyRequest{Id: pos[0], GracePeriod: durationpb.New(d)})
		if err != nil {
			return err
		}
		return r.showSecret(resp)
	}
}

// passthroughGrants splits a --passthrough list.
func passthroughGrants(s string) []string {
	var out []string
	for g := range strings.SplitSeq(s, ",") {
		if g = strings.TrimSpace(g); g != "" {
			out = append(out, g)
		}
	}
	return out
}
