package responsesapi

import (
	"context"

	"github.com/tollgate-ai/tollgate/translate"
	"github.com/tollgate-ai/tollgate/translate/responses"
)

// Runs of the Responses API (issue 36). A request that names no run with
// x-tollgate-run-id is in the run of its conversation, else in the run of
// the response its previous_response_id continues: the whole chain is one
// run, named by the run its first request carried, or by the id of its
// first response. Each response keeps its run with it (the stored
// response's, or the native id's owner's), so a continuation finds it on
// any replica and after a restart. The chain's first response is admitted
// before its id exists, so against no run; its ledger row names the run
// (StartedRun), which a later admission of the run seeds from.

// Run is the run of a request of the API api that names none: its
// conversation, else the run of the response it continues; "" when it
// has neither (or the API has no runs of its own).
func (st *State) Run(api translate.API) string {
	if api != translate.APIResponses {
		return ""
	}
	if st.conv != "" {
		return st.conv
	}
	return st.prevRun
}

// SetRun tells the state the run the request was admitted in (the header's,
// or Run's), which the response it makes is kept with.
func (st *State) SetRun(run string) { st.run = run }

// StartedRun is the id of the response the request made when it starts a
// run of its own (it named none): its ledger row is the run's first. ""
// otherwise, or before the response is kept.
func (st *State) StartedRun() string { return st.started }

// continues records that the request continues response id, kept in run
// ("" for a response kept before runs were: the chain's run starts at it).
func (st *State) continues(id, run string) {
	if run == "" {
		run = id
	}
	st.prevRun = run
}

// runOf is the run to keep response id with: the request's, else a run of
// its own, named by id.
func (st *State) runOf(id string) string {
	if st.run != "" {
		return st.run
	}
	st.started = id
	return id
}

// runStore keeps every response it stores with its request's run.
type runStore struct {
	responses.Store
	st *State
}

func (r runStore) PutResponse(ctx context.Context, sr *responses.Stored) error {
	sr.Run = r.st.runOf(sr.ID)
	return r.Store.PutResponse(ctx, sr)
}
