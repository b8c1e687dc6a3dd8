-- Several `evoflux serve` replicas on one database.

-- Which replica runs a session's turn, until when. A turn is executed
-- under its lease only; a lease that expires with its turn open (the
-- replica died) is a turn another replica finishes. `epoch` counts the
-- acquisitions, so a replica can tell that another ran the session since.
CREATE TABLE session_leases (
    session_id    TEXT PRIMARY KEY NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    holder        TEXT NOT NULL,
    expires_at_ms INTEGER NOT NULL,
    epoch         INTEGER NOT NULL,
    turn_open     INTEGER NOT NULL DEFAULT 0
);

CREATE INDEX session_leases_open ON session_leases (turn_open, expires_at_ms);

-- A session's events, numbered per session: what every replica's event
-- stream replays from (`Last-Event-ID`) and follows.
CREATE TABLE session_events (
    session_id    TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    id            INTEGER NOT NULL,
    kind          TEXT NOT NULL,
    data          TEXT NOT NULL,
    created_at_ms INTEGER NOT NULL,
    PRIMARY KEY (session_id, id)
);

-- A scheduled run is kept alive by the replica running it; one whose
-- lease passed was cut short.
ALTER TABLE schedule_runs ADD COLUMN lease_expires_at_ms INTEGER;

-- What a request to one replica asks of the turn another replica runs (an
-- approval's decision, a cancel): the holder takes them as they come.
CREATE TABLE session_signals (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id    TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    kind          TEXT NOT NULL CHECK (kind IN ('approval', 'cancel')),
    call_id       TEXT,
    body          TEXT,
    created_at_ms INTEGER NOT NULL
);

CREATE INDEX session_signals_by_session ON session_signals (session_id, id);
