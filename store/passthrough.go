package store

import (
	"fmt"
	"path"
	"strings"
)

// ParsePassthroughGrant reads one pass-through grant (Key.Passthrough,
// Team.Passthrough): "PROVIDER_ID:PATH_GLOB", the glob a path.Match
// pattern starting with "/" ("*" stays within a segment), "/**" at its end
// for every path below, or "*" alone for every path of the provider.
func ParsePassthroughGrant(g string) (provider, glob string, err error) {
	provider, glob, ok := strings.Cut(strings.TrimSpace(g), ":")
	if !ok || provider == "" || glob == "" || glob != "*" && !strings.HasPrefix(glob, "/") {
		return "", "", fmt.Errorf("pass-through grant %q: want PROVIDER_ID:/PATH_GLOB", g)
	}
	if _, err := path.Match(glob, "/"); err != nil {
		return "", "", fmt.Errorf("pass-through grant %q: %w", g, err)
	}
	return provider, glob, nil
}

// PassthroughGrantMatches reports whether glob (of ParsePassthroughGrant)
// covers the request path p.
func PassthroughGrantMatches(glob, p string) bool {
	if glob == "*" {
		return true
	}
	if prefix, ok := strings.CutSuffix(glob, "/**"); ok {
		return p == prefix || strings.HasPrefix(p, prefix+"/")
	}
	ok, _ := path.Match(glob, p)
	return ok
}
