-- The files an accepted message names, not downloaded yet (JSON; NULL: none). They are
-- fetched when the message's turn comes, so a restart during a download fetches them again.
ALTER TABLE arrivals ADD COLUMN files TEXT;
