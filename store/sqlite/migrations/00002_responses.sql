-- +goose Up
-- Stored responses of OpenAI's Responses API: visible to their key only,
-- removed after expires_ns (the retention).
CREATE TABLE responses (
    key_id     TEXT    NOT NULL,
    id         TEXT    NOT NULL,
    response   BLOB    NOT NULL,
    input      BLOB    NOT NULL,
    created_ns INTEGER NOT NULL,
    expires_ns INTEGER NOT NULL,
    PRIMARY KEY (key_id, id)
) WITHOUT ROWID;
CREATE INDEX responses_expiry ON responses (expires_ns);

-- +goose Down
DROP TABLE responses;
