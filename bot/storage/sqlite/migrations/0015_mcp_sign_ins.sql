-- MCP OAuth sign-ins, sealed with the installation's key: one row per server and subject
-- ('shared' or 'person:ID'); each write raises version (compare-and-set).
CREATE TABLE mcp_sign_ins (
    server      TEXT NOT NULL,
    subject     TEXT NOT NULL,
    sealed      BLOB NOT NULL,
    version     INTEGER NOT NULL,
    updated_at  REAL NOT NULL,
    PRIMARY KEY (server, subject)
);
