-- Approval requests: a paused run is data. Only a pending, unexpired row changes on a decision.
CREATE TABLE approvals (
    id               TEXT PRIMARY KEY,
    key              TEXT NOT NULL,
    call_id          TEXT NOT NULL,
    tool             TEXT NOT NULL,
    arguments        TEXT NOT NULL,
    args_hash        TEXT NOT NULL,
    requester_id     TEXT NOT NULL,
    requester_name   TEXT NOT NULL,
    approvers        TEXT NOT NULL,
    offer_always     INTEGER NOT NULL DEFAULT 0,
    status           TEXT NOT NULL DEFAULT 'pending',
    decided_by_id    TEXT,
    decided_by_name  TEXT,
    decided_at       REAL,
    created_at       REAL NOT NULL,
    expires_at       REAL NOT NULL,
    card_id          TEXT,
    UNIQUE (key, call_id)
);
CREATE INDEX approvals_pending ON approvals (status, expires_at);

-- "Always allow here": a tool allowed without asking in one channel.
CREATE TABLE allow_rules (
    scope       TEXT NOT NULL,
    tool        TEXT NOT NULL,
    created_by  TEXT NOT NULL,
    created_at  REAL NOT NULL,
    PRIMARY KEY (scope, tool)
) WITHOUT ROWID;

-- Scheduled jobs; APScheduler only wakes the scheduler service when the next one is due.
CREATE TABLE jobs (
    id           TEXT PRIMARY KEY,
    kind         TEXT NOT NULL,
    payload      TEXT NOT NULL DEFAULT '{}',
    due_at       REAL NOT NULL,
    interval_s   REAL,
    attempts     INTEGER NOT NULL DEFAULT 0,
    last_error   TEXT
);
CREATE INDEX jobs_due ON jobs (due_at);

-- Messages that arrived during a run and wait for its next model call.
ALTER TABLE sessions ADD COLUMN inbox TEXT NOT NULL DEFAULT '[]';
-- Tokens and cost spent today (UTC day), for per-day limits.
ALTER TABLE sessions ADD COLUMN day TEXT NOT NULL DEFAULT '';
ALTER TABLE sessions ADD COLUMN day_tokens INTEGER NOT NULL DEFAULT 0;
ALTER TABLE sessions ADD COLUMN day_cost_usd REAL NOT NULL DEFAULT 0;
