package extproc

import (
	"fmt"
	"net/http"
	"slices"

	"github.com/tollgate-ai/tollgate/translate"

	"github.com/tollgate-ai/tollgate/kernel"
)

// hdrRunID names the run (an agent's loop, a session) a request belongs to.
const hdrRunID = "x-tollgate-run-id"

// maxRunID bounds a run id's length.
const maxRunID = 128

// withRun returns scopes with the run scope of the request's run id right
// after the key (kernel.WithRun: its limits come from the first of the key
// and the team that has a run policy; without a policy the run is only
// counted, for attribution). scopes is returned as is when the request
// names no run; a new slice otherwise (the principal's is shared).
func (s *stream) withRun(scopes []kernel.Scope) ([]kernel.Scope, *translate.APIError) {
	run := s.runHdr
	if run == "" && s.ep != nil {
		run = s.own.Run(s.ep.API) // responsesapi: a conversation, a previous_response_id chain
	}
	if run == "" || len(scopes) == 0 {
		return scopes, nil
	}
	if len(run) > maxRunID || !printable(run) {
		return nil, &translate.APIError{
			Status: http.StatusBadRequest, Type: translate.TypeInvalidRequest, Code: "invalid_run_id",
			Message: fmt.Sprintf("The %s header must be 1 to %d printable ASCII characters.", hdrRunID, maxRunID),
		}
	}
	out, id := kernel.WithRun(scopes, run)
	s.runID = id
	s.own.SetRun(run)
	return out, nil
}

// startedRun is the run scope's id of a request that started a run of its
// own, its Responses chain's (responsesapi.State.StartedRun): its ledger
// row is the run's first. "" otherwise.
func (s *stream) startedRun() string {
	id := s.own.StartedRun()
	if id == "" || s.principal == nil {
		return ""
	}
	_, scope := kernel.WithRun(s.principal.Scopes, id)
	return scope
}

func printable(v string) bool {
	return !slices.ContainsFunc([]byte(v), func(c byte) bool { return c < 0x21 || c > 0x7e })
}
