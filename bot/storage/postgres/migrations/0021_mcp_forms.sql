-- Forms MCP servers ask people to fill in (bot/mcp/form_rows.py): one row per form shown, so
-- that any worker can open it and record its answer; `answer` holds an answer given on another
-- worker only until the worker whose call waits (`owner`) read it.
CREATE TABLE mcp_forms (
    form_id      text PRIMARY KEY,
    key          text NOT NULL,
    person_id    text NOT NULL,
    person_name  text NOT NULL,
    asked        text NOT NULL,
    owner        text NOT NULL,
    status       text NOT NULL,
    card_id      text,
    answer       text,
    created_at   double precision NOT NULL,
    expires_at   double precision NOT NULL
);
CREATE INDEX mcp_forms_owner ON mcp_forms (owner, status);
CREATE INDEX mcp_forms_expires_at ON mcp_forms (expires_at);
