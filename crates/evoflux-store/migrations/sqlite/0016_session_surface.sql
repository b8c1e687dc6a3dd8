-- The surface a session's conversation is tagged for (issue #52):
-- `standard`, or `webbridge` for the browser surface, where only MCP
-- servers that declare `webbridge-safe` are offered. Kept with the session
-- so a resume keeps it; every earlier session is `standard`.
ALTER TABLE sessions ADD COLUMN surface TEXT NOT NULL DEFAULT 'standard';
