-- A lease per thread: who may write it now, until when (the database's clock), and the
-- fencing token its writes carry. Tokens come from one sequence, so each take outranks all
-- earlier ones.
CREATE SEQUENCE lease_tokens;
CREATE TABLE leases (
    key         text PRIMARY KEY,
    owner       text NOT NULL,
    token       bigint NOT NULL,
    expires_at  timestamptz NOT NULL
);
