//! What lets several `evoflux serve` replicas share one database (see
//! `0011_replicas.sql` and `0012_lease_holders.sql`): turn leases, the
//! numbered events every replica's streams follow, and the liveness of
//! scheduled runs.
//!
//! A lease is taken with one atomic upsert: the row is inserted, or taken
//! over when it is free (expired, released) or already the caller's. Two
//! replicas racing for a session get one winner on either backend, without
//! a lock held across the turn.

use std::time::Duration;

use evoflux_core::ids::SessionId;
use sqlx::Row;

use crate::error::StoreError;
use crate::store::{Store, now_ms, to_u64};

/// The PostgreSQL channel a replica notifies after writing events, with
/// the session id as payload, so the others' streams wake at once.
pub const EVENTS_CHANNEL: &str = "evoflux_events";

/// The PostgreSQL channel a replica notifies after leaving a signal for
/// the turn another runs ([`Store::send_signal`]).
pub const SIGNALS_CHANNEL: &str = "evoflux_signals";

/// Events one `INSERT` writes: 3 parameters each, well under SQLite's
/// and PostgreSQL's limits on one statement's parameters.
const EVENTS_PER_INSERT: usize = 256;

/// What another replica announced. Closed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Announcement {
    /// New events of the session (or the session was deleted).
    Events(SessionId),
    /// A signal for the session's running turn.
    Signals(SessionId),
}

/// How long a scheduled run stays alive without its runner renewing it
/// ([`Store::renew_run`]); the runner renews it at a third of this.
pub const RUN_LEASE: Duration = Duration::from_secs(30);

/// The sessions other replicas wrote events to, as PostgreSQL announces
/// them ([`Store::event_notifications`]).
#[derive(Debug)]
pub struct EventNotifications(sqlx::postgres::PgListener);

impl EventNotifications {
    /// The next announcement. Waits; after a lost connection it
    /// reconnects, and the caller should look at everything once
    /// (announcements may have been missed): that is `Ok(None)`.
    pub async fn next(&mut self) -> Result<Option<Announcement>, StoreError> {
        loop {
            let Some(n) = self.0.try_recv().await? else {
                return Ok(None);
            };
            let Ok(session) = n.payload().parse() else {
                continue;
            };
            return Ok(Some(match n.channel() {
                SIGNALS_CHANNEL => Announcement::Signals(session),
                _ => Announcement::Events(session),
            }));
        }
    }
}

/// A lease held on a session's turns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Lease {
    /// How many times the session's lease was taken, this time included.
    /// A holder that last held epoch `e` and now gets `e + 1` knows no
    /// other replica ran the session in between.
    pub epoch: i64,
}

/// What a request to one replica asks of the turn another runs. Closed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Signal {
    /// A decision on the approval `call_id` waits for; `body` is the
    /// decision as the API took it (JSON), for the holder to read as the
    /// API does.
    Approval { call_id: String, body: String },
    /// Cancel the running turn.
    Cancel,
}

/// Who holds a session's lease.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaseHolder {
    /// The lease's key, as its holder wrote it: what it is renewed and
    /// released under, and what a refused process is told.
    pub holder: String,
    /// A turn runs under it and the lease has not expired.
    pub running: bool,
    /// The holder's name, the same for every lease it takes; `None` when it
    /// did not say (and for every lease taken before it was stored).
    pub name: Option<String>,
    /// The process that took it, when it said.
    pub process: Option<LeaseProcess>,
}

/// The process that takes a lease, as it describes itself: what tells
/// another process whether it still runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaseProcess {
    pub pid: u32,
    /// The machine's name, for people: two containers may share one, so
    /// it tells nothing of `pid`.
    pub host: String,
    /// Where `pid` is counted, when the process could tell.
    pub namespace: Option<PidNamespace>,
}

/// Where a process id names one process: a PID namespace of one boot of
/// one kernel. Two processes with equal ones see the same processes under
/// the same ids.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PidNamespace {
    /// The kernel's boot id (`/proc/sys/kernel/random/boot_id`), unique
    /// per boot of each machine.
    pub boot_id: String,
    /// The PID namespace's inode (`/proc/self/ns/pid`), unique among the
    /// namespaces that exist on the boot.
    pub inode: u64,
}

/// Who takes a lease ([`Store::acquire_lease`]). A bare holder string
/// (`"replica-1"`) says nothing else: nobody can tell whether it still
/// runs, and its lease is waited for until it expires.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LeaseClaim<'a> {
    /// The lease's key, unique per acquisition (see [`LeaseHolder::holder`]).
    pub holder: &'a str,
    /// See [`LeaseHolder::name`].
    pub name: Option<&'a str>,
    /// See [`LeaseHolder::process`].
    pub process: Option<&'a LeaseProcess>,
}

impl<'a> From<&'a str> for LeaseClaim<'a> {
    fn from(holder: &'a str) -> LeaseClaim<'a> {
        LeaseClaim {
            holder,
            name: None,
            process: None,
        }
    }
}

impl<'a> From<&'a String> for LeaseClaim<'a> {
    fn from(holder: &'a String) -> LeaseClaim<'a> {
        LeaseClaim::from(holder.as_str())
    }
}

/// A `session_leases` row's holder (`holder, turn_open, expires_at_ms` and
/// the `holder_*` columns).
fn holder_from_row(r: &sqlx::any::AnyRow) -> Result<LeaseHolder, StoreError> {
    let open: i64 = r.try_get("turn_open")?;
    let expires: i64 = r.try_get("expires_at_ms")?;
    let pid: Option<i64> = r.try_get("holder_pid")?;
    let host: Option<String> = r.try_get("holder_host")?;
    let boot_id: Option<String> = r.try_get("holder_boot_id")?;
    let inode: Option<i64> = r.try_get("holder_pid_ns")?;
    let namespace = match (boot_id, inode) {
        (Some(boot_id), Some(inode)) => Some(PidNamespace {
            boot_id,
            inode: to_u64("lease holder's PID namespace", inode)?,
        }),
        _ => None,
    };
    let process = match (pid, host) {
        (Some(pid), Some(host)) => Some(LeaseProcess {
            pid: u32::try_from(pid).map_err(|e| StoreError::corrupt("lease holder's pid", e))?,
            host,
            namespace,
        }),
        _ => None,
    };
    Ok(LeaseHolder {
        holder: r.try_get("holder")?,
        running: open == 1 && expires >= now_ms(),
        name: r.try_get("holder_name")?,
        process,
    })
}

/// One stored event of a session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredEvent {
    /// 1-based, gapless within a session.
    pub id: u64,
    /// The event's `type`.
    pub kind: String,
    /// The event as JSON.
    pub data: String,
}

/// A `session_events` row (`id, kind, data`).
fn event_from_row(r: &sqlx::any::AnyRow) -> Result<StoredEvent, StoreError> {
    Ok(StoredEvent {
        id: to_u64("event id", r.try_get("id")?)?,
        kind: r.try_get("kind")?,
        data: r.try_get("data")?,
    })
}

pub(crate) fn millis(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

impl Store {
    /// Announces `key` on PostgreSQL `channel` when `tx` commits, for the
    /// other replicas' listeners; nothing on SQLite, where one machine's
    /// followers poll.
    pub(crate) async fn announce(
        &self,
        tx: &mut sqlx::Transaction<'_, sqlx::Any>,
        channel: &str,
        key: &str,
    ) -> Result<(), StoreError> {
        match self.backend() {
            crate::Backend::Sqlite => Ok(()),
            crate::Backend::Postgres => {
                sqlx::query("SELECT pg_notify($1, $2)")
                    .bind(channel)
                    .bind(key)
                    .execute(&mut **tx)
                    .await?;
                Ok(())
            }
        }
    }

    /// Takes the lease on `session`'s turns for `holder` (a
    /// [`LeaseClaim`], or just its key) for `ttl`, with a turn open under
    /// it. `None` when another holder's lease is still valid.
    pub async fn acquire_lease<'a>(
        &self,
        session: SessionId,
        holder: impl Into<LeaseClaim<'a>>,
        ttl: Duration,
    ) -> Result<Option<Lease>, StoreError> {
        let claim: LeaseClaim<'a> = holder.into();
        let process = claim.process;
        // Both or neither: a namespace whose inode a column cannot hold
        // is not known.
        let namespace = process
            .and_then(|p| p.namespace.as_ref())
            .and_then(|ns| Some((ns.boot_id.as_str(), i64::try_from(ns.inode).ok()?)));
        let now = now_ms();
        let epoch: Option<i64> = sqlx::query_scalar(
            "INSERT INTO session_leases (session_id, holder, expires_at_ms, epoch, turn_open, \
             holder_name, holder_pid, holder_host, holder_boot_id, holder_pid_ns) \
             VALUES ($1, $2, $3, 1, 1, $5, $6, $7, $8, $9) \
             ON CONFLICT (session_id) DO UPDATE SET holder = excluded.holder, \
             expires_at_ms = excluded.expires_at_ms, epoch = session_leases.epoch + 1, \
             turn_open = 1, holder_name = excluded.holder_name, \
             holder_pid = excluded.holder_pid, holder_host = excluded.holder_host, \
             holder_boot_id = excluded.holder_boot_id, holder_pid_ns = excluded.holder_pid_ns \
             WHERE session_leases.expires_at_ms < $4 \
             OR (session_leases.holder = excluded.holder AND session_leases.turn_open = 0) \
             RETURNING epoch",
        )
        .bind(session.to_string())
        .bind(claim.holder)
        .bind(now.saturating_add(millis(ttl)))
        .bind(now)
        .bind(claim.name)
        .bind(process.map(|p| i64::from(p.pid)))
        .bind(process.map(|p| p.host.as_str()))
        .bind(namespace.map(|(boot_id, _)| boot_id))
        .bind(namespace.map(|(_, inode)| inode))
        .fetch_optional(self.pool())
        .await?;
        Ok(epoch.map(|epoch| Lease { epoch }))
    }

    /// Extends `holder`'s lease on `session` by `ttl` from now; `false`
    /// when it is no longer the holder's (it expired and was taken).
    pub async fn renew_lease(
        &self,
        session: SessionId,
        holder: &str,
        ttl: Duration,
    ) -> Result<bool, StoreError> {
        let done = sqlx::query(
            "UPDATE session_leases SET expires_at_ms = $1 \
             WHERE session_id = $2 AND holder = $3 AND turn_open = 1",
        )
        .bind(now_ms().saturating_add(millis(ttl)))
        .bind(session.to_string())
        .bind(holder)
        .execute(self.pool())
        .await?;
        Ok(done.rows_affected() == 1)
    }

    /// Ends `holder`'s turn on `session`: the lease is free for any
    /// replica's next turn. The epoch stays.
    pub async fn release_lease(&self, session: SessionId, holder: &str) -> Result<(), StoreError> {
        sqlx::query(
            "UPDATE session_leases SET expires_at_ms = 0, turn_open = 0 \
             WHERE session_id = $1 AND holder = $2",
        )
        .bind(session.to_string())
        .bind(holder)
        .execute(self.pool())
        .await?;
        Ok(())
    }

    /// The epoch of `session`'s lease (0 when it was never taken).
    pub async fn lease_epoch(&self, session: SessionId) -> Result<i64, StoreError> {
        let epoch: Option<i64> =
            sqlx::query_scalar("SELECT epoch FROM session_leases WHERE session_id = $1")
                .bind(session.to_string())
                .fetch_optional(self.pool())
                .await?;
        Ok(epoch.unwrap_or(0))
    }

    /// Who holds `session`'s lease, if it was ever taken.
    pub async fn lease_holder(
        &self,
        session: SessionId,
    ) -> Result<Option<LeaseHolder>, StoreError> {
        let row = sqlx::query(
            "SELECT holder, turn_open, expires_at_ms, holder_name, holder_pid, holder_host, \
             holder_boot_id, holder_pid_ns FROM session_leases WHERE session_id = $1",
        )
        .bind(session.to_string())
        .fetch_optional(self.pool())
        .await?;
        row.as_ref().map(holder_from_row).transpose()
    }

    /// Leaves `signal` for the replica running `session`'s turn (announced
    /// on PostgreSQL, as events are).
    pub async fn send_signal(&self, session: SessionId, signal: &Signal) -> Result<(), StoreError> {
        let (kind, call_id, body) = match signal {
            Signal::Approval { call_id, body } => {
                ("approval", Some(call_id.as_str()), Some(body.as_str()))
            }
            Signal::Cancel => ("cancel", None, None),
        };
        let key = session.to_string();
        let mut tx = self.pool().begin().await?;
        sqlx::query(
            "INSERT INTO session_signals (session_id, kind, call_id, body, created_at_ms) \
             VALUES ($1, $2, $3, $4, $5)",
        )
        .bind(&key)
        .bind(kind)
        .bind(call_id)
        .bind(body)
        .bind(now_ms())
        .execute(&mut *tx)
        .await?;
        self.announce(&mut tx, SIGNALS_CHANNEL, &key).await?;
        tx.commit().await?;
        Ok(())
    }

    /// Takes (and removes) the signals left for `session`, oldest first.
    pub async fn take_signals(&self, session: SessionId) -> Result<Vec<Signal>, StoreError> {
        let rows = sqlx::query(
            "DELETE FROM session_signals WHERE session_id = $1 RETURNING id, kind, call_id, body",
        )
        .bind(session.to_string())
        .fetch_all(self.pool())
        .await?;
        let mut signals: Vec<(i64, Signal)> = Vec::with_capacity(rows.len());
        for r in &rows {
            let kind: String = r.try_get("kind")?;
            let signal = match kind.as_str() {
                "approval" => Signal::Approval {
                    call_id: r
                        .try_get::<Option<String>, _>("call_id")?
                        .unwrap_or_default(),
                    body: r.try_get::<Option<String>, _>("body")?.unwrap_or_default(),
                },
                "cancel" => Signal::Cancel,
                other => {
                    return Err(StoreError::Corrupt {
                        what: "session signal kind",
                        detail: other.to_owned(),
                    });
                }
            };
            signals.push((r.try_get("id")?, signal));
        }
        signals.sort_by_key(|(id, _)| *id);
        Ok(signals.into_iter().map(|(_, s)| s).collect())
    }

    /// The last `limit` events of `session` whose type is one of `kinds`,
    /// newest first.
    pub async fn recent_events(
        &self,
        session: SessionId,
        kinds: &[&str],
        limit: u32,
    ) -> Result<Vec<StoredEvent>, StoreError> {
        if kinds.is_empty() {
            return Ok(Vec::new());
        }
        // `$3, $4, …`: one placeholder per kind, each bound below.
        let placeholders: Vec<String> = (0..kinds.len()).map(|i| format!("${}", i + 3)).collect();
        let sql = format!(
            "SELECT id, kind, data FROM session_events WHERE session_id = $1 \
             AND kind IN ({}) ORDER BY id DESC LIMIT $2",
            placeholders.join(", ")
        );
        let mut query = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(session.to_string())
            .bind(i64::from(limit));
        for kind in kinds {
            query = query.bind(*kind);
        }
        let rows = query.fetch_all(self.pool()).await?;
        rows.iter().map(event_from_row).collect()
    }

    /// Sessions whose turn was left open by a holder whose lease expired:
    /// the replica died mid-turn, and the turn is another's to finish.
    pub async fn orphaned_turns(&self) -> Result<Vec<SessionId>, StoreError> {
        let rows: Vec<String> = sqlx::query_scalar(
            "SELECT session_id FROM session_leases \
             WHERE turn_open = 1 AND expires_at_ms < $1 ORDER BY expires_at_ms",
        )
        .bind(now_ms())
        .fetch_all(self.pool())
        .await?;
        rows.iter()
            .map(|id| {
                id.parse()
                    .map_err(|e| StoreError::corrupt("lease session id", e))
            })
            .collect()
    }

    /// Appends events (`(kind, data)`) to `session`'s stream in one
    /// transaction and returns the id of the last. The ids are taken inside
    /// the transaction, after the session's row is locked, so replicas
    /// writing to one stream at once never take the same id. On PostgreSQL
    /// the other replicas are notified when it commits.
    pub async fn append_events(
        &self,
        session: SessionId,
        events: &[(&str, &str)],
    ) -> Result<u64, StoreError> {
        let last = self.append_event_batches(&[(session, events)]).await?;
        Ok(last.first().copied().unwrap_or(0))
    }

    /// [`Store::append_events`] for several sessions in one transaction
    /// (one commit for what a server's sessions emitted at once, rather
    /// than one each); returns the id of each batch's last event, in the
    /// order given. Rows are locked in session order, so two writers never
    /// wait on each other in a cycle. A session that is gone fails the
    /// whole transaction with [`StoreError::SessionNotFound`].
    pub async fn append_event_batches(
        &self,
        batches: &[(SessionId, &[(&str, &str)])],
    ) -> Result<Vec<u64>, StoreError> {
        let now = now_ms();
        let mut order: Vec<usize> = (0..batches.len()).collect();
        order.sort_by_key(|&i| batches[i].0);
        let mut last_ids = vec![0u64; batches.len()];
        let mut tx = self.pool().begin().await?;
        for i in order {
            let (session, events) = batches[i];
            let key = session.to_string();
            crate::store::touch(&mut tx, session, now).await?;
            // Many rows per statement, each numbered after the stream's
            // last inside the statement itself: a round trip per event (or
            // one to read the last id) is most of the cost of a small one.
            let mut last = 0i64;
            for chunk in events.chunks(EVENTS_PER_INSERT) {
                let rows: Vec<String> = (0..chunk.len())
                    .map(|r| {
                        let p = 3 + r * 2;
                        format!("({}, ${p}, ${})", r + 1, p + 1)
                    })
                    .collect();
                let sql = format!(
                    "INSERT INTO session_events (session_id, id, kind, data, created_at_ms) \
                     SELECT $1, m.last + v.column1, v.column2, v.column3, $2 \
                     FROM (SELECT COALESCE(MAX(id), 0) AS last FROM session_events \
                           WHERE session_id = $1) AS m, \
                          (VALUES {}) AS v \
                     RETURNING id",
                    rows.join(", ")
                );
                let mut query = sqlx::query_scalar::<_, i64>(sqlx::AssertSqlSafe(sql))
                    .bind(&key)
                    .bind(now);
                for (kind, data) in chunk {
                    query = query.bind(*kind).bind(*data);
                }
                let ids = query.fetch_all(&mut *tx).await?;
                last = ids.into_iter().fold(last, i64::max);
            }
            let id = match events.is_empty() {
                false => last,
                true => sqlx::query_scalar::<_, Option<i64>>(
                    "SELECT MAX(id) FROM session_events WHERE session_id = $1",
                )
                .bind(&key)
                .fetch_one(&mut *tx)
                .await?
                .unwrap_or(0),
            };
            self.announce(&mut tx, EVENTS_CHANNEL, &key).await?;
            last_ids[i] = to_u64("event id", id)?;
        }
        tx.commit().await?;
        Ok(last_ids)
    }

    /// Announcements of other replicas' events, on PostgreSQL; `None` on
    /// SQLite, where one machine's followers poll.
    pub async fn event_notifications(&self) -> Result<Option<EventNotifications>, StoreError> {
        match self.database() {
            crate::Database::Sqlite => Ok(None),
            crate::Database::Postgres(url) => {
                let mut listener = sqlx::postgres::PgListener::connect(url.expose()).await?;
                listener
                    .listen_all([EVENTS_CHANNEL, SIGNALS_CHANNEL])
                    .await?;
                Ok(Some(EventNotifications(listener)))
            }
        }
    }

    /// `session`'s events after `after`, oldest first, at most `limit`.
    pub async fn events_after(
        &self,
        session: SessionId,
        after: u64,
        limit: u32,
    ) -> Result<Vec<StoredEvent>, StoreError> {
        let rows = sqlx::query(
            "SELECT id, kind, data FROM session_events \
             WHERE session_id = $1 AND id > $2 ORDER BY id LIMIT $3",
        )
        .bind(session.to_string())
        .bind(i64::try_from(after).unwrap_or(i64::MAX))
        .bind(i64::from(limit))
        .fetch_all(self.pool())
        .await?;
        rows.iter().map(event_from_row).collect()
    }

    /// The id of `session`'s last stored event, 0 before the first.
    pub async fn last_event_id(&self, session: SessionId) -> Result<u64, StoreError> {
        let id: Option<i64> =
            sqlx::query_scalar("SELECT MAX(id) FROM session_events WHERE session_id = $1")
                .bind(session.to_string())
                .fetch_one(self.pool())
                .await?;
        to_u64("event id", id.unwrap_or(0))
    }

    /// Keeps scheduled run `run` alive for another [`RUN_LEASE`]: a
    /// replica that dies running it stops renewing, and the run is
    /// recorded interrupted ([`Store::interrupt_running_runs`]).
    pub async fn renew_run(&self, run: i64) -> Result<(), StoreError> {
        sqlx::query("UPDATE schedule_runs SET lease_expires_at_ms = $1 WHERE id = $2")
            .bind(now_ms().saturating_add(millis(RUN_LEASE)))
            .bind(run)
            .execute(self.pool())
            .await?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{NewSession, WorkspaceRequest};
    use evoflux_core::ids::Ids;

    #[tokio::test]
    async fn one_holder_at_a_time_until_its_lease_ends_or_expires() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open_with_ids(dir.path(), Ids::sequential())
            .await
            .unwrap();
        let s = store
            .create_session(NewSession {
                workspace: WorkspaceRequest::Work,
                lead: None,
                model: None,
                parent: None,
                graph_hash: None,
            })
            .await
            .unwrap();
        let long = Duration::from_secs(60);
        let a = store.acquire_lease(s.id, "a", long).await.unwrap().unwrap();
        assert_eq!(a.epoch, 1);
        assert_eq!(store.acquire_lease(s.id, "b", long).await.unwrap(), None);
        assert_eq!(
            store.acquire_lease(s.id, "a", long).await.unwrap(),
            None,
            "a turn is open: not even its holder starts a second one"
        );
        assert!(store.renew_lease(s.id, "a", long).await.unwrap());
        assert!(!store.renew_lease(s.id, "b", long).await.unwrap());
        store.release_lease(s.id, "a").await.unwrap();
        let b = store.acquire_lease(s.id, "b", long).await.unwrap().unwrap();
        assert_eq!(b.epoch, 2);
        assert!(store.orphaned_turns().await.unwrap().is_empty());
        // b dies: its lease runs out with the turn open.
        assert!(store.renew_lease(s.id, "b", Duration::ZERO).await.unwrap());
        tokio::time::sleep(Duration::from_millis(5)).await;
        assert_eq!(store.orphaned_turns().await.unwrap(), [s.id]);
        let a = store.acquire_lease(s.id, "a", long).await.unwrap().unwrap();
        assert_eq!(a.epoch, 3);
        assert!(!store.renew_lease(s.id, "b", long).await.unwrap());
    }
}
