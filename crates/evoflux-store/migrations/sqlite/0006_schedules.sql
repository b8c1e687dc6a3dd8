-- The scheduler's durable state: when each schedule fires next, and every
-- occurrence it fired, skipped or missed. An occurrence is claimed by
-- inserting its run in the same transaction that moves the next run time,
-- and (schedule, occurrence, trigger) is unique, so a restart neither
-- fires one twice nor loses one.
CREATE TABLE schedule_state (
    name TEXT PRIMARY KEY,
    -- The trigger the next run was computed from (its JSON): a changed
    -- schedule starts over from the time it changed.
    trigger_key TEXT NOT NULL,
    next_run_at_ms INTEGER,
    updated_at_ms INTEGER NOT NULL
);
CREATE TABLE schedule_runs (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    name TEXT NOT NULL,
    occurrence_at_ms INTEGER NOT NULL,
    trigger TEXT NOT NULL CHECK (trigger IN ('scheduled', 'manual')),
    status TEXT NOT NULL CHECK (status IN ('queued', 'running', 'done', 'failed', 'skipped', 'missed', 'interrupted')),
    session_id TEXT,
    detail TEXT,
    created_at_ms INTEGER NOT NULL,
    finished_at_ms INTEGER,
    UNIQUE (name, occurrence_at_ms, trigger)
);
CREATE INDEX schedule_runs_by_name ON schedule_runs (name, id);
