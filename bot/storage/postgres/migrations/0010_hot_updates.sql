-- Updates that change no indexed column can be HOT (heap-only: no new index entries, and the
-- old version is reclaimed within its page). A run updates its session row several times and
-- its lease row on every renewal, so neither indexes a column those updates change:
-- leases_expiry served no query (leases are found by key); the sessions of runs that are not
-- idle (the only ones looked up by state) are few, so their index leaves idle ones out and
-- sorts by update time when asked. Free space left in each page keeps the new version there.
DROP INDEX IF EXISTS leases_expiry;
DROP INDEX IF EXISTS sessions_state;
CREATE INDEX sessions_active ON sessions (state) WHERE state <> 'idle';
ALTER TABLE sessions SET (fillfactor = 70);
ALTER TABLE leases SET (fillfactor = 70);
