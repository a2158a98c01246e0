-- +goose Up
-- Configuration: versioned JSON documents and one store-wide revision counter.
-- Every change (put or delete) bumps the revision in the same transaction, so
-- the revision is gapless and commit-ordered.
CREATE TABLE config_revision (
    id    boolean PRIMARY KEY DEFAULT true CHECK (id),
    value bigint  NOT NULL
);
INSERT INTO config_revision (id, value) VALUES (true, 0);

CREATE TABLE config_objects (
    kind       text        NOT NULL,
    id         text        NOT NULL,
    doc        bytea       NOT NULL,
    version    bigint      NOT NULL,
    updated_at timestamptz NOT NULL,
    PRIMARY KEY (kind, id)
);

-- Ledger: one row per settled request. Times are Unix nanoseconds (exact round trip).
CREATE TABLE ledger (
    request_id   text     PRIMARY KEY,
    key_id       text     NOT NULL,
    user_id      text     NOT NULL DEFAULT '',
    team_id      text     NOT NULL DEFAULT '',
    org_id       text     NOT NULL DEFAULT '',
    customer_id  text     NOT NULL DEFAULT '',
    model        text     NOT NULL,
    deployment   text     NOT NULL,
    input        bigint   NOT NULL,
    cached_input bigint   NOT NULL,
    cache_write  bigint   NOT NULL,
    output       bigint   NOT NULL,
    reasoning    bigint   NOT NULL,
    cost         bigint   NOT NULL,
    status       smallint NOT NULL,
    http_status  integer  NOT NULL,
    stream       boolean  NOT NULL,
    started_ns   bigint   NOT NULL,
    ended_ns     bigint   NOT NULL
);
CREATE INDEX ledger_ended ON ledger (ended_ns, request_id);
CREATE INDEX ledger_key ON ledger (key_id, ended_ns, request_id);
-- Only the key has its own index: every index costs the ledger's write rate.
-- Entries of a user, team, org or customer are found through ledger_ended;
-- their totals come from spend_hourly.

-- Spend per scope per UTC hour (hour = Unix seconds of the hour start), updated in
-- the ledger's transaction for the rows actually inserted.
CREATE TABLE spend_hourly (
    scope_kind smallint NOT NULL,
    scope_id   text     NOT NULL,
    hour       bigint   NOT NULL,
    cost       bigint   NOT NULL,
    requests   bigint   NOT NULL,
    tokens     bigint   NOT NULL,
    PRIMARY KEY (scope_kind, scope_id, hour)
);

CREATE TABLE audit (
    id     bigserial   PRIMARY KEY,
    at     timestamptz NOT NULL,
    actor  text        NOT NULL,
    action text        NOT NULL,
    kind   text        NOT NULL,
    target text        NOT NULL,
    detail text        NOT NULL
);

-- +goose Down
DROP TABLE audit;
DROP TABLE spend_hourly;
DROP TABLE ledger;
DROP TABLE config_objects;
DROP TABLE config_revision;
