-- +goose Up
-- The background responses whose settlement is pending (issue 37), read by
-- the poller every interval: a partial index, as few rows as are pending.
CREATE INDEX response_owners_pending ON response_owners (created_at, id) WHERE pending IS NOT NULL;

-- +goose Down
DROP INDEX response_owners_pending;
