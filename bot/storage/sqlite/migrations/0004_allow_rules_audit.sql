-- "Always allow here" rules are bounded: an id (to revoke one), and the people they cover.
ALTER TABLE allow_rules RENAME TO allow_rules_unbounded;
CREATE TABLE allow_rules (
    id               TEXT PRIMARY KEY,
    scope            TEXT NOT NULL,
    tool             TEXT NOT NULL,
    covers           TEXT NOT NULL,
    created_by       TEXT NOT NULL,
    created_by_name  TEXT NOT NULL,
    created_at       REAL NOT NULL
);
CREATE INDEX allow_rules_scope ON allow_rules (scope, tool);
INSERT INTO allow_rules (id, scope, tool, covers, created_by, created_by_name, created_at)
    SELECT lower(hex(randomblob(8))), scope, tool, json_array(created_by), created_by, created_by,
           created_at
    FROM allow_rules_unbounded;
DROP TABLE allow_rules_unbounded;

-- The approval audit trail: every request, decision, expiry and rule, never changed.
CREATE TABLE audit (
    seq          INTEGER PRIMARY KEY AUTOINCREMENT,
    at           REAL NOT NULL,
    key          TEXT NOT NULL,
    event        TEXT NOT NULL,
    tool         TEXT NOT NULL,
    args_hash    TEXT NOT NULL DEFAULT '',
    actor_id     TEXT NOT NULL DEFAULT '',
    actor_name   TEXT NOT NULL DEFAULT '',
    approval_id  TEXT NOT NULL DEFAULT '',
    detail       TEXT NOT NULL DEFAULT ''
);
CREATE INDEX audit_at ON audit (at);
CREATE INDEX audit_key ON audit (key, at);
