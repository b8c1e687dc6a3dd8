-- Sessions a user channel's route continues: requests whose `session` key
-- renders the same (an issue number, a chat thread) go to the session the
-- first of them opened. A deleted session frees its key.
CREATE TABLE channel_threads (
    -- The route: `<METHOD> <path>` as the route plan writes it.
    route         TEXT NOT NULL,
    thread        TEXT NOT NULL,
    session_id    TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    created_at_ms INTEGER NOT NULL,
    PRIMARY KEY (route, thread)
);
