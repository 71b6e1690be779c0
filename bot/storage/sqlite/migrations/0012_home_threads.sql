-- The threads each person spoke in (Slack's App Home lists a person's recent threads): kept
-- with every write of a transcript, their first words there as the title, when they last spoke.
CREATE TABLE thread_people (
    person   TEXT NOT NULL,
    key      TEXT NOT NULL,
    title    TEXT NOT NULL,
    last_at  REAL NOT NULL,
    PRIMARY KEY (person, key)
) WITHOUT ROWID;
CREATE INDEX thread_people_recent ON thread_people (person, last_at);

-- The transcripts kept so far: each person's first message in each thread, at the time the
-- thread last changed.
INSERT OR IGNORE INTO thread_people (person, key, title, last_at)
SELECT json_extract(m.body, '$.author_id'), m.key,
       substr(trim(replace(json_extract(m.body, '$.text'), char(10), ' ')), 1, 80), s.updated_at
FROM messages m JOIN sessions s ON s.key = m.key
WHERE json_extract(m.body, '$.role') = 'user' AND json_extract(m.body, '$.author_id') IS NOT NULL
ORDER BY m.key, m.seq;
