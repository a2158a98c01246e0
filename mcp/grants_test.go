package mcp

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/internal/secret"
)

func TestAllowed(t *testing.T) {
	c := &Caller{KeyID: "k", Grants: []Grant{
		{Level: "key k", Patterns: []string{"github/*", "fs/read_*"}},
		{Level: "user u"}, // sets none: does not narrow
		{Level: "team eng", Patterns: []string{"github/search_*", "fs/*"}},
	}}
	for _, tc := range []struct {
		server, tool string
		ok           bool
		missing      string
	}{
		{"github", "search_issues", true, ""},
		{"github", "create_issue", false, "team eng"},
		{"fs", "read_file", true, ""},
		{"fs", "write_file", false, "key k"},
		{"jira", "search", false, "key k"},
	} {
		ok, missing := c.Allowed(tc.server, tc.tool)
		require.Equal(t, tc.ok, ok, "%s/%s", tc.server, tc.tool)
		require.Equal(t, tc.missing, missing, "%s/%s", tc.server, tc.tool)
	}
	require.True(t, c.MayUse("github"))
	require.False(t, c.MayUse("jira"))

	none := &Caller{KeyID: "n", Grants: []Grant{{Level: "key n"}, {Level: "team t", Patterns: []string{"*/*"}}}}
	ok, missing := none.Allowed("github", "x")
	require.False(t, ok, "deny by default: the key's own grants are required")
	require.Equal(t, "key n", missing)
	require.False(t, none.MayUse("github"))
}

func TestValidate(t *testing.T) {
	require.NoError(t, ValidatePatterns([]string{"github/*", "fs/read_*", "*/*", "github/prompt:review_*", "fs/resource:*"}))
	for _, bad := range []string{"github", "/x", "x/", "a/b/c", "a/[", "", "fs/resource:file*"} {
		require.Error(t, ValidatePatterns([]string{bad}), bad)
	}
	require.NoError(t, ValidateServerID("git-hub2"))
	for _, bad := range []string{"", "a_b", "a/b", "a b"} {
		require.Error(t, ValidateServerID(bad), bad)
	}
}

func TestSessionToken(t *testing.T) {
	s, err := secret.NewSealer(make([]byte, 32))
	require.NoError(t, err)
	now := time.Unix(1_800_000_000, 0)
	st := newSessionToken("k1", "2025-11-25", now)
	st.Up = map[string]upSession{"github": {ID: "up-1", Version: "2025-06-18", Caps: capTools | capPrompts}}
	tok := sealToken(s, st)
	got, err := openToken(s, tok, "k1", now.Add(time.Hour))
	require.NoError(t, err)
	require.Equal(t, "2025-11-25", got.Version)
	require.Equal(t, st.Up, got.Up, "the upstream sessions ride along")
	c := got.Up["github"].Caps.capabilities()
	require.NotNil(t, c.Tools)
	require.NotNil(t, c.Prompts)
	require.Nil(t, c.Resources)

	_, err = openToken(s, tok, "k2", now)
	require.ErrorIs(t, err, ErrBadSession, "bound to its key")
	_, err = openToken(s, tok, "k1", now.Add(SessionTTL))
	require.ErrorIs(t, err, ErrBadSession, "expired")
	_, err = openToken(s, tok[:len(tok)-2]+"AA", "k1", now)
	require.ErrorIs(t, err, ErrBadSession, "tampered")
	other, err := secret.NewSealer(append(make([]byte, 31), 1))
	require.NoError(t, err)
	_, err = openToken(other, tok, "k1", now)
	require.ErrorIs(t, err, ErrBadSession, "another gateway's key")
	_, err = openToken(s, "abc", "k1", now)
	require.ErrorIs(t, err, ErrBadSession)
}
