-- Sessions can be found (SQLite's 0014_session_titles.sql): a title and
-- who set it (`message`, `model` or `user`), an index for the list by
-- last activity, and full-text search over what the user and the model
-- said (tool results and system messages are not searched).
ALTER TABLE sessions ADD COLUMN title TEXT;
ALTER TABLE sessions ADD COLUMN title_source TEXT;

CREATE INDEX sessions_by_activity ON sessions (updated_at_ms DESC, id DESC);

CREATE INDEX transcript_search ON transcript_entries
USING GIN (to_tsvector('simple', COALESCE(body::jsonb ->> 'content', '')))
WHERE role IN ('user', 'assistant');

-- Sessions from before are titled by their first user message.
UPDATE sessions SET title = (
    SELECT substr(btrim(translate(t.body::jsonb ->> 'content', E'\n\r', '  ')), 1, 60)
    FROM transcript_entries t
    WHERE t.session_id = sessions.id AND t.role = 'user'
    ORDER BY t.seq LIMIT 1
), title_source = 'message'
WHERE title IS NULL;
UPDATE sessions SET title_source = NULL WHERE title IS NULL;
