-- Prompts people scheduled; each has a job (id "prompt:s<id>") that wakes the scheduler when due.
CREATE TABLE schedules (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    key          TEXT NOT NULL,
    channel      TEXT NOT NULL,
    prompt       TEXT NOT NULL,
    when_text    TEXT NOT NULL,
    cron         TEXT,
    zone         TEXT NOT NULL,
    next_at      REAL NOT NULL,
    author_id    TEXT NOT NULL,
    author_name  TEXT NOT NULL,
    created_at   REAL NOT NULL
);
CREATE INDEX schedules_key ON schedules (key, next_at);
CREATE INDEX schedules_channel ON schedules (channel);

-- Notes kept for a thread or for its whole channel, found again by full-text search.
CREATE TABLE memories (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    channel      TEXT NOT NULL,
    key          TEXT NOT NULL,
    scope        TEXT NOT NULL,
    note         TEXT NOT NULL,
    author_id    TEXT NOT NULL,
    author_name  TEXT NOT NULL,
    created_at   REAL NOT NULL
);
CREATE INDEX memories_channel ON memories (channel, id);
CREATE VIRTUAL TABLE memories_fts USING fts5 (
    note, content = 'memories', content_rowid = 'id', tokenize = 'unicode61 remove_diacritics 2'
);
