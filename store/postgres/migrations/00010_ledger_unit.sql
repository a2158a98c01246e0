-- +goose Up
-- What a row counts and how many (issue 34): images, seconds, characters,
-- searches or calls, for the routes charged per unit. NULL: tokens (the
-- usage columns), the unit of every other row.
ALTER TABLE ledger ADD COLUMN unit text;
ALTER TABLE ledger ADD COLUMN quantity bigint;

-- +goose Down
ALTER TABLE ledger DROP COLUMN quantity;
ALTER TABLE ledger DROP COLUMN unit;
