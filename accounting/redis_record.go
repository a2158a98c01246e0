package accounting

import (
	"encoding/json"
	"strconv"
)

// appendRecordJSON appends json.Marshal(rec) — the same bytes — without
// reflection for the fields every admission writes; the budget periods (rare,
// custom MarshalJSON) still go through encoding/json.
func appendRecordJSON(b []byte, rec *record) ([]byte, error) {
	b = append(b, `{"m":`...)
	b = appendJSONString(b, rec.Model)
	p := rec.Price
	b = strconv.AppendInt(append(b, `,"p":{"input":`...), int64(p.Input), 10)
	if p.CachedInput != 0 {
		b = strconv.AppendInt(append(b, `,"cached_input":`...), int64(p.CachedInput), 10)
	}
	if p.CacheWrite != 0 {
		b = strconv.AppendInt(append(b, `,"cache_write":`...), int64(p.CacheWrite), 10)
	}
	b = strconv.AppendInt(append(b, `,"output":`...), int64(p.Output), 10)
	if p.Reasoning != 0 {
		b = strconv.AppendInt(append(b, `,"reasoning":`...), int64(p.Reasoning), 10)
	}
	if p.Unpriced {
		b = append(b, `,"unpriced":true`...)
	}
	b = append(b, `},"s":`...)
	if rec.Scopes == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i, s := range rec.Scopes {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(append(b, `{"kind":`...), s.Kind.String())
			b = append(appendJSONString(append(b, `,"id":`...), s.ID), '}')
		}
		b = append(b, ']')
	}
	if len(rec.Periods) > 0 {
		periods, err := json.Marshal(rec.Periods)
		if err != nil {
			return nil, err
		}
		b = append(append(b, `,"b":`...), periods...)
	}
	b = strconv.AppendInt(append(b, `,"a":`...), rec.AdmittedAt, 10)
	b = strconv.AppendInt(append(b, `,"dl":`...), rec.Deadline, 10)
	b = strconv.AppendInt(append(b, `,"mn":`...), rec.Minute, 10)
	if rec.Output != 0 {
		b = strconv.AppendInt(append(b, `,"o":`...), rec.Output, 10)
	}
	return append(b, '}'), nil
}

// appendJSONString appends s as encoding/json writes it: plain ASCII that
// needs no escaping directly, anything else through encoding/json.
func appendJSONString(b []byte, s string) []byte {
	for i := range len(s) {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s) // a string always encodes
			return append(b, q...)
		}
	}
	return append(append(append(b, '"'), s...), '"')
}
