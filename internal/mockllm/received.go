package mockllm

import (
	"encoding/json"
	"net/http"
	"strings"
	"sync"
)

// The mock keeps the system text of the Bedrock and Gemini (and Vertex
// Gemini) requests it served, per API shape, where that API carries it:
// Bedrock Converse's `system` blocks, Gemini's `systemInstruction` parts
// (each joined with "\n"). GET /received/system answers
// {"bedrock": [...], "gemini": [...]}, oldest first, so that a test sees
// that a client's instructions arrived where the target API puts them.

// receivedLog is the system texts received, per API shape.
type receivedLog struct {
	mu     sync.Mutex
	system map[string][]string
}

// maxReceived bounds the texts kept per API shape (the newest stay).
const maxReceived = 1000

// noteSystem records one request's system text ("" when it had none).
func (l *receivedLog) noteSystem(api string, parts []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.system == nil {
		l.system = map[string][]string{}
	}
	s := append(l.system[api], strings.Join(parts, "\n"))
	if len(s) > maxReceived {
		s = s[len(s)-maxReceived:]
	}
	l.system[api] = s
}

func (s *Server) receivedSystem(w http.ResponseWriter, _ *http.Request) {
	s.received.mu.Lock()
	body, _ := json.Marshal(s.received.system)
	s.received.mu.Unlock()
	setJSON(w.Header(), len(body))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body)
}
