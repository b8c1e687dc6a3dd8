-- What shaped each model call's prompt beyond its parts (SQLite's
-- 0013_request_shaping.sql): the model, the provider's context window, the
-- skill catalog's budget, the skill resolver's mode and what it loaded, as
-- JSON. Null in rows from before.
ALTER TABLE model_requests ADD COLUMN shaping TEXT;
