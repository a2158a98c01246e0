-- +goose Up
-- A background response's settlement, deferred until a poll finds it
-- finished (issue 37): the ledger entry as the gateway encodes it; NULL when
-- there is nothing (left) to settle. Claimed (set to NULL) exactly once.
ALTER TABLE response_owners ADD COLUMN pending BLOB;

-- +goose Down
ALTER TABLE response_owners DROP COLUMN pending;
