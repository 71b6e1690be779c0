-- A Stop clicked on one worker for a run that another worker holds: kept until that worker
-- reads it (it is nudged with NOTIFY, and polls as the fallback).
CREATE TABLE stop_requests (
    id          bigserial PRIMARY KEY,
    key         text NOT NULL,
    run_id      text NOT NULL,
    actor_id    text NOT NULL,
    actor_name  text NOT NULL,
    at          timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX stop_requests_key ON stop_requests (key);
CREATE INDEX leases_expiry ON leases (expires_at);
