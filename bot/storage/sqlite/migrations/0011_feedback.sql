-- 👍 / 👎 on a run's final answer: one row per run and person (the last click wins).
CREATE TABLE feedback (
    run_id     TEXT NOT NULL,
    user_id    TEXT NOT NULL,
    key        TEXT NOT NULL,
    user_name  TEXT NOT NULL,
    value      TEXT NOT NULL CHECK (value IN ('up', 'down')),
    note       TEXT NOT NULL DEFAULT '',
    at         REAL NOT NULL,
    closed     INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (run_id, user_id)
);
CREATE INDEX feedback_at ON feedback (at);
CREATE INDEX feedback_key ON feedback (key);
