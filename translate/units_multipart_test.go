package translate

import (
	"bytes"
	"encoding/binary"
	"mime/multipart"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/kernel"
)

// testWAV is the 44-byte header of an 8 kHz 8-bit mono WAV of dataBytes,
// followed by that much silence.
func testWAV(dataBytes int) []byte {
	b := make([]byte, 44+dataBytes)
	copy(b, "RIFF")
	binary.LittleEndian.PutUint32(b[4:], uint32(36+dataBytes))
	copy(b[8:], "WAVEfmt ")
	binary.LittleEndian.PutUint32(b[16:], 16)
	binary.LittleEndian.PutUint16(b[20:], 1)
	binary.LittleEndian.PutUint16(b[22:], 1)
	binary.LittleEndian.PutUint32(b[24:], 8000)
	binary.LittleEndian.PutUint32(b[28:], 8000)
	binary.LittleEndian.PutUint16(b[32:], 1)
	binary.LittleEndian.PutUint16(b[34:], 8)
	copy(b[36:], "data")
	binary.LittleEndian.PutUint32(b[40:], uint32(dataBytes))
	return b
}

// testForm is a multipart form of fields then a file part; its content type.
func testForm(t *testing.T, fileField string, file []byte, fields ...string) ([]byte, string) {
	t.Helper()
	var b bytes.Buffer
	w := multipart.NewWriter(&b)
	for i := 0; i+1 < len(fields); i += 2 {
		require.NoError(t, w.WriteField(fields[i], fields[i+1]))
	}
	fw, err := w.CreateFormFile(fileField, "f")
	require.NoError(t, err)
	_, err = fw.Write(file)
	require.NoError(t, err)
	require.NoError(t, w.Close())
	return b.Bytes(), w.FormDataContentType()
}

func TestParseMultipartUnits(t *testing.T) {
	body, ct := testForm(t, "file", testWAV(8000*7+1), "model", "stt", "response_format", "json")
	in, err := ParseMultipartUnits(APITranscriptions, ct, body, true, int64(len(body)))
	require.NoError(t, err)
	require.Equal(t, "stt", in.Model)
	require.Equal(t, kernel.UnitSeconds, in.Unit.Unit)
	require.Equal(t, int64(8), in.Unit.Bound, "7 s and a byte: 8 started seconds")

	// Only the first bytes in sight: the WAV header still says the length.
	in, err = ParseMultipartUnits(APITranslations, ct, body[:600], false, int64(len(body)))
	require.NoError(t, err)
	require.Equal(t, int64(8), in.Unit.Bound)

	// Not a WAV: the bytes bound the seconds (1000 a second).
	body, ct = testForm(t, "file", bytes.Repeat([]byte{1}, 4500), "model", "stt")
	in, err = ParseMultipartUnits(APITranscriptions, ct, body, true, int64(len(body)))
	require.NoError(t, err)
	require.Equal(t, int64(5), in.Unit.Bound)

	// The model renamed in a whole form.
	out := RewriteMultipartModel(body, in.Unit.ModelValue, "whisper-1")
	r := multipart.NewReader(bytes.NewReader(out), ct[len("multipart/form-data; boundary="):])
	form, err := r.ReadForm(1 << 20)
	require.NoError(t, err)
	require.Equal(t, []string{"whisper-1"}, form.Value["model"])
	require.Nil(t, RewriteMultipartModel(body, in.Unit.ModelValue, "stt"), "unchanged: nil")

	// Image edits: n images at a size.
	body, ct = testForm(t, "image", []byte("PNG"), "model", "img", "n", "3", "size", "1024x1024", "prompt", "hat")
	in, err = ParseMultipartUnits(APIImageEdits, ct, body, true, int64(len(body)))
	require.NoError(t, err)
	require.Equal(t, kernel.UnitImages, in.Unit.Unit)
	require.Equal(t, int64(3), in.Unit.Bound)
	require.Equal(t, "1024x1024", in.Unit.Size)
}

func TestParseMultipartUnitsRefuses(t *testing.T) {
	wav := testWAV(8000)
	body, _ := testForm(t, "file", wav, "model", "stt")
	_, err := ParseMultipartUnits(APITranscriptions, "application/json", body, true, -1)
	require.Equal(t, "content-type", BodyError(err).Param)

	// The model after the file, out of sight.
	var b bytes.Buffer
	w := multipart.NewWriter(&b)
	fw, _ := w.CreateFormFile("file", "f")
	_, _ = fw.Write(bytes.Repeat([]byte{0x80}, 5000))
	_ = w.WriteField("model", "stt")
	_ = w.Close()
	_, err = ParseMultipartUnits(APITranscriptions, w.FormDataContentType(), b.Bytes()[:1000], false, int64(b.Len()))
	require.Equal(t, "model", BodyError(err).Param)
	// Whole, the same form is fine.
	in, err := ParseMultipartUnits(APITranscriptions, w.FormDataContentType(), b.Bytes(), true, int64(b.Len()))
	require.NoError(t, err)
	require.Equal(t, "stt", in.Model)

	// No file part.
	var nb bytes.Buffer
	nw := multipart.NewWriter(&nb)
	_ = nw.WriteField("model", "stt")
	_ = nw.Close()
	_, err = ParseMultipartUnits(APITranscriptions, nw.FormDataContentType(), nb.Bytes(), true, int64(nb.Len()))
	require.Equal(t, "file", BodyError(err).Param)

	body, ct := testForm(t, "image", []byte("PNG"), "model", "img", "n", "11")
	_, err = ParseMultipartUnits(APIImageEdits, ct, body, true, int64(len(body)))
	require.Equal(t, "n", BodyError(err).Param)
}

// FuzzParseMultipartUnits: any body, whole or cut, parses or is refused,
// never panics, and a bound is at least one second.
func FuzzParseMultipartUnits(f *testing.F) {
	var b bytes.Buffer
	w := multipart.NewWriter(&b)
	_ = w.SetBoundary("fuzzb")
	_ = w.WriteField("model", "stt")
	fw, _ := w.CreateFormFile("file", "f")
	_, _ = fw.Write(testWAV(100))
	_ = w.Close()
	f.Add(b.Bytes(), true)
	f.Add(b.Bytes()[:70], false)
	f.Add([]byte("--fuzzb\r\n\r\n"), false)
	f.Fuzz(func(t *testing.T, body []byte, complete bool) {
		in, err := ParseMultipartUnits(APITranscriptions, "multipart/form-data; boundary=fuzzb", body, complete, int64(len(body)))
		if err == nil {
			require.GreaterOrEqual(t, in.Unit.Bound, int64(1))
			_ = RewriteMultipartModel(body, in.Unit.ModelValue, "m")
		}
	})
}
