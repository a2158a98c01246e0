package store

// Guardrail configuration (guard/ compiles it, gateway/ resolves it per
// request). Both kinds are ordinary configuration objects: versioned JSON
// documents every backend stores as it stores the others.
const (
	KindGuardrail Kind = "guardrail"
	// KindGuardrailAttachment: the guardrails attached to one key, team, org
	// or model; its id is "<scope>:<id>", e.g. "team:t1" (AttachmentID).
	KindGuardrailAttachment Kind = "guardrail_attachment"
)

// Guardrail is a named guardrail: its check (kind), action and stages.
type Guardrail struct {
	ID     string   `json:"id"`   // the name
	Kind   string   `json:"kind"` // pii, secrets, words, size, webhook, moderation
	Action string   `json:"action"`
	On     []string `json:"on"` // pre, post, stream
	// Mandatory: attached to an org, team or model, a key below it cannot
	// remove it.
	Mandatory bool     `json:"mandatory,omitempty"`
	Types     []string `json:"types,omitempty"` // pii/secrets: some types only
	Words     []string `json:"words,omitempty"`
	Patterns  []string `json:"patterns,omitempty"`
	MaxBytes  int      `json:"max_bytes,omitempty"`
	// URL of a webhook.
	URL string `json:"url,omitempty"`
	// Provider (an id) whose /v1/moderations a moderation guardrail calls,
	// with the provider's base URL and credential; Model its model.
	Provider  string `json:"provider,omitempty"`
	Model     string `json:"model,omitempty"`
	TimeoutMS int64  `json:"timeout_ms,omitempty"`
	FailOpen  bool   `json:"fail_open,omitempty"`
}

// Guardrail attachment scopes.
const (
	AttachKey   = "key"
	AttachTeam  = "team"
	AttachOrg   = "org"
	AttachModel = "model"
)

// GuardrailAttachment lists the guardrails attached to one scope. On a key,
// a name written "-NAME" removes a guardrail the key would inherit, unless it
// is mandatory.
type GuardrailAttachment struct {
	ID         string   `json:"id"` // AttachmentID(Scope, ScopeID)
	Scope      string   `json:"scope"`
	ScopeID    string   `json:"scope_id"`
	Guardrails []string `json:"guardrails"`
}

// AttachmentID is the id of the attachment of a scope.
func AttachmentID(scope, id string) string { return scope + ":" + id }
