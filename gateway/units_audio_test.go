package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"mime/multipart"
	"net/http"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/internal/mockllm"
	"github.com/tollgate-ai/tollgate/kernel"
)

// upload posts a multipart form: fields in order, then (or, with
// fileFirst, before them) a file part named fileField holding file.
func (r *running) upload(t *testing.T, key, path string, fields [][2]string, fileField string, file io.Reader, size int64) (*http.Response, []byte) {
	t.Helper()
	pr, pw := io.Pipe()
	mw := multipart.NewWriter(pw)
	go func() {
		for _, f := range fields {
			if err := mw.WriteField(f[0], f[1]); err != nil {
				pw.CloseWithError(err)
				return
			}
		}
		fw, err := mw.CreateFormFile(fileField, "audio.wav")
		if err == nil {
			_, err = io.Copy(fw, file)
		}
		if err == nil {
			err = mw.Close()
		}
		pw.CloseWithError(err)
	}()
	// The length of the form, for content-length: its framing around the file.
	var frame bytes.Buffer
	fw := multipart.NewWriter(&frame)
	require.NoError(t, fw.SetBoundary(mw.Boundary()))
	for _, f := range fields {
		require.NoError(t, fw.WriteField(f[0], f[1]))
	}
	_, err := fw.CreateFormFile(fileField, "audio.wav")
	require.NoError(t, err)
	require.NoError(t, fw.Close())

	req, err := http.NewRequest(http.MethodPost, r.url+path, pr)
	require.NoError(t, err)
	req.ContentLength = int64(frame.Len()) + size
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, b
}

// silence is a reader of n bytes of 8-bit PCM silence, made as it is read.
type silence struct{ n int64 }

func (s *silence) Read(p []byte) (int, error) {
	if s.n <= 0 {
		return 0, io.EOF
	}
	k := int(min(int64(len(p)), s.n))
	for i := range p[:k] {
		p[i] = 0x80
	}
	s.n -= int64(k)
	return k, nil
}

// wavFile is a reader of a WAV file of secs seconds at 8 kHz, 8-bit mono,
// and its size.
func wavFile(secs int64) (io.Reader, int64) {
	data := secs * 8000
	h := make([]byte, 44)
	mockllm.WAVHeader(h, 8000, 1, 1, int(data))
	return io.MultiReader(bytes.NewReader(h), &silence{data}), 44 + data
}

// TestAudioRoutes: transcriptions and translations of a WAV upload are
// charged per second of audio — the reply's duration (json usage and
// verbose_json), the WAV header's when the reply is text — and the ledger's
// seconds equal the mock's bill; a form without a model, or not multipart,
// gets a typed 400.
func TestAudioRoutes(t *testing.T) {
	r := start(t, false)
	ctx := context.Background()
	unitGroups(t, r)
	key := r.key(t, "k-audio", kernel.Limits{})
	r.warm(t, key, `{"model":"demo","messages":[{"role":"user","content":"hi"}],"max_tokens":5}`)
	eventually(t, func() bool {
		f, n := wavFile(1)
		resp, _ := r.upload(t, key, "/v1/audio/transcriptions", [][2]string{{"model", "stt"}}, "file", f, n)
		return resp.StatusCode == http.StatusOK
	})
	require.NoError(t, r.st.Flush(ctx))
	base := len(completed(t, r.st))
	r.mock.ResetStats()

	for _, c := range []struct {
		path, format string
		secs         int64
	}{
		{"/v1/audio/transcriptions", "", 7},
		{"/v1/audio/transcriptions", "verbose_json", 3},
		{"/v1/audio/translations", "text", 5},
	} {
		fields := [][2]string{{"model", "stt"}}
		if c.format != "" {
			fields = append(fields, [2]string{"response_format", c.format})
		}
		f, n := wavFile(c.secs)
		resp, b := r.upload(t, key, c.path, fields, "file", f, n)
		require.Equal(t, http.StatusOK, resp.StatusCode, string(b))
		require.Contains(t, string(b), "of "+strconv.FormatInt(c.secs, 10)+" seconds")
	}
	// Bad forms: typed errors before the provider.
	f, n := wavFile(1)
	resp, b := r.upload(t, key, "/v1/audio/transcriptions", nil, "file", f, n)
	require.Equal(t, http.StatusBadRequest, resp.StatusCode, string(b))
	require.Contains(t, string(b), `"param":"model"`)
	resp, b = r.do(t, http.MethodPost, key, "/v1/audio/transcriptions", `{"model":"stt"}`)
	require.Equal(t, http.StatusBadRequest, resp.StatusCode, string(b))
	require.Contains(t, string(b), "invalid_content_type")

	bill := r.mock.Stats().Keys["sk-upstream"]
	require.Equal(t, int64(15), bill.Seconds, "%+v", bill)
	require.NoError(t, r.st.Flush(ctx))
	rows := completed(t, r.st)[base:]
	require.Len(t, rows, 3)
	var secs int64
	for _, e := range rows {
		require.Equal(t, kernel.UnitSeconds, e.Unit)
		require.Equal(t, kernel.Money(e.Quantity)*100_000, e.Cost)
		secs += e.Quantity
	}
	require.Equal(t, bill.Seconds, secs, "ledger seconds == the mock's bill")
}

// TestAudioUploadStreamed: a 200 MiB upload goes to the provider without
// the gateway holding it: the processor sees its first bytes (the model
// field and the WAV header), the rest flows through; the process's peak
// RSS grows by a few MiB, not by the upload. The ledger charges the WAV's
// seconds, as the mock bills them.
func TestAudioUploadStreamed(t *testing.T) {
	r := start(t, false)
	ctx := context.Background()
	unitGroups(t, r)
	key := r.key(t, "k-big", kernel.Limits{})
	r.warm(t, key, `{"model":"demo","messages":[{"role":"user","content":"hi"}],"max_tokens":5}`)
	eventually(t, func() bool {
		f, n := wavFile(1)
		resp, _ := r.upload(t, key, "/v1/audio/transcriptions", [][2]string{{"model", "stt"}}, "file", f, n)
		return resp.StatusCode == http.StatusOK
	})
	r.mock.ResetStats()
	require.NoError(t, r.st.Flush(ctx))
	base := len(completed(t, r.st))

	const secs = 200 << 20 / 8000 // 200 MiB of 8 kHz 8-bit audio
	runtime.GC()
	debug.FreeOSMemory()
	before := peakRSS(t)
	f, n := wavFile(secs)
	resp, b := r.upload(t, key, "/v1/audio/transcriptions", [][2]string{{"model", "stt"}, {"response_format", "verbose_json"}}, "file", f, n)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(b))
	after := peakRSS(t)
	t.Logf("peak RSS %d KiB before, %d KiB after a %d MiB upload", before, after, n>>20)
	require.Less(t, after-before, int64(24<<10), "peak RSS grew by %d KiB", after-before)

	var reply struct{ Duration float64 }
	require.NoError(t, json.Unmarshal(b, &reply))
	require.InDelta(t, float64(secs), reply.Duration, 1e-9)
	require.Equal(t, int64(secs), r.mock.Stats().Keys["sk-upstream"].Seconds)
	require.NoError(t, r.st.Flush(ctx))
	rows := completed(t, r.st)[base:]
	require.Len(t, rows, 1)
	require.Equal(t, int64(secs), rows[0].Quantity)

	// The model after the file, beyond what the gateway sees: a typed 400
	// before the provider is called.
	var form bytes.Buffer
	mw := multipart.NewWriter(&form)
	fw, err := mw.CreateFormFile("file", "a.wav")
	require.NoError(t, err)
	f, _ = wavFile(400) // 3.2 MB, more than the 1 MiB the gateway sees
	_, err = io.Copy(fw, f)
	require.NoError(t, err)
	require.NoError(t, mw.WriteField("model", "stt"))
	require.NoError(t, mw.Close())
	req, err := http.NewRequest(http.MethodPost, r.url+"/v1/audio/transcriptions", &form)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	resp, err = http.DefaultClient.Do(req)
	require.NoError(t, err)
	b, err = io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	require.Equal(t, http.StatusBadRequest, resp.StatusCode, string(b))
	require.Contains(t, string(b), `"param":"model"`)
	require.Contains(t, string(b), "must come before the file")
	require.Equal(t, int64(secs), r.mock.Stats().Keys["sk-upstream"].Seconds, "the provider was not called")
}

// peakRSS is the process's peak resident set (VmHWM), in KiB.
func peakRSS(t *testing.T) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	require.NoError(t, err)
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			n, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			require.NoError(t, err)
			return n
		}
	}
	t.Fatal("no VmHWM in /proc/self/status")
	return 0
}

// TestImageEdits: /v1/images/edits (multipart) is charged per image at its
// size's price, as the mock bills it.
func TestImageEdits(t *testing.T) {
	r := start(t, true)
	ctx := context.Background()
	unitGroups(t, r)
	key := r.key(t, "k-edit", kernel.Limits{})
	r.warm(t, key, `{"model":"demo","messages":[{"role":"user","content":"hi"}],"max_tokens":5}`)
	fields := [][2]string{{"model", "img"}, {"prompt", "add a hat"}, {"n", "2"}, {"size", "1024x1024"}}
	eventually(t, func() bool {
		resp, _ := r.upload(t, key, "/v1/images/edits", fields, "image", strings.NewReader("PNGDATA"), 7)
		return resp.StatusCode == http.StatusOK
	})
	require.NoError(t, r.st.Flush(ctx))
	base := len(completed(t, r.st))
	r.mock.ResetStats()
	resp, b := r.upload(t, key, "/v1/images/edits", fields, "image", strings.NewReader("PNGDATA"), 7)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(b))
	require.Equal(t, int64(2), r.mock.Stats().Keys["sk-upstream"].Images)
	require.NoError(t, r.st.Flush(ctx))
	rows := completed(t, r.st)[base:]
	require.Len(t, rows, 1)
	require.Equal(t, kernel.UnitImages, rows[0].Unit)
	require.Equal(t, int64(2), rows[0].Quantity)
	require.Equal(t, 2*40*kernel.Dollar/1000, rows[0].Cost)
}
