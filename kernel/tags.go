package kernel

import (
	"fmt"
	"slices"
	"strings"
)

// Tags attribute spend to what a request was for (feature=search,
// env=prod). A tag is "name=value"; a list of tags is kept sorted by name,
// one value per name. Every tag of a request is in its ledger row; a tag with
// a budget is also one more scope of the request (ScopeTag).

// Bounds of a request's tags.
const (
	MaxTags     = 16  // tags of one request, or of one key's defaults
	MaxTagName  = 64  // bytes of a name: letters, digits, '_', '-', '.', ':'
	MaxTagValue = 128 // bytes of a value: printable ASCII other than ','
)

// TagScopeID is the ID of the ScopeTag of tag name=value.
func TagScopeID(name, value string) string { return name + "=" + value }

// CheckTag reports whether name=value is a valid tag (ErrBadTag).
func CheckTag(name, value string) error {
	switch {
	case name == "" || len(name) > MaxTagName:
		return fmt.Errorf("%w: the name of %q must be 1 to %d characters", ErrBadTag, name+"="+value, MaxTagName)
	case strings.IndexFunc(name, func(r rune) bool { return !tagNameRune(r) }) >= 0:
		return fmt.Errorf("%w: the name %q may hold only letters, digits, '_', '-', '.' and ':'", ErrBadTag, name)
	case value == "" || len(value) > MaxTagValue:
		return fmt.Errorf("%w: the value of %s must be 1 to %d characters", ErrBadTag, name, MaxTagValue)
	case strings.IndexFunc(value, func(r rune) bool { return r < 0x21 || r > 0x7e || r == ',' }) >= 0:
		return fmt.Errorf("%w: the value of %s may hold only printable ASCII characters other than ',' and spaces", ErrBadTag, name)
	}
	return nil
}

func tagNameRune(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-' || r == '.' || r == ':'
}

// ParseTags reads "name=value,name=value" (spaces around each tag ignored;
// "" is no tag): at most MaxTags, each name once. It returns the tags
// sorted by name.
func ParseTags(s string) ([]string, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	parts := strings.Split(s, ",")
	if len(parts) > MaxTags {
		return nil, fmt.Errorf("%w: %d tags, at most %d", ErrBadTag, len(parts), MaxTags)
	}
	out := make([]string, 0, len(parts))
	for _, p := range parts {
		p = strings.TrimSpace(p)
		name, value, ok := strings.Cut(p, "=")
		if !ok {
			return nil, fmt.Errorf("%w: %q is not name=value", ErrBadTag, p)
		}
		if err := CheckTag(name, value); err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return sortTags(out)
}

// TagsOf checks a map of tags (a key's defaults) and returns them as a
// sorted list.
func TagsOf(m map[string]string) ([]string, error) {
	if len(m) > MaxTags {
		return nil, fmt.Errorf("%w: %d tags, at most %d", ErrBadTag, len(m), MaxTags)
	}
	out := make([]string, 0, len(m))
	for name, value := range m {
		if err := CheckTag(name, value); err != nil {
			return nil, err
		}
		out = append(out, TagScopeID(name, value))
	}
	return sortTags(out)
}

// sortTags sorts tags by name and refuses a name given twice.
func sortTags(tags []string) ([]string, error) {
	slices.SortFunc(tags, func(a, b string) int { return strings.Compare(TagName(a), TagName(b)) })
	for i := 1; i < len(tags); i++ {
		if TagName(tags[i]) == TagName(tags[i-1]) {
			return nil, fmt.Errorf("%w: %s is given twice", ErrBadTag, TagName(tags[i]))
		}
	}
	return tags, nil
}

// TagName is the name of tag "name=value".
func TagName(tag string) string {
	name, _, _ := strings.Cut(tag, "=")
	return name
}

// MergeTags is defaults with over's tags added, over's value winning for a
// name both have; both sorted by name (ParseTags, TagsOf), and so is the
// result. It returns over or defaults itself when the other is empty.
func MergeTags(defaults, over []string) []string {
	if len(defaults) == 0 {
		return over
	}
	if len(over) == 0 {
		return defaults
	}
	out := make([]string, 0, len(defaults)+len(over))
	i, j := 0, 0
	for i < len(defaults) || j < len(over) {
		switch {
		case j == len(over) || i < len(defaults) && TagName(defaults[i]) < TagName(over[j]):
			out = append(out, defaults[i])
			i++
		case i == len(defaults) || TagName(over[j]) < TagName(defaults[i]):
			out = append(out, over[j])
			j++
		default: // the same name: the request's value
			out = append(out, over[j])
			i, j = i+1, j+1
		}
	}
	return out
}
