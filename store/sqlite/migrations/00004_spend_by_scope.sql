-- +goose Up
-- The spend of every scope of a kind over a range of hours (SeriesByScope:
-- the console's spend page) is one range scan.
CREATE INDEX spend_hourly_kind_hour ON spend_hourly (scope_kind, hour);

-- +goose Down
DROP INDEX spend_hourly_kind_hour;
