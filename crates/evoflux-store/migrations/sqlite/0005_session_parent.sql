-- A child session a dispatch opened: its parent session and the parent's
-- tool call that dispatched it, so resuming the parent re-attaches the
-- child instead of running it again.
ALTER TABLE sessions ADD COLUMN parent_id TEXT;
ALTER TABLE sessions ADD COLUMN parent_call_id TEXT;
CREATE INDEX sessions_by_parent ON sessions (parent_id, parent_call_id);
