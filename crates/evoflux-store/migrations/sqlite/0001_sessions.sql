-- Durable sessions. Every row is written as it happens so that a killed
-- process resumes where it stopped; ids are UUIDv7 text, times are Unix ms.

CREATE TABLE sessions (
    id            TEXT PRIMARY KEY NOT NULL,
    mode          TEXT NOT NULL,
    -- JSON array of absolute paths: the Work folder, or the Coding repositories.
    workspace     TEXT NOT NULL,
    lead          TEXT,
    graph_hash    TEXT,
    created_at_ms INTEGER NOT NULL,
    updated_at_ms INTEGER NOT NULL
);

CREATE INDEX sessions_newest ON sessions (created_at_ms DESC, id DESC);

CREATE TABLE transcript_entries (
    session_id    TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    seq           INTEGER NOT NULL,
    role          TEXT NOT NULL,
    -- The message as JSON (evoflux-model's Message, tool calls included).
    body          TEXT NOT NULL,
    -- Artifact metadata a tool hook recorded for a tool result, as JSON.
    artifact      TEXT,
    created_at_ms INTEGER NOT NULL,
    PRIMARY KEY (session_id, seq)
);

CREATE TABLE pending_inputs (
    id             INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id     TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    tool_call_id   TEXT NOT NULL,
    -- The question as JSON (prompt text, options, schema: the harness decides).
    request        TEXT NOT NULL,
    answer         TEXT,
    created_at_ms  INTEGER NOT NULL,
    answered_at_ms INTEGER
);

CREATE INDEX pending_inputs_open ON pending_inputs (session_id, answered_at_ms);

CREATE TABLE usage_totals (
    session_id         TEXT PRIMARY KEY NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    requests           INTEGER NOT NULL DEFAULT 0,
    input_tokens       INTEGER NOT NULL DEFAULT 0,
    output_tokens      INTEGER NOT NULL DEFAULT 0,
    cache_read_tokens  INTEGER NOT NULL DEFAULT 0,
    cache_write_tokens INTEGER NOT NULL DEFAULT 0
);
