-- Messages accepted from a platform that have not reached their thread's session yet.
CREATE TABLE arrivals (
    seq       bigserial PRIMARY KEY,
    event_id  text NOT NULL UNIQUE,
    key       text NOT NULL,
    message   text NOT NULL,
    at        double precision NOT NULL
);
CREATE INDEX arrivals_key ON arrivals (key);

-- Messages of a run that show its Stop button.
ALTER TABLE sessions ADD COLUMN stop_buttons text NOT NULL DEFAULT '[]';
