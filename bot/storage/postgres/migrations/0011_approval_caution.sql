-- A warning the approval card shows about the tool (an MCP server marks it destructive).
ALTER TABLE approvals ADD COLUMN caution text NOT NULL DEFAULT '';
