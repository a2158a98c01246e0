package admin_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"

	"github.com/tollgate-ai/tollgate/kernel"
	adminv1 "github.com/tollgate-ai/tollgate/proto/tollgate/admin/v1"
	"github.com/tollgate-ai/tollgate/store"
)

// Prices per unit through the admin API: a masked SetPrice sets only the
// prices it names, so a unit price added to a model priced per token keeps
// its token prices, and a model never priced can get a unit price alone.
func TestSetPriceUnits(t *testing.T) {
	forEachStore(t, func(t *testing.T, e *env) {
		c := clients(e)
		ctx := e.admin(t)
		usd := func(s string) *adminv1.Money { return &adminv1.Money{Dollars: s} }

		// A model nobody priced: a price per image alone, no token prices.
		set, err := c.prices.SetPrice(ctx, &adminv1.SetPriceRequest{
			Price:      &adminv1.Price{Model: "dall-e-3", PerImage: map[string]*adminv1.Money{"1024x1024/HD": usd("0.08"), "*": usd("0.04")}},
			UpdateMask: mask("per_image"),
		})
		require.NoError(t, err)
		require.Equal(t, "0.08", set.GetPrice().GetPerImage()["1024x1024/hd"].GetDollars(), "sizes stored in lower case")
		p, _, err := store.Get[store.ModelPrice](ctx, e.st, "dall-e-3")
		require.NoError(t, err)
		one, ok := p.Price.ImagePrice("1024x1024", "hd")
		require.True(t, ok)
		require.Equal(t, 80*kernel.Dollar/1000, one)
		require.Zero(t, p.Price.Input)

		// A model priced per token: adding seconds keeps the token prices,
		// and a later token update keeps the seconds.
		_, err = c.prices.SetPrice(ctx, &adminv1.SetPriceRequest{Price: &adminv1.Price{Model: "gpt-4o-transcribe", Input: usd("2.5"), Output: usd("10")}})
		require.NoError(t, err)
		_, err = c.prices.SetPrice(ctx, &adminv1.SetPriceRequest{
			Price:      &adminv1.Price{Model: "gpt-4o-transcribe", PerSecond: usd("0.0001"), Input: usd("99")},
			UpdateMask: mask("per_second"),
		})
		require.NoError(t, err)
		_, err = c.prices.SetPrice(ctx, &adminv1.SetPriceRequest{
			Price:      &adminv1.Price{Model: "gpt-4o-transcribe", Output: usd("12")},
			UpdateMask: mask("output"),
		})
		require.NoError(t, err)
		g, err := c.prices.GetPrice(ctx, &adminv1.GetPriceRequest{Model: "gpt-4o-transcribe"})
		require.NoError(t, err)
		require.Equal(t, "2.5", g.GetPrice().GetInput().GetDollars(), "not in the mask: kept")
		require.Equal(t, "12", g.GetPrice().GetOutput().GetDollars())
		require.Equal(t, "0.0001", g.GetPrice().GetPerSecond().GetDollars())

		// Every unit, and image token prices; 0 removes one.
		_, err = c.prices.SetPrice(ctx, &adminv1.SetPriceRequest{
			Price: &adminv1.Price{
				Model: "multi", PerCharacter: usd("0.000015"), PerSearchUnit: usd("0.002"),
				ImageInputTokens: usd("10"), ImageOutputTokens: usd("40"),
			},
			UpdateMask: mask("per_character", "per_search_unit", "image_input_tokens", "image_output_tokens"),
		})
		require.NoError(t, err)
		p, _, err = store.Get[store.ModelPrice](ctx, e.st, "multi")
		require.NoError(t, err)
		require.Equal(t, kernel.UnitPrices{Character: 15_000, Search: 2_000_000, ImageInputTokens: 10 * kernel.Dollar, ImageOutputTokens: 40 * kernel.Dollar}, *p.Price.Units)
		_, err = c.prices.SetPrice(ctx, &adminv1.SetPriceRequest{
			Price: &adminv1.Price{Model: "multi", PerSearchUnit: usd("0")}, UpdateMask: mask("per_search_unit"),
		})
		require.NoError(t, err)
		p, _, err = store.Get[store.ModelPrice](ctx, e.st, "multi")
		require.NoError(t, err)
		require.Zero(t, p.Price.Units.Search)
		require.Equal(t, kernel.Money(15_000), p.Price.Units.Character)

		// A whole price (no mask) replaces the units too.
		_, err = c.prices.SetPrice(ctx, &adminv1.SetPriceRequest{Price: &adminv1.Price{Model: "multi", Input: usd("1"), Output: usd("2")}})
		require.NoError(t, err)
		p, _, err = store.Get[store.ModelPrice](ctx, e.st, "multi")
		require.NoError(t, err)
		require.Nil(t, p.Price.Units)

		for name, req := range map[string]*adminv1.SetPriceRequest{
			"no mask, no tokens": {Price: &adminv1.Price{Model: "m", PerSecond: usd("1")}},
			"unknown path":       {Price: &adminv1.Price{Model: "m"}, UpdateMask: mask("per_call")},
			"negative":           {Price: &adminv1.Price{Model: "m", PerCharacter: usd("-1")}, UpdateMask: mask("per_character")},
			"empty image key":    {Price: &adminv1.Price{Model: "m", PerImage: map[string]*adminv1.Money{"": usd("1")}}, UpdateMask: mask("per_image")},
		} {
			_, err := c.prices.SetPrice(ctx, req)
			requireCode(t, codes.InvalidArgument, err)
			require.NotEmpty(t, name)
		}
	})
}
