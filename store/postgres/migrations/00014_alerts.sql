-- +goose Up
-- Alerts fired (issue 36): the primary key is the alert's id, the same on
-- every replica for the same condition, so inserting it is the claim that
-- makes an alert fire at most once across replicas; its deliveries to each
-- sink (attempts, outcome) for the admin API and the console.
CREATE TABLE alerts (
    id         text        PRIMARY KEY,
    kind       text        NOT NULL,
    scope_kind text        NOT NULL,
    scope_id   text        NOT NULL,
    message    text        NOT NULL,
    detail     text        NOT NULL,
    fired_at   timestamptz NOT NULL
);
CREATE INDEX alerts_fired ON alerts (fired_at);

CREATE TABLE alert_deliveries (
    alert_id text        NOT NULL,
    sink     text        NOT NULL,
    attempts integer     NOT NULL,
    ok       boolean     NOT NULL,
    error    text        NOT NULL,
    at       timestamptz NOT NULL,
    PRIMARY KEY (alert_id, sink)
);

-- +goose Down
DROP TABLE alert_deliveries;
DROP TABLE alerts;
