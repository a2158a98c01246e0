package translate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/tollgate-ai/tollgate/kernel"
)

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

// ParseMetadataTags reads the body's metadata.tollgate_tags, a string in the
// header's form; nil when the body has none (a body without the key is not
// decoded).
func ParseMetadataTags(body []byte) ([]string, error) {
	if !bytes.Contains(body, []byte(`"`+MetadataTags+`"`)) {
		return nil, nil
	}
	var doc struct {
		Metadata map[string]json.RawMessage `json:"metadata"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		return nil, nil //nolint:nilerr // the body was parsed before: a key in another place than metadata
	}
	raw, ok := doc.Metadata[MetadataTags]
	if !ok {
		return nil, nil
	}
	var v string
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, fmt.Errorf("%w: metadata.%s must be a string of name=value pairs", kernel.ErrBadTag, MetadataTags)
	}
	return kernel.ParseTags(v)
}

// TagsError is the client's 400 for malformed tags (err: kernel.ParseTags's)
// in the body's param, or in the header named header when param is "".
func TagsError(err error, header, param string) *APIError {
	msg := err.Error()
	if errors.Is(err, kernel.ErrBadTag) {
		msg = msg[len(kernel.ErrBadTag.Error())+2:] // without "kernel: invalid tag: "
	}
	where := "The " + header + " header"
	if param != "" {
		where = "The body's " + param
	}
	return &APIError{
		Status: http.StatusBadRequest, Type: TypeInvalidRequest, Code: "invalid_tags", Param: param,
		Message: fmt.Sprintf("%s must be name=value pairs separated by commas (at most %d; names of letters, digits, '_', '-', '.', ':'; values of printable ASCII without ','): %s.",
			where, kernel.MaxTags, msg),
	}
}
