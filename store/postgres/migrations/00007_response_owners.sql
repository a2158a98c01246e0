-- +goose Up
-- Native Responses API ids (issue 37): which key owns a response or
-- conversation a native upstream made through the gateway, and which
-- deployment holds it. Written with the ledger's group commit.
CREATE TABLE response_owners (
    id         text        NOT NULL PRIMARY KEY,
    key_id     text        NOT NULL,
    deployment text        NOT NULL,
    model      text        NOT NULL,
    store      boolean     NOT NULL,
    background boolean     NOT NULL,
    created_at timestamptz NOT NULL,
    expires_at timestamptz NOT NULL
);
CREATE INDEX response_owners_expiry ON response_owners (expires_at);

-- +goose Down
DROP TABLE response_owners;
