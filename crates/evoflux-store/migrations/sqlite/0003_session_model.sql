-- The model a session runs on, as `provider:model`: a resumed session
-- keeps it, and a switch is an explicit update of this column.
ALTER TABLE sessions ADD COLUMN model TEXT;
