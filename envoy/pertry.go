package envoy

import (
	"crypto/sha256"
	"encoding/hex"
	"regexp"
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
	// UpstreamCodecFilter is the terminal upstream HTTP filter.
	UpstreamCodecFilter = "envoy.filters.http.upstream_codec"
)

// safeName are group names used as they are in TryKey.
var safeName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// TryKey names the per-try route of a request of group whose first try goes
// to deployment: the x-tollgate-route value, and the suffix of its
// aggregate cluster. A group name that is not safe in a cluster name is
// replaced by a hash of it. skip (a routing.TryOrder mask, 0: none) leaves out the
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

// TryCluster is the aggregate cluster of a per-try route.
func TryCluster(key string) string { return TryClusterPrefix + key }
