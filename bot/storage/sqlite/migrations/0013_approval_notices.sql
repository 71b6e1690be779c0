-- The direct messages an approval request sent: one row per request and stage ('approvers',
-- 'escalation'), claimed before they are sent, so a restart never sends them again.
CREATE TABLE approval_notices (
    approval_id TEXT NOT NULL,
    stage       TEXT NOT NULL,
    at          REAL NOT NULL,
    PRIMARY KEY (approval_id, stage)
);
