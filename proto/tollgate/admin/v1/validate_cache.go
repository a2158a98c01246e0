package adminv1

// ModelCachePaths are the update_mask paths of a model group's response
// cache: the ModelCache is replaced whole (the CLI merges the flags given
// into the current one).
var ModelCachePaths = []string{"cache"}
