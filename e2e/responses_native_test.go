package e2e

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestResponsesNativeOwnership (issue 37): on a group of two deployments
// whose provider serves the Responses API natively (each with its own
// credential on mockllm, which keeps responses per credential), the OpenAI
// Node SDK chains three turns with previous_response_id, all on the
// deployment holding the chain; retrieve, input items and delete work with
// the owning key; another key gets 404 for each, and its
// previous_response_id is refused before any provider call; a background
// response is polled to completion through the gateway and settled once.
func TestResponsesNativeOwnership(t *testing.T) {
	s := startSystem(t)
	keyID, key, other := s.nativeGroup("m-native", "n1", "n2")

	var out struct {
		Turns []struct {
			ID, Previous, Deployment string
		}
		Retrieved respSummary
		Items     []struct{ ID, Type, Role string }

		OtherRetrieve, OtherItems, OtherDelete, OtherPrevious, Deleted *errInfo
		Background                                                     struct {
			ID        string
			RequestID string
			Statuses  []string
			Final     respSummary
			Again     string
		}
	}
	before := s.mockStats()
	s.node("responses.mjs", "native", key, &out, "TOLLGATE_MODEL=m-native", "TOLLGATE_OTHER_KEY="+other)

	require.Len(t, out.Turns, 3, "%+v", out)
	holder := out.Turns[0].Deployment
	require.Contains(t, []string{"d-n1", "d-n2"}, holder)
	for i, turn := range out.Turns {
		require.Equal(t, holder, turn.Deployment, "turn %d lands on the deployment holding the chain", i+1)
		if i > 0 {
			require.Equal(t, out.Turns[i-1].ID, turn.Previous)
		}
	}
	require.Equal(t, out.Turns[2].ID, out.Retrieved.ID)
	require.Equal(t, "completed", out.Retrieved.Status)
	require.Len(t, out.Items, 1)
	require.Equal(t, "user", out.Items[0].Role)

	for name, e := range map[string]*errInfo{
		"retrieve": out.OtherRetrieve, "input items": out.OtherItems, "delete": out.OtherDelete,
		"previous_response_id": out.OtherPrevious, "retrieve after delete": out.Deleted,
	} {
		require.NotNil(t, e, name)
		require.Equal(t, 404, e.Status, "%s: %+v", name, e)
	}
	require.Equal(t, "previous_response_not_found", out.OtherPrevious.Code)

	// The provider saw the owner's requests only: the three turns on the
	// holder's credential, and the background one (routed freely).
	after := s.mockStats()
	sent := func(cred string) int64 { return after[cred].Requests - before[cred].Requests }
	require.Equal(t, int64(4), sent("sk-n1")+sent("sk-n2"), "another key's previous_response_id never reached the provider")
	require.GreaterOrEqual(t, sent("sk-"+holder[len("d-"):]), int64(3))

	require.Equal(t, "queued", out.Background.Statuses[0])
	require.Equal(t, "completed", out.Background.Final.Status, "%+v", out.Background)
	require.Equal(t, "completed", out.Background.Again)
	require.NotNil(t, out.Background.Final.Usage)
	require.Positive(t, out.Background.Final.Usage.Output)
	require.Equal(t, "m-native", out.Background.Final.Model, "a poll names the model the client asked for")
	require.Equal(t, "m-native", out.Retrieved.Model)

	// Settled once each: the three turns and the background response (its
	// POST's row, settled from the usage of the poll that found it
	// completed); the refused and forwarded requests are not charged; the
	// ledger holds exactly what the provider billed.
	rows := s.ledger(keyID)
	require.Len(t, rows, 4, "%+v", rows)
	var in, outTokens int64
	var bg []ledgerRow
	for _, r := range rows {
		require.Equal(t, "REQUEST_STATUS_COMPLETED", r.Status, "%+v", r)
		in += r.Usage.Input + r.Usage.CachedInput
		outTokens += r.Usage.Output + r.Usage.Reasoning
		if r.RequestID == out.Background.RequestID {
			bg = append(bg, r)
		}
	}
	require.Len(t, bg, 1, "the background response settled once: %+v", rows)
	require.Equal(t, out.Background.Final.Usage.Input, bg[0].Usage.Input+bg[0].Usage.CachedInput)
	require.Equal(t, out.Background.Final.Usage.Output, bg[0].Usage.Output+bg[0].Usage.Reasoning)
	billIn := after["sk-n1"].InputTokens + after["sk-n1"].CachedTokens + after["sk-n2"].InputTokens + after["sk-n2"].CachedTokens -
		before["sk-n1"].InputTokens - before["sk-n1"].CachedTokens - before["sk-n2"].InputTokens - before["sk-n2"].CachedTokens
	billOut := after["sk-n1"].OutputTokens + after["sk-n2"].OutputTokens - before["sk-n1"].OutputTokens - before["sk-n2"].OutputTokens
	require.Equal(t, billIn, in, "the ledger's input is the provider's bill")
	require.Equal(t, billOut, outTokens, "the ledger's output is the provider's bill")
}

// TestResponsesNativeConversations (issue 37): with the OpenAI Node SDK on
// a native group of two deployments, a conversation created through the
// gateway is held by one deployment: the responses made in it land there,
// its items are the provider's, another key gets 404 for each call (and
// its response naming it is refused before the provider), and it is
// updated and deleted by its owner.
func TestResponsesNativeConversations(t *testing.T) {
	s := startSystem(t)
	keyID, key, other := s.nativeGroup("m-conv", "c1", "c2")

	var out struct {
		ID, Deployment string
		Turns          []struct{ ID, Conversation, Deployment string }
		Items          []struct{ ID, Type, Role string }

		OtherRetrieve, OtherItems, OtherResponse, Gone *errInfo
		Topic                                          string
		Deleted                                        bool
	}
	before := s.mockStats()
	s.node("responses.mjs", "conversations", key, &out, "TOLLGATE_MODEL=m-conv", "TOLLGATE_OTHER_KEY="+other)

	require.Regexp(t, `^conv_`, out.ID)
	require.Contains(t, []string{"d-c1", "d-c2"}, out.Deployment)
	require.Len(t, out.Turns, 2)
	for _, turn := range out.Turns {
		require.Equal(t, out.Deployment, turn.Deployment, "a response in the conversation lands on the deployment holding it")
		require.Equal(t, out.ID, turn.Conversation)
	}
	// The seed item, then each turn's input and reply.
	require.Len(t, out.Items, 5, "%+v", out.Items)
	require.Equal(t, "user", out.Items[0].Role)
	require.Equal(t, "assistant", out.Items[2].Role)
	for name, e := range map[string]*errInfo{
		"retrieve": out.OtherRetrieve, "items": out.OtherItems, "response": out.OtherResponse, "retrieve after delete": out.Gone,
	} {
		require.NotNil(t, e, name)
		require.Equal(t, 404, e.Status, "%s: %+v", name, e)
	}
	require.Equal(t, "changed", out.Topic)
	require.True(t, out.Deleted)

	after := s.mockStats()
	holder := "sk-" + out.Deployment[len("d-"):]
	require.Equal(t, int64(2), after[holder].Requests-before[holder].Requests, "the two responses, on the holder's credential")
	rows := s.ledger(keyID)
	require.Len(t, rows, 2, "the two responses are charged; conversation calls are not: %+v", rows)
}

// nativeGroup makes a model group of one deployment per name on mockllm,
// which serves the Responses API natively, each with its own credential
// sk-NAME (deployment d-NAME), and two keys that may use it: the owner's
// (and its id) and another.
func (s *system) nativeGroup(group string, names ...string) (ownerID, owner, other string) {
	s.t.Helper()
	var deps []string
	for _, n := range names {
		s.cli(nil, []string{"CRED=sk-" + n}, "provider", "create", "p-"+n, "--type", "openai",
			"--base-url", s.mockURL+"/v1", "--credential-env", "CRED", "--responses-api")
		s.cli(nil, nil, "deployment", "create", "d-"+n, "--provider", "p-"+n, "--model", "mock-native")
		deps = append(deps, "d-"+n)
	}
	s.cli(nil, nil, "model", "create", group, "--deployments", strings.Join(deps, ","))
	s.cli(nil, nil, "price", "set", group, "--input", "1", "--output", "2")
	ownerID, owner = s.createKey("--alias", "owner")
	_, other = s.createKey("--alias", "other")
	s.waitKey(owner)
	s.waitKey(other)
	return ownerID, owner, other
}
