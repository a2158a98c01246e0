package translate

import "bytes"

// MetadataTags is the member of a request's metadata that carries its
// Tollgate tags (docs/governance.md, "Tags"): the gateway reads it for
// attribution and strips it from the provider-bound body, so a provider
// never sees (or stores, with OpenAI's store: true) the caller's tags.
const MetadataTags = "tollgate_tags"

// metadataWithoutTags is the metadata object at md without its
// tollgate_tags member, other members unchanged and in order; ok is false
// when the object has no such member (nothing to edit).
func metadataWithoutTags(b []byte, md Span) (text []byte, ok bool) {
	if !md.isObject(b) {
		return nil, false
	}
	if m := md.bytes(b); !bytes.Contains(m, []byte(MetadataTags)) && bytes.IndexByte(m, '\\') < 0 {
		return nil, false
	}
	out := make([]byte, 0, md.End-md.Start)
	out = append(out, '{')
	_, err := ScanObject(b, md.Start, false, func(key []byte, v Span) error {
		if KeyIs(key, MetadataTags) {
			ok = true
			return nil
		}
		if len(out) > 1 {
			out = append(out, ',')
		}
		out = append(out, '"')
		out = append(out, key...)
		out = append(out, '"', ':')
		out = append(out, v.bytes(b)...)
		return nil
	})
	if err != nil || !ok {
		return nil, false
	}
	return append(out, '}'), true
}
