-- A sliding window kept with the pace: at most `win` slots of a key in any `win` intervals (as
-- Slack counts a channel's posts), so that workers together get the burst one worker alone has
-- after a quiet spell (`win` at once), and never more. `recent` holds the times of the key's last
-- `win` slots (ascending). The seven-argument function of migration 0009 stays for workers of the
-- version before (it keeps the steady pace and leaves the window alone).
ALTER TABLE edit_budgets ADD COLUMN recent timestamptz[] NOT NULL DEFAULT '{}';

-- As the seven-argument form, and with `win` > 0 each slot also waits until the slot `win`
-- before it is `win` intervals old.
CREATE FUNCTION threadline_budget_slots(
    p_key text, p_worker text, gap float8, room float8, wanted integer, horizon float8,
    must boolean, win integer, OUT delays float8[], OUT next_in float8, OUT paused_for float8,
    OUT workers integer
) LANGUAGE plpgsql AS $$
DECLARE
    tat timestamptz;
    paused timestamptz;
    slower float8;
    kept timestamptz[];
    n integer;
    now_ timestamptz;
    slot timestamptz;
    k integer := 0;
BEGIN
    INSERT INTO edit_budgets (key) VALUES (p_key) ON CONFLICT (key) DO NOTHING;
    SELECT b.next_at, b.paused_until, b.stretch, b.recent INTO tat, paused, slower, kept
        FROM edit_budgets b WHERE b.key = p_key FOR UPDATE;
    gap := gap * slower;
    now_ := clock_timestamp();
    tat := greatest(tat, now_, paused);
    delays := '{}';
    LOOP
        slot := greatest(now_, paused, tat + make_interval(secs => (k - room) * gap));
        n := coalesce(array_length(kept, 1), 0);
        IF win > 0 AND n >= win THEN
            slot := greatest(slot, kept[n - win + 1] + make_interval(secs => win * gap));
        END IF;
        EXIT WHEN k >= wanted
            OR (slot > now_ + make_interval(secs => horizon) AND NOT (must AND k = 0));
        delays := delays || extract(epoch FROM slot - now_)::float8;
        IF win > 0 THEN
            kept := kept || slot;
        END IF;
        k := k + 1;
    END LOOP;
    next_in := extract(epoch FROM slot - now_)::float8;
    n := coalesce(array_length(kept, 1), 0);
    IF win > 0 AND n > win THEN
        kept := kept[n - win + 1:n];
    END IF;
    UPDATE edit_budgets SET next_at = tat + make_interval(secs => k * gap),
        stretch = greatest(1, slower * power(0.97, k)), recent = kept WHERE key = p_key;
    paused_for := extract(epoch FROM greatest(paused, now_) - now_)::float8;
    INSERT INTO edit_budget_workers (key, worker, seen_at) VALUES (p_key, p_worker, now_)
        ON CONFLICT (key, worker) DO UPDATE SET seen_at = excluded.seen_at;
    DELETE FROM edit_budget_workers w WHERE w.key = p_key AND w.seen_at < now_ - interval '1 hour';
    SELECT count(*) INTO workers FROM edit_budget_workers w
        WHERE w.key = p_key AND w.seen_at > now_ - interval '30 seconds';
END $$;
