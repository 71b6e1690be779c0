-- The threads each person spoke in (Slack's App Home lists a person's recent threads): kept
-- with every write of a transcript, their first words there as the title, when they last spoke.
CREATE TABLE thread_people (
    person   text NOT NULL,
    key      text NOT NULL,
    title    text NOT NULL,
    last_at  double precision NOT NULL,
    PRIMARY KEY (person, key)
);
CREATE INDEX thread_people_recent ON thread_people (person, last_at);

-- The transcripts kept so far: each person's first message in each thread, at the time the
-- thread last changed.
INSERT INTO thread_people (person, key, title, last_at)
SELECT DISTINCT ON (b.person, m.key) b.person, m.key,
       left(btrim(replace(b.text, chr(10), ' ')), 80), s.updated_at
FROM messages m
JOIN sessions s ON s.key = m.key
CROSS JOIN LATERAL (
    SELECT m.body::jsonb ->> 'author_id' AS person, m.body::jsonb ->> 'text' AS text,
           m.body::jsonb ->> 'role' AS role
) b
WHERE b.role = 'user' AND b.person IS NOT NULL
ORDER BY b.person, m.key, m.seq
ON CONFLICT (person, key) DO NOTHING;
