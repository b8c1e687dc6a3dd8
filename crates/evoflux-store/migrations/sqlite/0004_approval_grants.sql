-- "Always" answers to an approval prompt: for the rest of one session, or
-- for every later session in the same workspace. A grant covers one tool,
-- and for a shell command one program (`cargo`), or one exact command line
-- when it is not a simple command.
CREATE TABLE approval_grants (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    scope TEXT NOT NULL CHECK (scope IN ('session', 'workspace')),
    -- The session id for a session grant; the workspace key otherwise.
    scope_key TEXT NOT NULL,
    tool TEXT NOT NULL,
    command TEXT,
    created_at_ms INTEGER NOT NULL
);
CREATE INDEX approval_grants_by_scope ON approval_grants (scope, scope_key);
