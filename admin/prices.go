package admin

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/tollgate-ai/tollgate/kernel"
	adminv1 "github.com/tollgate-ai/tollgate/proto/tollgate/admin/v1"
	"github.com/tollgate-ai/tollgate/store"
)

//go:embed prices.yaml
var defaultPricesYAML []byte

// priceDoc is a price as written in YAML: dollars per million tokens, as exact
// decimal strings ("" means unset).
type priceDoc struct {
	Model       string `yaml:"model"`
	Input       string `yaml:"input"`
	CachedInput string `yaml:"cached_input"`
	CacheWrite  string `yaml:"cache_write"`
	Output      string `yaml:"output"`
	Reasoning   string `yaml:"reasoning"`
	// Prices per unit of the routes charged per unit (docs/endpoints.md),
	// dollars a unit: an image by "SIZE/QUALITY", "SIZE", "*/QUALITY" or
	// "*"; a second of audio; a character of speech; a rerank search unit.
	Image     map[string]string `yaml:"image"`
	Second    string            `yaml:"second"`
	Character string            `yaml:"character"`
	Search    string            `yaml:"search"`
	// Dollars per million image tokens of an image model billed by tokens
	// (gpt-image-1).
	ImageInputTokens  string `yaml:"image_input_tokens"`
	ImageOutputTokens string `yaml:"image_output_tokens"`
}

// price converts a priceDoc to the stored form.
func (d *priceDoc) price(where string) (store.ModelPrice, error) {
	out := store.ModelPrice{ID: d.Model}
	if !adminv1.ValidID(d.Model) {
		return out, errorf(ErrInvalid, "%s: model: %q is not a valid model name", where, d.Model)
	}
	units, err := d.units(where)
	if err != nil {
		return out, err
	}
	out.Price.Units = units
	if (d.Input == "" || d.Output == "") && (units == nil || d.Input != "" || d.Output != "") {
		return out, errorf(ErrInvalid, "%s (%s): input and output are required (or only prices per unit)", where, d.Model)
	}
	for _, f := range []struct {
		name string
		text string
		dst  *kernel.Money
	}{
		{"input", d.Input, &out.Price.Input},
		{"cached_input", d.CachedInput, &out.Price.CachedInput},
		{"cache_write", d.CacheWrite, &out.Price.CacheWrite},
		{"output", d.Output, &out.Price.Output},
		{"reasoning", d.Reasoning, &out.Price.Reasoning},
	} {
		if f.text == "" {
			continue
		}
		n, err := kernel.ParseDollars(f.text)
		if err != nil {
			return out, errorf(ErrInvalid, "%s (%s): %s: %q: %v", where, d.Model, f.name, f.text, err)
		}
		*f.dst = n
	}
	return out, nil
}

// units converts the prices per unit; nil when there are none.
func (d *priceDoc) units(where string) (*kernel.UnitPrices, error) {
	if len(d.Image) == 0 && d.Second == "" && d.Character == "" && d.Search == "" && d.ImageInputTokens == "" && d.ImageOutputTokens == "" {
		return nil, nil
	}
	u := &kernel.UnitPrices{}
	parse := func(name, text string) (kernel.Money, error) {
		n, err := kernel.ParseDollars(text)
		if err != nil || n < 0 {
			return 0, errorf(ErrInvalid, "%s (%s): %s: %q: not a price in dollars", where, d.Model, name, text)
		}
		return n, nil
	}
	for k, v := range d.Image {
		if k == "" {
			return nil, errorf(ErrInvalid, "%s (%s): image: an empty size", where, d.Model)
		}
		n, err := parse("image."+k, v)
		if err != nil {
			return nil, err
		}
		if u.Image == nil {
			u.Image = map[string]kernel.Money{}
		}
		u.Image[strings.ToLower(k)] = n
	}
	for _, f := range []struct {
		name, text string
		dst        *kernel.Money
	}{
		{"second", d.Second, &u.Second},
		{"character", d.Character, &u.Character},
		{"search", d.Search, &u.Search},
		{"image_input_tokens", d.ImageInputTokens, &u.ImageInputTokens},
		{"image_output_tokens", d.ImageOutputTokens, &u.ImageOutputTokens},
	} {
		if f.text == "" {
			continue
		}
		n, err := parse(f.name, f.text)
		if err != nil {
			return nil, err
		}
		*f.dst = n
	}
	return u, nil
}

// DefaultPrices returns the built-in prices of popular models (prices.yaml).
func DefaultPrices() ([]store.ModelPrice, error) {
	var docs []priceDoc
	if err := yaml.Unmarshal(defaultPricesYAML, &docs); err != nil {
		return nil, fmt.Errorf("admin: prices.yaml: %w", err)
	}
	out := make([]store.ModelPrice, 0, len(docs))
	for i := range docs {
		p, err := docs[i].price(fmt.Sprintf("prices.yaml[%d]", i))
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

func optMoney(m kernel.Money) *adminv1.Money {
	if m == 0 {
		return nil
	}
	return moneyOut(m)
}

func priceView(p *store.ModelPrice) *adminv1.Price {
	out := &adminv1.Price{
		Model: p.ID, Input: moneyOut(p.Price.Input), Output: moneyOut(p.Price.Output),
		CachedInput: optMoney(p.Price.CachedInput), CacheWrite: optMoney(p.Price.CacheWrite),
		Reasoning: optMoney(p.Price.Reasoning),
	}
	if u := p.Price.Units; u != nil {
		for k, m := range u.Image {
			if out.PerImage == nil {
				out.PerImage = map[string]*adminv1.Money{}
			}
			out.PerImage[k] = moneyOut(m)
		}
		out.PerSecond, out.PerCharacter, out.PerSearchUnit = optMoney(u.Second), optMoney(u.Character), optMoney(u.Search)
		out.ImageInputTokens, out.ImageOutputTokens = optMoney(u.ImageInputTokens), optMoney(u.ImageOutputTokens)
	}
	return out
}

// priceIn converts every field of a Price; the update mask then says which
// of them a SetPrice keeps.
func priceIn(in *adminv1.Price) (kernel.Price, error) {
	var p kernel.Price
	u := &kernel.UnitPrices{}
	var errs []error
	for _, f := range []struct {
		name string
		m    *adminv1.Money
		dst  *kernel.Money
	}{
		{"price.input", in.GetInput(), &p.Input},
		{"price.cached_input", in.GetCachedInput(), &p.CachedInput},
		{"price.cache_write", in.GetCacheWrite(), &p.CacheWrite},
		{"price.output", in.GetOutput(), &p.Output},
		{"price.reasoning", in.GetReasoning(), &p.Reasoning},
		{"price.per_second", in.GetPerSecond(), &u.Second},
		{"price.per_character", in.GetPerCharacter(), &u.Character},
		{"price.per_search_unit", in.GetPerSearchUnit(), &u.Search},
		{"price.image_input_tokens", in.GetImageInputTokens(), &u.ImageInputTokens},
		{"price.image_output_tokens", in.GetImageOutputTokens(), &u.ImageOutputTokens},
	} {
		v, err := moneyIn(f.name, f.m)
		*f.dst = v
		errs = append(errs, err)
	}
	for k, m := range in.GetPerImage() {
		v, err := moneyIn("price.per_image["+k+"]", m)
		errs = append(errs, err)
		if u.Image == nil {
			u.Image = map[string]kernel.Money{}
		}
		u.Image[strings.ToLower(k)] = v
	}
	p.Units = unitsOrNil(u)
	return p, errors.Join(errs...)
}

// unitsOrNil is u, or nil when it prices no unit.
func unitsOrNil(u *kernel.UnitPrices) *kernel.UnitPrices {
	if u == nil || len(u.Image) == 0 && u.Second == 0 && u.Character == 0 && u.Search == 0 &&
		u.ImageInputTokens == 0 && u.ImageOutputTokens == 0 {
		return nil
	}
	return u
}

// maskPrice sets the fields of dst that paths name from src.
func maskPrice(dst *kernel.Price, src kernel.Price, paths []string) {
	su := src.Units
	if su == nil {
		su = &kernel.UnitPrices{}
	}
	du := &kernel.UnitPrices{}
	if dst.Units != nil {
		*du = *dst.Units
	}
	for _, path := range paths {
		switch path {
		case "input":
			dst.Input = src.Input
		case "cached_input":
			dst.CachedInput = src.CachedInput
		case "cache_write":
			dst.CacheWrite = src.CacheWrite
		case "output":
			dst.Output = src.Output
		case "reasoning":
			dst.Reasoning = src.Reasoning
		case "per_image":
			du.Image = su.Image
		case "per_second":
			du.Second = su.Second
		case "per_character":
			du.Character = su.Character
		case "per_search_unit":
			du.Search = su.Search
		case "image_input_tokens":
			du.ImageInputTokens = su.ImageInputTokens
		case "image_output_tokens":
			du.ImageOutputTokens = su.ImageOutputTokens
		}
	}
	dst.Units = unitsOrNil(du)
}

// SetPrice creates or replaces the price of a model; with an update mask it
// sets only the prices the mask names, keeping the others of a stored price
// (a price per image added to a model priced per token keeps its token
// prices).
func (s *Server) SetPrice(ctx context.Context, req *adminv1.SetPriceRequest) (*adminv1.SetPriceResponse, error) {
	in, paths := req.GetPrice(), req.GetUpdateMask().GetPaths()
	src, err := priceIn(in)
	p := store.ModelPrice{ID: in.GetModel(), Price: src}
	if err == nil && len(paths) == 0 {
		_, err = store.Put(ctx, s.st, p.ID, &p, -1)
	} else if err == nil {
		p, err = upsertPrice(ctx, s.st, p.ID, func(stored *store.ModelPrice) { maskPrice(&stored.Price, src, paths) })
	}
	if err == nil {
		err = s.record(ctx, "price.set", store.KindPrice, p.ID, map[string]any{"fields": paths, "price": p.Price})
	}
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	return &adminv1.SetPriceResponse{Price: priceView(&p)}, nil
}

// upsertPrice changes the stored price of a model, or an empty one when
// there is none yet, with optimistic concurrency.
func upsertPrice(ctx context.Context, c store.Config, id string, change func(*store.ModelPrice)) (store.ModelPrice, error) {
	for range 8 {
		v, ver, err := store.Get[store.ModelPrice](ctx, c, id)
		if errors.Is(err, store.ErrNotFound) {
			v, ver, err = store.ModelPrice{ID: id}, 0, nil
		}
		if err != nil {
			return v, err
		}
		change(&v)
		_, err = store.Put(ctx, c, id, &v, ver)
		if !errors.Is(err, store.ErrConflict) {
			return v, err
		}
	}
	return store.ModelPrice{}, fmt.Errorf("%s %q: %w", store.KindPrice, id, ErrBusy)
}

// GetPrice returns the price of a model.
func (s *Server) GetPrice(ctx context.Context, req *adminv1.GetPriceRequest) (*adminv1.GetPriceResponse, error) {
	p, _, err := get[store.ModelPrice](ctx, s.st, req.GetModel())
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	return &adminv1.GetPriceResponse{Price: priceView(&p)}, nil
}

// ListPrices lists prices by model name.
func (s *Server) ListPrices(ctx context.Context, req *adminv1.ListPricesRequest) (*adminv1.ListPricesResponse, error) {
	ps, next, err := listPage[store.ModelPrice](ctx, s.st, req.GetPageToken(), req.GetPageSize(), nil)
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	out := &adminv1.ListPricesResponse{NextPageToken: next}
	for i := range ps {
		out.Prices = append(out.Prices, priceView(&ps[i]))
	}
	return out, nil
}

// DeletePrice deletes the price of a model.
func (s *Server) DeletePrice(ctx context.Context, req *adminv1.DeletePriceRequest) (*adminv1.DeletePriceResponse, error) {
	err := remove[store.ModelPrice](ctx, s.st, req.GetModel())
	if err == nil {
		err = s.record(ctx, "price.delete", store.KindPrice, req.GetModel(), nil)
	}
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	return &adminv1.DeletePriceResponse{}, nil
}

// LoadDefaultPrices stores the built-in prices; existing prices are kept
// unless overwrite is set.
func (s *Server) LoadDefaultPrices(ctx context.Context, req *adminv1.LoadDefaultPricesRequest) (*adminv1.LoadDefaultPricesResponse, error) {
	defaults, err := DefaultPrices()
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	out := &adminv1.LoadDefaultPricesResponse{}
	for i := range defaults {
		p := &defaults[i]
		ifVersion := int64(0)
		if req.GetOverwrite() {
			ifVersion = -1
		}
		_, err := store.Put(ctx, s.st, p.ID, p, ifVersion)
		if errors.Is(err, store.ErrConflict) {
			continue
		}
		if err != nil {
			return nil, s.toStatus(ctx, err)
		}
		out.Models = append(out.Models, p.ID)
	}
	if err := s.record(ctx, "price.defaults", store.KindPrice, "", map[string]any{"models": out.GetModels(), "overwrite": req.GetOverwrite()}); err != nil {
		return nil, s.toStatus(ctx, err)
	}
	return out, nil
}
