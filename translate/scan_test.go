package translate

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

func TestParseRequest(t *testing.T) {
	tests := []struct {
		name      string
		body      string
		model     string
		stream    bool
		maxTokens int64
		user      string
		include   bool
	}{
		{name: "minimal", body: `{"model":"gpt-4o"}`, model: "gpt-4o"},
		{name: "all fields", body: `{"model":"m","stream":true,"max_tokens":100,"user":"u1","stream_options":{"include_usage":true}}`, model: "m", stream: true, maxTokens: 100, user: "u1", include: true},
		{name: "max_completion_tokens wins", body: `{"max_tokens":5,"model":"m","max_completion_tokens":7}`, model: "m", maxTokens: 7},
		{name: "max_completion_tokens first", body: `{"max_completion_tokens":7,"max_tokens":5,"model":"m"}`, model: "m", maxTokens: 7},
		{name: "nulls", body: `{"model":"m","stream":null,"max_tokens":null,"user":null,"stream_options":null}`, model: "m"},
		{name: "escaped key and value", body: `{"mod\u0065l":"g\u00e9"}`, model: "gé"},
		{name: "whitespace", body: " \n{ \"model\" : \"m\" , \"stream\" : false }\r\n", model: "m"},
		{name: "float tokens", body: `{"model":"m","max_tokens":1e3}`, model: "m", maxTokens: 1000},
		{name: "nested model ignored", body: `{"messages":[{"model":"x"}],"model":"m","metadata":{"user_id":"cust"}}`, model: "m", user: "cust"},
		{name: "no model", body: `{}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in, err := ParseRequest(APIChat, []byte(tt.body))
			require.NoError(t, err)
			require.Equal(t, tt.model, in.Model)
			require.Equal(t, tt.stream, in.Stream)
			require.Equal(t, tt.maxTokens, in.MaxTokens)
			require.Equal(t, tt.user, in.User)
			require.Equal(t, tt.include, in.IncludeUsage)
		})
	}
}

func TestParseRequestErrors(t *testing.T) {
	tests := []struct {
		name   string
		body   string
		field  string // fieldError
		offset int    // SyntaxError offset (when field is "")
		line   int
		column int
	}{
		{name: "empty", body: ``, offset: 0, line: 1, column: 1},
		{name: "array", body: `[1]`, offset: 0, line: 1, column: 1},
		{name: "trailing comma", body: `{"model":"m",}`, offset: 13, line: 1, column: 14},
		{name: "missing colon", body: `{"model" "m"}`, offset: 9, line: 1, column: 10},
		{name: "bad literal on line 3", body: "{\n\"model\":\"m\",\n\"stream\":tru}", offset: 24, line: 3, column: 10},
		{name: "unterminated string", body: `{"model":"m`, offset: 11, line: 1, column: 12},
		{name: "control char", body: "{\"model\":\"a\x01\"}", offset: 11, line: 1, column: 12},
		{name: "bad escape", body: `{"model":"\x"}`, offset: 10, line: 1, column: 11},
		{name: "bad number", body: `{"max_tokens":01}`, offset: 15, line: 1, column: 16},
		{name: "trailing data", body: `{"model":"m"} {}`, offset: 14, line: 1, column: 15},
		{name: "model not string", body: `{"model":5}`, field: "model"},
		{name: "stream not bool", body: `{"model":"m","stream":"yes"}`, field: "stream"},
		{name: "negative max_tokens", body: `{"model":"m","max_tokens":-1}`, field: "max_tokens"},
		{name: "fractional max_tokens", body: `{"model":"m","max_tokens":1.5}`, field: "max_tokens"},
		{name: "duplicate model", body: `{"model":"cheap","model":"expensive"}`, field: "model"},
		{name: "duplicate escaped model", body: `{"model":"cheap","m\u006fdel":"expensive"}`, field: "model"},
		{name: "user not string", body: `{"model":"m","user":1}`, field: "user"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseRequest(APIChat, []byte(tt.body))
			require.Error(t, err)
			if tt.field != "" {
				var fe *fieldError
				require.ErrorAs(t, err, &fe)
				require.Equal(t, tt.field, fe.Field)
				return
			}
			var se *SyntaxError
			require.ErrorAs(t, err, &se)
			require.Equal(t, tt.offset, se.Offset, se.Error())
			require.Equal(t, tt.line, se.Line)
			require.Equal(t, tt.column, se.Column)
		})
	}
}

func TestApplyEdits(t *testing.T) {
	b := []byte(`{"a":1,"b":2}`)
	out := applyEdits(b, []edit{{1, 1, []byte(`"z":0,`)}, {5, 6, []byte(`10`)}, {11, 12, []byte(`"x"`)}})
	require.JSONEq(t, `{"z":0,"a":10,"b":"x"}`, string(out))
	require.Equal(t, `{"a":1,"b":2}`, string(b), "input untouched")
}

func TestAppendJSONString(t *testing.T) {
	for _, s := range []string{"", "plain", "quote\" back\\slash", "ctl\x00\x1f\n\t\r", "<html>&", "ünïcødé"} {
		var got string
		require.NoError(t, json.Unmarshal(appendJSONString(nil, s), &got))
		require.Equal(t, s, got)
	}
}

// FuzzScanObject checks the scanner against encoding/json: same verdict on
// validity for objects, and the same field values when valid.
func FuzzScanObject(f *testing.F) {
	for _, s := range []string{
		`{"model":"gpt-4o","stream":true,"max_tokens":10}`,
		`{"model":"m","messages":[{"role":"user","content":"hi \u00e9 \n"}],"stream_options":{"include_usage":false}}`,
		`{"a":[1,-2.5e+3,true,false,null,{"b":{}}],"model":"x"}`,
		`{"model":"a","model":"b"}`,
		`{"mod\u0065l":"x"}`,
		`{"model":"m",}`,
		` {} `,
		`{"x":"\ud800"}`,
		`[]`,
		`{"n":01}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		in, err := ParseRequest(APIChat, b)
		var probe any
		jerr := json.Unmarshal(b, &probe)
		_, isObject := probe.(map[string]any)
		var fe *fieldError
		if errors.As(err, &fe) {
			require.True(t, isObject && jerr == nil, "field error on invalid JSON: %v", err)
			return
		}
		if err != nil {
			var se *SyntaxError
			require.ErrorAs(t, err, &se)
			require.LessOrEqual(t, se.Offset, len(b))
			if jerr == nil && isObject {
				t.Fatalf("scanner rejects valid JSON object: %v", err)
			}
			return
		}
		require.NoError(t, jerr, "scanner accepts invalid JSON")
		require.True(t, isObject)
		m := probe.(map[string]any)
		if s, ok := m["model"].(string); ok {
			require.Equal(t, s, in.Model)
		}
		if v, ok := m["stream"].(bool); ok {
			require.Equal(t, v, in.Stream)
		}
	})
}

func TestUsageAllNull(t *testing.T) {
	for data, want := range map[string]bool{
		`{"id":"c","choices":[{"delta":{"content":"hi"}}]}`:                         true,
		`{"id":"c","choices":[{"delta":{"content":"hi"}}],"usage":null}`:            true,
		`{"id":"c","choices":[],"usage" : null }`:                                   true,
		`{"choices":[{"delta":{"content":"say \"usage\": 1"}}],"usage":null}`:       true,
		`{"id":"c","choices":[],"usage":{"prompt_tokens":1,"completion_tokens":2}}`: false,
		`{"usage":null,"x":{"usage":{"prompt_tokens":1}}}`:                          false,
		`{"usage":nul}`: false,
		`{"usage"}`:     false,
		`"usage"`:       false,
	} {
		require.Equal(t, want, usageAllNull([]byte(data)), data)
	}
}

// Where usageAllNull lets observe skip an event, parsing it would not have
// found a usage either.
func FuzzUsageAllNull(f *testing.F) {
	f.Add([]byte(`{"id":"c","choices":[{"delta":{"content":"hi"}}],"usage":null}`))
	f.Add([]byte(`{"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":4,"total_tokens":7}}`))
	f.Add([]byte(`{"usage":null,"usage":{"prompt_tokens":3}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		if !usageAllNull(data) {
			return
		}
		var u openAIStreamUsage
		require.False(t, u.parseUsage(data))
		require.False(t, u.reported, "a usage was in %q", data)
	})
}

// textBytesBySearch is the former textBytes, one bytes.Index search per
// member name: the reference the one-pass textBytes must agree with.
func textBytesBySearch(data []byte) int64 {
	var n int64
	for _, name := range []string{"content", "reasoning_content", "reasoning", "arguments", "refusal", "text"} {
		k := []byte(`"` + name + `"`)
		rest := data
		for {
			i := bytes.Index(rest, k)
			if i < 0 {
				break
			}
			rest = rest[i+len(k):]
			j := SkipSpace(rest, 0)
			if j >= len(rest) || rest[j] != ':' {
				continue
			}
			j = SkipSpace(rest, j+1)
			if j >= len(rest) || rest[j] != '"' {
				continue
			}
			end, err := skipString(rest, j)
			if err != nil {
				break
			}
			n += int64(end - j - 2)
			rest = rest[end:]
		}
	}
	return n
}

// genTextJSON draws a JSON value whose members are often text members, with
// strings holding quotes, backslashes, the member names themselves and
// non-ASCII text.
func genTextJSON(t *rapid.T, depth int) any {
	names := []string{"content", "reasoning_content", "reasoning", "arguments", "refusal", "text", "role", "type", "context", "texts"}
	str := rapid.OneOf(
		rapid.SampledFrom(append(names, `"content":"x"`, `\"text\"`, "é ü 日本", "")),
		rapid.String(),
	)
	if depth > 3 {
		return str.Draw(t, "leaf")
	}
	switch rapid.IntRange(0, 3).Draw(t, "kind") {
	case 0:
		m := map[string]any{}
		for range rapid.IntRange(0, 4).Draw(t, "members") {
			m[rapid.SampledFrom(names).Draw(t, "name")] = genTextJSON(t, depth+1)
		}
		return m
	case 1:
		var a []any
		for range rapid.IntRange(0, 3).Draw(t, "elements") {
			a = append(a, genTextJSON(t, depth+1))
		}
		return a
	case 2:
		return rapid.Int64().Draw(t, "number")
	default:
		return str.Draw(t, "string")
	}
}

func TestTextBytesAgreesWithSearch(t *testing.T) {
	for _, s := range []string{
		`{"model":"m","messages":[{"role":"user","content":"Say hello"}]}`,
		`{"choices":[{"delta":{"content":"Hi","reasoning_content":"think","tool_calls":[{"function":{"arguments":"{\"a\":1}"}}]}}]}`,
		`{"content" : "spaced", "text":"t","type":"text","refusal":null,"content":["x"]}`,
		`{"a":"content","b":"text"}`,
		`{"content":"unterminated`,
		``,
	} {
		require.Equal(t, textBytesBySearch([]byte(s)), TextBytes([]byte(s)), s)
	}
	rapid.Check(t, func(t *rapid.T) {
		b, err := json.Marshal(genTextJSON(t, 0))
		if err != nil {
			t.Fatal(err)
		}
		if want, got := textBytesBySearch(b), TextBytes(b); got != want {
			t.Fatalf("textBytes(%s) = %d, the search finds %d", b, got, want)
		}
	})
}

// BenchmarkTextBytes compares the one-pass textBytes with the former
// search per name, on the benchmark's chat request and a streamed chunk.
func BenchmarkTextBytes(b *testing.B) {
	for _, c := range []struct{ name, body string }{
		{"request", `{"model":"demo","messages":[{"role":"system","content":"You are a helpful assistant."},{"role":"user","content":"Write a haiku about rate limits and budgets."}],"max_tokens":64}`},
		{"chunk", `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":" token"},"finish_reason":null}],"usage":null}`},
	} {
		body := []byte(c.body)
		b.Run(c.name+"/one-pass", func(b *testing.B) {
			for b.Loop() {
				TextBytes(body)
			}
		})
		b.Run(c.name+"/search", func(b *testing.B) {
			for b.Loop() {
				textBytesBySearch(body)
			}
		})
	}
}
