-- Sign-ins waited for in threads (bot/mcp/sign_in_waits.py): one row per sign-in link, written
-- before the link shows; what the code's exchange needs after a restart is sealed in `sealed`.
CREATE TABLE mcp_sign_in_waits (
    wait_id      TEXT PRIMARY KEY,
    server       TEXT NOT NULL,
    person_id    TEXT NOT NULL,
    person_name  TEXT NOT NULL,
    key          TEXT NOT NULL,
    call_id      TEXT NOT NULL,
    sealed       TEXT NOT NULL,
    created_at   REAL NOT NULL,
    expires_at   REAL NOT NULL,
    used_at      REAL
);
CREATE INDEX mcp_sign_in_waits_key ON mcp_sign_in_waits (key);
CREATE INDEX mcp_sign_in_waits_expires_at ON mcp_sign_in_waits (expires_at);
