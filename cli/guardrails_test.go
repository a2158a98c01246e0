package cli_test

import (
	"testing"

	"github.com/tollgate-ai/tollgate/store/memstore"
)

func TestGuardrailCommands(t *testing.T) {
	s := startServer(t, memstore.New())
	runSteps(t, s, []step{
		{args: []string{"guardrail", "create", "pii", "--kind", "pii", "--action", "redact", "--on", "pre,post,stream", "--mandatory"}, want: []string{"pii", "redact", "pre,post,stream", "true"}},
		{args: []string{"guardrail", "create", "words", "--kind", "words", "--action", "block", "--words", "project falcon"}, want: []string{"project falcon"}},
		{args: []string{"guardrail", "create", "hook", "--kind", "webhook", "--action", "block", "--url", "http://127.0.0.1:1/check", "--timeout", "300ms", "--fail-open"}, want: []string{"FAIL OPEN", "true"}},
		{args: []string{"guardrail", "create", "bad", "--kind", "size", "--action", "redact", "--max-bytes", "10"}, wantErr: "size can block or log, not redact"},
		{args: []string{"guardrail", "create", "x", "--kind", "pii"}, wantErr: "--kind and --action are required"},
		{args: []string{"guardrail", "list"}, want: []string{"hook", "pii", "words", "MANDATORY"}},
		{args: []string{"guardrail", "update", "words", "--kind", "words", "--action", "log", "--words", "falcon"}, want: []string{"log"}},
		{args: []string{"guardrail", "get", "words"}, want: []string{"falcon"}},
		{args: []string{"team", "create", "ml", "--guardrails", "pii,words"}, want: []string{"team ml: guardrails pii,words"}},
		{args: []string{"key", "create", "--id", "k1", "--team", "ml", "--guardrails", "-pii"}, wantErr: "mandatory"},
		{args: []string{"key", "create", "--team", "ml", "--guardrails", "hook"}, wantErr: "needs --id"},
		{args: []string{"key", "create", "--id", "k2", "--team", "ml", "--guardrails", "-words,hook"}, want: []string{"key k2: guardrails -words,hook"}},
		{args: []string{"guardrail", "attach", "model", "demo", "--guardrails", "pii"}, want: []string{"model demo: guardrails pii"}},
		{args: []string{"guardrail", "delete", "hook"}, want: []string{"hook"}},
		{args: []string{"guardrail", "get", "hook"}, wantErr: "not found"},
	})
}
