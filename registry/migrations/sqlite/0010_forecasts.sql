-- Version 10: forecasts. One document per release version (`forecasts`: the whole
-- `ReleaseForecast` as the packager sent it), each customer's part of it by key
-- (`forecast_customers`, what a receipt and an assignment look up), the real plans
-- that missed their forecast (`forecast_misses`, one per receipt and stack; an
-- unacknowledged one fails its customer's health gate until `resume` acknowledges
-- it), and each runner's approval policy as its last sync reported it.
CREATE TABLE forecasts (
    release TEXT NOT NULL,
    version TEXT NOT NULL,
    kind TEXT NOT NULL CHECK (kind IN ('release', 'stack')),
    digest TEXT NOT NULL,
    channel TEXT,
    created_at TEXT NOT NULL,
    received_at TEXT NOT NULL,
    document TEXT NOT NULL,
    PRIMARY KEY (release, version)
);
CREATE TABLE forecast_customers (
    release TEXT NOT NULL,
    version TEXT NOT NULL,
    customer TEXT NOT NULL,
    outcome TEXT NOT NULL,
    document TEXT NOT NULL,
    PRIMARY KEY (release, version, customer)
) WITHOUT ROWID;
CREATE TABLE forecast_misses (
    id INTEGER PRIMARY KEY,
    release TEXT NOT NULL,
    version TEXT NOT NULL,
    customer TEXT NOT NULL,
    stack TEXT NOT NULL,
    receipt_id TEXT NOT NULL,
    differences TEXT NOT NULL,
    drifted TEXT NOT NULL,
    explained_by_drift INTEGER NOT NULL,
    at TEXT NOT NULL,
    acknowledged INTEGER NOT NULL DEFAULT 0,
    UNIQUE (receipt_id, stack)
);
CREATE INDEX forecast_misses_open ON forecast_misses(release, version, customer) WHERE acknowledged = 0;
CREATE INDEX forecast_misses_version ON forecast_misses(release, version, id);
CREATE INDEX forecast_misses_customer ON forecast_misses(customer, id);
ALTER TABLE customers ADD COLUMN approve TEXT;
