-- Message search finds word forms (issue #48): "run" finds "running",
-- "offsites" finds "offsite". FTS5's `porter` tokenizer stems every word
-- (English Porter stemming, no stop words) as it is indexed and as it is
-- searched; PostgreSQL's 0006_search_word_forms.sql does the same, so
-- both backends find the same sessions. Titles are still matched as
-- written (a substring, any case), which keeps identifiers findable.
DROP TABLE transcript_search;

CREATE VIRTUAL TABLE transcript_search USING fts5(content, tokenize = 'porter unicode61');

-- The triggers of 0014 write to the table by name, so they fill this one.
INSERT INTO transcript_search (rowid, content)
SELECT rowid, COALESCE(json_extract(body, '$.content'), '')
FROM transcript_entries WHERE role IN ('user', 'assistant');
