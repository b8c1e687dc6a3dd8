-- The MCP tools a session activated through `connection_search` while its
-- granted tools were too many to send up front. This table is the one
-- durable record of them: a resumed session reads it back, and nothing
-- rebuilds the set from the transcript.
CREATE TABLE connection_tools (
    session_id      TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    -- The server's owner (`global`, or a plugin installation's label), its
    -- name, and the tool's name exactly as the server lists it: stable
    -- while model-visible names may change when other servers come and go.
    owner           TEXT NOT NULL,
    server          TEXT NOT NULL,
    tool            TEXT NOT NULL,
    activated_at_ms INTEGER NOT NULL,
    PRIMARY KEY (session_id, owner, server, tool)
);
