package ownership

import (
	"bytes"
	"encoding/json"
)

// MaxCreatedEvent bounds the start of a stream kept to find its
// response.created event.
const MaxCreatedEvent = 1 << 16

// CreatedID finds the id of a streamed response in its first events (the
// response of response.created), fed the stream's chunks as they come,
// split anywhere.
type CreatedID struct {
	buf  []byte
	id   string
	gave bool // past MaxCreatedEvent with no id: gave up
}

// Feed reads one more chunk; it returns the id once found ("" until then),
// and false once it gave up (no response.created where it should be).
func (c *CreatedID) Feed(chunk []byte) (id string, ok bool) {
	if c.id != "" || c.gave {
		return c.id, !c.gave
	}
	if len(c.buf)+len(chunk) > MaxCreatedEvent {
		c.gave, c.buf = true, nil
		return "", false
	}
	c.buf = append(c.buf, chunk...)
	for {
		i := bytes.Index(c.buf, []byte("\n\n"))
		if i < 0 {
			return "", true
		}
		ev := c.buf[:i]
		c.buf = c.buf[i+2:]
		for line := range bytes.SplitSeq(ev, []byte("\n")) {
			data, ok := bytes.CutPrefix(line, []byte("data:"))
			if !ok {
				continue
			}
			var e struct {
				Response struct {
					ID string `json:"id"`
				} `json:"response"`
			}
			if json.Unmarshal(bytes.TrimSpace(data), &e) == nil && e.Response.ID != "" {
				c.id, c.buf = e.Response.ID, nil
				return c.id, true
			}
		}
	}
}
