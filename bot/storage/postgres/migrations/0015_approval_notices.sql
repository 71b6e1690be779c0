-- The direct messages an approval request sent: one row per request and stage ('approvers',
-- 'escalation'), claimed before they are sent, so a restart never sends them again.
CREATE TABLE approval_notices (
    approval_id text NOT NULL,
    stage       text NOT NULL,
    at          double precision NOT NULL,
    PRIMARY KEY (approval_id, stage)
);
