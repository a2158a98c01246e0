-- +goose Up
-- Native Responses API ids (issue 37): which key owns a response or
-- conversation a native upstream made through the gateway, and which
-- deployment holds it. Written with the ledger's group commit.
CREATE TABLE response_owners (
    id         TEXT    NOT NULL PRIMARY KEY,
    key_id     TEXT    NOT NULL,
    deployment TEXT    NOT NULL,
    model      TEXT    NOT NULL,
    store      INTEGER NOT NULL,
    background INTEGER NOT NULL,
    created_ns INTEGER NOT NULL,
    expires_ns INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX response_owners_expiry ON response_owners (expires_ns);

-- +goose Down
DROP TABLE response_owners;
