package envoy

import (
	"crypto/sha256"
	"encoding/hex"
	"regexp"
	"slices"
	"strconv"
)

// Names of the per-try routing (docs/envoy.md, "Retries across
// deployments"), shared by the xDS builder, the processor and the built-in
// data plane.
const (
	// TryAttribute is the upstream ext_proc filter's request attribute that
	// names the deployment a try landed on: the endpoint metadata
	// filter_metadata[MetadataNamespace][TryMetadataKey] of the host the
	// router picked (a CEL expression; its value is a string).
	TryAttribute = "xds.upstream_host_metadata.filter_metadata['" + MetadataNamespace + "']['" + TryMetadataKey + "']"
	// TryMetadataKey is the endpoint metadata key holding the deployment id.
	TryMetadataKey = "deployment"
	// TryClusterPrefix prefixes TryKey to name a per-try aggregate cluster.
	TryClusterPrefix = "try_"
	// AttemptCountHeader is the attempt number Envoy adds to the request of
	// each try (virtual host include_request_attempt_count).
	AttemptCountHeader = "x-envoy-attempt-count"
	// ReservedHeader carries, from the router-level stream to the first
	// try, the reservation it admitted: "id;deployment;max_tokens;clamped".
	ReservedHeader = "x-tollgate-reserved"
	// MaxFallbackDepth bounds how many fallback groups a chain follows.
	MaxFallbackDepth = 3
	// UpstreamCodecFilter is the terminal upstream HTTP filter.
	UpstreamCodecFilter = "envoy.filters.http.upstream_codec"
)

// PerTry reports whether a model group is routed per try: it retries, and
// a retry has somewhere else to go (another deployment, or a fallback
// group). Other groups keep one route and cluster per deployment.
func PerTry(retries, deployments, fallbacks int) bool {
	return retries > 0 && (deployments > 1 || fallbacks > 0)
}

// safeName are group names used as they are in TryKey.
var safeName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// TryKey names the per-try route of a request of group whose first try goes
// to deployment: the x-tollgate-route value, and the suffix of its
// aggregate cluster. A group name that is not safe in a cluster name is
// replaced by a hash of it. skip (a TryOrder mask, 0: none) leaves out the
// deployments the processor knows to be cooling down when it routes.
func TryKey(group, deployment string, skip uint) string {
	if !safeName.MatchString(group) {
		sum := sha256.Sum256([]byte(group))
		group = "h" + hex.EncodeToString(sum[:6])
	}
	if skip != 0 {
		return deployment + "~" + group + "~" + strconv.FormatUint(uint64(skip), 16)
	}
	return deployment + "~" + group
}

// TryMaskWidth is how many deployments after the first a per-try route's
// skip mask covers: bit i-1 leaves out the order's i-th deployment. Later
// ones are always in the order (a group with more has 2^TryMaskWidth routes
// per first deployment, not more).
const TryMaskWidth = 4

// TryOrder is the order of the tries of a request whose first try goes to
// first: first, then the deployments of the group chain (chain, in order,
// each once).
func TryOrder(first string, chain [][]string) []string {
	order := []string{first}
	for _, deps := range chain {
		for _, d := range deps {
			if !slices.Contains(order, d) {
				order = append(order, d)
			}
		}
	}
	return order
}

// Skip is the mask of TryKey that leaves out of order the deployments for
// which out is true (within TryMaskWidth).
func Skip(order []string, out func(string) bool) uint {
	var m uint
	for i := 1; i < len(order) && i <= TryMaskWidth; i++ {
		if out(order[i]) {
			m |= 1 << (i - 1)
		}
	}
	return m
}

// Masks is how many skip masks the per-try routes of order have.
func Masks(order []string) uint { return 1 << min(len(order)-1, TryMaskWidth) }

// Skipped is order without the deployments skip leaves out.
func Skipped(order []string, skip uint) []string {
	out := make([]string, 0, len(order))
	for i, d := range order {
		if i == 0 || i > TryMaskWidth || skip&(1<<(i-1)) == 0 {
			out = append(out, d)
		}
	}
	return out
}

// TryCluster is the aggregate cluster of a per-try route.
func TryCluster(key string) string { return TryClusterPrefix + key }

// GroupChain is the order in which a group and its fallback groups are
// tried: the group, then each fallback depth first (its own fallbacks
// after it), each group once, at most 1+MaxFallbackDepth groups.
// fallbacks returns a group's fallbacks (nil for an unknown group).
func GroupChain(group string, fallbacks func(string) []string) []string {
	chain := []string{group}
	var visit func(names []string)
	visit = func(names []string) {
		for _, n := range names {
			if len(chain) > MaxFallbackDepth || slices.Contains(chain, n) {
				continue
			}
			chain = append(chain, n)
			visit(fallbacks(n))
		}
	}
	visit(fallbacks(group))
	return chain
}
