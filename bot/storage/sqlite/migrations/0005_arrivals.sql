-- Messages accepted from a platform (their delivery id recorded in the same transaction) that
-- have not reached their thread's session yet: answered after a restart, never lost.
CREATE TABLE arrivals (
    seq       INTEGER PRIMARY KEY AUTOINCREMENT,
    event_id  TEXT NOT NULL UNIQUE,
    key       TEXT NOT NULL,
    message   TEXT NOT NULL,
    at        REAL NOT NULL
);
CREATE INDEX arrivals_key ON arrivals (key);
