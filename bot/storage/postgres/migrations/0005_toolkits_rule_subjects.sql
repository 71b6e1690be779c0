-- Each toolkit's state in a thread (loaded skills…): a JSON object by toolkit name.
ALTER TABLE sessions ADD COLUMN toolkits text NOT NULL DEFAULT '{}';

-- What an "Always allow" made on a request covers besides the tool (a fetch_url domain).
ALTER TABLE approvals ADD COLUMN allow_subject text;
