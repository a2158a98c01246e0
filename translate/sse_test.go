package translate

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

type gotEvent struct{ Event, Data string }

// parseAll feeds the chunks in order and flushes.
func parseAll(t testing.TB, chunks ...string) []gotEvent {
	t.Helper()
	var p SSEParser
	var got []gotEvent
	fn := func(ev SSEEvent) { got = append(got, gotEvent{string(ev.Event), string(ev.Data)}) }
	for _, c := range chunks {
		require.NoError(t, p.Feed([]byte(c), fn))
	}
	require.NoError(t, p.Flush(fn))
	return got
}

func TestSSEParser(t *testing.T) {
	tests := []struct {
		name   string
		chunks []string
		want   []gotEvent
	}{
		{name: "one event", chunks: []string{"data: {\"a\":1}\n\n"}, want: []gotEvent{{"", `{"a":1}`}}},
		{name: "no space after colon", chunks: []string{"data:x\n\n"}, want: []gotEvent{{"", "x"}}},
		{name: "two spaces keep one", chunks: []string{"data:  x\n\n"}, want: []gotEvent{{"", " x"}}},
		{name: "multi-line data", chunks: []string{"data: a\ndata: b\n\n"}, want: []gotEvent{{"", "a\nb"}}},
		{name: "event name", chunks: []string{"event: message_delta\ndata: {}\n\n"}, want: []gotEvent{{"message_delta", "{}"}}},
		{name: "comments and unknown fields", chunks: []string{": keep-alive\nid: 7\nretry: 10\ndata: x\n\n"}, want: []gotEvent{{"", "x"}}},
		{name: "CRLF", chunks: []string{"data: a\r\n\r\ndata: b\r\n\r\n"}, want: []gotEvent{{"", "a"}, {"", "b"}}},
		{name: "CR only", chunks: []string{"data: a\r\rdata: b\r\r"}, want: []gotEvent{{"", "a"}, {"", "b"}}},
		{name: "CRLF split between chunks", chunks: []string{"data: a\r", "\n\r", "\ndata: b\r\n\r\n"}, want: []gotEvent{{"", "a"}, {"", "b"}}},
		{name: "split inside field name", chunks: []string{"da", "ta: hel", "lo\n", "\n"}, want: []gotEvent{{"", "hello"}}},
		{name: "byte by byte", chunks: strings.Split("data: [DONE]\n\n", ""), want: []gotEvent{{"", "[DONE]"}}},
		{name: "blank lines without data", chunks: []string{"\n\n\nevent: x\n\n"}, want: nil},
		{name: "last event without blank line", chunks: []string{"data: a\n\ndata: [DONE]"}, want: []gotEvent{{"", "a"}, {"", "[DONE]"}}},
		{name: "empty data", chunks: []string{"data\n\n"}, want: []gotEvent{{"", ""}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, parseAll(t, tt.chunks...))
		})
	}
}

func TestSSEParserLimit(t *testing.T) {
	var p SSEParser
	big := strings.Repeat("x", maxSSEEvent/4)
	fn := func(SSEEvent) {}
	var err error
	for i := 0; i < 5 && err == nil; i++ {
		err = p.Feed([]byte(big), fn)
	}
	require.ErrorIs(t, err, ErrSSETooLarge)
}

// FuzzSSEParser: splitting the stream anywhere yields the same events as
// feeding it whole.
func FuzzSSEParser(f *testing.F) {
	f.Add([]byte("data: {\"choices\":[]}\n\ndata: [DONE]\n\n"), uint8(3), uint8(7))
	f.Add([]byte("event: message_start\r\ndata: {}\r\n\r\n: ping\r\n"), uint8(1), uint8(2))
	f.Add([]byte("data: a\r\rdata:b\n\ndata\n\n"), uint8(8), uint8(9))
	f.Fuzz(func(t *testing.T, b []byte, s1, s2 uint8) {
		whole := parseAll(t, string(b))
		i := min(int(s1), len(b))
		j := min(i+int(s2), len(b))
		split := parseAll(t, string(b[:i]), string(b[i:j]), string(b[j:]))
		require.Equal(t, whole, split)
		for _, ev := range whole {
			require.NotContains(t, ev.Data, "\r")
		}
	})
}
