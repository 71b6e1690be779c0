-- Prompts people scheduled; each has a job (id "prompt:s<id>") that wakes the scheduler when due.
CREATE TABLE schedules (
    id           bigserial PRIMARY KEY,
    key          text NOT NULL,
    channel      text NOT NULL,
    prompt       text NOT NULL,
    when_text    text NOT NULL,
    cron         text,
    zone         text NOT NULL,
    next_at      double precision NOT NULL,
    author_id    text NOT NULL,
    author_name  text NOT NULL,
    created_at   double precision NOT NULL
);
CREATE INDEX schedules_key ON schedules (key, next_at);
CREATE INDEX schedules_channel ON schedules (channel);

-- Notes kept for a thread or for its whole channel, found again by full-text search ('simple':
-- words as they are written, any language).
CREATE TABLE memories (
    id           bigserial PRIMARY KEY,
    channel      text NOT NULL,
    key          text NOT NULL,
    scope        text NOT NULL,
    note         text NOT NULL,
    author_id    text NOT NULL,
    author_name  text NOT NULL,
    created_at   double precision NOT NULL
);
CREATE INDEX memories_channel ON memories (channel, id);
CREATE INDEX memories_words ON memories USING gin (to_tsvector('simple', note));
