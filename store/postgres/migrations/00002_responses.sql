-- +goose Up
-- Stored responses of OpenAI's Responses API: visible to their key only,
-- removed after expires_at (the retention).
CREATE TABLE responses (
    key_id     text        NOT NULL,
    id         text        NOT NULL,
    response   bytea       NOT NULL,
    input      bytea       NOT NULL,
    created_at timestamptz NOT NULL,
    expires_at timestamptz NOT NULL,
    PRIMARY KEY (key_id, id)
);
CREATE INDEX responses_expiry ON responses (expires_at);

-- +goose Down
DROP TABLE responses;
