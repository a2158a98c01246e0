-- +goose Up
-- The model name the client asked for, when it is not the group's own (an
-- alias, or a name a pattern matched; issue 38). NULL: the group's name.
ALTER TABLE ledger ADD COLUMN requested_model text;

-- +goose Down
ALTER TABLE ledger DROP COLUMN requested_model;
