-- Nothing reads which messages the bot posted, the thread titles or the message counts.
DROP TABLE posted;
ALTER TABLE sessions DROP COLUMN title;
ALTER TABLE sessions DROP COLUMN message_count;
