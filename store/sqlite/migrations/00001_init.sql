-- +goose Up
-- The store-wide revision: every config change (put or delete) bumps it in the
-- same transaction.
CREATE TABLE meta (
    name  TEXT    PRIMARY KEY,
    value INTEGER NOT NULL
) WITHOUT ROWID;
INSERT INTO meta (name, value) VALUES ('revision', 0);

-- Configuration objects: JSON documents by kind and id.
CREATE TABLE objects (
    kind       TEXT    NOT NULL,
    id         TEXT    NOT NULL,
    doc        BLOB    NOT NULL,
    version    INTEGER NOT NULL,
    updated_ns INTEGER NOT NULL,
    PRIMARY KEY (kind, id)
) WITHOUT ROWID;

-- The ledger: one row per settled request. Times are Unix nanoseconds.
-- The ledger and the totals have no NOT NULL constraints on purpose: a
-- multi-row statement that may abort half-way needs a statement journal, which
-- costs more than the rows themselves; the writer always sets every column.
CREATE TABLE ledger (
    request_id   TEXT    PRIMARY KEY,
    key_id       TEXT   ,
    user_id      TEXT   ,
    team_id      TEXT   ,
    org_id       TEXT   ,
    customer_id  TEXT   ,
    model        TEXT   ,
    deployment   TEXT   ,
    input        INTEGER,
    cached_input INTEGER,
    cache_write  INTEGER,
    output       INTEGER,
    reasoning    INTEGER,
    cost         INTEGER,
    status       INTEGER,
    http_status  INTEGER,
    stream       INTEGER,
    started_ns   INTEGER,
    ended_ns     INTEGER
);
-- Entries are listed by time, or by key and time. Entries of a user, team, org
-- or customer scan the time index (bounded by the filter's Since/Until): an
-- index per scope column costs the write path a third of its throughput
-- (BenchmarkSettleSweep), and those are admin queries, not the request path.
CREATE INDEX ledger_ended ON ledger (ended_ns, request_id);
CREATE INDEX ledger_key ON ledger (key_id, ended_ns, request_id);

-- Spend per scope per UTC hour (hour: Unix seconds of its start), updated in
-- the ledger's transaction for the rows actually inserted.
CREATE TABLE spend_hourly (
    scope_kind INTEGER,
    scope_id   TEXT   ,
    hour       INTEGER,
    cost       INTEGER,
    requests   INTEGER,
    tokens     INTEGER,
    PRIMARY KEY (scope_kind, scope_id, hour)
);

-- The admin change log.
CREATE TABLE audit (
    id     INTEGER PRIMARY KEY AUTOINCREMENT,
    at_ns  INTEGER NOT NULL,
    actor  TEXT    NOT NULL,
    action TEXT    NOT NULL,
    kind   TEXT    NOT NULL,
    target TEXT    NOT NULL,
    detail TEXT    NOT NULL
);

-- +goose Down
DROP TABLE audit;
DROP TABLE spend_hourly;
DROP TABLE ledger;
DROP TABLE objects;
DROP TABLE meta;
