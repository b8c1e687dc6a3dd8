-- What each model call was given, so a session can be exported as a
-- script and replayed against a later build (`evoflux sessions export`,
-- `evoflux sessions replay`). The transcript holds what was said; these
-- rows hold what only the request carried: the system prompt by section,
-- the tool list, and the messages since the previous reply as sent.
--
-- Parts are stored once by content: a session's system prompt and tools
-- are byte-stable between calls, so a long session adds a few rows here.
CREATE TABLE request_parts (
    sha256 TEXT PRIMARY KEY NOT NULL,
    -- JSON: the system sections, the tool definitions or the input messages.
    body   TEXT NOT NULL
);

CREATE TABLE model_requests (
    -- Global order of calls across sessions: a team's children interleave
    -- with their lead exactly as the provider saw them.
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id    TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    -- The date the session's clock gave the prompt (YYYY-MM-DD).
    day           TEXT NOT NULL,
    system_sha256 TEXT NOT NULL,
    tools_sha256  TEXT NOT NULL,
    input_sha256  TEXT NOT NULL,
    -- The user's text when this call is the first of a turn: what a replay
    -- types in again.
    turn_input    TEXT,
    -- The JSON Schema that turn's result had to match (`final_output`).
    turn_output_schema TEXT,
    -- The transcript entry of the reply.
    reply_seq     INTEGER NOT NULL,
    created_at_ms INTEGER NOT NULL
);

CREATE INDEX model_requests_session ON model_requests (session_id, id);

-- The git commit each repository of a session was at when it opened, so a
-- replay can check that state out again.
CREATE TABLE session_commits (
    session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    root       TEXT NOT NULL,
    git_commit TEXT NOT NULL,
    PRIMARY KEY (session_id, root)
);
