-- +goose Up
-- Console sessions: the hash of the session token (never the token), the
-- admin credential it acts as, removed after expires_ns.
CREATE TABLE sessions (
    hash       TEXT    NOT NULL PRIMARY KEY,
    admin_id   TEXT    NOT NULL,
    created_ns INTEGER NOT NULL,
    expires_ns INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX sessions_expiry ON sessions (expires_ns);

-- +goose Down
DROP TABLE sessions;
