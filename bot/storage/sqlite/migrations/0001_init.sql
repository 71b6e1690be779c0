-- Sessions: one row per thread, everything but the transcript.
CREATE TABLE sessions (
    key            TEXT PRIMARY KEY,
    title          TEXT NOT NULL DEFAULT '',
    todos          TEXT NOT NULL DEFAULT '[]',
    usage          TEXT NOT NULL DEFAULT '{}',
    cost_usd       REAL NOT NULL DEFAULT 0,
    state          TEXT NOT NULL DEFAULT 'idle',
    panel          TEXT,
    message_count  INTEGER NOT NULL DEFAULT 0,
    created_at     REAL NOT NULL,
    updated_at     REAL NOT NULL
);
CREATE INDEX sessions_updated ON sessions (updated_at);

-- The transcript: one row per message, in order.
CREATE TABLE messages (
    key   TEXT NOT NULL,
    seq   INTEGER NOT NULL,
    body  TEXT NOT NULL,
    PRIMARY KEY (key, seq)
) WITHOUT ROWID;

-- Messages the bot posted on the platform (replies, the todo panel, approval cards).
CREATE TABLE posted (
    key         TEXT NOT NULL,
    message_id  TEXT NOT NULL,
    kind        TEXT NOT NULL,
    posted_at   REAL NOT NULL,
    PRIMARY KEY (key, message_id)
) WITHOUT ROWID;

-- Inbound event ids already handled (platform redeliveries are dropped).
CREATE TABLE deliveries (
    event_id  TEXT PRIMARY KEY,
    seen_at   REAL NOT NULL
) WITHOUT ROWID;
CREATE INDEX deliveries_seen ON deliveries (seen_at);
