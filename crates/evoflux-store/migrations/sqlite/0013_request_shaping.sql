-- What shaped each model call's prompt beyond its parts (the model, the
-- provider's context window, the skill catalog's budget, the skill
-- resolver's mode and what it loaded), as JSON: a replay sets these again
-- so the same build makes the same prompt. Null in rows from before.
ALTER TABLE model_requests ADD COLUMN shaping TEXT;
