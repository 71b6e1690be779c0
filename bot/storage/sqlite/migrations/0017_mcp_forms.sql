-- Forms MCP servers ask people to fill in (bot/mcp/form_rows.py): one row per form shown, so
-- that any worker can open it and record its answer; `answer` holds an answer given on another
-- worker only until the worker whose call waits (`owner`) read it.
CREATE TABLE mcp_forms (
    form_id      TEXT PRIMARY KEY,
    key          TEXT NOT NULL,
    person_id    TEXT NOT NULL,
    person_name  TEXT NOT NULL,
    asked        TEXT NOT NULL,
    owner        TEXT NOT NULL,
    status       TEXT NOT NULL,
    card_id      TEXT,
    answer       TEXT,
    created_at   REAL NOT NULL,
    expires_at   REAL NOT NULL
);
CREATE INDEX mcp_forms_owner ON mcp_forms (owner, status);
CREATE INDEX mcp_forms_expires_at ON mcp_forms (expires_at);
