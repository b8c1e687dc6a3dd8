//! The scheduler's durable state (see `0006_schedules.sql`): the next run
//! time of each schedule and the history of its occurrences.

use evoflux_core::ids::SessionId;
use serde::{Deserialize, Serialize};
use sqlx::Row;

use crate::error::StoreError;
use crate::store::{Store, now_ms};

/// How a run came about. Closed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RunTrigger {
    /// An occurrence of the schedule's trigger.
    Scheduled,
    /// Someone asked for it (`schedule run-now`, the API).
    Manual,
}

impl RunTrigger {
    pub const fn as_str(self) -> &'static str {
        match self {
            RunTrigger::Scheduled => "scheduled",
            RunTrigger::Manual => "manual",
        }
    }

    fn parse(s: &str) -> Result<RunTrigger, StoreError> {
        match s {
            "scheduled" => Ok(RunTrigger::Scheduled),
            "manual" => Ok(RunTrigger::Manual),
            other => Err(StoreError::Corrupt {
                what: "schedule run trigger",
                detail: other.to_owned(),
            }),
        }
    }
}

/// Where a run stands. Closed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RunStatus {
    /// Waits for the schedule's previous run to end (`overlap = "queue"`).
    Queued,
    Running,
    /// The session's turn completed.
    Done,
    /// The session could not be opened or its turn failed.
    Failed,
    /// Not run: the previous run was still working (`overlap = "skip"`).
    Skipped,
    /// Not run: it passed while nothing ran the scheduler.
    Missed,
    /// Was running when the process that ran it stopped.
    Interrupted,
}

impl RunStatus {
    pub const fn as_str(self) -> &'static str {
        match self {
            RunStatus::Queued => "queued",
            RunStatus::Running => "running",
            RunStatus::Done => "done",
            RunStatus::Failed => "failed",
            RunStatus::Skipped => "skipped",
            RunStatus::Missed => "missed",
            RunStatus::Interrupted => "interrupted",
        }
    }

    /// Whether the run has ended (it gets a finish time).
    pub const fn is_final(self) -> bool {
        match self {
            RunStatus::Queued | RunStatus::Running => false,
            RunStatus::Done
            | RunStatus::Failed
            | RunStatus::Skipped
            | RunStatus::Missed
            | RunStatus::Interrupted => true,
        }
    }

    fn parse(s: &str) -> Result<RunStatus, StoreError> {
        Ok(match s {
            "queued" => RunStatus::Queued,
            "running" => RunStatus::Running,
            "done" => RunStatus::Done,
            "failed" => RunStatus::Failed,
            "skipped" => RunStatus::Skipped,
            "missed" => RunStatus::Missed,
            "interrupted" => RunStatus::Interrupted,
            other => {
                return Err(StoreError::Corrupt {
                    what: "schedule run status",
                    detail: other.to_owned(),
                });
            }
        })
    }
}

/// One occurrence of a schedule and what became of it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScheduleRun {
    pub id: i64,
    pub name: String,
    /// Unix milliseconds of the occurrence (of the request, for a manual
    /// run).
    pub occurrence_at_ms: i64,
    pub trigger: RunTrigger,
    pub status: RunStatus,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// Why it failed, was skipped or missed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    pub created_at_ms: i64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub finished_at_ms: Option<i64>,
}

/// A schedule's stored next run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScheduleState {
    pub trigger_key: String,
    pub next_run_at_ms: Option<i64>,
}

/// What claiming an occurrence records.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Claim<'a> {
    pub name: &'a str,
    pub occurrence_at_ms: i64,
    pub trigger: RunTrigger,
    pub status: RunStatus,
    pub detail: Option<String>,
}

/// When a run claimed or moved on now stops being alive unless renewed.
fn run_lease() -> i64 {
    now_ms().saturating_add(crate::replicas::millis(crate::replicas::RUN_LEASE))
}

impl Store {
    /// The stored next run of `name`, if the scheduler has seen it.
    pub async fn schedule_state(&self, name: &str) -> Result<Option<ScheduleState>, StoreError> {
        let row =
            sqlx::query("SELECT trigger_key, next_run_at_ms FROM schedule_state WHERE name = $1")
                .bind(name)
                .fetch_optional(self.pool())
                .await?;
        row.map(|r| {
            Ok(ScheduleState {
                trigger_key: r.try_get("trigger_key")?,
                next_run_at_ms: r.try_get("next_run_at_ms")?,
            })
        })
        .transpose()
    }

    /// Sets the next run of `name` (computed from `trigger_key`).
    pub async fn set_schedule_state(
        &self,
        name: &str,
        state: &ScheduleState,
    ) -> Result<(), StoreError> {
        sqlx::query(
            "INSERT INTO schedule_state (name, trigger_key, next_run_at_ms, updated_at_ms) \
             VALUES ($1, $2, $3, $4) ON CONFLICT (name) DO UPDATE SET \
             trigger_key = excluded.trigger_key, next_run_at_ms = excluded.next_run_at_ms, \
             updated_at_ms = excluded.updated_at_ms",
        )
        .bind(name)
        .bind(&state.trigger_key)
        .bind(state.next_run_at_ms)
        .bind(now_ms())
        .execute(self.pool())
        .await?;
        Ok(())
    }

    /// Forgets the next run of `name` (a disabled or removed schedule
    /// starts over when it returns).
    pub async fn clear_schedule_state(&self, name: &str) -> Result<(), StoreError> {
        sqlx::query("DELETE FROM schedule_state WHERE name = $1")
            .bind(name)
            .execute(self.pool())
            .await?;
        Ok(())
    }

    /// Records an occurrence and, in the same transaction, moves the
    /// schedule's next run to `next` when one is given. `None` when the
    /// occurrence was recorded before (by this or an earlier process):
    /// nothing changes then.
    pub async fn claim_occurrence(
        &self,
        claim: &Claim<'_>,
        next: Option<&ScheduleState>,
    ) -> Result<Option<i64>, StoreError> {
        let mut tx = self.pool().begin().await?;
        // The unique (name, occurrence, trigger) row is the claim: of two
        // schedulers (two replicas on one database) racing for the same
        // occurrence, exactly one insert returns an id.
        let inserted: Option<i64> = sqlx::query_scalar(
            "INSERT INTO schedule_runs (name, occurrence_at_ms, trigger, status, detail, \
             created_at_ms, finished_at_ms, lease_expires_at_ms) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8) \
             ON CONFLICT (name, occurrence_at_ms, trigger) DO NOTHING RETURNING id",
        )
        .bind(claim.name)
        .bind(claim.occurrence_at_ms)
        .bind(claim.trigger.as_str())
        .bind(claim.status.as_str())
        .bind(claim.detail.as_deref())
        .bind(now_ms())
        .bind(claim.status.is_final().then(now_ms))
        .bind(run_lease())
        .fetch_optional(&mut *tx)
        .await?;
        let Some(id) = inserted else {
            tx.rollback().await?;
            return Ok(None);
        };
        if let Some(next) = next {
            sqlx::query(
                "INSERT INTO schedule_state (name, trigger_key, next_run_at_ms, updated_at_ms) \
                 VALUES ($1, $2, $3, $4) ON CONFLICT (name) DO UPDATE SET \
                 trigger_key = excluded.trigger_key, next_run_at_ms = excluded.next_run_at_ms, \
                 updated_at_ms = excluded.updated_at_ms",
            )
            .bind(claim.name)
            .bind(&next.trigger_key)
            .bind(next.next_run_at_ms)
            .bind(now_ms())
            .execute(&mut *tx)
            .await?;
        }
        tx.commit().await?;
        Ok(Some(id))
    }

    /// Moves a run on: its session, its end.
    pub async fn update_run(
        &self,
        id: i64,
        status: RunStatus,
        session: Option<SessionId>,
        detail: Option<&str>,
    ) -> Result<(), StoreError> {
        let finished = status.is_final().then(now_ms);
        sqlx::query(
            "UPDATE schedule_runs SET status = $1, session_id = COALESCE($2, session_id), \
             detail = COALESCE($3, detail), finished_at_ms = $4, lease_expires_at_ms = $5 \
             WHERE id = $6",
        )
        .bind(status.as_str())
        .bind(session.map(|s| s.to_string()))
        .bind(detail)
        .bind(finished)
        .bind(run_lease())
        .bind(id)
        .execute(self.pool())
        .await?;
        Ok(())
    }

    /// The runs of `name`, newest first, at most `limit`.
    pub async fn schedule_runs(
        &self,
        name: &str,
        limit: u32,
    ) -> Result<Vec<ScheduleRun>, StoreError> {
        let rows = sqlx::query(
            "SELECT id, name, occurrence_at_ms, trigger, status, session_id, detail, \
             created_at_ms, finished_at_ms FROM schedule_runs WHERE name = $1 \
             ORDER BY id DESC LIMIT $2",
        )
        .bind(name)
        .bind(i64::from(limit))
        .fetch_all(self.pool())
        .await?;
        rows.iter()
            .map(|r| {
                Ok(ScheduleRun {
                    id: r.try_get("id")?,
                    name: r.try_get("name")?,
                    occurrence_at_ms: r.try_get("occurrence_at_ms")?,
                    trigger: RunTrigger::parse(&r.try_get::<String, _>("trigger")?)?,
                    status: RunStatus::parse(&r.try_get::<String, _>("status")?)?,
                    session_id: r.try_get("session_id")?,
                    detail: r.try_get("detail")?,
                    created_at_ms: r.try_get("created_at_ms")?,
                    finished_at_ms: r.try_get("finished_at_ms")?,
                })
            })
            .collect()
    }

    /// Whether a run of `name` is running anywhere (on any replica) and
    /// alive.
    pub async fn has_running_run(&self, name: &str) -> Result<bool, StoreError> {
        let n: i64 = sqlx::query_scalar(
            "SELECT COUNT(*) FROM schedule_runs WHERE name = $1 AND status = 'running' \
             AND lease_expires_at_ms >= $2",
        )
        .bind(name)
        .bind(now_ms())
        .fetch_one(self.pool())
        .await?;
        Ok(n > 0)
    }

    /// Marks every run left `running` by a process that stopped (its
    /// runner no longer renews it: see [`Store::renew_run`]) as
    /// `interrupted`; returns how many. A run another live replica works
    /// on is left alone.
    pub async fn interrupt_running_runs(&self) -> Result<u64, StoreError> {
        let now = now_ms();
        let done = sqlx::query(
            "UPDATE schedule_runs SET status = 'interrupted', finished_at_ms = $1 \
             WHERE status = 'running' \
             AND (lease_expires_at_ms IS NULL OR lease_expires_at_ms < $2)",
        )
        .bind(now)
        .bind(now)
        .execute(self.pool())
        .await?;
        Ok(done.rows_affected())
    }
}
