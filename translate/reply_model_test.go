package translate

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tollgate-ai/tollgate/translate/translatetest"
)

// TestNativeStreamNamesClientModel: a chat stream whose client asked for its
// usage (nothing is dropped) gets the client's model in every chunk, however
// the upstream's bytes are split; a stream already naming the client's model
// passes as the very chunks fed.
func TestNativeStreamNamesClientModel(t *testing.T) {
	stream := strings.ReplaceAll(translatetest.OpenAIStream, "\n", "\r\n")
	want := strings.ReplaceAll(stream, `"model":"gpt-4o"`, `"model":"my-group"`)
	run := func(model string, parts ...string) (string, []bool) {
		in, err := ParseRequest(APIChat, []byte(`{"model":"`+model+`","stream":true,"stream_options":{"include_usage":true}}`))
		require.NoError(t, err)
		tr := NewTranslator(APIChat, ProviderOpenAI)
		_, err = tr.Request(in, &Target{ProviderModel: "gpt-4o"})
		require.NoError(t, err)
		var got []byte
		var same []bool
		for _, c := range parts {
			b := []byte(c)
			out, err := tr.StreamChunk(b, false)
			require.NoError(t, err)
			same = append(same, len(b) > 0 && len(out) == len(b) && &out[0] == &b[0])
			got = append(got, out...)
		}
		out, err := tr.StreamChunk(nil, true)
		require.NoError(t, err)
		return string(append(got, out...)), same
	}
	for i := 0; i <= len(stream); i += 5 {
		got, _ := run("my-group", stream[:i], stream[i:])
		require.Equal(t, want, got, "split at %d", i)
	}
	events := strings.SplitAfter(stream, "\r\n\r\n")
	got, same := run("gpt-4o", events...)
	require.Equal(t, stream, got)
	for i, ev := range events {
		require.True(t, ev == "" || same[i], "event %d passes as the same slice", i)
	}
}

// TestReplyModelMultilineData: an event whose data spans several lines is
// written anew with the client's model.
func TestReplyModelMultilineData(t *testing.T) {
	e := sseEditor{active: true}
	m := newReplyModel("mine", "response", false, false)
	e.fn = func(ev SSEEvent) eventAction {
		at, with := m.event(ev.Data)
		return eventAction{at: at, with: with}
	}
	in := "event: response.created\r\n: note\r\ndata: {\"type\":\"response.created\",\r\ndata: \"response\":{\"id\":\"r\",\"model\":\"up-1\"}}\r\n\r\n" +
		"data: {\"type\":\"x\",\"response\":{\"model\":\"up-1\"}}\n\n"
	out, err := e.feed([]byte(in), true)
	require.NoError(t, err)
	require.Equal(t, "event: response.created\ndata: {\"type\":\"response.created\",\ndata: \"response\":{\"id\":\"r\",\"model\":\"mine\"}}\n\n"+
		"data: {\"type\":\"x\",\"response\":{\"model\":\"mine\"}}\n\n", string(out))
}

// TestReplyModelJSON: a JSON reply keeps every byte but the model's value;
// already the client's, it is the same slice.
func TestReplyModelJSON(t *testing.T) {
	m := newReplyModel("grp", "", false, false)
	b := []byte(`{"id":"x", "model" : "up-2","usage":{"model":"no"}}`)
	u, v, err := usageAndModel(b)
	require.NoError(t, err)
	require.True(t, u.OK())
	require.Equal(t, `{"id":"x", "model" : "grp","usage":{"model":"no"}}`, string(m.body(b, v)))
	same := []byte(`{"model":"grp"}`)
	_, v, err = usageAndModel(same)
	require.NoError(t, err)
	require.Same(t, &same[0], &m.body(same, v)[0])
}

// TestReplyModelInPlace: with a lent reply, a name no longer than the
// provider's is written over it (padded with JSON whitespace) and the same
// slice returned; a longer one is spliced into a new body, the lent one left
// as it was.
func TestReplyModelInPlace(t *testing.T) {
	for _, tc := range []struct{ client, want string }{
		{"gpt-4o-mini", `{"id":"c","model":"gpt-4o-mini","usage":{}}`},
		{"demo", `{"id":"c","model":"demo"       ,"usage":{}}`},
	} {
		b := []byte(`{"id":"c","model":"gpt-4o-mini","usage":{}}`)
		_, m, err := usageAndModel(b)
		require.NoError(t, err)
		r := newReplyModel(tc.client, "", false, true)
		out := r.body(b, m)
		require.True(t, SameBytes(out, b), "renamed in place")
		require.Equal(t, tc.want, string(out))
		require.True(t, json.Valid(out))
	}
	orig := `{"id":"c","model":"gpt-4o","usage":{}}`
	b := []byte(orig)
	_, m, err := usageAndModel(b)
	require.NoError(t, err)
	r := newReplyModel("a-longer-group", "", false, true)
	out := r.body(b, m)
	require.False(t, SameBytes(out, b))
	require.JSONEq(t, `{"id":"c","model":"a-longer-group","usage":{}}`, string(out))
	require.Equal(t, orig, string(b), "the lent reply is left as it was")
}

// TestNativeStreamRenamedInPlace: on a lent stream (Inbound.ReplyInPlace) a
// chat chunk of whole events naming the provider's longer model passes as
// the same slice, the client's name written over the provider's and padded
// with spaces, every event still valid JSON; an event split across chunks,
// or a client name longer than the provider's, is spliced into new bytes as
// before, the lent chunk left as it was.
func TestNativeStreamRenamedInPlace(t *testing.T) {
	open := func(client, upstream string) Translator {
		in, err := ParseRequest(APIChat, []byte(`{"model":"`+client+`","stream":true,"stream_options":{"include_usage":true}}`))
		require.NoError(t, err)
		in.ReplyInPlace = true
		tr := NewTranslator(APIChat, ProviderOpenAI)
		_, err = tr.Request(in, &Target{ProviderModel: upstream})
		require.NoError(t, err)
		return tr
	}
	stream := translatetest.OpenAIStream
	events := strings.SplitAfter(stream, "\n\n")
	tr := open("g4", "gpt-4o")
	var got []byte
	for _, ev := range events {
		if ev == "" {
			continue
		}
		b := []byte(ev)
		out, err := tr.StreamChunk(b, false)
		require.NoError(t, err)
		require.True(t, SameBytes(out, b), "renamed in place: %q", ev)
		got = append(got, out...)
	}
	require.Equal(t, strings.ReplaceAll(stream, `"model":"gpt-4o"`, `"model":"g4"    `), string(got))
	for _, line := range strings.Split(string(got), "\n") {
		if data, ok := strings.CutPrefix(line, "data: "); ok && data != "[DONE]" {
			require.True(t, json.Valid([]byte(data)), "%s", data)
		}
	}

	// An event split across two chunks: held, then written anew.
	tr = open("g4", "gpt-4o")
	first := []byte(events[0][:20])
	out, err := tr.StreamChunk(first, false)
	require.NoError(t, err)
	require.Empty(t, out)
	rest := []byte(events[0][20:])
	out, err = tr.StreamChunk(rest, false)
	require.NoError(t, err)
	require.Equal(t, strings.ReplaceAll(events[0], `"model":"gpt-4o"`, `"model":"g4"`), string(out))
	require.Equal(t, events[0][20:], string(rest), "the lent chunk is left as it was")

	// A longer client name cannot fit: spliced, the lent chunk untouched.
	tr = open("a-longer-group", "gpt-4o")
	b := []byte(events[0])
	out, err = tr.StreamChunk(b, false)
	require.NoError(t, err)
	require.False(t, SameBytes(out, b))
	require.Equal(t, strings.ReplaceAll(events[0], `"model":"gpt-4o"`, `"model":"a-longer-group"`), string(out))
	require.Equal(t, events[0], string(b))
}
