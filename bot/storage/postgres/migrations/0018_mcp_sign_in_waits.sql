-- Sign-ins waited for in threads (bot/mcp/sign_in_waits.py): one row per sign-in link, written
-- before the link shows; what the code's exchange needs after a restart is sealed in `sealed`.
CREATE TABLE mcp_sign_in_waits (
    wait_id      text PRIMARY KEY,
    server       text NOT NULL,
    person_id    text NOT NULL,
    person_name  text NOT NULL,
    key          text NOT NULL,
    call_id      text NOT NULL,
    sealed       text NOT NULL,
    created_at   double precision NOT NULL,
    expires_at   double precision NOT NULL,
    used_at      double precision
);
CREATE INDEX mcp_sign_in_waits_key ON mcp_sign_in_waits (key);
CREATE INDEX mcp_sign_in_waits_expires_at ON mcp_sign_in_waits (expires_at);
