package translate

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/kernel"
)

func TestParseUnitRequest(t *testing.T) {
	for _, c := range []struct {
		name  string
		api   API
		body  string
		unit  kernel.Unit
		bound int64
	}{
		{"one image by default", APIImages, `{"model":"m","prompt":"p"}`, kernel.UnitImages, 1},
		{"n images", APIImages, `{"model":"m","prompt":"p","n":3,"size":"1024x1024","quality":"hd"}`, kernel.UnitImages, 3},
		{"speech counts characters, not bytes", APISpeech, `{"model":"m","input":"Grüße!","voice":"alloy"}`, kernel.UnitCharacters, 6},
		{"moderations estimate tokens", APIModerations, `{"model":"m","input":"12345678"}`, kernel.UnitTokens, 3},
		{"one search unit per 100 documents", APIRerank, `{"model":"m","query":"q","documents":["a","b"]}`, kernel.UnitSearches, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			in, err := ParseUnitRequest(c.api, []byte(c.body))
			require.NoError(t, err)
			require.Equal(t, "m", in.Model)
			require.Equal(t, c.unit, in.Unit.Unit)
			require.Equal(t, c.bound, in.Unit.Bound)
		})
	}
	in, err := ParseUnitRequest(APIImages, []byte(`{"model":"m","prompt":"p","size":"1792x1024","quality":"standard"}`))
	require.NoError(t, err)
	require.Equal(t, "1792x1024", in.Unit.Size)
	require.Equal(t, "standard", in.Unit.Quality)

	docs := make([]byte, 0, 2000)
	docs = append(docs, `{"model":"m","query":"q","documents":[`...)
	for i := range 201 {
		if i > 0 {
			docs = append(docs, ',')
		}
		docs = append(docs, `"d"`...)
	}
	docs = append(docs, "]}"...)
	in, err = ParseUnitRequest(APIRerank, docs)
	require.NoError(t, err)
	require.Equal(t, int64(3), in.Unit.Bound)
}

func TestParseUnitRequestRefuses(t *testing.T) {
	for _, c := range []struct {
		api   API
		body  string
		field string
	}{
		{APIImages, `{"model":"m","prompt":"p","n":11}`, "n"},
		{APIImages, `{"model":"m","prompt":"p","n":0}`, "n"},
		{APIImages, `{"model":"m","prompt":"p","stream":true,"partial_images":4}`, "partial_images"},
		{APISpeech, `{"model":"m","input":"hi","stream":true}`, "stream"},
		{APISpeech, `{"model":"m","voice":"alloy"}`, "input"},
		{APISpeech, `{"model":"m","input":""}`, "input"},
		{APIModerations, `{"model":"m"}`, "input"},
		{APIRerank, `{"model":"m","documents":["a"]}`, "query"},
		{APIRerank, `{"model":"m","query":"q","documents":[]}`, "documents"},
	} {
		_, err := ParseUnitRequest(c.api, []byte(c.body))
		require.Error(t, err, c.body)
		e := BodyError(err)
		require.Equal(t, 400, e.Status)
		require.Equal(t, c.field, e.Param, c.body)
	}
	long := make([]byte, 0, 5000)
	long = append(long, `{"model":"m","input":"`...)
	for range 4097 {
		long = append(long, 'a')
	}
	long = append(long, `"}`...)
	_, err := ParseUnitRequest(APISpeech, long)
	require.Error(t, err)
}

func TestUnitsFromReplies(t *testing.T) {
	for _, c := range []struct {
		name  string
		api   API
		unit  UnitRequest
		reply string
		want  int64
	}{
		{"images: one per data entry", APIImages, UnitRequest{Unit: kernel.UnitImages, Bound: 3}, `{"created":1,"data":[{"url":"u"},{"url":"v"}]}`, 2},
		{"images: no data, the bound", APIImages, UnitRequest{Unit: kernel.UnitImages, Bound: 3}, `{"created":1}`, 3},
		{"verbose_json duration rounds up", APITranscriptions, UnitRequest{Unit: kernel.UnitSeconds, Bound: 99}, `{"text":"hi","duration":7.2}`, 8},
		{"usage seconds", APITranscriptions, UnitRequest{Unit: kernel.UnitSeconds, Bound: 99}, `{"text":"hi","usage":{"type":"duration","seconds":12}}`, 12},
		{"text reply: the estimate", APITranscriptions, UnitRequest{Unit: kernel.UnitSeconds, Bound: 99}, `hello`, 99},
		{"cohere search units", APIRerank, UnitRequest{Unit: kernel.UnitSearches, Bound: 1}, `{"results":[],"meta":{"billed_units":{"search_units":2}}}`, 2},
		{"jina tokens", APIRerank, UnitRequest{Unit: kernel.UnitTokens, Bound: 5}, `{"results":[],"usage":{"total_tokens":42}}`, 42},
		{"speech: the characters", APISpeech, UnitRequest{Unit: kernel.UnitCharacters, Bound: 19}, "RIFF....", 19},
		{"moderations without usage: the estimate", APIModerations, UnitRequest{Unit: kernel.UnitTokens, Bound: 4}, `{"id":"m","results":[]}`, 4},
	} {
		t.Run(c.name, func(t *testing.T) {
			tr := &unitsOpenAI{api: c.api, unit: c.unit}
			out, u, err := tr.Response([]byte(c.reply))
			require.NoError(t, err)
			require.Equal(t, c.reply, string(out))
			require.Equal(t, kernel.Usage{Input: c.want}, u)
		})
	}
}

// An image model billed by tokens (gpt-image-1): the reply's usage, text
// and image input split by input_tokens_details, and the images it holds;
// a reply without usage is charged its bound.
func TestImageTokensFromReplies(t *testing.T) {
	for _, c := range []struct {
		name   string
		unit   UnitRequest
		reply  string
		want   kernel.Usage
		images int64
	}{
		{
			"usage with details",
			UnitRequest{Unit: kernel.UnitImages, Bound: 2, ByTokens: true},
			`{"created":1,"data":[{"b64_json":"x"},{"b64_json":"y"}],"usage":{"total_tokens":8370,"input_tokens":50,"output_tokens":8320,"input_tokens_details":{"text_tokens":40,"image_tokens":10}}}`,
			kernel.Usage{Input: 40, CacheWrite: 10, Output: 8320},
			2,
		},
		{
			"usage without details: input as text",
			UnitRequest{Unit: kernel.UnitImages, Bound: 1, ByTokens: true},
			`{"data":[{"b64_json":"x"}],"usage":{"input_tokens":12,"output_tokens":272}}`,
			kernel.Usage{Input: 12, Output: 272},
			1,
		},
		{
			"details beyond the input: ignored",
			UnitRequest{Unit: kernel.UnitImages, Bound: 1, ByTokens: true},
			`{"data":[{"b64_json":"x"}],"usage":{"input_tokens":12,"output_tokens":272,"input_tokens_details":{"text_tokens":10,"image_tokens":90}}}`,
			kernel.Usage{Input: 12, Output: 272},
			1,
		},
		{
			"no usage: the bound",
			UnitRequest{Unit: kernel.UnitImages, Bound: 3, Quality: "low", Tokens: 400, ByTokens: true},
			`{"data":[{"url":"u"}]}`,
			kernel.Usage{Input: 100, Output: 512},
			1,
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			req := c.unit
			tr := &unitsOpenAI{api: APIImages}
			_, err := tr.Request(&Inbound{API: APIImages, Body: []byte(`{"model":"gpt-image-1","prompt":"p"}`), Unit: &req}, &Target{ProviderModel: "gpt-image-1"})
			require.NoError(t, err)
			out, u, err := tr.Response([]byte(c.reply))
			require.NoError(t, err)
			require.Equal(t, c.reply, string(out))
			require.Equal(t, c.want, u)
			require.Equal(t, c.images, req.Images)
		})
	}
	require.Equal(t, int64(8192), ImageOutputBound(""))
	require.Equal(t, int64(8192), ImageOutputBound("high"))
	require.Greater(t, ImageOutputBound("medium"), int64(1584))
	require.Greater(t, ImageOutputBound("low"), int64(408))
}
