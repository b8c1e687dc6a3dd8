-- Context-control figures of the projection owner, summed per session
-- like the token counts: old tool results replaced by receipts in the
-- requests sent, and the characters that saved.
ALTER TABLE usage_totals ADD COLUMN projected_results INTEGER NOT NULL DEFAULT 0;
ALTER TABLE usage_totals ADD COLUMN projection_saved_chars INTEGER NOT NULL DEFAULT 0;
