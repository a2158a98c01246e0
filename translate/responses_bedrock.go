package translate

// streamContentType: a Responses stream translated through chat is SSE
// whatever the upstream's (Bedrock's is an AWS event stream, which the
// processor would otherwise pass on as the client's content type).
func (t *responsesViaChat) StreamContentType() string { return sseContentType }
