-- Each worker's presence, so that a worker whose process died is known at once, without waiting
-- for its leases to expire: while it lives, a worker holds a session advisory lock (class
-- 1953265522, id `lock`) on a connection of its own, and the lock goes the moment that
-- connection ends. A registered worker whose lock is gone is gone, but only while the server
-- lives the life it registered in: a restart, a crash recovery or a failover ends every
-- connection at once, live workers' too, and then the leases' expiry decides alone.
-- `server_life` is that life: one row, made by the first worker to register after the server
-- started; an unlogged table is emptied by a crash recovery and not copied to a standby, and
-- `started` changes with a restart.
CREATE UNLOGGED TABLE server_life (
    id       integer PRIMARY KEY CHECK (id = 1),
    started  timestamptz NOT NULL,
    token    bigint NOT NULL
);
CREATE SEQUENCE worker_locks MAXVALUE 2147483647 CYCLE;
CREATE TABLE workers (
    owner  text PRIMARY KEY,
    lock   integer NOT NULL,
    life   bigint NOT NULL,
    since  timestamptz NOT NULL
);
-- The workers that are gone: registered in this life of the server, their lock not held.
CREATE VIEW gone_workers AS
    SELECT w.owner FROM workers w
    WHERE EXISTS (
        SELECT 1 FROM server_life s WHERE s.token = w.life AND s.started = pg_postmaster_start_time()
    )
    AND NOT EXISTS (
        SELECT 1 FROM pg_locks p
        WHERE p.locktype = 'advisory' AND p.granted AND p.objsubid = 2
          AND p.database = (SELECT oid FROM pg_database WHERE datname = current_database())
          AND p.classid = 1953265522::oid AND p.objid = w.lock::oid
    );
