//! The sessions protocol: create, message, stream, answer, approve, cancel,
//! resume, list and search, show (whole, or as a view opens it: a
//! snapshot and older pages), rename, fetch an artifact, delete. Thin
//! handlers over the harness's session engine ([`crate::live`]).

use std::convert::Infallible;
use std::path::PathBuf;
use std::sync::Arc;

use axum::Json;
use axum::body::Body;
use axum::extract::rejection::JsonRejection;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use evoflux_app::SessionOptions;
use evoflux_core::AppMode;
use evoflux_core::ids::SessionId;
use evoflux_harness::{
    ApprovalDecision, DEFAULT_PAGE, SessionRecord, SessionSnapshot, TranscriptPage,
};
use futures_util::Stream;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

use crate::error::{ApiError, body_error};
use crate::state::ServerState;

/// `POST /api/sessions`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateSession {
    /// `work` or `coding`; without it, `coding` when `workspaces` are
    /// named, else `work`.
    #[schema(value_type = Option<String>, example = "coding")]
    pub mode: Option<AppMode>,
    /// Coding repositories; each must be one of the server's workspaces
    /// or inside one. Default: the server's first workspace.
    #[serde(default)]
    #[schema(value_type = Vec<String>)]
    pub workspaces: Vec<PathBuf>,
    /// The lead agent (default: the mode's default lead).
    pub lead: Option<String>,
    /// `provider:model` (default: the agent's, else config.toml's).
    pub model: Option<String>,
    /// A first message: the session starts its first turn at once.
    pub message: Option<String>,
    /// `webbridge` tags the conversation for the browser surface: only MCP
    /// servers that declare `webbridge-safe` are offered (default
    /// `standard`). Kept with the session.
    #[schema(value_type = Option<String>, example = "webbridge")]
    pub surface: Option<evoflux_store::SessionSurface>,
}

/// A session the server opened.
#[derive(Debug, Serialize, ToSchema)]
pub struct SessionCreated {
    pub session_id: String,
    #[schema(value_type = String)]
    pub mode: AppMode,
    #[schema(value_type = Vec<String>)]
    pub workspace: Vec<PathBuf>,
    pub lead: Option<String>,
    pub model: String,
    /// The surface the conversation is tagged for (`standard` or
    /// `webbridge`).
    #[schema(value_type = String)]
    pub surface: evoflux_store::SessionSurface,
    /// Whether a first turn started.
    pub turn_started: bool,
    /// Problems found while opening that did not stop it.
    #[schema(value_type = Vec<Object>)]
    pub diagnostics: Value,
}

/// `POST /api/sessions/{id}/messages` and `/input`: a message, or the
/// answer to the agent's open question.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TextBody {
    pub text: String,
}

/// `POST /api/sessions/{id}/resume`.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ResumeBody {
    /// A new message to run at once.
    pub message: Option<String>,
    /// Continue a turn the process stopped in the middle of.
    #[serde(default)]
    pub continue_turn: bool,
}

/// `POST /api/sessions/{id}/approvals/{call_id}`.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ApprovalBody {
    pub decision: Decision,
    /// Why, when denying: the model reads it.
    pub reason: Option<String>,
}

impl ApprovalBody {
    /// The harness's decision: what this replica, or the one running the
    /// turn when the request came to another, applies.
    pub fn decision(self) -> ApprovalDecision {
        match self.decision {
            Decision::Approve => ApprovalDecision::Approved,
            Decision::ApproveForSession => ApprovalDecision::ApprovedForSession,
            Decision::ApproveForWorkspace => ApprovalDecision::ApprovedForWorkspace,
            Decision::Deny => ApprovalDecision::Denied {
                reason: self
                    .reason
                    .unwrap_or_else(|| "the user denied this call".to_owned()),
            },
        }
    }
}

/// `POST /api/sessions/{id}/elicitations/{elicitation_id}`: the user's
/// answer to an MCP server's form.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ElicitationBody {
    pub action: ElicitationChoice,
    /// With `accept`: the fields, which must fit the form's schema.
    #[serde(default)]
    pub content: Option<serde_json::Map<String, serde_json::Value>>,
}

/// MCP's three answers to a form.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ElicitationChoice {
    Accept,
    Decline,
    Cancel,
}

impl ElicitationBody {
    fn answer(self) -> evoflux_harness::approval::ElicitationAnswer {
        use evoflux_harness::approval::ElicitationAnswer as A;
        match self.action {
            ElicitationChoice::Accept => A::Accept {
                content: self.content.unwrap_or_default(),
            },
            ElicitationChoice::Decline => A::Decline { reason: None },
            ElicitationChoice::Cancel => A::Cancel,
        }
    }
}

/// An answer to an approval request.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    Approve,
    ApproveForSession,
    ApproveForWorkspace,
    Deny,
}

/// A request was accepted; its effects arrive as events.
#[derive(Debug, Serialize, ToSchema)]
pub struct Accepted {
    pub session_id: String,
    /// The id of the last event logged when the request was accepted:
    /// stream from it to see what it caused.
    pub after_event: u64,
}

/// One session of `GET /api/sessions`.
#[derive(Debug, Serialize, ToSchema)]
pub struct SessionSummary {
    #[schema(value_type = Object)]
    pub session: Value,
    /// Open in this server (its events can be streamed without resuming).
    pub live: bool,
    /// A turn is running.
    pub busy: bool,
    /// Tokens, model calls and cost, with every session its dispatches
    /// opened (as `GET /api/sessions/{id}` reports `usage_with_children`).
    #[schema(value_type = Object)]
    pub usage: Value,
}

/// `GET /api/sessions/{id}/events` query.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct EventsQuery {
    /// Replay events after this id (what `Last-Event-ID` says, for clients
    /// that cannot set headers).
    pub after: Option<u64>,
}

/// `GET /api/sessions/{id}/artifact` query.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct ArtifactQuery {
    /// The artifact's locator: the `artifact` path an event's or the
    /// transcript's command metadata names.
    #[param(value_type = String)]
    pub path: PathBuf,
}

pub(crate) fn session_id(raw: &str) -> Result<SessionId, ApiError> {
    raw.parse().map_err(|_| {
        ApiError::bad_request(
            "server/session-id-invalid",
            format!("`{raw}` is not a session id"),
        )
        .field("id")
    })
}

/// Coding repositories must be the server's workspaces or inside one.
pub(crate) fn authorized(
    state: &ServerState,
    requested: &[PathBuf],
) -> Result<Vec<PathBuf>, ApiError> {
    if requested.is_empty() {
        return Ok(state.workspaces.iter().take(1).cloned().collect());
    }
    requested
        .iter()
        .map(|p| {
            let real = std::fs::canonicalize(p).map_err(|e| {
                ApiError::new(
                    StatusCode::UNPROCESSABLE_ENTITY,
                    "server/workspace-invalid",
                    format!("workspace `{}`: {e}", p.display()),
                )
                .field("workspaces")
            })?;
            if state.workspaces.iter().any(|w| real.starts_with(w)) {
                Ok(real)
            } else {
                Err(ApiError::new(
                    StatusCode::FORBIDDEN,
                    "server/workspace-not-served",
                    format!(
                        "`{}` is not inside one of this server's workspaces; a server serves \
                         only the workspaces it was started with",
                        p.display()
                    ),
                )
                .field("workspaces"))
            }
        })
        .collect()
}

#[utoipa::path(post, path = "/api/sessions", operation_id = "create_session", tag = "sessions", request_body = CreateSession,
    responses(
        (status = 201, description = "The session is open", body = SessionCreated),
        (status = 403, description = "A workspace the server does not serve", body = ApiError),
        (status = 422, description = "The request cannot open a session", body = ApiError)
    ))]
pub async fn create(
    State(state): State<Arc<ServerState>>,
    body: Result<Json<CreateSession>, JsonRejection>,
) -> Result<(StatusCode, Json<SessionCreated>), ApiError> {
    let Json(body) = body.map_err(body_error)?;
    let mode = SessionOptions {
        mode: body.mode,
        workspaces: body.workspaces.clone(),
        ..SessionOptions::default()
    }
    .new_session_mode();
    let workspaces = match mode {
        AppMode::Coding => authorized(&state, &body.workspaces)?,
        AppMode::Work if body.workspaces.is_empty() => Vec::new(),
        AppMode::Work => {
            return Err(ApiError::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "server/workspace-in-work-mode",
                "a Work session works in its own folder; name workspaces only in Coding mode",
            )
            .field("workspaces"));
        }
    };
    let opened = state
        .sessions
        .open(SessionOptions {
            mode: Some(mode),
            workspaces,
            lead: body.lead,
            model: body.model,
            resume: None,
            limits: Default::default(),
        })
        .await?;
    let surface = body.surface.unwrap_or_default();
    let mut diagnostics = opened.diagnostics;
    // Tagged before the first turn, so its first model call already
    // offers only what the surface allows; each hidden server says why.
    if surface != opened.session.surface {
        for hidden in opened.live.set_surface(surface).await? {
            diagnostics.push(hidden);
        }
    }
    let turn_started = match body.message {
        Some(m) => {
            opened.live.start_turn(Some(m)).await?;
            true
        }
        None => false,
    };
    Ok((
        StatusCode::CREATED,
        Json(SessionCreated {
            session_id: opened.session.id.to_string(),
            mode: opened.session.mode(),
            workspace: opened.session.workspace.roots().to_vec(),
            lead: opened.session.lead.clone(),
            model: opened.model,
            surface,
            turn_started,
            diagnostics: diagnostics.to_json(),
        }),
    ))
}

/// `GET /api/sessions` query.
#[derive(Debug, Default, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct ListQuery {
    /// Search: sessions whose title holds this text, or whose user and
    /// model messages hold each of its words (children included, flat).
    pub q: Option<String>,
    /// At most this many sessions (top-level ones without `q`; each comes
    /// with its children), at most 500. Default: every one.
    pub limit: Option<u32>,
    /// The next page: `<updated_at_ms>:<id>` of the last session of the
    /// previous page (the last top-level one without `q`).
    pub before: Option<String>,
    /// Only `work` or only `coding` sessions.
    #[param(value_type = Option<String>)]
    pub mode: Option<AppMode>,
}

#[utoipa::path(get, path = "/api/sessions", operation_id = "list_sessions", tag = "sessions",
    params(ListQuery),
    responses(
        (status = 200, description = "Sessions by last activity, each top-level one followed by its children (or what a search found)", body = Vec<SessionSummary>),
        (status = 400, description = "`before` is not a cursor", body = ApiError)
    ))]
pub async fn list(
    State(state): State<Arc<ServerState>>,
    Query(query): Query<ListQuery>,
) -> Result<Json<Vec<SessionSummary>>, ApiError> {
    let query = evoflux_store::SessionQuery {
        search: query.q,
        limit: query.limit,
        before: query.before.as_deref().map(str::parse).transpose()?,
        mode: query.mode,
    };
    let sessions = evoflux_harness::SessionSummary::find(&state.store, &query).await?;
    Ok(Json(
        sessions
            .into_iter()
            .map(|s| {
                let live = state.sessions.peek(s.session.id);
                SessionSummary {
                    live: live.is_some(),
                    busy: live.is_some_and(|l| l.is_busy()),
                    session: serde_json::to_value(&s.session).unwrap_or(Value::Null),
                    usage: serde_json::to_value(s.usage_with_children).unwrap_or(Value::Null),
                }
            })
            .collect(),
    ))
}

#[utoipa::path(get, path = "/api/sessions/{id}", operation_id = "show_session", tag = "sessions",
    params(("id" = String, Path, description = "The session id")),
    responses(
        (status = 200, description = "The session, its transcript, open questions, usage and children", body = Object),
        (status = 404, description = "No such session", body = ApiError)
    ))]
pub async fn show(
    State(state): State<Arc<ServerState>>,
    Path(id): Path<String>,
) -> Result<Json<ShownSession>, ApiError> {
    let id = session_id(&id)?;
    let store = &state.store;
    let record = SessionRecord::load(store, id).await?;
    let live = state.sessions.peek(id);
    Ok(Json(ShownSession {
        mcp_hidden: mcp_hidden(live.as_deref(), record.session.surface).await,
        record,
        live: live.is_some(),
        busy: live.is_some_and(|l| l.is_busy()),
    }))
}

/// The MCP servers an open session's surface hides, each with why. Asked
/// of an idle session in a WebBridge conversation only: a standard one
/// hides nothing, a running turn is not waited for, and a session not
/// open here has no servers to hide.
async fn mcp_hidden(
    live: Option<&crate::live::LiveSession>,
    surface: evoflux_store::SessionSurface,
) -> Vec<evoflux_core::Diagnostic> {
    match live {
        Some(l) if !surface.is_standard() && !l.is_busy() => {
            l.mcp_hidden().await.unwrap_or_default()
        }
        Some(_) | None => Vec::new(),
    }
}

/// `GET /api/sessions/{id}`: the stored session and whether it is open
/// here, so a page showing it needs no second request (the whole list) to
/// know whether to follow its events.
#[derive(Debug, Serialize)]
pub struct ShownSession {
    #[serde(flatten)]
    pub record: SessionRecord,
    /// Open in this server (its events can be streamed without resuming).
    pub live: bool,
    /// A turn is running.
    pub busy: bool,
    /// While it is open here and idle: the MCP servers its surface hides,
    /// each a diagnostic saying why (`mcp/webbridge-hidden`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub mcp_hidden: Vec<evoflux_core::Diagnostic>,
}

/// `GET /api/sessions/{id}/snapshot` query.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct SnapshotQuery {
    /// At most this many transcript entries (default 120, at most 500).
    pub limit: Option<u32>,
}

/// `GET /api/sessions/{id}/transcript` query.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct TranscriptQuery {
    /// Entries before this one: a snapshot's or a page's `earlier`.
    pub before: u64,
    /// At most this many entries (default 120, at most 500).
    pub limit: Option<u32>,
}

/// `GET /api/sessions/{id}/snapshot`: what a view renders first.
#[derive(Debug, Serialize)]
pub struct ShownSnapshot {
    #[serde(flatten)]
    pub snapshot: SessionSnapshot,
    /// Open in this server (its events can be streamed without resuming).
    pub live: bool,
    /// A turn is running.
    pub busy: bool,
    /// As `GET /api/sessions/{id}` shows it.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub mcp_hidden: Vec<evoflux_core::Diagnostic>,
}

#[utoipa::path(get, path = "/api/sessions/{id}/snapshot", operation_id = "session_snapshot", tag = "sessions",
    params(("id" = String, Path, description = "The session id"), SnapshotQuery),
    responses(
        (status = 200, description = "The session as a view opens it: the newest stored transcript entries before its last turn (`transcript`, with `earlier` when older ones exist), open questions the events do not repeat, usage, children, and `after_event`: stream the events after it for the last turn (running or not) and what follows", body = Object),
        (status = 404, description = "No such session", body = ApiError)
    ))]
pub async fn snapshot(
    State(state): State<Arc<ServerState>>,
    Path(id): Path<String>,
    Query(query): Query<SnapshotQuery>,
) -> Result<Json<ShownSnapshot>, ApiError> {
    let id = session_id(&id)?;
    // What this replica queued for the session is stored first, so the
    // snapshot and the events after it meet without a gap.
    state.sessions.flush_events(id).await;
    let snapshot =
        SessionSnapshot::load(&state.store, id, query.limit.unwrap_or(DEFAULT_PAGE)).await?;
    let live = state.sessions.peek(id);
    Ok(Json(ShownSnapshot {
        mcp_hidden: mcp_hidden(live.as_deref(), snapshot.session.surface).await,
        snapshot,
        live: live.is_some(),
        busy: live.is_some_and(|l| l.is_busy()),
    }))
}

#[utoipa::path(get, path = "/api/sessions/{id}/transcript", operation_id = "session_transcript", tag = "sessions",
    params(("id" = String, Path, description = "The session id"), TranscriptQuery),
    responses(
        (status = 200, description = "Older history: up to `limit` entries before `before`, in order, never starting with a tool result cut off from its call; `earlier` when older ones exist", body = Object),
        (status = 404, description = "No such session", body = ApiError)
    ))]
pub async fn transcript(
    State(state): State<Arc<ServerState>>,
    Path(id): Path<String>,
    Query(query): Query<TranscriptQuery>,
) -> Result<Json<TranscriptPage>, ApiError> {
    let id = session_id(&id)?;
    let page = TranscriptPage::load(
        &state.store,
        id,
        query.before,
        query.limit.unwrap_or(DEFAULT_PAGE),
    )
    .await?;
    Ok(Json(page))
}

#[utoipa::path(get, path = "/api/sessions/{id}/commands", operation_id = "session_commands", tag = "sessions",
    params(("id" = String, Path, description = "The session id")),
    responses(
        (status = 200, description = "The prompt commands the user can type as `/name args` in this session (opened if it is not): `name`, `description`, `argument_hint` and `source` (`claude_command` or `codex_prompt` with `path`, `mcp_prompt` with `server` and `prompt`)", body = Object),
        (status = 404, description = "No such session", body = ApiError)
    ))]
pub async fn commands(
    State(state): State<Arc<ServerState>>,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let id = session_id(&id)?;
    let live = state.sessions.live_or_resume(id).await?;
    let commands = live.prompt_commands().await?;
    Ok(Json(serde_json::json!({ "items": commands })))
}

/// `POST /api/sessions/{id}/attachments` query.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct AttachQuery {
    /// The file's name; the next free `name (2).ext` when it is taken.
    pub name: String,
}

#[utoipa::path(post, path = "/api/sessions/{id}/attachments", operation_id = "attach_file", tag = "sessions",
    params(("id" = String, Path, description = "The session id"), AttachQuery),
    request_body(content = String, content_type = "application/octet-stream", description = "The file's bytes"),
    responses(
        (status = 201, description = "Written into the Work session's folder: `name` (the one asked for, or the next free one), `path`, `bytes`", body = Object),
        (status = 400, description = "Not a file name (`attach/name-invalid`)", body = ApiError),
        (status = 404, description = "No such session, or its folder is gone", body = ApiError),
        (status = 409, description = "A Coding session (`attach/not-work-session`)", body = ApiError),
        (status = 413, description = "Larger than 25 MiB (`attach/too-large`)", body = ApiError)
    ))]
pub async fn attach(
    State(state): State<Arc<ServerState>>,
    Path(id): Path<String>,
    Query(query): Query<AttachQuery>,
    body: axum::body::Bytes,
) -> Result<(StatusCode, Json<evoflux_app::attachments::Attached>), ApiError> {
    use evoflux_app::attachments::{AttachError, attach};
    let id = session_id(&id)?;
    let session = state.store.load(id).await?;
    let written =
        tokio::task::spawn_blocking(move || attach(&session.workspace, &query.name, &body))
            .await
            .map_err(|e| ApiError::internal("attach/write-failed", e.to_string()))?;
    match written {
        Ok(attached) => Ok((StatusCode::CREATED, Json(attached))),
        Err(e) => {
            let status = match &e {
                AttachError::NotWork => StatusCode::CONFLICT,
                AttachError::Name { .. } => StatusCode::BAD_REQUEST,
                AttachError::TooLarge { .. } => StatusCode::PAYLOAD_TOO_LARGE,
                AttachError::FolderMissing(_) => StatusCode::NOT_FOUND,
                AttachError::Io { .. } => StatusCode::INTERNAL_SERVER_ERROR,
            };
            let error = ApiError::new(status, e.code(), e.to_string());
            Err(match e {
                AttachError::Name { .. } => error.field("name"),
                _ => error,
            })
        }
    }
}

/// `PATCH /api/sessions/{id}`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RenameSession {
    /// The new title: one line, at most 120 characters (longer is cut).
    pub title: String,
}

#[utoipa::path(patch, path = "/api/sessions/{id}", operation_id = "rename_session", tag = "sessions",
    request_body = RenameSession,
    params(("id" = String, Path, description = "The session id")),
    responses(
        (status = 200, description = "The renamed session", body = Object),
        (status = 404, description = "No such session", body = ApiError),
        (status = 422, description = "The title is blank", body = ApiError)
    ))]
pub async fn rename(
    State(state): State<Arc<ServerState>>,
    Path(id): Path<String>,
    body: Result<Json<RenameSession>, JsonRejection>,
) -> Result<Json<evoflux_store::Session>, ApiError> {
    let id = session_id(&id)?;
    let Json(body) = body.map_err(body_error)?;
    Ok(Json(state.store.rename_session(id, &body.title).await?))
}

#[utoipa::path(delete, path = "/api/sessions/{id}", operation_id = "delete_session", tag = "sessions",
    params(("id" = String, Path, description = "The session id")),
    responses(
        (status = 204, description = "Deleted, with its children and artifacts"),
        (status = 404, description = "No such session", body = ApiError)
    ))]
pub async fn delete(
    State(state): State<Arc<ServerState>>,
    Path(id): Path<String>,
) -> Result<StatusCode, ApiError> {
    let id = session_id(&id)?;
    let store = &state.store;
    // Stop the live ones before their rows go.
    for s in store.session_tree(id).await? {
        state.sessions.stop(s.id).await;
    }
    // Rows, folders and objects in the artifact store go together.
    for s in store.delete_session(id).await? {
        // Its streams here end now; on other replicas when the store's
        // announcement reaches them.
        state.sessions.bus().wake(s);
    }
    Ok(StatusCode::NO_CONTENT)
}

#[utoipa::path(post, path = "/api/sessions/{id}/messages", tag = "sessions", request_body = TextBody,
    params(("id" = String, Path, description = "The session id")),
    responses(
        (status = 202, description = "The turn started; follow the event stream", body = Accepted),
        (status = 404, description = "No such session", body = ApiError),
        (status = 409, description = "A turn is running", body = ApiError)
    ))]
pub async fn message(
    State(state): State<Arc<ServerState>>,
    Path(id): Path<String>,
    body: Result<Json<TextBody>, JsonRejection>,
) -> Result<(StatusCode, Json<Accepted>), ApiError> {
    let id = session_id(&id)?;
    let Json(body) = body.map_err(body_error)?;
    if body.text.trim().is_empty() {
        return Err(ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "server/message-empty",
            "the message is empty",
        )
        .field("text"));
    }
    let live = state.sessions.live_or_resume(id).await?;
    let after = state.sessions.last_event(id).await?;
    live.start_turn(Some(body.text)).await?;
    Ok(accepted(id, after))
}

fn accepted(id: SessionId, after_event: u64) -> (StatusCode, Json<Accepted>) {
    (
        StatusCode::ACCEPTED,
        Json(Accepted {
            session_id: id.to_string(),
            after_event,
        }),
    )
}

#[utoipa::path(post, path = "/api/sessions/{id}/input", tag = "sessions", request_body = TextBody,
    params(("id" = String, Path, description = "The session id")),
    responses(
        (status = 202, description = "The answer was taken; the turn goes on", body = Accepted),
        (status = 409, description = "The agent asked nothing, or a turn is running", body = ApiError)
    ))]
pub async fn answer(
    State(state): State<Arc<ServerState>>,
    Path(id): Path<String>,
    body: Result<Json<TextBody>, JsonRejection>,
) -> Result<(StatusCode, Json<Accepted>), ApiError> {
    let id = session_id(&id)?;
    let Json(body) = body.map_err(body_error)?;
    let store = &state.store;
    store.load(id).await?;
    if store.open_pending_inputs(id).await?.is_empty() {
        return Err(ApiError::conflict(
            "session/no-open-question",
            "the agent has asked nothing; send a message instead",
        ));
    }
    let live = state.sessions.live_or_resume(id).await?;
    let after = state.sessions.last_event(id).await?;
    live.start_turn(Some(body.text)).await?;
    Ok(accepted(id, after))
}

#[utoipa::path(post, path = "/api/sessions/{id}/elicitations/{elicitation_id}", tag = "sessions", request_body = ElicitationBody,
    params(("id" = String, Path, description = "The session id"), ("elicitation_id" = String, Path, description = "The form's id, from `elicitation_requested`")),
    responses(
        (status = 202, description = "Answered; the MCP server reads it", body = Accepted),
        (status = 400, description = "The content does not fit the form's schema (`session/elicitation-invalid`); the form still waits", body = ApiError),
        (status = 404, description = "No form waits under that id in a session this server runs", body = ApiError)
    ))]
pub async fn answer_elicitation(
    State(state): State<Arc<ServerState>>,
    Path((id, elicitation_id)): Path<(String, String)>,
    body: Result<Json<ElicitationBody>, JsonRejection>,
) -> Result<(StatusCode, Json<Accepted>), ApiError> {
    let id = session_id(&id)?;
    let Json(body) = body.map_err(body_error)?;
    let after = state.sessions.last_event(id).await?;
    // A form is answered where its turn runs: the call waits on this
    // server's connection to the MCP server.
    let Some(live) = state.sessions.get(id) else {
        return Err(ApiError::not_found(
            "session/no-pending-elicitation",
            format!("no form `{elicitation_id}` waits in a session this server runs"),
        )
        .field("elicitation_id"));
    };
    live.answer_elicitation(&elicitation_id, body.answer())?;
    Ok(accepted(id, after))
}

#[utoipa::path(post, path = "/api/sessions/{id}/approvals/{call_id}", tag = "sessions", request_body = ApprovalBody,
    params(("id" = String, Path, description = "The session id"), ("call_id" = String, Path, description = "The tool call waiting for approval")),
    responses(
        (status = 202, description = "Decided; the call runs or is refused", body = Accepted),
        (status = 404, description = "Nothing waits for approval under that call id", body = ApiError)
    ))]
pub async fn approve(
    State(state): State<Arc<ServerState>>,
    Path((id, call_id)): Path<(String, String)>,
    body: Result<Json<ApprovalBody>, JsonRejection>,
) -> Result<(StatusCode, Json<Accepted>), ApiError> {
    let id = session_id(&id)?;
    let Json(body) = body.map_err(body_error)?;
    let none_waits = || {
        ApiError::not_found(
            "session/no-pending-approval",
            format!("no call `{call_id}` waits for approval"),
        )
        .field("call_id")
    };
    let after = state.sessions.last_event(id).await?;
    if let Some(live) = state.sessions.get(id)
        && live.is_busy()
    {
        if !live.decide(&call_id, body.decision()) {
            return Err(none_waits());
        }
        return Ok(accepted(id, after));
    }
    // The turn may run on another replica: the decision goes to it, when
    // that turn asked for one.
    if !state.sessions.waits_elsewhere(id, &call_id).await? {
        return Err(none_waits());
    }
    let body = serde_json::to_string(&body)
        .map_err(|e| ApiError::internal("server/encode-failed", e.to_string()))?;
    state
        .store
        .send_signal(id, &evoflux_store::Signal::Approval { call_id, body })
        .await?;
    Ok(accepted(id, after))
}

#[utoipa::path(post, path = "/api/sessions/{id}/cancel", tag = "sessions",
    params(("id" = String, Path, description = "The session id")),
    responses(
        (status = 202, description = "The turn is being cancelled; a turn_cancelled event follows", body = Accepted),
        (status = 409, description = "No turn is running", body = ApiError)
    ))]
pub async fn cancel(
    State(state): State<Arc<ServerState>>,
    Path(id): Path<String>,
) -> Result<(StatusCode, Json<Accepted>), ApiError> {
    let id = session_id(&id)?;
    let idle = || ApiError::conflict("session/idle", "no turn is running");
    let after = state.sessions.last_event(id).await?;
    if let Some(live) = state.sessions.get(id)
        && live.cancel()
    {
        return Ok(accepted(id, after));
    }
    // Running on another replica: it cancels it.
    match state.store.lease_holder(id).await? {
        Some(held) if held.running => {
            state
                .store
                .send_signal(id, &evoflux_store::Signal::Cancel)
                .await?;
            Ok(accepted(id, after))
        }
        Some(_) | None => Err(idle()),
    }
}

#[utoipa::path(post, path = "/api/sessions/{id}/resume", tag = "sessions", request_body = ResumeBody,
    params(("id" = String, Path, description = "The session id")),
    responses(
        (status = 202, description = "The session is live (and its turn started, if asked)", body = Accepted),
        (status = 404, description = "No such session", body = ApiError)
    ))]
pub async fn resume(
    State(state): State<Arc<ServerState>>,
    Path(id): Path<String>,
    body: Option<Json<ResumeBody>>,
) -> Result<(StatusCode, Json<Accepted>), ApiError> {
    let id = session_id(&id)?;
    let body = body.map(|Json(b)| b).unwrap_or_default();
    let live = state.sessions.live_or_resume(id).await?;
    let after = state.sessions.last_event(id).await?;
    match (body.message, body.continue_turn) {
        (Some(m), _) => live.start_turn(Some(m)).await?,
        (None, true) => live.start_turn(None).await?,
        (None, false) => {}
    }
    Ok(accepted(id, after))
}

#[utoipa::path(get, path = "/api/sessions/{id}/events", tag = "sessions",
    params(("id" = String, Path, description = "The session id"), EventsQuery),
    responses(
        (status = 200, description = "Server-sent events: `id` numbers each event, `event` is its type, `data` its JSON; send Last-Event-ID to replay after a reconnect", content_type = "text/event-stream", body = String),
        (status = 404, description = "No such session", body = ApiError)
    ))]
pub async fn events(
    State(state): State<Arc<ServerState>>,
    Path(id): Path<String>,
    Query(query): Query<EventsQuery>,
    headers: HeaderMap,
) -> Result<Sse<impl Stream<Item = Result<SseEvent, Infallible>>>, ApiError> {
    let id = session_id(&id)?;
    let after = headers
        .get("last-event-id")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok())
        .or(query.after)
        .unwrap_or(0);
    // Any replica follows any session: the events are in the store.
    state.store.load(id).await?;
    let events = crate::events::follow(
        state.store.clone(),
        Arc::clone(state.sessions.bus()),
        id,
        after,
    );
    let stream = futures_util::StreamExt::map(events, |e| Ok(to_sse(&e)));
    Ok(Sse::new(stream).keep_alive(KeepAlive::default()))
}

fn to_sse(e: &evoflux_store::StoredEvent) -> SseEvent {
    SseEvent::default()
        .id(e.id.to_string())
        .event(e.kind.as_str())
        .data(e.data.as_str())
}

#[utoipa::path(get, path = "/api/sessions/{id}/artifact", tag = "sessions",
    params(("id" = String, Path, description = "The session id"), ArtifactQuery),
    responses(
        (status = 200, description = "The artifact's bytes", content_type = "application/octet-stream", body = String),
        (status = 403, description = "The path is not one of this session's artifacts", body = ApiError),
        (status = 404, description = "No such artifact", body = ApiError)
    ))]
pub async fn artifact(
    State(state): State<Arc<ServerState>>,
    Path(id): Path<String>,
    Query(query): Query<ArtifactQuery>,
) -> Result<Response, ApiError> {
    let id = session_id(&id)?;
    let store = &state.store;
    store.load(id).await?;
    let root = state.sessions.app().artifacts_root().join(id.to_string());
    let missing = || {
        ApiError::not_found(
            "server/artifact-not-found",
            format!("no artifact `{}` in this session", query.path.display()),
        )
        .field("path")
    };
    let (Ok(root), Ok(real)) = (
        std::fs::canonicalize(&root),
        std::fs::canonicalize(root.join(&query.path)),
    ) else {
        // Not here: another replica's turn wrote it, and the object store
        // has it.
        if let Some(artifacts) = state.store.artifacts() {
            // A locator may be the path on the replica that wrote it
            // (`…/artifacts/<session>/proc_1.txt`): what follows the
            // session's folder names it in the store.
            let key = session_relative(&query.path, id);
            let inside = key
                .components()
                .all(|c| matches!(c, std::path::Component::Normal(_)));
            if !inside || key.as_os_str().is_empty() {
                return Err(ApiError::new(
                    StatusCode::FORBIDDEN,
                    "server/artifact-outside-session",
                    "the path is not one of this session's artifacts",
                )
                .field("path"));
            }
            if let Some(stream) = artifacts.read(id, &key).await? {
                let body = Body::from_stream(stream);
                return Ok(
                    ([(header::CONTENT_TYPE, "application/octet-stream")], body).into_response()
                );
            }
        }
        return Err(missing());
    };
    if !real.starts_with(&root) {
        return Err(ApiError::new(
            StatusCode::FORBIDDEN,
            "server/artifact-outside-session",
            "the path is not one of this session's artifacts",
        )
        .field("path"));
    }
    let file = tokio::fs::File::open(&real).await.map_err(|_| missing())?;
    let body = Body::from_stream(tokio_util_stream(file));
    Ok(([(header::CONTENT_TYPE, "application/octet-stream")], body).into_response())
}

/// One image or audio item of a stored transcript entry: how a view shows
/// a tool result's image from its event, which names the item and not
/// its bytes.
#[utoipa::path(get, path = "/api/sessions/{id}/media/{seq}/{index}", tag = "sessions",
    params(
        ("id" = String, Path, description = "The session id"),
        ("seq" = u64, Path, description = "The transcript entry (a `tool_ended` event's `media[].seq`)"),
        ("index" = usize, Path, description = "The item in that entry's media (`media[].index`)")
    ),
    responses(
        (status = 200, description = "The image or audio, decoded; its MIME type when it is one a page shows safely, else application/octet-stream", content_type = "application/octet-stream", body = String),
        (status = 404, description = "No such entry or item", body = ApiError)
    ))]
pub async fn media(
    State(state): State<Arc<ServerState>>,
    Path((id, seq, index)): Path<(String, u64, usize)>,
) -> Result<Response, ApiError> {
    use base64::Engine as _;
    let id = session_id(&id)?;
    let missing = || {
        ApiError::not_found(
            "server/media-not-found",
            format!("entry {seq} of this session has no media item {index}"),
        )
        .field("index")
    };
    let page = state
        .store
        .transcript_page(id, Some(seq.saturating_add(1)), 1)
        .await?;
    let item = page
        .iter()
        .find(|e| e.seq == seq)
        .and_then(|e| e.message.media().get(index).cloned())
        .ok_or_else(missing)?;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(item.data.trim_end())
        .map_err(|_| missing())?;
    Ok((
        [
            (header::CONTENT_TYPE, served_media_type(&item.mime_type)),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
            (
                header::CACHE_CONTROL,
                "private, max-age=31536000, immutable",
            ),
        ],
        bytes,
    )
        .into_response())
}

/// The type a media item is served as: its own when it is a raster
/// image or audio a page shows without running anything, else opaque
/// bytes (a tool's `text/html` or `image/svg+xml` never renders as a
/// page of this origin).
fn served_media_type(mime_type: &str) -> &'static str {
    const SAFE: [&str; 8] = [
        "image/png",
        "image/jpeg",
        "image/gif",
        "image/webp",
        "audio/wav",
        "audio/mpeg",
        "audio/ogg",
        "audio/webm",
    ];
    SAFE.iter()
        .find(|t| t.eq_ignore_ascii_case(mime_type))
        .copied()
        .unwrap_or("application/octet-stream")
}

/// `path` relative to session `id`'s artifact folder: an absolute path
/// loses everything up to the folder named after the session.
fn session_relative(path: &std::path::Path, id: SessionId) -> PathBuf {
    if !path.is_absolute() {
        return path.to_path_buf();
    }
    let name = id.to_string();
    let parts: Vec<_> = path.components().collect();
    match parts
        .iter()
        .rposition(|c| c.as_os_str() == std::ffi::OsStr::new(&name))
    {
        Some(at) => parts[at + 1..].iter().collect(),
        None => path.to_path_buf(),
    }
}

/// A file as a stream of chunks.
fn tokio_util_stream(
    file: tokio::fs::File,
) -> impl Stream<Item = Result<axum::body::Bytes, std::io::Error>> {
    use tokio::io::AsyncReadExt;
    futures_util::stream::unfold(Some(file), |file| async move {
        let mut file = file?;
        let mut buf = vec![0u8; 64 * 1024];
        match file.read(&mut buf).await {
            Ok(0) => None,
            Ok(n) => {
                buf.truncate(n);
                Some((Ok(axum::body::Bytes::from(buf)), Some(file)))
            }
            // The error ends the body.
            Err(e) => Some((Err(e), None)),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_media_a_page_shows_inertly_keeps_its_type() {
        assert_eq!(served_media_type("image/png"), "image/png");
        assert_eq!(served_media_type("IMAGE/JPEG"), "image/jpeg");
        assert_eq!(served_media_type("audio/wav"), "audio/wav");
        for active in ["text/html", "image/svg+xml", "application/javascript", ""] {
            assert_eq!(served_media_type(active), "application/octet-stream");
        }
    }
}
