-- +goose Up
-- A row served for a model without a price (estimate budget, or no budget):
-- its cost is not a $0 price but the absence of one (issue 39).
ALTER TABLE ledger ADD COLUMN unpriced boolean NOT NULL DEFAULT false;

-- +goose Down
ALTER TABLE ledger DROP COLUMN unpriced;
