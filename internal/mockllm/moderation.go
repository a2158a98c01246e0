package mockllm

import (
	"encoding/json"
	"net/http"
	"strings"
)

// moderationCategories are the categories of OpenAI's omni-moderation
// models, all reported, in this order, in every result.
var moderationCategories = []string{
	"harassment", "harassment/threatening", "hate", "hate/threatening", "illicit", "illicit/violent",
	"self-harm", "self-harm/instructions", "self-harm/intent", "sexual", "sexual/minors",
	"violence", "violence/graphic",
}

// moderations serves POST /v1/moderations in OpenAI's shape: one result per
// input (a string or an array of strings; text parts {"type":"text","text"}
// are read, image parts are ignored); an input is flagged, under "violence"
// with score 0.99, when it contains one of Config.FlaggedWords (ASCII
// case-insensitive), and not flagged, every score 0.0001, otherwise.
// model defaults to omni-moderation-latest.
func (s *Server) moderations(c *call) {
	var req struct {
		Model string          `json:"model"`
		Input json.RawMessage `json:"input"`
	}
	if !c.decode(&req) {
		return
	}
	inputs, ok := moderationInputs(req.Input)
	if !ok {
		writeError(c.w, c.flavor, http.StatusBadRequest, "'input' must be a string, an array of strings or of content parts")
		return
	}
	if req.Model == "" {
		req.Model = "omni-moderation-latest"
	}
	type result struct {
		Flagged        bool                `json:"flagged"`
		Categories     map[string]bool     `json:"categories"`
		CategoryScores map[string]float64  `json:"category_scores"`
		AppliedTypes   map[string][]string `json:"category_applied_input_types"`
	}
	out := struct {
		ID      string   `json:"id"`
		Model   string   `json:"model"`
		Results []result `json:"results"`
	}{ID: "modr-mock", Model: req.Model}
	for _, in := range inputs {
		r := result{Categories: map[string]bool{}, CategoryScores: map[string]float64{}, AppliedTypes: map[string][]string{}}
		lower := strings.ToLower(in)
		for _, w := range s.cfg.FlaggedWords {
			if w != "" && strings.Contains(lower, strings.ToLower(w)) {
				r.Flagged = true
			}
		}
		for _, cat := range moderationCategories {
			r.Categories[cat] = r.Flagged && cat == "violence"
			r.CategoryScores[cat] = 0.0001
			if r.Categories[cat] {
				r.CategoryScores[cat] = 0.99
			}
			r.AppliedTypes[cat] = []string{"text"}
		}
		out.Results = append(out.Results, r)
	}
	c.w.Header().Set("content-type", "application/json")
	_ = json.NewEncoder(c.w).Encode(out)
}

func moderationInputs(raw json.RawMessage) ([]string, bool) {
	var one string
	if json.Unmarshal(raw, &one) == nil {
		return []string{one}, true
	}
	var many []string
	if json.Unmarshal(raw, &many) == nil && len(many) > 0 {
		return many, true
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &parts) != nil || len(parts) == 0 {
		return nil, false
	}
	var texts []string
	for _, p := range parts {
		if p.Type == "text" {
			texts = append(texts, p.Text)
		}
	}
	return texts, true
}
