package mockllm

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"image/png"
	"io"
	"math"
	"mime"
	"mime/multipart"
	"net/http"
	"strconv"
	"strings"
	"unicode/utf8"
)

// The routes billed per unit (#34): images (per image), speech (per input
// character), transcriptions and translations (per started second of the
// upload, from its WAV header), rerank (per search unit: one query over up
// to 100 documents). Each bills its units to the key in Stats so tests can
// check the gateway's ledger to the unit.

// maxAudioBody bounds an audio upload; it is read as a stream, never held.
const maxAudioBody = 1 << 30

// bodyLimit is the most a request to path may send: audio uploads are
// read as streams, other bodies whole.
func bodyLimit(path string) int64 {
	if strings.HasSuffix(path, "/audio/transcriptions") || strings.HasSuffix(path, "/audio/translations") {
		return maxAudioBody
	}
	return maxBody
}

// tinyPNG is a 1×1 transparent PNG, the image every generation returns.
const tinyPNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="

// images serves POST /v1/images/generations (OpenAI's shape): n images
// (default 1, at most 10) as b64_json, or as URLs for response_format "url";
// gpt-image-* models also report token usage. stream: true (gpt-image-*
// only) streams them: for each image, partial_images (0 to 3)
// image_generation.partial_image events, then an image_generation.completed
// event whose usage is the prompt's input tokens and the image's output
// tokens (272, plus 100 a partial image).
func (s *Server) images(c *call) {
	var req struct {
		Model          string `json:"model"`
		Prompt         string `json:"prompt"`
		N              *int   `json:"n"`
		ResponseFormat string `json:"response_format"`
		Stream         bool   `json:"stream"`
		PartialImages  int    `json:"partial_images"`
	}
	if !c.decode(&req) {
		return
	}
	n := 1
	if req.N != nil {
		n = *req.N
	}
	if req.Prompt == "" || n < 1 || n > 10 {
		writeError(c.w, c.flavor, http.StatusBadRequest, "'prompt' is required and 'n' must be from 1 to 10")
		return
	}
	if req.Stream {
		if !strings.HasPrefix(req.Model, "gpt-image") || req.PartialImages < 0 || req.PartialImages > 3 {
			writeError(c.w, c.flavor, http.StatusBadRequest, "streaming is for gpt-image models, with partial_images from 0 to 3")
			return
		}
		s.streamImages(c, req.Prompt, n, req.PartialImages)
		return
	}
	s.writeImages(c, req.Model, req.Prompt, n, req.ResponseFormat)
}

// streamImages streams n images as image_generation.* events (images).
func (s *Server) streamImages(c *call, prompt string, n, partial int) {
	in := int64(utf8.RuneCountInString(prompt)+3) / 4
	out := int64(272 + 100*partial)
	ctr := s.counters(c.key)
	ctr.requests.Add(1)
	c.w.Header().Set("content-type", "text/event-stream")
	fl, _ := c.w.(http.Flusher)
	emit := func(v map[string]any) {
		b, _ := json.Marshal(v)
		_, _ = c.w.Write([]byte("event: " + v["type"].(string) + "\ndata: " + string(b) + "\n\n"))
		if fl != nil {
			fl.Flush()
		}
	}
	common := func(typ string) map[string]any {
		return map[string]any{"type": typ, "b64_json": tinyPNG, "created_at": 1_700_000_000, "size": "1024x1024", "quality": "low", "background": "opaque", "output_format": "png"}
	}
	for range n {
		for p := range partial {
			ev := common("image_generation.partial_image")
			ev["partial_image_index"] = p
			emit(ev)
		}
		ev := common("image_generation.completed")
		ev["usage"] = map[string]any{
			"input_tokens": in, "output_tokens": out, "total_tokens": in + out,
			"input_tokens_details": map[string]int64{"text_tokens": in, "image_tokens": 0},
		}
		emit(ev)
		ctr.images.Add(1)
	}
}

func (s *Server) writeImages(c *call, model, prompt string, n int, format string) {
	type image struct {
		B64JSON string `json:"b64_json,omitempty"`
		URL     string `json:"url,omitempty"`
	}
	out := struct {
		Created int64   `json:"created"`
		Data    []image `json:"data"`
		Usage   any     `json:"usage,omitempty"`
	}{Created: 1_700_000_000}
	for i := range n {
		if format == "url" {
			out.Data = append(out.Data, image{URL: "https://images.mock.invalid/" + strconv.Itoa(i) + ".png"})
		} else {
			out.Data = append(out.Data, image{B64JSON: tinyPNG})
		}
	}
	if strings.HasPrefix(model, "gpt-image") {
		in := int64(utf8.RuneCountInString(prompt)+3) / 4
		out.Usage = map[string]any{
			"input_tokens": in, "output_tokens": 272 * n, "total_tokens": in + int64(272*n),
			"input_tokens_details": map[string]int64{"text_tokens": in, "image_tokens": 0},
		}
	}
	ctr := s.counters(c.key)
	ctr.requests.Add(1)
	ctr.images.Add(int64(n))
	c.w.Header().Set("content-type", "application/json")
	_ = json.NewEncoder(c.w).Encode(out)
}

// imageEdits serves POST /v1/images/edits (multipart: image or image[],
// prompt, model, n): n images, billed like generations.
func (s *Server) imageEdits(c *call) {
	mr, err := c.r.MultipartReader()
	if err != nil {
		writeError(c.w, c.flavor, http.StatusBadRequest, "the body must be multipart/form-data")
		return
	}
	fields, images, err := readForm(mr, func(name string) bool { return name == "image" || name == "image[]" || name == "mask" }, nil)
	if err != nil {
		writeError(c.w, c.flavor, http.StatusBadRequest, err.Error())
		return
	}
	n := 1
	if v := fields["n"]; v != "" {
		n, _ = strconv.Atoi(v)
	}
	if images == 0 || fields["prompt"] == "" || n < 1 || n > 10 {
		writeError(c.w, c.flavor, http.StatusBadRequest, "'image' and 'prompt' are required and 'n' must be from 1 to 10")
		return
	}
	s.writeImages(c, fields["model"], fields["prompt"], n, fields["response_format"])
}

// readForm reads a multipart form as a stream: the values of its fields,
// the number of file parts isFile names, each passed to file (when not nil)
// as a reader.
func readForm(mr *multipart.Reader, isFile func(string) bool, file func(io.Reader) error) (map[string]string, int, error) {
	fields := map[string]string{}
	files := 0
	for {
		p, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			return fields, files, nil
		}
		if err != nil {
			return nil, 0, errors.New("malformed multipart body: " + err.Error())
		}
		name := p.FormName()
		if isFile(name) {
			files++
			if file != nil {
				err = file(p)
			}
			if _, cerr := io.Copy(io.Discard, p); err == nil {
				err = cerr
			}
			if err != nil {
				return nil, 0, err
			}
			continue
		}
		v, err := io.ReadAll(io.LimitReader(p, 1<<20))
		if err != nil {
			return nil, 0, errors.New("malformed multipart body: " + err.Error())
		}
		fields[name] = string(v)
	}
}

// speech serves POST /v1/audio/speech: a WAV of 8 kHz 8-bit mono silence,
// 100 samples per input character, written in 4 KiB chunks; billed per
// input character.
func (s *Server) speech(c *call) {
	var req struct {
		Model string `json:"model"`
		Input string `json:"input"`
		Voice string `json:"voice"`
	}
	if !c.decode(&req) {
		return
	}
	chars := utf8.RuneCountInString(req.Input)
	if chars == 0 || chars > 4096 || req.Voice == "" {
		writeError(c.w, c.flavor, http.StatusBadRequest, "'input' (1 to 4096 characters) and 'voice' are required")
		return
	}
	ctr := s.counters(c.key)
	ctr.requests.Add(1)
	ctr.characters.Add(int64(chars))
	wav := WAV(8000, 1, 1, chars*100)
	c.w.Header().Set("content-type", "audio/wav")
	fl, _ := c.w.(http.Flusher)
	for len(wav) > 0 {
		n := min(len(wav), 4096)
		if _, err := c.w.Write(wav[:n]); err != nil {
			return
		}
		if fl != nil {
			fl.Flush()
		}
		wav = wav[n:]
	}
}

// WAV is a PCM WAV file of samples frames of silence.
func WAV(rate, channels, bytesPerSample, samples int) []byte {
	data := samples * channels * bytesPerSample
	b := make([]byte, 44+data)
	WAVHeader(b[:44], rate, channels, bytesPerSample, data)
	if bytesPerSample == 1 {
		for i := 44; i < len(b); i++ {
			b[i] = 0x80 // 8-bit PCM silence
		}
	}
	return b
}

// WAVHeader writes the 44-byte header of a PCM WAV file whose data chunk
// has dataBytes bytes.
func WAVHeader(b []byte, rate, channels, bytesPerSample, dataBytes int) {
	copy(b[0:], "RIFF")
	binary.LittleEndian.PutUint32(b[4:], uint32(36+dataBytes))
	copy(b[8:], "WAVEfmt ")
	binary.LittleEndian.PutUint32(b[16:], 16)
	binary.LittleEndian.PutUint16(b[20:], 1) // PCM
	binary.LittleEndian.PutUint16(b[22:], uint16(channels))
	binary.LittleEndian.PutUint32(b[24:], uint32(rate))
	binary.LittleEndian.PutUint32(b[28:], uint32(rate*channels*bytesPerSample))
	binary.LittleEndian.PutUint16(b[32:], uint16(channels*bytesPerSample))
	binary.LittleEndian.PutUint16(b[34:], uint16(8*bytesPerSample))
	copy(b[36:], "data")
	binary.LittleEndian.PutUint32(b[40:], uint32(dataBytes))
}

// wavSeconds is the duration of a WAV stream read from r: its data chunk's
// size over its byte rate (the data read to its end when the header's size
// is unset or streaming's 0xFFFFFFFF).
func wavSeconds(r io.Reader) (float64, error) {
	var h [44]byte
	if _, err := io.ReadFull(r, h[:]); err != nil || string(h[0:4]) != "RIFF" || string(h[8:12]) != "WAVE" {
		return 0, errors.New("the file is not a WAV file (RIFF/WAVE header)")
	}
	rate := binary.LittleEndian.Uint32(h[28:])
	if rate == 0 {
		return 0, errors.New("the WAV file has a zero byte rate")
	}
	n, err := io.Copy(io.Discard, r)
	if err != nil {
		return 0, err
	}
	if size := binary.LittleEndian.Uint32(h[40:]); size != 0 && size != math.MaxUint32 && int64(size) <= n {
		n = int64(size)
	}
	return float64(n) / float64(rate), nil
}

// transcriptions serves POST /v1/audio/transcriptions and translations
// (multipart: file, model, response_format): the upload is read as a stream
// and its WAV header gives the duration, billed per started second; the
// reply is "json" ({"text","usage":{"type":"duration","seconds"}}),
// "verbose_json" ({"task","language","duration","text","segments"}) or
// "text".
func (s *Server) transcriptions(task string) handler {
	return func(c *call) {
		ct, _, _ := mime.ParseMediaType(c.r.Header.Get("Content-Type"))
		mr, err := c.r.MultipartReader()
		if err != nil || ct != "multipart/form-data" {
			writeError(c.w, c.flavor, http.StatusBadRequest, "the body must be multipart/form-data")
			return
		}
		var secs float64
		fields, files, err := readForm(mr, func(name string) bool { return name == "file" }, func(r io.Reader) (err error) {
			secs, err = wavSeconds(r)
			return err
		})
		if err != nil {
			writeError(c.w, c.flavor, http.StatusBadRequest, err.Error())
			return
		}
		if files != 1 || fields["model"] == "" && c.deployment == "" {
			writeError(c.w, c.flavor, http.StatusBadRequest, "'file' and 'model' are required")
			return
		}
		billedSecs := int64(math.Ceil(secs))
		ctr := s.counters(c.key)
		ctr.requests.Add(1)
		ctr.seconds.Add(billedSecs)
		text := "mock " + task + " of " + strconv.FormatInt(billedSecs, 10) + " seconds"
		switch fields["response_format"] {
		case "text", "srt", "vtt":
			c.w.Header().Set("content-type", "text/plain; charset=utf-8")
			_, _ = io.WriteString(c.w, text+"\n")
			return
		case "verbose_json":
			c.w.Header().Set("content-type", "application/json")
			_ = json.NewEncoder(c.w).Encode(map[string]any{
				"task": task, "language": "english", "duration": secs, "text": text, "segments": []any{},
			})
			return
		}
		c.w.Header().Set("content-type", "application/json")
		_ = json.NewEncoder(c.w).Encode(map[string]any{
			"text": text, "usage": map[string]any{"type": "duration", "seconds": billedSecs},
		})
	}
}

// rerank serves POST /v1/rerank and /v2/rerank in Cohere's shape: the
// documents ranked by their index (deterministic scores), billed one search
// unit per 100 documents.
func (s *Server) rerank(c *call) {
	var req struct {
		Model     string            `json:"model"`
		Query     string            `json:"query"`
		Documents []json.RawMessage `json:"documents"`
		TopN      int               `json:"top_n"`
	}
	if !c.decode(&req) {
		return
	}
	if req.Query == "" || len(req.Documents) == 0 {
		writeError(c.w, c.flavor, http.StatusBadRequest, "'query' and 'documents' are required")
		return
	}
	units := int64(len(req.Documents)+99) / 100
	type result struct {
		Index          int     `json:"index"`
		RelevanceScore float64 `json:"relevance_score"`
	}
	n := len(req.Documents)
	if req.TopN > 0 && req.TopN < n {
		n = req.TopN
	}
	results := make([]result, n)
	for i := range results {
		results[i] = result{Index: i, RelevanceScore: 1 / float64(i+1)}
	}
	ctr := s.counters(c.key)
	ctr.requests.Add(1)
	ctr.searches.Add(units)
	c.w.Header().Set("content-type", "application/json")
	_ = json.NewEncoder(c.w).Encode(map[string]any{
		"id": "rerank-mock", "results": results,
		"meta": map[string]any{"api_version": map[string]string{"version": "2"}, "billed_units": map[string]int64{"search_units": units}},
	})
}

// imagenPredict serves Imagen's :predict (the Gemini API's and Vertex
// AI's): sampleCount images (Google's default 4, at most 4), each a
// prediction with bytesBase64Encoded. A prompt containing "[filter]" has
// its last image withheld as Google's filters do (a prediction with
// raiFilteredReason only), and that image is not billed.
//
// A capability model (imagen-3.0-capability-001) edits: its instance holds
// referenceImages — one REFERENCE_TYPE_RAW image (base64 PNG or JPEG) and
// at most one REFERENCE_TYPE_MASK, a PNG with maskImageConfig.maskMode — and
// a masked edit names an editMode other than EDIT_MODE_DEFAULT; the reply
// and the bill are a generation's. Any other model refuses reference
// images, as Google's generation models do.
func (s *Server) imagenPredict(c *call) {
	var req struct {
		Instances []struct {
			Prompt          string           `json:"prompt"`
			ReferenceImages []imagenRefImage `json:"referenceImages"`
		} `json:"instances"`
		Parameters struct {
			SampleCount *int   `json:"sampleCount"`
			EditMode    string `json:"editMode"`
		} `json:"parameters"`
	}
	if !c.decode(&req) {
		return
	}
	n := 4
	if req.Parameters.SampleCount != nil {
		n = *req.Parameters.SampleCount
	}
	if len(req.Instances) != 1 || req.Instances[0].Prompt == "" || n < 1 || n > 4 {
		writeError(c.w, c.flavor, http.StatusBadRequest, "instances: one instance with a prompt; sampleCount: from 1 to 4")
		return
	}
	if msg := imagenEditError(c.deployment, req.Instances[0].ReferenceImages, req.Parameters.EditMode); msg != "" {
		writeError(c.w, c.flavor, http.StatusBadRequest, msg)
		return
	}
	type prediction struct {
		BytesBase64Encoded string `json:"bytesBase64Encoded,omitempty"`
		MimeType           string `json:"mimeType,omitempty"`
		RAIFilteredReason  string `json:"raiFilteredReason,omitempty"`
	}
	out := struct {
		Predictions []prediction `json:"predictions"`
	}{}
	billed := n
	for range n {
		out.Predictions = append(out.Predictions, prediction{BytesBase64Encoded: tinyPNG, MimeType: "image/png"})
	}
	if strings.Contains(req.Instances[0].Prompt, "[filter]") {
		out.Predictions[n-1] = prediction{RAIFilteredReason: "Unable to show generated images. All images were filtered out because they violated Vertex AI's usage guidelines."}
		billed--
	}
	ctr := s.counters(c.key)
	ctr.requests.Add(1)
	ctr.images.Add(int64(billed))
	c.w.Header().Set("content-type", "application/json")
	_ = json.NewEncoder(c.w).Encode(out)
}

// imagenRefImage is a reference image of an Imagen edit.
type imagenRefImage struct {
	ReferenceType  string `json:"referenceType"`
	ReferenceID    int    `json:"referenceId"`
	ReferenceImage struct {
		BytesBase64Encoded string `json:"bytesBase64Encoded"`
	} `json:"referenceImage"`
	MaskImageConfig *struct {
		MaskMode string `json:"maskMode"`
	} `json:"maskImageConfig"`
}

// imagenEditError is why an Imagen request's reference images are refused
// ("" when they are not).
func imagenEditError(model string, refs []imagenRefImage, editMode string) string {
	capability := strings.Contains(model, "capability")
	switch {
	case !capability && len(refs) > 0:
		return "Image editing is not supported by model " + model + ": use imagen-3.0-capability-001"
	case !capability:
		return ""
	case len(refs) == 0:
		return "instances[0].referenceImages: required for " + model
	}
	raw, masks := 0, 0
	for _, r := range refs {
		b, err := base64.StdEncoding.DecodeString(r.ReferenceImage.BytesBase64Encoded)
		if err != nil || len(b) == 0 {
			return "referenceImages: referenceImage.bytesBase64Encoded must be base64 image bytes"
		}
		switch r.ReferenceType {
		case "REFERENCE_TYPE_RAW":
			raw++
		case "REFERENCE_TYPE_MASK":
			masks++
			if r.MaskImageConfig == nil || r.MaskImageConfig.MaskMode == "" {
				return "referenceImages: a REFERENCE_TYPE_MASK needs maskImageConfig.maskMode"
			}
			if _, err := png.Decode(bytes.NewReader(b)); err != nil {
				return "referenceImages: the mask must be a PNG image"
			}
		default:
			return "referenceImages: unknown referenceType " + r.ReferenceType
		}
	}
	switch {
	case raw != 1 || masks > 1:
		return "referenceImages: one REFERENCE_TYPE_RAW image and at most one REFERENCE_TYPE_MASK"
	case masks == 1 && (editMode == "" || editMode == "EDIT_MODE_DEFAULT"):
		return "parameters.editMode: a masked edit names its mode (EDIT_MODE_INPAINT_INSERTION, …)"
	}
	return ""
}
