-- Sessions can be found (issue #48): a title, search over titles and
-- messages, and a list ordered by last activity.
--
-- `title` is what the session list shows; `title_source` says who set it:
-- `message` (the first user message, trimmed), `model` (one short side
-- call after the first turn) or `user` (a rename). A model title replaces
-- only a `message` one; nothing replaces a `user` one but another rename.
ALTER TABLE sessions ADD COLUMN title TEXT;
ALTER TABLE sessions ADD COLUMN title_source TEXT;

CREATE INDEX sessions_by_activity ON sessions (updated_at_ms DESC, id DESC);

-- What the user and the model said, as FTS5 indexes it; the rowid is the
-- transcript entry's, so a match joins back to its session. Tool results
-- and system messages are not searched.
CREATE VIRTUAL TABLE transcript_search USING fts5(content);

CREATE TRIGGER transcript_search_insert AFTER INSERT ON transcript_entries
WHEN new.role IN ('user', 'assistant')
BEGIN
    INSERT INTO transcript_search (rowid, content)
    VALUES (new.rowid, COALESCE(json_extract(new.body, '$.content'), ''));
END;

-- Rows leave with their session (the cascade fires this trigger too).
CREATE TRIGGER transcript_search_delete AFTER DELETE ON transcript_entries
BEGIN
    DELETE FROM transcript_search WHERE rowid = old.rowid;
END;

INSERT INTO transcript_search (rowid, content)
SELECT rowid, COALESCE(json_extract(body, '$.content'), '')
FROM transcript_entries WHERE role IN ('user', 'assistant');

-- Sessions from before are titled by their first user message.
UPDATE sessions SET title = (
    SELECT substr(trim(replace(replace(json_extract(t.body, '$.content'), char(10), ' '), char(13), ' ')), 1, 60)
    FROM transcript_entries t
    WHERE t.session_id = sessions.id AND t.role = 'user'
    ORDER BY t.seq LIMIT 1
), title_source = 'message'
WHERE title IS NULL;
UPDATE sessions SET title_source = NULL WHERE title IS NULL;
