package guard

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
)

// Errors of Compile and of the external checks.
var (
	// ErrInvalid: a guardrail's specification is not usable.
	ErrInvalid = errors.New("guard: invalid guardrail")
	// ErrUnavailable: an external check did not answer in time or answered
	// something unusable (its guardrail fails open or closed on it).
	ErrUnavailable = errors.New("guard: check unavailable")
)

// Stage is where a guardrail runs; a guardrail may run at several.
type Stage uint8

// Stages.
const (
	// Pre: on the request body, before admission charges anything.
	Pre Stage = 1 << iota
	// Post: on a whole (non-streamed) reply.
	Post
	// Stream: on streamed output, incrementally.
	Stream
)

func (s Stage) String() string {
	var names []string
	for _, x := range []struct {
		st   Stage
		name string
	}{{Pre, "pre"}, {Post, "post"}, {Stream, "stream"}} {
		if s&x.st != 0 {
			names = append(names, x.name)
		}
	}
	return strings.Join(names, ",")
}

// ParseStages reads "pre,post,stream" (any subset, any order).
func ParseStages(names []string) (Stage, error) {
	var s Stage
	for _, n := range names {
		switch strings.TrimSpace(strings.ToLower(n)) {
		case "pre":
			s |= Pre
		case "post":
			s |= Post
		case "stream":
			s |= Stream
		case "":
		default:
			return 0, fmt.Errorf("%w: unknown stage %q (pre, post, stream)", ErrInvalid, n)
		}
	}
	return s, nil
}

// Action is what a guardrail does when its check matches.
type Action uint8

// Actions, weakest first.
const (
	ActionNone Action = iota
	// ActionLog flags only: the text passes unchanged.
	ActionLog
	// ActionRedact replaces each match with its typed placeholder.
	ActionRedact
	// ActionBlock refuses the request (or ends the stream).
	ActionBlock
)

var actionNames = [...]string{ActionNone: "none", ActionLog: "log", ActionRedact: "redact", ActionBlock: "block"}

func (a Action) String() string {
	if int(a) < len(actionNames) {
		return actionNames[a]
	}
	return "unknown"
}

// ParseAction reads block, redact or log.
func ParseAction(s string) (Action, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "block":
		return ActionBlock, nil
	case "redact":
		return ActionRedact, nil
	case "log":
		return ActionLog, nil
	}
	return 0, fmt.Errorf("%w: unknown action %q (block, redact, log)", ErrInvalid, s)
}

// Kinds of guardrail.
const (
	KindPII        = "pii"
	KindSecrets    = "secrets"
	KindWords      = "words"
	KindSize       = "size"
	KindWebhook    = "webhook"
	KindModeration = "moderation"
)

// Kinds lists every kind, in the order the CLI shows them.
var Kinds = []string{KindPII, KindSecrets, KindWords, KindSize, KindWebhook, KindModeration}

// Spec is a guardrail as configured: the policy object the admin API stores.
type Spec struct {
	Name   string
	Kind   string
	Action string   // block, redact, log
	On     []string // pre, post, stream
	// Mandatory: attached to a team, org or model, it cannot be removed by a
	// key below it.
	Mandatory bool
	// Types narrows pii and secrets to some of their types (EMAIL, PHONE,
	// CREDIT_CARD, IBAN, SSN, IP_ADDRESS; API_KEY, AWS_KEY, PRIVATE_KEY, JWT,
	// HIGH_ENTROPY); empty means all.
	Types []string
	// Words (case-insensitive, whole words) and Patterns (Go regular
	// expressions) of the words kind.
	Words    []string
	Patterns []string
	// MaxBytes of the size kind.
	MaxBytes int
	// URL of the webhook, or the base URL of the moderation provider
	// (/moderations is appended to a URL ending in /v1, /v1/moderations to
	// others).
	URL string
	// APIKey sent to the moderation provider as a bearer token.
	APIKey string
	// Model of the moderation request (omni-moderation-latest when empty).
	Model string
	// Timeout of an external check (2s when zero).
	Timeout time.Duration
	// FailOpen: when an external check fails, let the text pass (and say so
	// in the verdict); otherwise block it.
	FailOpen bool
}

// Guardrail is a compiled Spec.
type Guardrail struct {
	Name      string
	Kind      string
	Action    Action
	On        Stage
	Mandatory bool
	FailOpen  bool
	find      finder  // built-in checks
	ext       checker // external checks
}

// finder locates matches in masked text (see mask), appending to dst.
type finder interface {
	find(text []byte, dst []Finding) []Finding
}

// checker is an external check: it sees the text and returns a verdict.
type checker interface {
	check(ctx context.Context, g *Guardrail, stage Stage, text []byte, isJSON bool) (extResult, error)
}

// extResult is what an external check answered.
type extResult struct {
	block  bool
	reason string
	text   []byte // rewritten text, nil when unchanged
	types  []string
}

// Finding is one match: its type and where it is in the text.
type Finding struct {
	Type       string // EMAIL, CREDIT_CARD, …: the placeholder's name
	Start, End int
}

// Option configures Compile.
type Option func(*compileOptions)

type compileOptions struct {
	client httpDoer
}

// WithHTTPClient sets the client of the external checks (http.DefaultClient
// otherwise).
func WithHTTPClient(c httpDoer) Option { return func(o *compileOptions) { o.client = c } }

// Compile checks a Spec and builds its Guardrail.
func Compile(sp Spec, opts ...Option) (*Guardrail, error) {
	var o compileOptions
	for _, f := range opts {
		f(&o)
	}
	if sp.Name == "" {
		return nil, fmt.Errorf("%w: a guardrail needs a name", ErrInvalid)
	}
	g := &Guardrail{Name: sp.Name, Kind: strings.ToLower(sp.Kind), Mandatory: sp.Mandatory, FailOpen: sp.FailOpen}
	var err error
	if g.Action, err = ParseAction(sp.Action); err != nil {
		return nil, fmt.Errorf("guardrail %s: %w", sp.Name, err)
	}
	if g.On, err = ParseStages(sp.On); err != nil {
		return nil, fmt.Errorf("guardrail %s: %w", sp.Name, err)
	}
	if g.On == 0 {
		g.On = Pre
	}
	switch g.Kind {
	case KindPII:
		g.find, err = newTypedFinder(piiDetectors, sp.Types)
	case KindSecrets:
		g.find, err = newTypedFinder(secretDetectors, sp.Types)
	case KindWords:
		g.find, err = newWordFinder(sp.Words, sp.Patterns)
	case KindSize:
		if sp.MaxBytes <= 0 {
			err = fmt.Errorf("%w: size needs a positive max bytes", ErrInvalid)
		} else if g.Action == ActionRedact {
			err = fmt.Errorf("%w: size can block or log, not redact", ErrInvalid)
		}
		g.find = sizeFinder(sp.MaxBytes)
	case KindWebhook, KindModeration:
		if g.On&Stream != 0 {
			err = fmt.Errorf("%w: an external check runs pre or post, not on streams", ErrInvalid)
		} else {
			g.ext, err = newExternal(g.Kind, sp, o.client)
		}
	default:
		err = fmt.Errorf("%w: unknown kind %q (%s)", ErrInvalid, sp.Kind, strings.Join(Kinds, ", "))
	}
	if err != nil {
		return nil, fmt.Errorf("guardrail %s: %w", sp.Name, err)
	}
	return g, nil
}

// Hit is one intervention of a guardrail: what matched, never the text.
type Hit struct {
	Guardrail string
	Kind      string
	Action    Action   // what was done
	Types     []string // types matched (EMAIL, …), deduplicated
	Reason    string   // for blocks and external checks
	// Failed: the external check failed; Action says what the guardrail did
	// about it (ActionLog when it failed open, ActionBlock when closed).
	Failed bool
}

// Verdict is the outcome of a Set at one stage.
type Verdict struct {
	// Blocked: Hits' last entry is the block (guardrail, reason).
	Blocked bool
	// Text is the rewritten text when some guardrail redacted or rewrote it;
	// nil when the text passes unchanged.
	Text []byte
	// Applied names every guardrail that ran, in order.
	Applied []string
	Hits    []Hit
}

// Block is the blocking hit of a blocked verdict.
func (v *Verdict) Block() (Hit, bool) {
	if !v.Blocked || len(v.Hits) == 0 {
		return Hit{}, false
	}
	return v.Hits[len(v.Hits)-1], true
}

// Reason is the text a client is shown for a block: the guardrail's name and
// why, never the matched text.
func (h Hit) Message() string {
	if h.Failed {
		return fmt.Sprintf("Blocked by guardrail %q: %s.", h.Guardrail, h.Reason)
	}
	if h.Reason != "" {
		return fmt.Sprintf("Blocked by guardrail %q: %s.", h.Guardrail, h.Reason)
	}
	return fmt.Sprintf("Blocked by guardrail %q: the text contains %s.", h.Guardrail, strings.Join(h.Types, ", "))
}

// Set is the guardrails of one request, in the order they run.
type Set []*Guardrail

// At reports whether some guardrail of s runs at stage.
func (s Set) At(stage Stage) bool {
	for _, g := range s {
		if g.On&stage != 0 {
			return true
		}
	}
	return false
}

// Check runs every guardrail of s that applies at stage on text, which is a
// JSON document when isJSON (only its string values are inspected and
// rewritten) and plain text otherwise. Guardrails run in order, each on the
// text as the previous ones left it; the first block ends the run.
func (s Set) Check(ctx context.Context, stage Stage, text []byte, isJSON bool) Verdict {
	var v Verdict
	cur := text
	var masked []byte
	var findings []Finding
	var mbuf *[]byte // the masked copy's buffer, from maskPool
	defer func() {
		if mbuf != nil && cap(*mbuf) <= maxPooledMask {
			maskPool.Put(mbuf)
		}
	}()
	for _, g := range s {
		if g.On&stage == 0 {
			continue
		}
		v.Applied = append(v.Applied, g.Name)
		if g.ext != nil {
			r, err := g.ext.check(ctx, g, stage, cur, isJSON)
			if err != nil {
				h := Hit{Guardrail: g.Name, Kind: g.Kind, Failed: true, Reason: "the check is unavailable"}
				if g.FailOpen {
					h.Action = ActionLog
					v.Hits = append(v.Hits, h)
					continue
				}
				h.Action = ActionBlock
				v.Hits, v.Blocked = append(v.Hits, h), true
				return v
			}
			switch {
			case r.block && g.Action == ActionBlock:
				v.Hits, v.Blocked = append(v.Hits, Hit{Guardrail: g.Name, Kind: g.Kind, Action: ActionBlock, Types: r.types, Reason: r.reason}), true
				return v
			case r.block:
				v.Hits = append(v.Hits, Hit{Guardrail: g.Name, Kind: g.Kind, Action: ActionLog, Types: r.types, Reason: r.reason})
			case r.text != nil && g.Action == ActionRedact:
				v.Hits = append(v.Hits, Hit{Guardrail: g.Name, Kind: g.Kind, Action: ActionRedact, Types: r.types, Reason: r.reason})
				cur, masked = r.text, nil
			}
			continue
		}
		if masked == nil {
			if mbuf == nil {
				mbuf = maskPool.Get().(*[]byte)
			}
			if cap(*mbuf) < len(cur) {
				*mbuf = make([]byte, len(cur))
			}
			masked = mask(*mbuf, cur, isJSON)
		}
		findings = g.find.find(masked, findings[:0])
		if len(findings) == 0 {
			continue
		}
		h := Hit{Guardrail: g.Name, Kind: g.Kind, Action: g.Action, Types: types(findings)}
		switch g.Action {
		case ActionBlock:
			v.Hits, v.Blocked = append(v.Hits, h), true
			return v
		case ActionRedact:
			cur, masked = redact(cur, findings), nil
		}
		v.Hits = append(v.Hits, h)
	}
	if !sameSlice(cur, text) {
		v.Text = cur
	}
	return v
}

// maskPool recycles the buffers of the masked copies Check scans: a copy of
// every prompt (4 KiB in the benchmark) was an allocation, zeroed, per
// request. Findings are offsets, and nothing Check returns points into it.
// Buffers above maxPooledMask (a rare large body) are left to the GC.
var maskPool = sync.Pool{New: func() any { return new([]byte) }}

const maxPooledMask = 256 << 10

func sameSlice(a, b []byte) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// types returns the distinct types of fs, sorted.
func types(fs []Finding) []string {
	out := make([]string, 0, 2)
	for _, f := range fs {
		if !slices.Contains(out, f.Type) {
			out = append(out, f.Type)
		}
	}
	slices.Sort(out)
	return out
}

// redact returns text with each finding replaced by its placeholder [TYPE].
// Overlapping findings are merged into the first.
func redact(text []byte, fs []Finding) []byte {
	fs = normalize(fs)
	out := make([]byte, 0, len(text))
	at := 0
	for _, f := range fs {
		out = append(out, text[at:f.Start]...)
		out = append(out, '[')
		out = append(out, f.Type...)
		out = append(out, ']')
		at = f.End
	}
	return append(out, text[at:]...)
}

// normalize sorts findings by start (longest first on a tie) and drops those
// overlapping an earlier one.
func normalize(fs []Finding) []Finding {
	slices.SortFunc(fs, func(a, b Finding) int {
		if a.Start != b.Start {
			return a.Start - b.Start
		}
		return b.End - a.End
	})
	out := fs[:0]
	end := -1
	for _, f := range fs {
		if f.Start < end {
			continue
		}
		out = append(out, f)
		end = f.End
	}
	return out
}
