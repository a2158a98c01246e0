-- +goose Up
-- The run a request belonged to (x-tollgate-run-id): the run scope's id,
-- "<owner scope>/<run id>" (kernel.RunScopeID). NULL for requests of no run;
-- nullable so that adding it rewrites no row. Its spend is also in
-- spend_hourly under the run scope, which seeds a run's budget.
ALTER TABLE ledger ADD COLUMN run_id TEXT;
CREATE INDEX ledger_run ON ledger (run_id, ended_ns) WHERE run_id IS NOT NULL;

-- +goose Down
DROP INDEX ledger_run;
ALTER TABLE ledger DROP COLUMN run_id;
