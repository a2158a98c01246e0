package kernel

import (
	"slices"
	"strings"
)

// PriceNames lists, best first, the names under which the price table may
// hold the price of model as provider calls it: the name itself, then the
// names it normalizes to. provider is the provider type as the store spells
// it ("openai", "azure", "anthropic", "gemini", "vertex", "bedrock"); the
// forms understood are
//
//   - Gemini and Vertex: a "models/" prefix, or a full resource name
//     ("projects/p/locations/l/publishers/google/models/gemini-2.5-pro"),
//     is dropped;
//   - Vertex: "claude-sonnet-4-5@20250929" is "claude-sonnet-4-5-20250929";
//     "@latest" and "@default" name the undated model;
//   - Bedrock: an inference-profile ARN is its last path segment; a regional
//     or global inference-profile prefix ("us.", "eu.", "apac.", "global.",
//     …) is dropped ("anthropic.claude-…-v1:0"), then the vendor prefix and
//     the version suffix ("claude-sonnet-4-5-20250929").
//
// A dated name never falls back to its undated alias: snapshots of one model
// may be priced differently. Azure deployment names are arbitrary: the
// caller passes the deployment's base model when it has one.
//
// It is a pure function of (provider, model) so that the request path may call
// it for a model name known only at request time (a group that passes the
// client's model name upstream) as well as the snapshot builder for a
// deployment's configured model.
func PriceNames(provider, model string) []string {
	out := []string{model}
	add := func(name string) {
		if name != "" && !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	name := model
	switch provider {
	case "gemini", "vertex":
		if i := strings.LastIndex(name, "models/"); i >= 0 && (i == 0 || name[i-1] == '/') {
			name = name[i+len("models/"):]
			add(name)
		}
		if provider == "vertex" {
			if base, ver, ok := strings.Cut(name, "@"); ok {
				if ver == "latest" || ver == "default" {
					add(base)
				} else if ver != "" {
					add(base + "-" + ver)
				}
			}
		}
	case "bedrock":
		if strings.HasPrefix(name, "arn:") {
			if i := strings.LastIndexByte(name, '/'); i >= 0 {
				name = name[i+1:]
				add(name)
			}
		}
		for _, r := range bedrockRegions {
			if rest, ok := strings.CutPrefix(name, r); ok {
				name = rest
				add(name)
				break
			}
		}
		if _, rest, ok := strings.Cut(name, "."); ok {
			if bare := trimBedrockVersion(rest); bare != rest {
				add(bare)
			}
		}
	}
	return out
}

// bedrockRegions are the geographic prefixes of Bedrock's cross-region
// inference profiles (docs.aws.amazon.com/bedrock/latest/userguide/inference-profiles-support.html).
var bedrockRegions = []string{"us.", "eu.", "apac.", "global.", "us-gov.", "jp.", "au.", "ca."}

// trimBedrockVersion drops a Bedrock model version suffix "-vN:M"
// ("claude-sonnet-4-5-20250929-v1:0" → "claude-sonnet-4-5-20250929"); a name
// without one ("embed-english-v3", "claude-v2") is returned as it is.
func trimBedrockVersion(s string) string {
	i := strings.LastIndexByte(s, ':')
	if i < 0 || !isNumber(s[i+1:]) {
		return s
	}
	j := strings.LastIndex(s[:i], "-v")
	if j < 0 || !isNumber(s[j+2:i]) {
		return s
	}
	return s[:j]
}

// isNumber: s is one or more decimal digits.
func isNumber(s string) bool { return s != "" && allDigits(s) }

// LookupPrice finds the price of model as provider calls it: the first of
// PriceNames(provider, model) that find knows. It returns the name the price
// was found under; ok is false when none is known.
func LookupPrice(provider, model string, find func(name string) (Price, bool)) (p Price, name string, ok bool) {
	for _, n := range PriceNames(provider, model) {
		if p, ok := find(n); ok {
			return p, n, true
		}
	}
	return Price{}, "", false
}
