-- A sign-in's callback handed between workers (bot/mcp/sign_in_desk.py): the worker whose call
-- waits (`owner`, '' for none known), the callback's result sealed by the worker that got it
-- (`handed`), and when the owner took it (`taken_at`).
ALTER TABLE mcp_sign_in_waits ADD COLUMN owner TEXT NOT NULL DEFAULT '';
ALTER TABLE mcp_sign_in_waits ADD COLUMN handed TEXT;
ALTER TABLE mcp_sign_in_waits ADD COLUMN taken_at REAL;
