package translate

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestTagsStrippedFromMetadata: metadata.tollgate_tags never reaches the
// provider (chat and Responses, OpenAI and Azure); the other metadata
// members stay, in order; a body without tags is not rewritten for them.
func TestTagsStrippedFromMetadata(t *testing.T) {
	tests := []struct {
		name     string
		api      API
		provider ProviderType
		body     string
		want     any // the provider-bound metadata; nil: no member
	}{
		{
			"chat, tags only", APIChat, ProviderOpenAI,
			`{"model":"pub","metadata":{"tollgate_tags":"feature=search"}}`,
			map[string]any{},
		},
		{
			"chat, tags among others", APIChat, ProviderOpenAI,
			`{"model":"pub","metadata":{"a":"1","tollgate_tags":"feature=search,env=prod","b":"2"}}`,
			map[string]any{"a": "1", "b": "2"},
		},
		{
			"chat, escaped key", APIChat, ProviderAzure,
			`{"model":"pub","metadata":{"tollgate_t\u0061gs":"x=y","user":"u"}}`,
			map[string]any{"user": "u"},
		},
		{
			"responses (Azure's native Responses API)", APIResponses, ProviderAzure,
			`{"model":"pub","input":"hi","metadata":{ "run" : "r1" , "tollgate_tags" : "team=a" }}`,
			map[string]any{"run": "r1"},
		},
		{
			"tag-like value kept", APIChat, ProviderOpenAI,
			`{"model":"pub","metadata":{"note":"tollgate_tags"}}`,
			map[string]any{"note": "tollgate_tags"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in, err := ParseRequest(tt.api, []byte(tt.body))
			require.NoError(t, err)
			target := &Target{Model: "pub", Deployment: "d", Provider: tt.provider, BasePath: "/v1", APIKey: "k", ProviderModel: "prov"}
			out, err := NewTranslator(tt.api, tt.provider).Request(in, target)
			require.NoError(t, err)
			body := out.Body
			if body == nil {
				body = in.Body
			}
			var m map[string]any
			require.NoError(t, json.Unmarshal(body, &m), "%s", body)
			require.Equal(t, tt.want, m["metadata"], "%s", body)
			require.NotContains(t, string(body), "x=y")
			require.NotContains(t, string(body), "=search")
		})
	}

	// metadataWithoutTags alone: no member, no edit.
	b := []byte(`{"metadata":{"a":"1"}}`)
	f, err := scanFields(t, b)
	require.NoError(t, err)
	_, ok := metadataWithoutTags(b, f.metadata)
	require.False(t, ok)
}

func scanFields(t *testing.T, b []byte) (*requestFields, error) {
	t.Helper()
	in, err := ParseRequest(APIChat, b)
	if err != nil {
		return nil, err
	}
	return in.bodyFields()
}
