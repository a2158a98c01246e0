-- +goose Up
-- Console sessions: the hash of the session token (never the token), the
-- admin credential it acts as, removed after expires_at.
CREATE TABLE sessions (
    hash       text        NOT NULL PRIMARY KEY,
    admin_id   text        NOT NULL,
    created_at timestamptz NOT NULL,
    expires_at timestamptz NOT NULL
);
CREATE INDEX sessions_expiry ON sessions (expires_at);

-- +goose Down
DROP TABLE sessions;
