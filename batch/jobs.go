package batch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/store"
)

// The batch endpoints of both APIs: creation admits the batch's worst case
// at the batch price and records it pending (and the key's); retrieve,
// list, cancel, results and delete serve the key's own batches only.

// maxCreateBody bounds a batch create body that is not a file (Anthropic's
// requests inline; OpenAI's create is small).
const maxCreateBody = 256 << 20

func (s *Service) createOpenAI(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 1<<20))
	var req struct {
		InputFileID string `json:"input_file_id"`
		Endpoint    string `json:"endpoint"`
	}
	if err == nil {
		err = json.Unmarshal(body, &req)
	}
	if err != nil {
		fail(w, APIOpenAI, &apiError{status: http.StatusBadRequest, code: "invalid_json", msg: "The body is not a JSON object: " + err.Error()})
		return
	}
	f, e := s.ownedFile(r, req.InputFileID, "input_file_id")
	switch {
	case e != nil:
	case f.Estimate == nil:
		e = &apiError{status: http.StatusBadRequest, param: "input_file_id", msg: "The file " + f.ID + " is not a batch input uploaded through the gateway."}
	case req.Endpoint != f.Endpoint:
		e = &apiError{status: http.StatusBadRequest, param: "endpoint", msg: fmt.Sprintf("endpoint must be %s, the url of the input file's lines.", f.Endpoint)}
	}
	if e != nil {
		fail(w, APIOpenAI, e)
		return
	}
	route, err := s.cat.Route(r.Context(), callerOf(r), f.Model, APIOpenAI, f.Deployment)
	if err != nil {
		fail(w, APIOpenAI, routeError(err, f.Model))
		return
	}
	s.create(w, r, route, *f.Estimate, APIOpenAI, body)
}

func (s *Service) createAnthropic(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxCreateBody))
	if err != nil {
		fail(w, APIAnthropic, &apiError{status: http.StatusRequestEntityTooLarge, msg: "The batch is too large."})
		return
	}
	est, err := EstimateAnthropic(body)
	if err != nil {
		fail(w, APIAnthropic, inputError(err, "requests"))
		return
	}
	route, err := s.cat.Route(r.Context(), callerOf(r), est.Model, APIAnthropic, "")
	if err != nil {
		fail(w, APIAnthropic, routeError(err, est.Model))
		return
	}
	if body, err = rewriteAnthropicModels(body, route.ProviderModel); err != nil {
		fail(w, APIAnthropic, inputError(err, "requests"))
		return
	}
	s.create(w, r, route, est, APIAnthropic, body)
}

// rewriteAnthropicModels sets every request's params.model to the
// deployment's model.
func rewriteAnthropicModels(body []byte, model string) ([]byte, error) {
	var req map[string]json.RawMessage
	var requests []map[string]json.RawMessage
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInput, err)
	}
	if err := json.Unmarshal(req["requests"], &requests); err != nil {
		return nil, fmt.Errorf("%w: requests: %w", ErrInput, err)
	}
	m, _ := json.Marshal(model)
	for i := range requests {
		var params map[string]json.RawMessage
		if err := json.Unmarshal(requests[i]["params"], &params); err != nil {
			return nil, fmt.Errorf("%w: requests.%d.params: %w", ErrInput, i, err)
		}
		params["model"] = m
		requests[i]["params"], _ = json.Marshal(params)
	}
	req["requests"], _ = json.Marshal(requests)
	return json.Marshal(req)
}

// create admits the batch's worst case at the batch price on the key's
// whole hierarchy, creates it at the provider and records it pending and
// the key's; a refusal, or a provider's, releases the reservation.
func (s *Service) create(w http.ResponseWriter, r *http.Request, route *Route, est Estimate, api API, body []byte) {
	ctx, c := r.Context(), callerOf(r)
	resID := newID("batch-reservation-")
	bound := route.DefaultMaxTokens
	if bound <= 0 {
		bound = kernel.DefaultOutputBound
	}
	areq := est.AdmitRequest(resID, c.Scopes, route.Price, bound, Lease)
	areq.Model = route.Model // the group, as the processor admits (the key's model list names groups)
	d, err := s.acct.Admit(ctx, areq)
	if err != nil {
		s.log.WarnContext(ctx, "batch: admission", "error", err)
		fail(w, api, &apiError{status: http.StatusServiceUnavailable, code: "service_unavailable", msg: "The gateway's limits are unavailable right now."})
		return
	}
	release := func() {
		if err := s.acct.SettleBatch(context.WithoutCancel(ctx), resID, nil); err != nil {
			s.log.ErrorContext(ctx, "batch: release", "reservation", resID, "error", err)
		}
	}
	if d.Admitted && d.Clamped { // a batch's lines cannot be shortened: all or nothing
		release()
		d = kernel.Decision{Reason: kernel.ReasonBudgetExceeded, Scope: c.Scopes[0].Ref}
	}
	if !d.Admitted {
		fail(w, api, decisionError(d, est))
		return
	}
	path := "/batches"
	if api == APIAnthropic {
		path = "/messages/batches"
	}
	resp, err := s.call(ctx, route.Endpoint, api, http.MethodPost, path, strings.NewReader(string(body)), "application/json")
	if err != nil {
		release()
		s.unreachable(r, w, err)
		return
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		release()
		upstreamError(w, api, resp, route.Endpoint.APIKey)
		return
	}
	raw, err := readOK(resp)
	var obj struct {
		ID string `json:"id"`
	}
	if err == nil {
		err = json.Unmarshal(raw, &obj)
	}
	if err != nil || obj.ID == "" {
		release()
		s.internal(r, w, "read the provider's batch", noID(err))
		return
	}
	now := s.now().UTC()
	owner := &BatchRecord{ID: obj.ID, API: api, KeyID: c.KeyID, Provider: route.Provider, Deployment: route.Deployment, Model: route.Model, CreatedAt: now}
	p := &Pending{
		ID: obj.ID, API: api, Provider: route.Provider, Deployment: route.Deployment, Model: route.Model,
		KeyID: c.KeyID, UserID: c.UserID, TeamID: c.TeamID, OrgID: c.OrgID,
		ReservationID: resID, Reserved: d.Reserved, Price: Price(route.Price), Lines: est.Lines, CreatedAt: now,
	}
	if err := errors.Join(s.st.AddOwner(ctx, owner), s.st.Add(ctx, p)); err != nil {
		// Unrecorded, the batch would run unsettled: cancel it.
		s.drop(r, route.Endpoint, api, path+"/"+obj.ID+"/cancel", http.MethodPost)
		_ = s.st.RemoveOwner(ctx, obj.ID)
		release()
		s.internal(r, w, "record the batch", err)
		return
	}
	s.log.InfoContext(ctx, "batch: created", "batch", obj.ID, "key", c.KeyID, "lines", est.Lines, "reserved", d.Reserved)
	writeJSON(w, http.StatusOK, s.presentWith(r, owner, route.Endpoint, raw))
}

// decisionError maps a refused admission as the processor does: a budget
// is a 400 budget_exceeded (no retry refills it), rate limits 429.
func decisionError(d kernel.Decision, est Estimate) *apiError {
	switch d.Reason {
	case kernel.ReasonBudgetExceeded:
		return &apiError{
			status: http.StatusBadRequest, typ: "budget_exceeded", code: "budget_exceeded",
			msg: fmt.Sprintf("Budget exceeded for the %s: the batch's worst case (%d requests at the batch price) does not fit.", d.Scope.Noun(), est.Lines),
		}
	case kernel.ReasonUnpriced:
		return &apiError{status: http.StatusBadRequest, code: "model_price_missing", param: "model", msg: fmt.Sprintf("The model `%s` has no price and a strict budget applies.", est.Model)}
	case kernel.ReasonModelNotAllowed:
		return &apiError{status: http.StatusForbidden, code: "model_not_allowed", param: "model", msg: fmt.Sprintf("The %s is not allowed to use the model `%s`.", d.Scope.Noun(), est.Model)}
	case kernel.ReasonKeyExpired:
		return &apiError{status: http.StatusUnauthorized, code: "invalid_api_key", msg: "Invalid API key: it has expired."}
	case kernel.ReasonRequestLimit, kernel.ReasonTokenLimit, kernel.ReasonParallelLimit:
		return &apiError{status: http.StatusTooManyRequests, typ: "requests", code: "rate_limit_exceeded", msg: fmt.Sprintf("Rate limit reached for the %s.", d.Scope.Noun())}
	}
	return &apiError{status: http.StatusInternalServerError, code: "admission_error", msg: "The gateway could not admit the batch."}
}

// ownedBatch is the key's batch of api, or the 404 another key's or an
// unknown id gets.
func (s *Service) ownedBatch(r *http.Request, api API) (BatchRecord, *apiError) {
	id := r.PathValue("id")
	b, err := s.st.Owner(r.Context(), id)
	switch {
	case errors.Is(err, store.ErrNotFound) || (err == nil && (b.KeyID != callerOf(r).KeyID || b.API != api)):
		msg := "No batch found with id '" + id + "'."
		if api == APIAnthropic {
			msg = "No message batch found with id '" + id + "'."
		}
		return b, &apiError{status: http.StatusNotFound, param: "batch_id", msg: msg}
	case err != nil:
		return b, &apiError{status: http.StatusServiceUnavailable, msg: "The gateway's store is unavailable."}
	}
	return b, nil
}

// batchPath is a batch's path under its provider's base URL.
func batchPath(api API, id string) string {
	if api == APIAnthropic {
		return "/messages/batches/" + id
	}
	return "/batches/" + id
}

// forward serves retrieve, cancel and results of the key's batch from its
// provider.
func (s *Service) forward(api API, method, suffix string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		b, e := s.ownedBatch(r, api)
		if e != nil {
			fail(w, api, e)
			return
		}
		ep, err := s.cat.Endpoint(r.Context(), b.Provider)
		if err != nil {
			s.internal(r, w, "find the batch's provider", err)
			return
		}
		resp, err := s.call(r.Context(), ep, api, method, batchPath(api, b.ID)+suffix, nil, "")
		if err != nil {
			s.unreachable(r, w, err)
			return
		}
		defer resp.Body.Close()
		if suffix == "/results" { // JSONL, streamed
			relay(w, api, resp, ep.APIKey)
			return
		}
		if resp.StatusCode/100 != 2 {
			upstreamError(w, api, resp, ep.APIKey)
			return
		}
		raw, err := readOK(resp)
		if err != nil {
			s.unreachable(r, w, err)
			return
		}
		writeJSON(w, http.StatusOK, s.presentWith(r, &b, ep, raw))
	}
}

// deleteAnthropic deletes the key's ended batch once the gateway settled it
// (its results are what the poller reads).
func (s *Service) deleteAnthropic(w http.ResponseWriter, r *http.Request) {
	b, e := s.ownedBatch(r, APIAnthropic)
	if e == nil {
		if _, err := s.st.Get(r.Context(), b.ID); err == nil {
			e = &apiError{status: http.StatusConflict, msg: "The gateway has not settled the batch " + b.ID + " yet; delete it once it is settled."}
		}
	}
	if e != nil {
		fail(w, APIAnthropic, e)
		return
	}
	if s.relayCall(w, r, b.Provider, "batch", APIAnthropic, http.MethodDelete, batchPath(APIAnthropic, b.ID)) {
		if err := s.st.RemoveOwner(r.Context(), b.ID); err != nil {
			s.log.ErrorContext(r.Context(), "batch: forget a deleted batch", "batch", b.ID, "error", err)
		}
	}
}

// list serves the key's batches of api, newest first, each as its provider
// reports it now (OpenAI's after/limit, Anthropic's after_id/before_id/limit).
func (s *Service) list(api API) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		recs, err := s.st.Owned(r.Context(), callerOf(r).KeyID, api)
		if err != nil {
			s.internal(r, w, "list the batches", err)
			return
		}
		slices.SortStableFunc(recs, func(a, b BatchRecord) int {
			if c := b.CreatedAt.Compare(a.CreatedAt); c != 0 {
				return c
			}
			return strings.Compare(b.ID, a.ID)
		})
		q := r.URL.Query()
		after, before := q.Get("after"), q.Get("before_id")
		if api == APIAnthropic {
			after = q.Get("after_id")
		}
		if i := slices.IndexFunc(recs, func(b BatchRecord) bool { return b.ID == after }); after != "" && i >= 0 {
			recs = recs[i+1:]
		}
		if i := slices.IndexFunc(recs, func(b BatchRecord) bool { return b.ID == before }); before != "" && i >= 0 {
			recs = recs[:i]
		}
		limit := 20
		if n, err := strconv.Atoi(q.Get("limit")); err == nil && n > 0 {
			limit = min(n, 1000)
		}
		more := len(recs) > limit
		recs = recs[:min(len(recs), limit)]
		data := make([]json.RawMessage, 0, len(recs))
		for i := range recs {
			b := &recs[i]
			ep, err := s.cat.Endpoint(r.Context(), b.Provider)
			if err != nil {
				s.internal(r, w, "find a batch's provider", err)
				return
			}
			resp, err := s.call(r.Context(), ep, api, http.MethodGet, batchPath(api, b.ID), nil, "")
			if err != nil {
				s.unreachable(r, w, err)
				return
			}
			raw, err := readOK(resp)
			_ = resp.Body.Close()
			switch {
			case resp.StatusCode == http.StatusNotFound:
				continue // gone at the provider
			case resp.StatusCode/100 != 2 || err != nil:
				s.unreachable(r, w, fmt.Errorf("%w: GET %s: %s", ErrProvider, batchPath(api, b.ID), resp.Status))
				return
			}
			data = append(data, s.presentWith(r, b, ep, raw))
		}
		page := map[string]any{"data": data, "has_more": more, "first_id": nil, "last_id": nil}
		if api == APIOpenAI {
			page["object"] = "list"
		}
		if len(recs) > 0 {
			page["first_id"], page["last_id"] = recs[0].ID, recs[len(recs)-1].ID
		}
		writeJSON(w, http.StatusOK, page)
	}
}

// presentWith is a batch object as the client gets it: an OpenAI batch's
// output and error files become the key's (the client reads them next); an
// Anthropic batch's results_url points at the gateway, not the provider.
func (s *Service) presentWith(r *http.Request, b *BatchRecord, ep Endpoint, raw []byte) []byte {
	var obj map[string]json.RawMessage
	if json.Unmarshal(raw, &obj) != nil {
		return raw
	}
	if b.API == APIAnthropic {
		var u *string
		if json.Unmarshal(obj["results_url"], &u) != nil || u == nil {
			return raw
		}
		obj["results_url"], _ = json.Marshal(baseURL(r) + "/v1/messages/batches/" + b.ID + "/results")
		out, err := json.Marshal(obj)
		if err != nil {
			return raw
		}
		return out
	}
	for _, field := range []string{"output_file_id", "error_file_id"} {
		var id *string
		if json.Unmarshal(obj[field], &id) == nil && id != nil && *id != "" {
			s.adopt(r, b, ep, *id)
		}
	}
	return raw
}

// adopt records a batch's output or error file as its key's (once), with
// its File object for the key's file list.
func (s *Service) adopt(r *http.Request, b *BatchRecord, ep Endpoint, id string) {
	ctx := r.Context()
	if _, err := s.st.File(ctx, id); !errors.Is(err, store.ErrNotFound) {
		return
	}
	var obj json.RawMessage
	if resp, err := s.call(ctx, ep, APIOpenAI, http.MethodGet, "/files/"+id, nil, ""); err == nil {
		if raw, err := readOK(resp); err == nil && resp.StatusCode/100 == 2 {
			obj = raw
		}
		_ = resp.Body.Close()
	}
	err := s.st.AddFile(ctx, &FileRecord{ID: id, KeyID: b.KeyID, Provider: b.Provider, BatchID: b.ID, Object: obj, CreatedAt: s.now().UTC()})
	if err != nil && !errors.Is(err, store.ErrConflict) {
		s.log.ErrorContext(ctx, "batch: record an output file", "batch", b.ID, "file", id, "error", err)
	}
}

// baseURL is the gateway's URL as the client reached it.
func baseURL(r *http.Request) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	if p := r.Header.Get("X-Forwarded-Proto"); p == "http" || p == "https" {
		scheme = p
	}
	return scheme + "://" + r.Host
}
