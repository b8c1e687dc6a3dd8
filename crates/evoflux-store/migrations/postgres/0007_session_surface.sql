-- The surface a session's conversation is tagged for (SQLite's
-- 0016_session_surface.sql): `standard`, or `webbridge` for the browser
-- surface. Every earlier session is `standard`.
ALTER TABLE sessions ADD COLUMN surface TEXT NOT NULL DEFAULT 'standard';
