-- The PostgreSQL schema, numbered on its own (SQLite's history is in ../migrations/).
-- JSON values (todos, usage, panel, inbox, message bodies, job payloads) are text: they are
-- written and read whole through pydantic and never queried inside, so jsonb would only add a
-- parse on every write and a re-serialisation on every read.

-- Sessions: one row per thread, everything but the transcript.
CREATE TABLE sessions (
    key            text PRIMARY KEY,
    todos          text NOT NULL DEFAULT '[]',
    usage          text NOT NULL DEFAULT '{}',
    cost_usd       double precision NOT NULL DEFAULT 0,
    state          text NOT NULL DEFAULT 'idle',
    panel          text,
    created_at     double precision NOT NULL,
    updated_at     double precision NOT NULL,
    inbox          text NOT NULL DEFAULT '[]',
    day            text NOT NULL DEFAULT '',
    day_tokens     bigint NOT NULL DEFAULT 0,
    day_cost_usd   double precision NOT NULL DEFAULT 0
);
CREATE INDEX sessions_state ON sessions (state, updated_at);

-- The transcript: one row per message, in order.
CREATE TABLE messages (
    key   text NOT NULL,
    seq   integer NOT NULL,
    body  text NOT NULL,
    PRIMARY KEY (key, seq)
);

-- Inbound event ids already handled (platform redeliveries are dropped).
CREATE TABLE deliveries (
    event_id  text PRIMARY KEY,
    seen_at   double precision NOT NULL
);
CREATE INDEX deliveries_seen ON deliveries (seen_at);

-- Approval requests: a paused run is data. Only a pending, unexpired row changes on a decision.
CREATE TABLE approvals (
    id               text PRIMARY KEY,
    key              text NOT NULL,
    call_id          text NOT NULL,
    tool             text NOT NULL,
    arguments        text NOT NULL,
    args_hash        text NOT NULL,
    requester_id     text NOT NULL,
    requester_name   text NOT NULL,
    approvers        text NOT NULL,
    offer_always     boolean NOT NULL DEFAULT false,
    status           text NOT NULL DEFAULT 'pending',
    decided_by_id    text,
    decided_by_name  text,
    decided_at       double precision,
    created_at       double precision NOT NULL,
    expires_at       double precision NOT NULL,
    card_id          text,
    UNIQUE (key, call_id)
);
CREATE INDEX approvals_pending ON approvals (status, expires_at);

-- "Always allow here": a tool allowed without asking in one scope, for the people it covers.
CREATE TABLE allow_rules (
    id               text PRIMARY KEY,
    scope            text NOT NULL,
    tool             text NOT NULL,
    covers           text[] NOT NULL,
    created_by       text NOT NULL,
    created_by_name  text NOT NULL,
    created_at       double precision NOT NULL
);
CREATE INDEX allow_rules_scope ON allow_rules (scope, tool);

-- The approval audit trail: every request, decision, expiry and rule, never changed.
CREATE TABLE audit (
    seq          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at           double precision NOT NULL,
    key          text NOT NULL,
    event        text NOT NULL,
    tool         text NOT NULL,
    args_hash    text NOT NULL DEFAULT '',
    actor_id     text NOT NULL DEFAULT '',
    actor_name   text NOT NULL DEFAULT '',
    approval_id  text NOT NULL DEFAULT '',
    detail       text NOT NULL DEFAULT ''
);
CREATE INDEX audit_at ON audit (at);
CREATE INDEX audit_key ON audit (key text_pattern_ops, at);

-- Scheduled jobs.
CREATE TABLE jobs (
    id           text PRIMARY KEY,
    kind         text NOT NULL,
    payload      text NOT NULL DEFAULT '{}',
    due_at       double precision NOT NULL,
    interval_s   double precision,
    attempts     integer NOT NULL DEFAULT 0,
    last_error   text
);
CREATE INDEX jobs_due ON jobs (due_at);
