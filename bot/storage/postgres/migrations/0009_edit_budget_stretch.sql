-- A 429 the pace did not foresee slows the key's pace for every worker: `stretch` multiplies the
-- interval between slots (at most 4), and each slot given shrinks it back toward 1 (by 3%), as
-- one worker alone does (bot.present.budget). The slots function keeps its signature, so workers
-- of the version before keep working during a rolling upgrade (they never stretch the pace, but
-- take their slots at its stretched spacing).
ALTER TABLE edit_budgets ADD COLUMN stretch float8 NOT NULL DEFAULT 1;

CREATE OR REPLACE FUNCTION threadline_budget_slots(
    p_key text, p_worker text, gap float8, room float8, wanted integer, horizon float8,
    must boolean, OUT delays float8[], OUT next_in float8, OUT paused_for float8,
    OUT workers integer
) LANGUAGE plpgsql AS $$
DECLARE
    tat timestamptz;
    paused timestamptz;
    slower float8;
    now_ timestamptz;
    slot timestamptz;
    k integer := 0;
BEGIN
    INSERT INTO edit_budgets (key) VALUES (p_key) ON CONFLICT (key) DO NOTHING;
    SELECT b.next_at, b.paused_until, b.stretch INTO tat, paused, slower FROM edit_budgets b
        WHERE b.key = p_key FOR UPDATE;
    gap := gap * slower;
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
    UPDATE edit_budgets SET next_at = tat + make_interval(secs => k * gap),
        stretch = greatest(1, slower * power(0.97, k)) WHERE key = p_key;
    paused_for := extract(epoch FROM greatest(paused, now_) - now_)::float8;
    INSERT INTO edit_budget_workers (key, worker, seen_at) VALUES (p_key, p_worker, now_)
        ON CONFLICT (key, worker) DO UPDATE SET seen_at = excluded.seen_at;
    DELETE FROM edit_budget_workers w WHERE w.key = p_key AND w.seen_at < now_ - interval '1 hour';
    SELECT count(*) INTO workers FROM edit_budget_workers w
        WHERE w.key = p_key AND w.seen_at > now_ - interval '30 seconds';
END $$;

-- A 429 that the pace did not foresee (`slower` > 1): the key is paused as by the two-argument
-- form, and its pace stretched by `slower` (at most 4 times the interval).
CREATE FUNCTION threadline_budget_pause(p_key text, seconds float8, slower float8) RETURNS float8
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO edit_budgets AS b (key, stretch) VALUES (p_key, least(4, greatest(1, slower)))
        ON CONFLICT (key) DO UPDATE SET stretch = least(4, b.stretch * greatest(1, slower));
    RETURN threadline_budget_pause(p_key, seconds);
END $$;
