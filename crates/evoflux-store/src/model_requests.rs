//! What each model call was given: the system prompt by section, the tool
//! list and the messages since the previous reply, as sent. The transcript
//! keeps what was said; this keeps what only the request carried, so a
//! session can be exported as a script and replayed (the harness's
//! `replay` module reads it back).
//!
//! Parts are stored once by content hash: a session's system prompt and
//! tool list are byte-stable between calls, so a long session adds a row
//! per call and a handful of parts.

use evoflux_core::hash::sha256_hex;
use evoflux_core::ids::SessionId;
use evoflux_protocol::{Message, ToolDefinition};
use serde::{Deserialize, Serialize};
use sqlx::Row;

use crate::error::StoreError;
use crate::store::{Store, now_ms, to_i64, to_u64};

/// One section of a system prompt and the hook that wrote it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SystemPart {
    pub owner: String,
    pub text: String,
}

/// What one model call was given.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RequestParts {
    /// The date the session's clock put in the prompt (`YYYY-MM-DD`).
    pub day: String,
    pub system: Vec<SystemPart>,
    pub tools: Vec<ToolDefinition>,
    /// The messages after the last assistant message, as sent (tool results
    /// already projected, a user message as the model saw it).
    pub input: Vec<Message>,
    /// The user's text when the call is the first of a turn.
    pub turn_input: Option<String>,
    /// The schema that turn's result had to match, on its first call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn_output_schema: Option<serde_json::Value>,
    /// What shaped the prompt beyond these parts; empty for calls recorded
    /// before it was kept.
    #[serde(default, skip_serializing_if = "PromptShaping::is_unknown")]
    pub shaping: PromptShaping,
}

/// What shaped a call's prompt that the parts do not show: the same build
/// given the same facts makes the same prompt, so a replay sets each of
/// them again instead of taking its own (a scripted provider has no
/// context window, a replay's clock another date, a replay no resolver).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PromptShaping {
    /// The model the call went to, as `provider:model`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The provider's context window in tokens, when known: it sizes the
    /// skill catalog and the compaction threshold.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_window: Option<u64>,
    /// The bytes the skill catalog was given (from the context window).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub catalog_budget_bytes: Option<u64>,
    /// How the implicit skill resolver ran (`None`: the session had no
    /// skill runtime).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolver: Option<evoflux_core::config::ResolverMode>,
    /// The skill the resolver loaded for this call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolved: Option<String>,
}

impl PromptShaping {
    /// Nothing is known (a call recorded before these were kept).
    pub fn is_unknown(&self) -> bool {
        *self == PromptShaping::default()
    }
}

/// A recorded call: its parts, its place in the global order of calls and
/// the transcript entry of its reply.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordedRequest {
    /// Increases across every session of the store, so the calls of a team
    /// (a lead and its children) sort into the order they were made.
    pub order: u64,
    pub session_id: SessionId,
    pub parts: RequestParts,
    pub reply_seq: u64,
    /// The call's own tokens and cost (`requests` is 1); `None` for calls
    /// recorded before usage was kept per call.
    pub usage: Option<crate::Usage>,
}

impl Store {
    /// Records what a model call of `session` was given and the transcript
    /// entry its reply became.
    pub async fn record_model_request(
        &self,
        session: SessionId,
        parts: &RequestParts,
        reply_seq: u64,
        usage: &crate::Usage,
    ) -> Result<(), StoreError> {
        let mut tx = self.pool().begin().await?;
        insert_request(&mut tx, session, parts, reply_seq, usage).await?;
        tx.commit().await?;
        Ok(())
    }

    /// Records a model call whole, in one transaction: its `reply` joins the
    /// transcript, what the call was given is kept for replay, and its
    /// `usage` is added to the session's total (returned with the reply's
    /// entry). One commit instead of three keeps a turn's writes few.
    pub async fn record_model_call(
        &self,
        session: SessionId,
        reply: &Message,
        parts: &RequestParts,
        usage: crate::Usage,
    ) -> Result<RecordedCall, StoreError> {
        let now = now_ms();
        let mut tx = self.pool().begin().await?;
        crate::store::touch(&mut tx, session, now).await?;
        let entry = crate::store::insert_entry(&mut tx, session, reply, None, now).await?;
        insert_request(&mut tx, session, parts, entry.seq, &usage).await?;
        let total = crate::store::add_usage_in(&mut tx, session, usage).await?;
        tx.commit().await?;
        Ok(RecordedCall { entry, total })
    }

    /// The recorded calls of `sessions`, in the order they were made.
    pub async fn model_requests(
        &self,
        sessions: &[SessionId],
    ) -> Result<Vec<RecordedRequest>, StoreError> {
        let mut out = Vec::new();
        for session in sessions {
            let rows = sqlx::query(
                "SELECT r.id, r.day, s.body AS system, t.body AS tools, i.body AS input, \
                 r.turn_input, r.turn_output_schema, r.shaping, r.reply_seq, r.input_tokens, \
                 r.cached_input_tokens, r.cache_write_tokens, r.output_tokens, r.cost_picousd \
                 FROM model_requests r \
                 JOIN request_parts s ON s.sha256 = r.system_sha256 \
                 JOIN request_parts t ON t.sha256 = r.tools_sha256 \
                 JOIN request_parts i ON i.sha256 = r.input_sha256 \
                 WHERE r.session_id = $1 ORDER BY r.id",
            )
            .bind(session.to_string())
            .fetch_all(&self.pool)
            .await?;
            for row in rows {
                let system: String = row.try_get("system")?;
                let tools: String = row.try_get("tools")?;
                let input: String = row.try_get("input")?;
                let schema: Option<String> = row.try_get("turn_output_schema")?;
                let shaping: Option<String> = row.try_get("shaping")?;
                out.push(RecordedRequest {
                    order: to_u64("model request id", row.try_get("id")?)?,
                    session_id: *session,
                    parts: RequestParts {
                        day: row.try_get("day")?,
                        system: parse(&system, "request system")?,
                        tools: parse(&tools, "request tools")?,
                        input: parse(&input, "request input")?,
                        turn_input: row.try_get("turn_input")?,
                        turn_output_schema: schema
                            .map(|s| parse(&s, "request output schema"))
                            .transpose()?,
                        shaping: shaping
                            .map(|s| parse(&s, "request shaping"))
                            .transpose()?
                            .unwrap_or_default(),
                    },
                    reply_seq: to_u64("model request reply", row.try_get("reply_seq")?)?,
                    usage: call_usage(&row)?,
                });
            }
        }
        out.sort_by_key(|r| r.order);
        Ok(out)
    }

    /// The per-call usage of every recorded call of `session`, in order
    /// (calls recorded before usage was kept per call are left out).
    pub async fn call_usages(&self, session: SessionId) -> Result<Vec<crate::Usage>, StoreError> {
        let rows = sqlx::query(
            "SELECT input_tokens, cached_input_tokens, cache_write_tokens, output_tokens, \
             cost_picousd FROM model_requests WHERE session_id = $1 ORDER BY id",
        )
        .bind(session.to_string())
        .fetch_all(&self.pool)
        .await?;
        let mut out = Vec::new();
        for row in &rows {
            out.extend(call_usage(row)?);
        }
        Ok(out)
    }

    /// Records the git commit each repository root of `session` was at.
    pub async fn set_session_commits(
        &self,
        session: SessionId,
        commits: &[(std::path::PathBuf, String)],
    ) -> Result<(), StoreError> {
        let mut tx = self.pool.begin().await?;
        for (root, commit) in commits {
            sqlx::query(
                "INSERT INTO session_commits (session_id, root, git_commit) VALUES ($1, $2, $3) \
                 ON CONFLICT (session_id, root) DO UPDATE SET git_commit = excluded.git_commit",
            )
            .bind(session.to_string())
            .bind(root.to_string_lossy().as_ref())
            .bind(commit)
            .execute(&mut *tx)
            .await?;
        }
        tx.commit().await?;
        Ok(())
    }

    /// The commits [`Store::set_session_commits`] recorded, by root.
    pub async fn session_commits(
        &self,
        session: SessionId,
    ) -> Result<Vec<(std::path::PathBuf, String)>, StoreError> {
        let rows = sqlx::query(
            "SELECT root, git_commit FROM session_commits WHERE session_id = $1 ORDER BY root",
        )
        .bind(session.to_string())
        .fetch_all(&self.pool)
        .await?;
        rows.iter()
            .map(|r| {
                let root: String = r.try_get("root")?;
                Ok((root.into(), r.try_get("git_commit")?))
            })
            .collect()
    }
}

/// Removes the parts no recorded call refers to any more (after sessions
/// were deleted).
pub(crate) async fn drop_unused_parts(
    tx: &mut sqlx::Transaction<'_, sqlx::Any>,
) -> Result<(), StoreError> {
    sqlx::query(
        "DELETE FROM request_parts WHERE sha256 NOT IN ( \
         SELECT system_sha256 FROM model_requests UNION \
         SELECT tools_sha256 FROM model_requests UNION \
         SELECT input_sha256 FROM model_requests)",
    )
    .execute(&mut **tx)
    .await?;
    Ok(())
}

fn json<T: Serialize>(value: &T, what: &'static str) -> Result<String, StoreError> {
    serde_json::to_string(value).map_err(|e| StoreError::corrupt(what, e))
}

fn parse<T: for<'de> Deserialize<'de>>(text: &str, what: &'static str) -> Result<T, StoreError> {
    serde_json::from_str(text).map_err(|e| StoreError::corrupt(what, e))
}

/// One call's usage from its `model_requests` row; `None` for a row from
/// before usage was kept per call.
fn call_usage(row: &sqlx::any::AnyRow) -> Result<Option<crate::Usage>, StoreError> {
    let get = |col: &str| -> Result<Option<u64>, StoreError> {
        row.try_get::<Option<i64>, _>(col)?
            .map(|v| to_u64("model request usage", v))
            .transpose()
    };
    let Some(input_tokens) = get("input_tokens")? else {
        return Ok(None);
    };
    let cost = get("cost_picousd")?;
    Ok(Some(crate::Usage {
        requests: 1,
        input_tokens,
        cache_read_tokens: get("cached_input_tokens")?.unwrap_or(0),
        cache_write_tokens: get("cache_write_tokens")?.unwrap_or(0),
        output_tokens: get("output_tokens")?.unwrap_or(0),
        cost_usd: evoflux_core::price::Usd::from_picos(cost.unwrap_or(0)),
        unpriced_requests: u64::from(cost.is_none()),
        ..crate::Usage::default()
    }))
}

/// The outcome of [`Store::record_model_call`].
#[derive(Debug, Clone, PartialEq)]
pub struct RecordedCall {
    /// The reply's transcript entry.
    pub entry: crate::TranscriptEntry,
    /// The session's usage total with the call's added.
    pub total: crate::Usage,
}

/// Stores what a call was given (its parts once by hash) and the call's row,
/// inside the caller's transaction.
async fn insert_request(
    tx: &mut sqlx::Transaction<'_, sqlx::Any>,
    session: SessionId,
    parts: &RequestParts,
    reply_seq: u64,
    usage: &crate::Usage,
) -> Result<(), StoreError> {
    let bodies = [
        json(&parts.system, "request system")?,
        json(&parts.tools, "request tools")?,
        json(&parts.input, "request input")?,
    ];
    let hashes: Vec<String> = bodies
        .iter()
        .map(|b| sha256_hex(b.as_bytes()).to_string())
        .collect();
    // Every part in one statement; the same part twice (an empty input
    // beside an empty tool list) goes in once.
    let mut unique: Vec<(&str, &str)> = Vec::with_capacity(bodies.len());
    for (hash, body) in hashes.iter().zip(&bodies) {
        if !unique.iter().any(|(h, _)| *h == hash.as_str()) {
            unique.push((hash, body));
        }
    }
    let rows: Vec<String> = (0..unique.len())
        .map(|i| format!("(${}, ${})", 2 * i + 1, 2 * i + 2))
        .collect();
    let sql = format!(
        "INSERT INTO request_parts (sha256, body) VALUES {} ON CONFLICT (sha256) DO NOTHING",
        rows.join(", ")
    );
    let mut query = sqlx::query(sqlx::AssertSqlSafe(sql));
    for (hash, body) in unique {
        query = query.bind(hash).bind(body);
    }
    query.execute(&mut **tx).await?;
    sqlx::query(
        "INSERT INTO model_requests (session_id, day, system_sha256, tools_sha256, \
         input_sha256, turn_input, turn_output_schema, reply_seq, created_at_ms, \
         input_tokens, cached_input_tokens, cache_write_tokens, output_tokens, cost_picousd, \
         shaping) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)",
    )
    .bind(session.to_string())
    .bind(&parts.day)
    .bind(&hashes[0])
    .bind(&hashes[1])
    .bind(&hashes[2])
    .bind(&parts.turn_input)
    .bind(
        parts
            .turn_output_schema
            .as_ref()
            .map(|s| json(s, "request output schema"))
            .transpose()?,
    )
    .bind(i64::try_from(reply_seq).unwrap_or(i64::MAX))
    .bind(now_ms())
    .bind(to_i64(usage.input_tokens)?)
    .bind(to_i64(usage.cache_read_tokens)?)
    .bind(to_i64(usage.cache_write_tokens)?)
    .bind(to_i64(usage.output_tokens)?)
    .bind(
        (usage.unpriced_requests == 0)
            .then(|| to_i64(usage.cost_usd.picos()))
            .transpose()?,
    )
    .bind(
        (!parts.shaping.is_unknown())
            .then(|| json(&parts.shaping, "request shaping"))
            .transpose()?,
    )
    .execute(&mut **tx)
    .await?;
    Ok(())
}
