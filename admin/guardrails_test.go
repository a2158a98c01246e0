package admin_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"

	adminv1 "github.com/tollgate-ai/tollgate/proto/tollgate/admin/v1"
	"github.com/tollgate-ai/tollgate/store/memstore"
)

func TestGuardrailsCRUDAndAttachments(t *testing.T) {
	e := newEnv(t, memstore.New())
	ctx := e.admin(t)
	c := adminv1.NewGuardrailServiceClient(e.conn)

	_, err := c.CreateGuardrail(ctx, &adminv1.CreateGuardrailRequest{Guardrail: &adminv1.Guardrail{Name: "pii", Kind: "pii", Action: "redact", On: []string{"pre", "stream"}, Mandatory: true}})
	require.NoError(t, err)
	_, err = c.CreateGuardrail(ctx, &adminv1.CreateGuardrailRequest{Guardrail: &adminv1.Guardrail{Name: "pii", Kind: "pii", Action: "redact"}})
	requireCode(t, codes.AlreadyExists, err)
	for _, bad := range []*adminv1.Guardrail{
		{Name: "x", Kind: "nope", Action: "block"},
		{Name: "x", Kind: "pii", Action: "shout"},
		{Name: "x", Kind: "size", Action: "block"},
		{Name: "x", Kind: "words", Action: "block", Patterns: []string{"("}},
		{Name: "x", Kind: "moderation", Action: "block"},
		{Name: "x", Kind: "webhook", Action: "block", Url: "ftp://x"},
	} {
		_, err = c.CreateGuardrail(ctx, &adminv1.CreateGuardrailRequest{Guardrail: bad})
		requireCode(t, codes.InvalidArgument, err)
	}
	_, err = c.CreateGuardrail(ctx, &adminv1.CreateGuardrailRequest{Guardrail: &adminv1.Guardrail{Name: "words", Kind: "words", Action: "block", Words: []string{"falcon"}}})
	require.NoError(t, err)
	got, err := c.GetGuardrail(ctx, &adminv1.GetGuardrailRequest{Name: "pii"})
	require.NoError(t, err)
	require.Equal(t, []string{"pre", "stream"}, got.GetGuardrail().GetOn())
	require.True(t, got.GetGuardrail().GetMandatory())
	list, err := c.ListGuardrails(ctx, &adminv1.ListGuardrailsRequest{})
	require.NoError(t, err)
	require.Len(t, list.GetGuardrails(), 2)
	up, err := c.UpdateGuardrail(ctx, &adminv1.UpdateGuardrailRequest{Guardrail: &adminv1.Guardrail{Name: "words", Kind: "words", Action: "log", Words: []string{"falcon"}}})
	require.NoError(t, err)
	require.Equal(t, "log", up.GetGuardrail().GetAction())

	// Attachments: a team takes both; a key may remove the optional one only.
	_, err = c.SetGuardrails(ctx, &adminv1.SetGuardrailsRequest{Scope: "team", Id: "ml", Guardrails: []string{"pii", "words"}})
	require.NoError(t, err)
	_, err = c.SetGuardrails(ctx, &adminv1.SetGuardrailsRequest{Scope: "key", Id: "k1", Guardrails: []string{"-pii"}})
	requireCode(t, codes.InvalidArgument, err)
	_, err = c.SetGuardrails(ctx, &adminv1.SetGuardrailsRequest{Scope: "key", Id: "k1", Guardrails: []string{"-words"}})
	require.NoError(t, err)
	_, err = c.SetGuardrails(ctx, &adminv1.SetGuardrailsRequest{Scope: "team", Id: "ml", Guardrails: []string{"-words"}})
	requireCode(t, codes.InvalidArgument, err)
	_, err = c.SetGuardrails(ctx, &adminv1.SetGuardrailsRequest{Scope: "model", Id: "demo", Guardrails: []string{"missing"}})
	requireCode(t, codes.NotFound, err)
	_, err = c.SetGuardrails(ctx, &adminv1.SetGuardrailsRequest{Scope: "galaxy", Id: "x", Guardrails: []string{"pii"}})
	requireCode(t, codes.InvalidArgument, err)
	att, err := c.GetGuardrails(ctx, &adminv1.GetGuardrailsRequest{Scope: "team", Id: "ml"})
	require.NoError(t, err)
	require.Equal(t, []string{"pii", "words"}, att.GetGuardrails())
	_, err = c.SetGuardrails(ctx, &adminv1.SetGuardrailsRequest{Scope: "team", Id: "ml"})
	require.NoError(t, err)
	att, err = c.GetGuardrails(ctx, &adminv1.GetGuardrailsRequest{Scope: "team", Id: "ml"})
	require.NoError(t, err)
	require.Empty(t, att.GetGuardrails())

	_, err = c.DeleteGuardrail(ctx, &adminv1.DeleteGuardrailRequest{Name: "words"})
	require.NoError(t, err)
	_, err = c.GetGuardrail(ctx, &adminv1.GetGuardrailRequest{Name: "words"})
	requireCode(t, codes.NotFound, err)
}

func TestApplyGuardrails(t *testing.T) {
	e := newEnv(t, memstore.New())
	ctx := e.admin(t)
	doc := `
guardrails:
  - name: pii
    kind: pii
    action: redact
    on: [pre, stream]
    mandatory: true
  - name: hook
    kind: webhook
    action: block
    url: http://127.0.0.1:1/check
    timeout: 300ms
    fail_open: true
guardrail_attachments:
  - {scope: team, id: ml, guardrails: [pii]}
  - {scope: key, id: k1, guardrails: [hook]}
`
	res, err := adminv1.NewConfigServiceClient(e.conn).Apply(ctx, &adminv1.ApplyRequest{Document: doc})
	require.NoError(t, err)
	require.ElementsMatch(t, []string{"guardrail/pii", "guardrail/hook", "guardrail_attachment/team:ml", "guardrail_attachment/key:k1"}, res.GetCreated())
	res, err = adminv1.NewConfigServiceClient(e.conn).Apply(ctx, &adminv1.ApplyRequest{Document: doc})
	require.NoError(t, err)
	require.Len(t, res.GetUnchanged(), 4, "applying again changes nothing")
	g, err := adminv1.NewGuardrailServiceClient(e.conn).GetGuardrail(ctx, &adminv1.GetGuardrailRequest{Name: "hook"})
	require.NoError(t, err)
	require.Equal(t, int64(300), g.GetGuardrail().GetTimeoutMs())

	for _, bad := range []string{
		"guardrails: [{name: x, kind: pii, action: shout}]",
		"guardrail_attachments: [{scope: key, id: k1, guardrails: [-pii]}]",
		"guardrail_attachments: [{scope: team, id: t, guardrails: [missing]}]",
	} {
		_, err = adminv1.NewConfigServiceClient(e.conn).Apply(ctx, &adminv1.ApplyRequest{Document: bad})
		requireCode(t, codes.InvalidArgument, err)
	}
}
