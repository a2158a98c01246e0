-- +goose Up
-- The run a stored response and a native response id belong to (issue 36):
-- the run name (x-tollgate-run-id, a conversation, or the id of the
-- chain's first response), so that a request continuing it with
-- previous_response_id is in the same run on any replica and after a
-- restart. '' for responses stored before (a continuation of one starts
-- its run at it); a constant default rewrites no row.
ALTER TABLE responses ADD COLUMN run TEXT NOT NULL DEFAULT '';
ALTER TABLE response_owners ADD COLUMN run TEXT NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE response_owners DROP COLUMN run;
ALTER TABLE responses DROP COLUMN run;
