-- 👍 / 👎 on a run's final answer: one row per run and person (the last click wins).
CREATE TABLE feedback (
    run_id     text NOT NULL,
    user_id    text NOT NULL,
    key        text NOT NULL,
    user_name  text NOT NULL,
    value      text NOT NULL CHECK (value IN ('up', 'down')),
    note       text NOT NULL DEFAULT '',
    at         double precision NOT NULL,
    closed     boolean NOT NULL DEFAULT false,
    PRIMARY KEY (run_id, user_id)
);
CREATE INDEX feedback_at ON feedback (at);
CREATE INDEX feedback_key ON feedback (key);
