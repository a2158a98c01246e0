-- +goose Up
-- Alerts fired (issue 36): the primary key is the alert's id, the same on
-- every replica for the same condition, so inserting it is the claim that
-- makes an alert fire at most once across replicas; its deliveries to each
-- sink (attempts, outcome) for the admin API and the console.
CREATE TABLE alerts (
    id         TEXT    PRIMARY KEY,
    kind       TEXT    NOT NULL,
    scope_kind TEXT    NOT NULL,
    scope_id   TEXT    NOT NULL,
    message    TEXT    NOT NULL,
    detail     TEXT    NOT NULL,
    fired_ns   INTEGER NOT NULL
);
CREATE INDEX alerts_fired ON alerts (fired_ns);

CREATE TABLE alert_deliveries (
    alert_id TEXT    NOT NULL,
    sink     TEXT    NOT NULL,
    attempts INTEGER NOT NULL,
    ok       INTEGER NOT NULL,
    error    TEXT    NOT NULL,
    at_ns    INTEGER NOT NULL,
    PRIMARY KEY (alert_id, sink)
);

-- +goose Down
DROP TABLE alert_deliveries;
DROP TABLE alerts;
