-- +goose Up
-- The request's tags (x-tollgate-tags, metadata.tollgate_tags, the key's
-- default tags; issue 36): "name=value" comma-separated, sorted by name.
-- NULL: no tags. Each tag's spend is also in spend_hourly under the tag
-- scope (kernel.ScopeTag), which reports group by and seeds tag budgets from.
ALTER TABLE ledger ADD COLUMN tags TEXT;

-- +goose Down
ALTER TABLE ledger DROP COLUMN tags;
