-- The edit budgets that workers share (bot.present.shared_rate): one row per budget key (a
-- Slack workspace's chat.update, a stream method's budget) holding the pace as a GCRA on the
-- database's clock. A worker takes the next slots of the pace in one call of
-- threadline_budget_slots; a 429 pauses the key for everyone (threadline_budget_pause, which
-- also says so on the threadline_budget channel).
CREATE TABLE edit_budgets (
    key           text PRIMARY KEY,
    next_at       timestamptz NOT NULL DEFAULT '-infinity',
    paused_until  timestamptz NOT NULL DEFAULT '-infinity'
);

-- The workers that took slots of a key lately: a worker that loses the database paces at the
-- rate divided by their number (at least two).
CREATE TABLE edit_budget_workers (
    key      text NOT NULL,
    worker   text NOT NULL,
    seen_at  timestamptz NOT NULL,
    PRIMARY KEY (key, worker)
);

-- Slots for a worker: up to `wanted` edits, the first allowed `room` intervals ahead of the pace
-- (a burst, the reserve for final edits), the others spaced `gap` seconds apart; slots later than
-- `horizon` seconds from now are not given unless `must` (a final edit takes its place in line,
-- an interim one asks again when its slot comes near). Delays are seconds from now.
CREATE FUNCTION threadline_budget_slots(
    p_key text, p_worker text, gap float8, room float8, wanted integer, horizon float8,
    must boolean, OUT delays float8[], OUT next_in float8, OUT paused_for float8,
    OUT workers integer
) LANGUAGE plpgsql AS $$
DECLARE
    tat timestamptz;
    paused timestamptz;
    now_ timestamptz;
    slot timestamptz;
    k integer := 0;
BEGIN
    INSERT INTO edit_budgets (key) VALUES (p_key) ON CONFLICT (key) DO NOTHING;
    SELECT b.next_at, b.paused_until INTO tat, paused FROM edit_budgets b
        WHERE b.key = p_key FOR UPDATE;
    now_ := clock_timestamp();
    tat := greatest(tat, now_, paused);
    delays := '{}';
    LOOP
        slot := greatest(now_, paused, tat + make_interval(secs => (k - room) * gap));
        EXIT WHEN k >= wanted
            OR (slot > now_ + make_interval(secs => horizon) AND NOT (must AND k = 0));
        delays := delays || extract(epoch FROM slot - now_)::float8;
        k := k + 1;
    END LOOP;
    next_in := extract(epoch FROM slot - now_)::float8;
    UPDATE edit_budgets SET next_at = tat + make_interval(secs => k * gap) WHERE key = p_key;
    paused_for := extract(epoch FROM greatest(paused, now_) - now_)::float8;
    INSERT INTO edit_budget_workers (key, worker, seen_at) VALUES (p_key, p_worker, now_)
        ON CONFLICT (key, worker) DO UPDATE SET seen_at = excluded.seen_at;
    DELETE FROM edit_budget_workers w WHERE w.key = p_key AND w.seen_at < now_ - interval '1 hour';
    SELECT count(*) INTO workers FROM edit_budget_workers w
        WHERE w.key = p_key AND w.seen_at > now_ - interval '30 seconds';
END $$;

-- A 429: nobody behind the key edits for `seconds`; the pace starts again after the pause.
-- Returns how long the key is paused (an earlier, longer pause stands).
CREATE FUNCTION threadline_budget_pause(p_key text, seconds float8) RETURNS float8
LANGUAGE plpgsql AS $$
DECLARE
    now_ timestamptz := clock_timestamp();
    until timestamptz := now_ + make_interval(secs => greatest(0, seconds));
    left_s float8;
BEGIN
    INSERT INTO edit_budgets AS b (key, next_at, paused_until) VALUES (p_key, until, until)
        ON CONFLICT (key) DO UPDATE SET
            paused_until = greatest(b.paused_until, excluded.paused_until),
            next_at = greatest(b.next_at, excluded.paused_until)
        RETURNING extract(epoch FROM b.paused_until - now_)::float8 INTO left_s;
    PERFORM pg_notify('threadline_budget', left_s::text || ' ' || p_key);
    RETURN left_s;
END $$;
