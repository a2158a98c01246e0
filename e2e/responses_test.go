package e2e

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/internal/testenv"
)

// responsesModels adds, beside the demo group (mockllm declared as speaking
// the Responses API natively), a group served by an OpenAI-compatible
// provider that does not declare it (translated to chat completions) and one
// served by an Anthropic provider (translated to Messages). Each provider has
// its own credential, so mockllm bills each apart. It returns the groups by
// kind.
func (s *system) responsesModels(names ...string) map[string]string {
	s.t.Helper()
	models := map[string]string{}
	for _, n := range names {
		typ, extra := "openai", []string(nil)
		switch {
		case strings.HasPrefix(n, "native"):
			extra = []string{"--responses-api"}
		case strings.HasPrefix(n, "claude"):
			typ = "anthropic"
		}
		s.cli(nil, []string{"CRED=sk-" + n}, append([]string{
			"provider", "create", "p-" + n, "--type", typ,
			"--base-url", s.mockURL + "/v1", "--credential-env", "CRED",
		}, extra...)...)
		s.cli(nil, nil, "deployment", "create", "d-"+n, "--provider", "p-"+n, "--model", "mock-"+n)
		s.cli(nil, nil, "model", "create", "m-"+n, "--deployments", "d-"+n)
		s.cli(nil, nil, "price", "set", "m-"+n, "--input", "1", "--output", "2")
		models[n] = "m-" + n
	}
	return models
}

type respSummary struct {
	ID, Object, Status, Model, Text string
	Types                           []string
	Incomplete                      *string
	Usage                           *struct {
		Input  int64 `json:"input_tokens"`
		Output int64 `json:"output_tokens"`
		Total  int64 `json:"total_tokens"`
	}
}

// TestResponsesNodeSDK runs the OpenAI Node SDK's responses.* against the
// three ways a Responses request is served: natively (the demo group), and
// translated to chat completions and to Anthropic Messages.
func TestResponsesNodeSDK(t *testing.T) {
	s := startSystem(t)
	models := s.responsesModels("chat", "claude")
	_, other := s.createKey("--alias", "other")
	s.waitKey(other)
	for _, kind := range []string{"native", "chat", "claude"} {
		model := "demo"
		if kind != "native" {
			model = models[kind]
		}
		env := []string{"TOLLGATE_MODEL=" + model, "TOLLGATE_OTHER_KEY=" + other}
		t.Run(kind, func(t *testing.T) {
			t.Run("create", func(t *testing.T) {
				var out respSummary
				s.node("responses.mjs", "create", s.demoKey, &out, env...)
				require.Equal(t, "response", out.Object, "%+v", out)
				require.Equal(t, "incomplete", out.Status, "max_output_tokens 6 < the mock's 16 words")
				require.Equal(t, "max_output_tokens", *out.Incomplete)
				require.Equal(t, []string{"message"}, out.Types)
				require.Len(t, strings.Fields(out.Text), 6)
				require.Equal(t, int64(6), out.Usage.Output)
				require.Positive(t, out.Usage.Input)
				if kind != "native" {
					require.Equal(t, model, out.Model, "replies name the model the client asked for")
				}
			})
			t.Run("input items", func(t *testing.T) {
				var out respSummary
				s.node("responses.mjs", "items", s.demoKey, &out, env...)
				require.Equal(t, "completed", out.Status, "%+v", out)
				require.True(t, strings.HasPrefix(out.Text, "Say something"), out.Text)
			})
			t.Run("stream events", func(t *testing.T) {
				var out struct {
					Types []string
					Seqs  []int
					Text  string
					Final *respSummary
				}
				s.node("responses.mjs", "stream", s.demoKey, &out, env...)
				require.Equal(t, []string{"response.created", "response.in_progress", "response.output_item.added", "response.content_part.added"}, out.Types[:4], "%+v", out)
				require.Equal(t, []string{"response.output_text.done", "response.content_part.done", "response.output_item.done", "response.incomplete"}, out.Types[len(out.Types)-4:])
				for i, n := range out.Seqs {
					require.Equal(t, i, n, "sequence_number counts from 0 with no gap")
				}
				require.Len(t, strings.Fields(out.Text), 5)
				require.NotNil(t, out.Final)
				require.Equal(t, int64(5), out.Final.Usage.Output)
			})
			t.Run("stream finalResponse", func(t *testing.T) {
				var out struct {
					respSummary
					Deltas string
				}
				s.node("responses.mjs", "final", s.demoKey, &out, env...)
				require.Equal(t, out.Text, out.Deltas, "%+v", out)
				require.Equal(t, int64(7), out.Usage.Output)
			})
			t.Run("function call and its output", func(t *testing.T) {
				var out struct {
					First respSummary
					Call  struct {
						Name, CallID string
						Args         map[string]any
					}
					Second respSummary
				}
				s.node("responses.mjs", "tools", s.demoKey, &out, env...)
				require.Equal(t, []string{"function_call"}, out.First.Types, "%+v", out)
				require.Equal(t, "get_weather", out.Call.Name)
				require.Equal(t, map[string]any{"city": "Paris"}, out.Call.Args)
				require.NotEmpty(t, out.Call.CallID)
				require.Equal(t, []string{"message"}, out.Second.Types)
				require.Equal(t, "completed", out.Second.Status)
			})
			t.Run("function call streamed", func(t *testing.T) {
				var out struct {
					respSummary
					Args string
					Call struct {
						Name string
						Args map[string]any
					}
				}
				s.node("responses.mjs", "toolstream", s.demoKey, &out, env...)
				require.Equal(t, `{"city":"Rome"}`, out.Args, "%+v", out)
				require.Equal(t, map[string]any{"city": "Rome"}, out.Call.Args)
			})
			t.Run("models.retrieve", func(t *testing.T) {
				var out struct {
					ID, Object string
					Missing    *errInfo
				}
				s.node("responses.mjs", "retrieveModel", s.demoKey, &out, env...)
				require.Equal(t, model, out.ID)
				require.Equal(t, "model", out.Object)
				require.Equal(t, 404, out.Missing.Status)
				require.Equal(t, "model_not_found", out.Missing.Code)
			})
			if kind == "native" {
				return // the upstream keeps native responses; the mock keeps none
			}
			t.Run("stored: previous_response_id, retrieve, input_items, delete, store false", func(t *testing.T) {
				var out struct {
					R1, R2, Retrieved                 respSummary
					Items                             []struct{ Type, Role, ID string }
					UnstoredErr, OtherErr, DeletedErr *errInfo
				}
				s.node("responses.mjs", "stored", s.demoKey, &out, env...)
				require.Equal(t, out.R1.ID, out.Retrieved.ID, "%+v", out)
				require.Equal(t, out.R1.Text, out.Retrieved.Text)
				require.True(t, strings.HasPrefix(out.R2.Text, "delta epsilon"), out.R2.Text)
				require.Greater(t, out.R2.Usage.Input, out.R1.Usage.Input+out.R1.Usage.Output-1, "the history is input")
				require.Len(t, out.Items, 3)
				require.Equal(t, []string{"user", "assistant", "user"}, []string{out.Items[0].Role, out.Items[1].Role, out.Items[2].Role})
				for _, e := range []*errInfo{out.UnstoredErr, out.OtherErr, out.DeletedErr} {
					require.NotNil(t, e)
					require.Equal(t, 404, e.Status)
				}
			})
			t.Run("function call output after previous_response_id", func(t *testing.T) {
				var out struct {
					First  respSummary
					Second respSummary
				}
				s.node("responses.mjs", "tools", s.demoKey, &out, append(env, "TOLLGATE_STORED=1")...)
				require.Equal(t, []string{"function_call"}, out.First.Types, "%+v", out)
				require.Equal(t, "completed", out.Second.Status)
				// The stored call and its output reach the upstream (mockllm counts
				// tool results as prompt text in chat, not in Messages).
				require.GreaterOrEqual(t, out.Second.Usage.Input, out.First.Usage.Input)
				if kind == "chat" {
					require.Greater(t, out.Second.Usage.Input, out.First.Usage.Input, "the stored call is input")
				}
			})
			t.Run("built-in tools are left out", func(t *testing.T) {
				var out struct {
					Status, Dropped string
					Fatal           any
				}
				s.node("responses.mjs", "droptool", s.demoKey, &out, env...)
				require.Nil(t, out.Fatal)
				require.Equal(t, "completed", out.Status)
				require.Equal(t, "web_search, custom:apply_patch", out.Dropped)
			})
			t.Run("a forced built-in tool is a 400", func(t *testing.T) {
				var out struct {
					Error        *errInfo
					IsBadRequest bool
				}
				s.node("responses.mjs", "badtool", s.demoKey, &out, env...)
				require.True(t, out.IsBadRequest, "%+v", out.Error)
				require.Contains(t, out.Error.Message, "web_search")
			})
		})
	}
}

// TestResponsesGoSDK: openai-go's Responses.New and NewStreaming.
func TestResponsesGoSDK(t *testing.T) {
	s := startSystem(t)
	models := s.responsesModels("claude")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	client := openai.NewClient(option.WithBaseURL(s.url+"/v1"), option.WithAPIKey(s.demoKey), option.WithMaxRetries(0))
	for _, model := range []string{"demo", models["claude"]} {
		r, err := client.Responses.New(ctx, responses.ResponseNewParams{
			Model:           model,
			Input:           responses.ResponseNewParamsInputUnion{OfString: openai.String("hello from openai-go")},
			MaxOutputTokens: openai.Int(4),
		})
		require.NoError(t, err)
		require.Equal(t, int64(4), r.Usage.OutputTokens)
		require.Equal(t, "hello from openai-go hello", r.OutputText())

		stream := client.Responses.NewStreaming(ctx, responses.ResponseNewParams{
			Model:           model,
			Input:           responses.ResponseNewParamsInputUnion{OfString: openai.String("stream from go")},
			MaxOutputTokens: openai.Int(3),
		})
		var text string
		var final *responses.Response
		for stream.Next() {
			ev := stream.Current()
			switch ev.Type {
			case "response.output_text.delta":
				text += ev.Delta
			case "response.completed", "response.incomplete":
				r := ev.Response
				final = &r
			}
		}
		require.NoError(t, stream.Err())
		require.Equal(t, "stream from go", text)
		require.NotNil(t, final)
		require.Equal(t, int64(3), final.Usage.OutputTokens)
	}
}

// TestResponsesVercelAISDK: the Vercel AI SDK's default OpenAI provider
// (openai('model') speaks the Responses API), generateText and streamText.
func TestResponsesVercelAISDK(t *testing.T) {
	s := startSystem(t)
	testenv.NodePackage(t, "ai")
	testenv.NodePackage(t, "@ai-sdk/openai")
	models := s.responsesModels("chat", "claude")
	for _, model := range []string{"demo", models["chat"], models["claude"]} {
		env := []string{"TOLLGATE_MODEL=" + model}
		type usage struct {
			InputTokens, OutputTokens int64
		}
		var gen struct {
			Text, Finish string
			Usage        usage
			Fatal        any
		}
		s.node("vercel.mjs", "generate", s.demoKey, &gen, env...)
		require.Nil(t, gen.Fatal)
		require.Equal(t, "Hello from the AI SDK Hello", gen.Text, "%s: %+v", model, gen)
		require.Equal(t, "length", gen.Finish)
		require.Equal(t, int64(6), gen.Usage.OutputTokens)
		var st struct {
			Text, Finish string
			Parts        int
			Usage        usage
			Fatal        any
		}
		s.node("vercel.mjs", "stream", s.demoKey, &st, env...)
		require.Nil(t, st.Fatal)
		require.Equal(t, "Stream from the AI SDK", st.Text, "%s: %+v", model, st)
		require.Equal(t, 5, st.Parts)
		require.Equal(t, int64(5), st.Usage.OutputTokens)
	}
}

// TestCodexCLI: OpenAI's Codex CLI (npm @openai/codex) completes a prompt
// through tollgate run, with a custom model provider whose base_url is the
// gateway and wire_api "responses" (no OpenAI account: the key is the
// gateway's demo key; the demo group is served by mockllm).
func TestCodexCLI(t *testing.T) {
	s := startSystem(t)
	s.codexExec(t, "demo")
}

// TestCodexCLIAnthropic: Codex CLI on a group served by an Anthropic
// provider (mockllm's Messages endpoint): the Responses request is
// translated, the built-in tools Codex always sends are left out, and the
// ledger equals the mock's bill.
func TestCodexCLIAnthropic(t *testing.T) {
	s := startSystem(t)
	models := s.responsesModels("claude")
	rows := s.codexExec(t, models["claude"])
	bill := s.anthropicBill("sk-claude")
	require.Positive(t, bill.Requests)
	var claude []ledgerRow
	for _, r := range rows {
		if r.Model == models["claude"] {
			claude = append(claude, r)
		}
	}
	require.Len(t, claude, int(bill.Requests), "every request Codex made is in the ledger")
	in, out := completedUsage(t, claude)
	require.Equal(t, bill.InputTokens+bill.CachedTokens+bill.CacheCreationTokens, in, "input")
	require.Equal(t, bill.OutputTokens, out, "output")
}

// codexExec runs codex exec on model through the gateway and returns the
// demo key's ledger once the last request is in it.
func (s *system) codexExec(t *testing.T, model string) []ledgerRow {
	t.Helper()
	testenv.NodePackage(t, "@openai/codex")
	codex, err := filepath.Abs("node_modules/.bin/codex")
	require.NoError(t, err)
	home, work := t.TempDir(), t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, codex, "exec", "--skip-git-repo-check", "-m", model,
		"-c", "model_provider=tollgate",
		"-c", fmt.Sprintf(`model_providers.tollgate={name="Tollgate",base_url=%q,env_key="TOLLGATE_KEY",wire_api="responses",request_max_retries=0,stream_max_retries=0}`, s.url+"/v1"),
		"Reply with the words codex through tollgate")
	cmd.Dir = work
	cmd.Env = append(os.Environ(), "CODEX_HOME="+home, "TOLLGATE_KEY="+s.demoKey, "NO_COLOR=1")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr, cmd.Stdin = &stdout, &stderr, strings.NewReader("")
	require.NoError(t, cmd.Run(), "codex exec: %s\n%s", stdout.String(), stderr.String())
	// mockllm repeats the last message's words: the prompt came back through
	// Codex's Responses stream parser.
	require.Contains(t, stdout.String(), "Reply with the words codex through tollgate", "stderr: %s", stderr.String())
	require.NotContains(t, stderr.String(), "ERROR")
	var rows []ledgerRow
	require.Eventually(t, func() bool {
		rows = s.ledger("demo")
		return len(rows) > 0 && rows[len(rows)-1].Model == model
	}, 10*time.Second, 100*time.Millisecond, "the request is in the ledger")
	last := rows[len(rows)-1]
	require.Equal(t, "REQUEST_STATUS_COMPLETED", last.Status, "%+v", last)
	require.True(t, last.Stream)
	sc := bufio.NewScanner(strings.NewReader(stderr.String()))
	for sc.Scan() {
		if strings.Contains(sc.Text(), "tokens used") {
			t.Logf("codex: %s", sc.Text())
		}
	}
	return rows
}
