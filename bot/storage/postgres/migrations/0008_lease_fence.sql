-- A fenced write in one statement: the write's own statement calls threadline_hold_lease,
-- which locks the thread's lease row FOR SHARE (a takeover waits for the write to commit) and
-- raises SQLSTATE TL001 when the lease is no longer the writer's, so the whole statement,
-- and everything it wrote, is rolled back.
CREATE OR REPLACE FUNCTION threadline_hold_lease(k text, o text, t bigint) RETURNS boolean
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM 1 FROM leases WHERE key = k AND owner = o AND token = t FOR SHARE;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'TL001',
            MESSAGE = format('the lease on %s with token %s is no longer %s''s', k, t, o);
    END IF;
    RETURN true;
END
$$;
