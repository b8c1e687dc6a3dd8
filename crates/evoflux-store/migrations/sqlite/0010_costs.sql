-- What model calls cost. Amounts are whole picodollars (1e-12 USD), so a
-- session's total is exactly the sum of its calls however it is added up.
-- A call on a model with no known price adds to `unpriced_requests`
-- instead of being counted as free.
ALTER TABLE usage_totals ADD COLUMN cost_picousd INTEGER NOT NULL DEFAULT 0;
ALTER TABLE usage_totals ADD COLUMN unpriced_requests INTEGER NOT NULL DEFAULT 0;

-- Each call's own usage beside what it was given. NULL in rows recorded
-- before this migration; `cost_picousd` is NULL for an unpriced call.
ALTER TABLE model_requests ADD COLUMN input_tokens INTEGER;
ALTER TABLE model_requests ADD COLUMN cached_input_tokens INTEGER;
ALTER TABLE model_requests ADD COLUMN cache_write_tokens INTEGER;
ALTER TABLE model_requests ADD COLUMN output_tokens INTEGER;
ALTER TABLE model_requests ADD COLUMN cost_picousd INTEGER;
