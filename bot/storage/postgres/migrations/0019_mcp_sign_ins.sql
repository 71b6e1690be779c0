-- MCP OAuth sign-ins, sealed with the installation's key: one row per server and subject
-- ('shared' or 'person:ID'); each write raises version (compare-and-set).
CREATE TABLE mcp_sign_ins (
    server      text NOT NULL,
    subject     text NOT NULL,
    sealed      bytea NOT NULL,
    version     bigint NOT NULL,
    updated_at  double precision NOT NULL,
    PRIMARY KEY (server, subject)
);
