package store

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/kernel"
)

func TestDeploymentPrice(t *testing.T) {
	table := map[string]kernel.Price{
		"gpt-4o":                     {Input: 2, Output: 10},
		"claude-sonnet-4-5-20250929": {Input: 3, Output: 15},
		"fast":                       {Input: 1, Output: 1},
	}
	find := func(n string) (kernel.Price, bool) { p, ok := table[n]; return p, ok }
	for _, tc := range []struct {
		name     string
		group    string
		d        Deployment
		provider ProviderType
		want     kernel.Price
		from     string
	}{
		{"group name first", "fast", Deployment{ProviderModel: "gpt-4o"}, ProviderOpenAI, table["fast"], PriceFromGroup},
		{"provider model", "chat", Deployment{ProviderModel: "gpt-4o"}, ProviderOpenAI, table["gpt-4o"], PriceFromModel},
		{"azure base model", "chat", Deployment{ProviderModel: "prod-eastus-4o", BaseModel: "gpt-4o"}, ProviderAzure, table["gpt-4o"], PriceFromModel},
		{"vertex name", "sonnet", Deployment{ProviderModel: "claude-sonnet-4-5@20250929"}, ProviderVertex, table["claude-sonnet-4-5-20250929"], PriceFromModel},
		{"free wins", "fast", Deployment{ProviderModel: "gpt-4o", Free: true}, ProviderOpenAI, kernel.Price{}, PriceFromFree},
		{"azure name without base model", "chat", Deployment{ProviderModel: "prod-eastus-4o"}, ProviderAzure, kernel.Price{Unpriced: true}, ""},
		{"unknown", "", Deployment{ProviderModel: "llama-local"}, ProviderOpenAI, kernel.Price{Unpriced: true}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, from, _, ok := DeploymentPrice(tc.group, &tc.d, tc.provider, find)
			require.Equal(t, tc.want, p)
			require.Equal(t, tc.from, from)
			require.Equal(t, tc.from != "", ok)
		})
	}
}
