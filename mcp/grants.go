package mcp

import (
	"fmt"
	"path"
	"strings"
)

// Allowed reports whether c may call tool of server: deny by default — the
// key's own grants (Grants[0]) must match SERVER/TOOL, and so must every
// ancestor level that sets grants (a level with none does not narrow). When
// denied, missing names the first level whose grants do not match.
func (c *Caller) Allowed(server, tool string) (ok bool, missing string) {
	name := server + "/" + tool
	if len(c.Grants) == 0 || len(c.Grants[0].Patterns) == 0 {
		return false, "key " + c.KeyID
	}
	for i, g := range c.Grants {
		if i > 0 && len(g.Patterns) == 0 {
			continue
		}
		if !matchAny(g.Patterns, name) {
			return false, g.Level
		}
	}
	return true, ""
}

// MayUse reports whether any grant chain could allow some tool of server: a
// cheap filter before listing its tools.
func (c *Caller) MayUse(server string) bool {
	if len(c.Grants) == 0 || len(c.Grants[0].Patterns) == 0 {
		return false
	}
	for i, g := range c.Grants {
		if i > 0 && len(g.Patterns) == 0 {
			continue
		}
		any := false
		for _, p := range g.Patterns {
			s, _, _ := strings.Cut(p, "/")
			if ok, _ := path.Match(s, server); ok {
				any = true
				break
			}
		}
		if !any {
			return false
		}
	}
	return true
}

func matchAny(patterns []string, name string) bool {
	for _, p := range patterns {
		if ok, _ := path.Match(p, name); ok {
			return true
		}
	}
	return false
}

// ValidatePatterns checks a list of grants: each SERVER/TOOL, both parts
// non-empty globs in path.Match syntax.
func ValidatePatterns(patterns []string) error {
	for _, p := range patterns {
		s, t, ok := strings.Cut(p, "/")
		if !ok || s == "" || t == "" || strings.Contains(t, "/") {
			return fmt.Errorf("mcp tools %q: want SERVER/TOOL (globs allowed: github/*, fs/read_*)", p)
		}
		if r, ok := strings.CutPrefix(t, "resource:"); ok && r != "*" {
			return fmt.Errorf("mcp tools %q: a server's resources are granted as a whole: SERVER/%s", p, resourceGrant)
		}
		if _, err := path.Match(p, ""); err != nil {
			return fmt.Errorf("mcp tools %q: %w", p, err)
		}
	}
	return nil
}

// ValidateServerID checks an MCP server id: letters, digits and '-', so that
// SERVER__TOOL splits at the first "__".
func ValidateServerID(id string) error {
	if id == "" || len(id) > 64 {
		return fmt.Errorf("mcp server id %q: 1 to 64 characters", id)
	}
	for _, r := range id {
		if !idRune(r) {
			return fmt.Errorf("mcp server id %q: only letters, digits and '-'", id)
		}
	}
	return nil
}

// Separator joins a server id and a tool name on /mcp.
const Separator = "__"

// splitName splits an aggregated tool name SERVER__TOOL.
func splitName(name string) (server, tool string, ok bool) {
	server, tool, ok = strings.Cut(name, Separator)
	return server, tool, ok && server != "" && tool != ""
}

func idRune(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-'
}
