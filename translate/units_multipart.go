package translate

import (
	"bytes"
	"encoding/binary"
	"math"
	"mime"
	"strconv"
	"strings"

	"github.com/tollgate-ai/tollgate/kernel"
)

// Multipart requests of the unit APIs (images edits, audio transcriptions
// and translations) are read from the body's first bytes: the form fields
// before the first file part, and the file's first bytes (a WAV header).
// The processor may see only a prefix of a large upload (Envoy's
// BUFFERED_PARTIAL; docs/envoy.md): complete says whether body is whole.

// minAudioBytesPerSecond bounds the seconds of a non-WAV upload: no audio
// format a provider accepts is coded under 1000 bytes (8 kbit) a second, so
// bytes/1000 is at least its duration.
const minAudioBytesPerSecond = 1000

// multipartForm is what ParseMultipartUnits reads of a form.
type multipartForm struct {
	fields     map[string]string
	modelValue [2]int // the model field's value in the body [start, end)
	files      int
	fileStart  int    // first byte of the first file part's content, -1: none
	fileEnd    int    // its end when in sight, else -1
	head       []byte // the first file part's first bytes in sight
}

// MultipartBoundary is the boundary of a multipart/form-data content type;
// "" when ct is not one.
func MultipartBoundary(ct string) string {
	mt, params, err := mime.ParseMediaType(ct)
	if err != nil || mt != "multipart/form-data" {
		return ""
	}
	return params["boundary"]
}

// ParseMultipartUnits parses a multipart unit request (contentType names
// its boundary) from body, the whole request when complete, else its first
// bytes of total (-1: unknown).
func ParseMultipartUnits(api API, contentType string, body []byte, complete bool, total int64) (*Inbound, error) {
	boundary := MultipartBoundary(contentType)
	if boundary == "" {
		return nil, &fieldError{"content-type", "must be multipart/form-data with a boundary"}
	}
	isFile := func(name string) bool { return name == "file" }
	if api == APIImageEdits {
		isFile = func(name string) bool { return name == "image" || name == "image[]" || name == "mask" }
	}
	f, err := scanMultipart(body, boundary, isFile)
	if err != nil {
		return nil, err
	}
	in := &Inbound{API: api, Body: body, Model: f.fields["model"]}
	if in.Model == "" && !complete && f.files > 0 {
		// In an upload larger than what the processor sees, the model
		// field comes after the file, out of sight.
		return nil, &fieldError{"model", "must come before the file in an upload larger than the gateway's body buffer (--max-body-bytes)"}
	}
	if complete && f.files == 0 {
		name := "file"
		if api == APIImageEdits {
			name = "image"
		}
		return nil, &fieldError{name, "is required"}
	}
	// Tokens bounds the input tokens by the bytes: of the whole upload when
	// its length is known (an image edit billed by tokens reads them all).
	u := &UnitRequest{Tokens: max(int64(len(body)), total), ModelValue: f.modelValue, Boundary: boundary}
	switch api {
	case APIImageEdits:
		u.Unit, u.Bound, u.Size, u.Quality = kernel.UnitImages, 1, f.fields["size"], f.fields["quality"]
		if v := f.fields["n"]; v != "" {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < 1 || n > maxImages {
				return nil, &fieldError{"n", "must be an integer from 1 to 10"}
			}
			u.Bound = n
		}
	default: // transcriptions, translations
		u.Unit = kernel.UnitSeconds
		fileBytes := int64(-1)
		switch {
		case f.fileEnd >= 0:
			fileBytes = int64(f.fileEnd - f.fileStart)
		case total >= 0 && f.fileStart >= 0:
			fileBytes = total - int64(f.fileStart)
		}
		secs, ok := wavSeconds(f.head, fileBytes)
		if !ok {
			if fileBytes < 0 {
				return nil, &fieldError{"file", "has no length: send a content-length or a WAV file"}
			}
			secs = (fileBytes + minAudioBytesPerSecond - 1) / minAudioBytesPerSecond
		}
		u.Bound = max(secs, 1)
	}
	in.Unit = u
	return in, nil
}

// scanMultipart reads the parts of body in sight: the fields' values, the
// first file part's position and first bytes.
func scanMultipart(body []byte, boundary string, isFile func(string) bool) (*multipartForm, error) {
	f := &multipartForm{fields: map[string]string{}, fileStart: -1, fileEnd: -1, modelValue: [2]int{-1, -1}}
	delim := []byte("--" + boundary)
	i := bytes.Index(body, delim)
	if i < 0 {
		if len(body) < len(delim)+2 {
			return f, nil
		}
		return nil, &fieldError{"body", "is not multipart/form-data with its content type's boundary"}
	}
	next := append([]byte("\r\n"), delim...)
	pos := i + len(delim)
	for {
		if bytes.HasPrefix(body[pos:], []byte("--")) {
			return f, nil // the closing delimiter
		}
		hdrEnd := bytes.Index(body[pos:], []byte("\r\n\r\n"))
		if hdrEnd < 0 {
			return f, nil // out of sight
		}
		name := partName(body[pos : pos+hdrEnd])
		start := pos + hdrEnd + 4
		end := bytes.Index(body[start:], next)
		if isFile(name) {
			f.files++
			if f.fileStart < 0 {
				f.fileStart = start
				stop := len(body)
				if end >= 0 {
					f.fileEnd, stop = start+end, start+end
				}
				f.head = body[start:min(stop, start+4096)]
			}
		}
		if end < 0 {
			return f, nil
		}
		if !isFile(name) && name != "" {
			if _, dup := f.fields[name]; !dup {
				f.fields[name] = string(body[start : start+end])
				if name == "model" {
					f.modelValue = [2]int{start, start + end}
				}
			}
		}
		pos = start + end + len(next)
	}
}

// partName is the form name of a part's headers ("" when none).
func partName(headers []byte) string {
	for line := range strings.SplitSeq(string(headers), "\r\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok || !strings.EqualFold(strings.TrimSpace(k), "content-disposition") {
			continue
		}
		_, params, err := mime.ParseMediaType(strings.TrimSpace(v))
		if err == nil {
			return params["name"]
		}
	}
	return ""
}

// wavSeconds is the duration, in started seconds, of a PCM WAV file whose
// first bytes are head and whose length is fileBytes (-1: unknown): its
// data chunk's size (else the file's bytes after the header) over its byte
// rate. ok is false when head is not a WAV header.
func wavSeconds(head []byte, fileBytes int64) (int64, bool) {
	if len(head) < 12 || string(head[0:4]) != "RIFF" || string(head[8:12]) != "WAVE" {
		return 0, false
	}
	var rate uint32
	for off := 12; off+8 <= len(head); {
		id, size := string(head[off:off+4]), binary.LittleEndian.Uint32(head[off+4:])
		switch id {
		case "fmt ":
			if off+16 > len(head) {
				return 0, false
			}
			rate = binary.LittleEndian.Uint32(head[off+8+8:])
		case "data":
			if rate == 0 {
				return 0, false
			}
			data := int64(size)
			if size == 0 || size == math.MaxUint32 { // a streamed WAV: unknown size
				if fileBytes < 0 {
					return 0, false
				}
				data = fileBytes - int64(off+8)
			}
			if fileBytes >= 0 {
				data = min(data, max(fileBytes-int64(off+8), 0))
			}
			return (data + int64(rate) - 1) / int64(rate), true
		}
		off += 8 + int(size) + int(size&1)
		if size > 1<<20 {
			return 0, false
		}
	}
	return 0, false
}

// RewriteMultipartModel is body with the model field's value (at v, from
// UnitRequest.ModelValue) replaced by model; nil when there is none.
func RewriteMultipartModel(body []byte, v [2]int, model string) []byte {
	if v[0] < 0 || v[1] > len(body) || v[0] > v[1] || string(body[v[0]:v[1]]) == model {
		return nil
	}
	out := make([]byte, 0, len(body)-(v[1]-v[0])+len(model))
	out = append(out, body[:v[0]]...)
	out = append(out, model...)
	return append(out, body[v[1]:]...)
}
