-- Messages of a run that show its Stop button (their buttons go when the run ends, also after a
-- restart cut the run off).
ALTER TABLE sessions ADD COLUMN stop_buttons TEXT NOT NULL DEFAULT '[]';
