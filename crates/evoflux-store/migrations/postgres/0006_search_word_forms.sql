-- Message search finds word forms (SQLite's 0015_search_word_forms.sql):
-- "run" finds "running". `evoflux_words` is `simple` (every token as
-- written, lower-cased: numbers, identifiers, file names) except that
-- words are stemmed by the English Snowball stemmer, with no stop words,
-- which is what SQLite's FTS5 `porter` tokenizer does; a search for "the"
-- finds what it finds on SQLite. Titles are still matched as written (a
-- substring, any case).
CREATE TEXT SEARCH DICTIONARY evoflux_english_stem (TEMPLATE = snowball, Language = english);

CREATE TEXT SEARCH CONFIGURATION evoflux_words (COPY = simple);
ALTER TEXT SEARCH CONFIGURATION evoflux_words
    ALTER MAPPING FOR asciiword, asciihword, hword_asciipart, word, hword, hword_part
    WITH evoflux_english_stem;

DROP INDEX transcript_search;

CREATE INDEX transcript_search ON transcript_entries
USING GIN (to_tsvector('evoflux_words', COALESCE(body::jsonb ->> 'content', '')))
WHERE role IN ('user', 'assistant');
