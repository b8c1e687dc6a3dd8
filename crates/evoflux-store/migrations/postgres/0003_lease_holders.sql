-- Who holds a session's lease, as data rather than as the text it is shown
-- as (SQLite's 0012_lease_holders.sql). `holder` stays the lease's key
-- (what it is renewed and released under) and what a refused process is
-- told; it is written from these.
--
-- `holder_name` is the holder's, the same for every lease it takes;
-- `holder_pid` and `holder_host` its process; `holder_boot_id` (the
-- kernel's boot id) and `holder_pid_ns` (its PID namespace's inode) where
-- that pid is counted: a process that finds both equal to its own can ask
-- the kernel whether the holder still runs. Either pair is null where it
-- was not known, as in every row from before: such a holder is never
-- taken for dead, and its lease expires.
ALTER TABLE session_leases ADD COLUMN holder_name TEXT;
ALTER TABLE session_leases ADD COLUMN holder_pid BIGINT;
ALTER TABLE session_leases ADD COLUMN holder_host TEXT;
ALTER TABLE session_leases ADD COLUMN holder_boot_id TEXT;
ALTER TABLE session_leases ADD COLUMN holder_pid_ns BIGINT;
