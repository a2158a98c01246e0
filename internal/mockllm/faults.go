package mockllm

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// Fault is what a deployment of the mock does instead of answering normally.
type Fault struct {
	// Mode is one of the Fault* constants.
	Mode string `json:"mode"`
	// RetryAfter is the retry-after of a 429, in seconds (default 1).
	RetryAfter int `json:"retry_after,omitempty"`
	// Times is how many requests the fault hits before it clears itself; 0
	// means until cleared.
	Times int64 `json:"times,omitempty"`
	// DelayMS is the delay before the first response byte of mode "slow".
	DelayMS int `json:"delay_ms,omitempty"`
}

// Fault modes.
const (
	FaultError500      = "500"            // 500 server_error
	FaultRateLimit     = "429"            // 429 with retry-after
	FaultHang          = "hang"           // no reply until the client goes away
	FaultReset         = "reset"          // streams: reset after the first event; JSON: before any byte
	FaultRefuse        = "refuse"         // the connection is closed (RST) before any response byte
	FaultContextWindow = "context_window" // 400 context-window-exceeded, in the provider's shape
	FaultContentPolicy = "content_policy" // 400 content-policy refusal, in the provider's shape
	FaultSlow          = "slow"           // a normal reply after delay_ms (x-mock-latency)
	// 401 / 403 with no body and no content-type (content-length 0): a
	// provider, or a proxy before it, refusing the credential.
	FaultUnauthorizedEmpty = "401_empty"
	FaultForbiddenEmpty    = "403_empty"
)

// DeploymentStats is what one deployment of the mock received.
type DeploymentStats struct {
	Received int64  `json:"received"`
	Faulted  int64  `json:"faulted"`
	Fault    *Fault `json:"fault,omitempty"`
}

// faults is the per-deployment fault table and received counts.
type faults struct {
	mu   sync.Mutex
	deps map[string]*depState
}

type depState struct {
	received, faulted int64
	fault             *Fault
}

// deploymentPrefix is the path prefix naming a deployment: /d/NAME/v1/… is
// served as /v1/… by deployment NAME.
const deploymentPrefix = "/d/"

// deploymentOf returns the deployment a request names and strips a path
// prefix: the /d/NAME/ prefix, else the x-mock-deployment header.
func deploymentOf(r *http.Request) string {
	if rest, ok := strings.CutPrefix(r.URL.Path, deploymentPrefix); ok {
		name, tail, _ := strings.Cut(rest, "/")
		r.URL.Path = "/" + tail
		r.URL.RawPath = ""
		return name
	}
	return header(r.Header, "X-Mock-Deployment")
}

// intercept counts a request for its deployment and applies its fault (the
// control endpoint's, else x-mock-fault). It reports whether the request was
// answered (or dropped) here.
func (s *Server) intercept(w http.ResponseWriter, r *http.Request) bool {
	if strings.HasPrefix(r.URL.Path, "/faults") {
		s.faultsControl(w, r)
		return true
	}
	dep := deploymentOf(r)
	if dep == "" && header(r.Header, "X-Mock-Fault") == "" {
		return false
	}
	f := s.faults.take(dep)
	if f == nil {
		if v := header(r.Header, "X-Mock-Fault"); v != "" {
			f = &Fault{Mode: v}
			if n, err := strconv.Atoi(header(r.Header, "X-Mock-Retry-After")); err == nil {
				f.RetryAfter = n
			}
		}
	}
	if f == nil {
		return false
	}
	return s.applyFault(w, r, f)
}

// take counts a request for dep and returns its fault (nil: none), counting
// down a fault with Times.
func (fs *faults) take(dep string) *Fault {
	if dep == "" {
		return nil
	}
	fs.mu.Lock()
	defer fs.mu.Unlock()
	st := fs.state(dep)
	st.received++
	f := st.fault
	if f == nil {
		return nil
	}
	st.faulted++
	if f.Times > 0 {
		if f.Times == 1 {
			st.fault = nil
		} else {
			c := *f
			c.Times--
			st.fault = &c
		}
	}
	return f
}

func (fs *faults) state(dep string) *depState {
	if fs.deps == nil {
		fs.deps = map[string]*depState{}
	}
	st := fs.deps[dep]
	if st == nil {
		st = &depState{}
		fs.deps[dep] = st
	}
	return st
}

// SetFault makes deployment dep fail as f (nil clears it).
func (s *Server) SetFault(dep string, f *Fault) error {
	if f != nil {
		if err := f.validate(); err != nil {
			return err
		}
		c := *f
		f = &c
	}
	s.faults.mu.Lock()
	defer s.faults.mu.Unlock()
	s.faults.state(dep).fault = f
	return nil
}

// Deployments returns what each named deployment received so far.
func (s *Server) Deployments() map[string]DeploymentStats {
	s.faults.mu.Lock()
	defer s.faults.mu.Unlock()
	out := make(map[string]DeploymentStats, len(s.faults.deps))
	for name, st := range s.faults.deps {
		out[name] = DeploymentStats{Received: st.received, Faulted: st.faulted, Fault: st.fault}
	}
	return out
}

// ResetDeployments clears every fault and count.
func (s *Server) ResetDeployments() {
	s.faults.mu.Lock()
	defer s.faults.mu.Unlock()
	s.faults.deps = nil
}

func (f *Fault) validate() error {
	switch f.Mode {
	case FaultError500, FaultRateLimit, FaultHang, FaultReset, FaultRefuse, FaultContextWindow, FaultContentPolicy, FaultSlow,
		FaultUnauthorizedEmpty, FaultForbiddenEmpty:
	default:
		return fmt.Errorf("mockllm: unknown fault mode %q", f.Mode)
	}
	if f.RetryAfter < 0 || f.Times < 0 || f.DelayMS < 0 {
		return fmt.Errorf("mockllm: negative retry_after, times or delay_ms")
	}
	return nil
}

// applyFault answers r as f says; false means the request goes on (reset of
// a reply that is served until its first event).
func (s *Server) applyFault(w http.ResponseWriter, r *http.Request, f *Fault) bool {
	fl := flavorOpenAI
	if strings.HasPrefix(r.URL.Path, "/v1/messages") {
		fl = flavorAnthropic
	}
	key := apiKey(r)
	switch f.Mode {
	case FaultError500:
		writeError(w, fl, http.StatusInternalServerError, "injected fault: server error")
	case FaultRateLimit:
		ra := f.RetryAfter
		if ra == 0 {
			ra = 1
		}
		w.Header()["Retry-After"] = []string{strconv.Itoa(ra)}
		writeError(w, fl, http.StatusTooManyRequests, "injected fault: rate limited")
	case FaultHang:
		// Read the body: net/http notices the client going away (and cancels
		// the context) only once the body was consumed.
		_, _ = io.Copy(io.Discard, http.MaxBytesReader(w, r.Body, maxBody))
		<-r.Context().Done()
		return true
	case FaultRefuse:
		refuse(w)
		return true
	case FaultReset:
		r.Header.Set("X-Mock-Disconnect-After", "1")
		return false
	case FaultSlow:
		r.Header.Set("X-Mock-Latency", strconv.Itoa(f.DelayMS)+"ms")
		return false
	case FaultContextWindow:
		writeFaultBody(w, fl, contextWindowBody)
	case FaultContentPolicy:
		writeFaultBody(w, fl, contentPolicyBody)
	case FaultUnauthorizedEmpty, FaultForbiddenEmpty:
		// nil suppresses net/http's sniffed content-type.
		w.Header()["Content-Type"] = nil
		w.Header()["Content-Length"] = []string{"0"}
		w.WriteHeader(map[string]int{FaultUnauthorizedEmpty: http.StatusUnauthorized, FaultForbiddenEmpty: http.StatusForbidden}[f.Mode])
	default:
		writeError(w, fl, http.StatusBadRequest, "unknown x-mock-fault")
		return true
	}
	s.counters(key).errors.Add(1)
	return true
}

// The 400 bodies of the two refusals gateways route on, as the providers send
// them: OpenAI's code context_length_exceeded and content_policy_violation
// (LiteLLM matches these), Anthropic's invalid_request_error messages.
var (
	contextWindowBody = [2]string{
		`{"error":{"message":"This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens. Please reduce the length of the messages.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`,
		`{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 200001 tokens > 200000 maximum"}}`,
	}
	contentPolicyBody = [2]string{
		`{"error":{"message":"Your request was rejected as a result of our safety system.","type":"invalid_request_error","param":null,"code":"content_policy_violation"}}`,
		`{"type":"error","error":{"type":"invalid_request_error","message":"Output blocked by content filtering policy"}}`,
	}
)

func writeFaultBody(w http.ResponseWriter, fl flavor, bodies [2]string) {
	b := bodies[0]
	if fl == flavorAnthropic {
		b = bodies[1]
	}
	setJSON(w.Header(), len(b))
	w.WriteHeader(http.StatusBadRequest)
	_, _ = w.Write([]byte(b))
}

// refuse drops the connection with a reset before any response byte (a
// closed port refuses outright; this is the closest a listening server gets).
func refuse(w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = conn.Close()
}

// faultsControl serves the control endpoint:
//
//	GET    /faults        what each deployment received, and its fault
//	PUT    /faults/NAME   body Fault: deployment NAME fails so
//	DELETE /faults/NAME   clear NAME's fault
//	DELETE /faults        clear every fault and count
func (s *Server) faultsControl(w http.ResponseWriter, r *http.Request) {
	name := strings.TrimPrefix(strings.TrimPrefix(r.URL.Path, "/faults"), "/")
	switch {
	case r.Method == http.MethodGet && name == "":
		deps := s.Deployments()
		names := make([]string, 0, len(deps))
		for n := range deps {
			names = append(names, n)
		}
		sort.Strings(names)
		w.Header().Set("content-type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"deployments": deps, "names": names})
	case r.Method == http.MethodPut && name != "":
		var f Fault
		if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 4096)).Decode(&f); err != nil {
			writeError(w, flavorOpenAI, http.StatusBadRequest, "invalid fault: "+err.Error())
			return
		}
		if err := s.SetFault(name, &f); err != nil {
			writeError(w, flavorOpenAI, http.StatusBadRequest, err.Error())
			return
		}
		w.WriteHeader(http.StatusNoContent)
	case r.Method == http.MethodDelete && name != "":
		_ = s.SetFault(name, nil)
		w.WriteHeader(http.StatusNoContent)
	case r.Method == http.MethodDelete:
		s.ResetDeployments()
		w.WriteHeader(http.StatusNoContent)
	default:
		writeError(w, flavorOpenAI, http.StatusMethodNotAllowed, "unsupported "+r.Method+" "+r.URL.Path)
	}
}
