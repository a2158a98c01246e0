-- +goose Up
-- The response cache's part of the ledger (issue 33): what the cache did for
-- a request (1 skip, 2 miss, 3 hit, 4 semantic hit; NULL: no cache) and, on a
-- hit, what the reply cost when it was stored (NULL: 0).
ALTER TABLE ledger ADD COLUMN cache smallint;
ALTER TABLE ledger ADD COLUMN cache_saved bigint;
-- The hourly totals count hits, misses and the savings beside the spend.
ALTER TABLE spend_hourly ADD COLUMN cache_hits bigint NOT NULL DEFAULT 0;
ALTER TABLE spend_hourly ADD COLUMN cache_misses bigint NOT NULL DEFAULT 0;
ALTER TABLE spend_hourly ADD COLUMN cache_saved bigint NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE spend_hourly DROP COLUMN cache_saved;
ALTER TABLE spend_hourly DROP COLUMN cache_misses;
ALTER TABLE spend_hourly DROP COLUMN cache_hits;
ALTER TABLE ledger DROP COLUMN cache_saved;
ALTER TABLE ledger DROP COLUMN cache;
