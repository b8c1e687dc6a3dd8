//! `/api/mcp/servers`: every MCP server (global and per plugin) with its
//! state, transport, tools and last error, as `evoflux mcp list` shows it,
//! with where it comes from and whether it is editable; adding, replacing
//! and removing servers of the user's own `mcp.json`
//! ([`evoflux_app::mcp_config`]) and restarting any server. The server
//! keeps its own runtime for this view, started on the first request,
//! brought in line with the plugin registry after every plugin change and
//! with the user's `mcp.json` after every edit made here; sessions run
//! their own.

use std::sync::Arc;

use axum::Json;
use axum::extract::rejection::JsonRejection;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use evoflux_app::mcp_config::{McpEditError, McpScope, McpServerChange, McpServerView};
use evoflux_app::mcp_servers::{McpError, McpRuntime};
use serde::Deserialize;
use serde_json::Value;
use tokio::sync::MutexGuard;
use utoipa::ToSchema;

use crate::api::lists::{Listing, listing};
use crate::error::{ApiError, body_error};
use crate::state::ServerState;

/// How long a listing, or a change, waits for the servers to settle.
pub(crate) const MCP_SETTLE: std::time::Duration = std::time::Duration::from_secs(5);

/// `POST /api/mcp/servers`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewMcpServer {
    /// Lowercase letters, digits and `-`, starting with a letter.
    pub name: String,
    /// The entry as `mcp.json` writes it: `{"type": "stdio", "command",
    /// "args", "env", "cwd"}` or `{"type": "streamable-http", "url",
    /// "headers"}` (`startup_timeout_secs` for either). Stored as written:
    /// `${VAR}` stays a reference.
    #[schema(value_type = Object)]
    pub entry: Value,
    /// Which mcp.json: `user` (yours, the default) or `project` (the
    /// repository's `.evoflux/mcp.json`, shared with whoever clones it;
    /// its servers start once the repository is trusted again), as
    /// `evoflux mcp add --scope`.
    #[serde(default)]
    #[schema(value_type = String)]
    pub scope: McpScope,
    /// Replace a server of that name in the same file instead of refusing
    /// it, as `evoflux mcp add --force`.
    #[serde(default)]
    pub force: bool,
}

/// `PUT /api/mcp/servers/{name}`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct McpServerBody {
    /// When given, it must be the name the URL names (no renames: remove
    /// and add).
    pub name: Option<String>,
    #[schema(value_type = Object)]
    pub entry: Value,
}

/// The runtime, started on first use (every server started and given
/// [`MCP_SETTLE`] to settle), held locked: edits through the API happen
/// one at a time under this lock.
pub(crate) async fn runtime<'a>(
    state: &'a ServerState,
    diags: &mut evoflux_core::Diagnostics,
) -> Result<MutexGuard<'a, Option<McpRuntime>>, ApiError> {
    let mut slot = state.mcp.lock().await;
    if slot.is_none() {
        let app = state.sessions.app();
        let graph = app.compile(&state.workspaces)?;
        let (runtime, found) = app
            .mcp_servers(&graph, state.workspaces.clone())
            .map_err(|e| ApiError::internal(e.code(), e.to_string()))?;
        diags.extend(found);
        runtime.start_all();
        runtime.settle(MCP_SETTLE).await;
        *slot = Some(runtime);
    }
    Ok(slot)
}

pub(crate) fn started(slot: &Option<McpRuntime>) -> Result<&McpRuntime, ApiError> {
    slot.as_ref()
        .ok_or_else(|| ApiError::internal("mcp/no-runtime", "the MCP runtime is not running"))
}

/// Every server as the settings show it.
async fn servers(
    state: &ServerState,
) -> Result<(Vec<McpServerView>, evoflux_core::Diagnostics), ApiError> {
    let mut diags = evoflux_core::Diagnostics::new();
    let slot = runtime(state, &mut diags).await?;
    let listed = started(&slot)?.listing();
    Ok((state.sessions.app().mcp_server_views(listed), diags))
}

fn not_found(name: &str) -> ApiError {
    ApiError::not_found(
        "mcp/server-not-found",
        format!("no MCP server `{name}`; GET /api/mcp/servers lists them"),
    )
}

/// One server of a runtime as the settings show it.
fn view_of(state: &ServerState, runtime: &McpRuntime, name: &str) -> Option<McpServerView> {
    state
        .sessions
        .app()
        .mcp_server_views(runtime.listing())
        .into_iter()
        .find(|v| v.listing.server == name)
}

fn edit_error(e: McpEditError) -> ApiError {
    let status = match &e {
        McpEditError::Name(_) | McpEditError::Invalid { .. } => StatusCode::UNPROCESSABLE_ENTITY,
        McpEditError::Exists { .. }
        | McpEditError::FileInvalid(_)
        | McpEditError::EditFailed { .. } => StatusCode::CONFLICT,
        McpEditError::NotFound(_) => StatusCode::NOT_FOUND,
        McpEditError::NotEditable { .. } => StatusCode::FORBIDDEN,
        McpEditError::Io { .. } => StatusCode::INTERNAL_SERVER_ERROR,
    };
    let message = match e.diagnostics() {
        Some(d) if !d.is_empty() => d
            .errors()
            .iter()
            .map(|d| d.message.clone())
            .collect::<Vec<_>>()
            .join("; "),
        _ => e.to_string(),
    };
    let mut error = ApiError::new(status, e.code(), message);
    if let Some(field) = e.field() {
        error = error.field(&field);
    }
    match e.diagnostics() {
        Some(d) => error.diagnostics(d),
        None => error,
    }
}

/// Applies `change` to the user's `mcp.json`, brings the runtime in line
/// (the changed server restarts, a removed one stops, a new one starts)
/// and returns the server as it settled; then the sessions and routes are
/// told the sources changed.
async fn change(
    state: &ServerState,
    change: McpServerChange,
) -> Result<Option<McpServerView>, ApiError> {
    edit(state, change.name(), |app, listed| {
        app.change_mcp_server(listed, &change)
    })
    .await
}

/// [`change`] for any one edit the application's editor makes: `apply`
/// runs under the runtime's lock with every server as listed now.
async fn edit(
    state: &ServerState,
    name: &str,
    apply: impl FnOnce(
        &evoflux_app::AppContext,
        &[evoflux_app::mcp_servers::ServerListing],
    ) -> Result<(), McpEditError>,
) -> Result<Option<McpServerView>, ApiError> {
    let app = state.sessions.app();
    let view = {
        let mut diags = evoflux_core::Diagnostics::new();
        let slot = runtime(state, &mut diags).await?;
        let runtime = started(&slot)?;
        apply(app, &runtime.listing()).map_err(edit_error)?;
        let graph = app.compile(&state.workspaces)?;
        runtime.reload_global(&graph).await;
        runtime.global().wait_settled(MCP_SETTLE).await;
        view_of(state, runtime, name)
    };
    state.sources_changed().await;
    Ok(view)
}

#[utoipa::path(get, path = "/api/mcp/servers", operation_id = "mcp_server_list", tag = "mcp",
    responses((status = 200, description = "Every MCP server (global and per plugin) with its state, transport, tools and last error, as `evoflux mcp list` shows it; with its `source` (`user`: the user's own mcp.json, `file`: another file evoflux only reads, `plugin`), `editable`, and for editable ones the `entry` exactly as written (`${VAR}` unresolved). Started on the first request", body = Listing)))]
pub async fn list(State(state): State<Arc<ServerState>>) -> Result<Json<Listing>, ApiError> {
    let (listed, diags) = servers(&state).await?;
    listing(listed, &diags)
}

#[utoipa::path(get, path = "/api/mcp/servers/{name}", operation_id = "mcp_server_show", tag = "mcp",
    params(("name" = String, Path, description = "The server: `name`, or `plugin/name` (the slash percent-encoded) for a plugin's")),
    responses(
        (status = 200, description = "One server with its state, tools, last error, source and (when editable) entry as written", body = Object),
        (status = 404, description = "No such server", body = ApiError)
    ))]
pub async fn show(
    State(state): State<Arc<ServerState>>,
    Path(name): Path<String>,
) -> Result<Json<McpServerView>, ApiError> {
    let (listed, _) = servers(&state).await?;
    listed
        .into_iter()
        .find(|s| s.listing.server == name)
        .map(Json)
        .ok_or_else(|| not_found(&name))
}

#[utoipa::path(post, path = "/api/mcp/servers", operation_id = "mcp_server_add", tag = "mcp", request_body = NewMcpServer,
    responses(
        (status = 201, description = "Written to the chosen mcp.json (every other key and server kept byte for byte) and started; the server as it settled", body = Object),
        (status = 202, description = "Written to the repository's mcp.json (`scope: project`), whose servers wait until the repository is trusted again: `{server, scope, file, action, state: \"awaiting-trust\"}`", body = Object),
        (status = 409, description = "The name is taken (`mcp/server-exists`, naming where; `force` replaces one of the same file), or the mcp.json cannot be edited as it is", body = ApiError),
        (status = 422, description = "The name or entry is invalid: the validator's code, `field` (`name`, `entry.<key>`) and diagnostics; nothing was written", body = ApiError)
    ))]
pub async fn add(
    State(state): State<Arc<ServerState>>,
    body: Result<Json<NewMcpServer>, JsonRejection>,
) -> Result<axum::response::Response, ApiError> {
    use axum::response::IntoResponse;
    let Json(body) = body.map_err(body_error)?;
    let app = state.sessions.app();
    let file = app.mcp_file(body.scope, &state.workspaces);
    let mut action = None;
    let view = edit(&state, &body.name, |app, listed| {
        action = Some(app.add_mcp_server(&file, listed, &body.name, &body.entry, body.force)?);
        Ok(())
    })
    .await?;
    match (view, body.scope) {
        (Some(v), _) => Ok((StatusCode::CREATED, Json(v)).into_response()),
        (None, McpScope::Project) => Ok((
            StatusCode::ACCEPTED,
            Json(serde_json::json!({
                "server": body.name,
                "scope": body.scope,
                "file": file,
                "action": action,
                "state": "awaiting-trust",
            })),
        )
            .into_response()),
        (None, McpScope::User) => Err(shadowed(&body.name)),
    }
}

/// A server written to the user's file that the runtime does not list:
/// another source wins the name.
fn shadowed(name: &str) -> ApiError {
    ApiError::conflict(
        "mcp/server-shadowed",
        format!(
            "`{name}` was written to your mcp.json, but no server of that name runs from it; \
             GET /api/mcp/servers and `evoflux info` show which file defines it"
        ),
    )
}

#[utoipa::path(put, path = "/api/mcp/servers/{name}", operation_id = "mcp_server_replace", tag = "mcp", request_body = McpServerBody,
    params(("name" = String, Path, description = "A server of the user's mcp.json")),
    responses(
        (status = 200, description = "Replaced in the user's mcp.json and restarted; the server as it settled", body = Object),
        (status = 403, description = "The server comes from another file or a plugin (`mcp/server-not-editable`, naming where to change it)", body = ApiError),
        (status = 404, description = "No such server", body = ApiError),
        (status = 422, description = "The entry is invalid (nothing was written)", body = ApiError)
    ))]
pub async fn replace(
    State(state): State<Arc<ServerState>>,
    Path(name): Path<String>,
    body: Result<Json<McpServerBody>, JsonRejection>,
) -> Result<Json<McpServerView>, ApiError> {
    let Json(body) = body.map_err(body_error)?;
    if let Some(other) = body.name.as_deref().filter(|n| *n != name) {
        return Err(ApiError::unprocessable(
            "mcp/server-rename",
            format!(
                "the body names `{other}` but the URL names `{name}`; a server is renamed by \
                 removing it and adding it under the new name"
            ),
        )
        .field("name"));
    }
    let view = change(
        &state,
        McpServerChange::Replace {
            name: name.clone(),
            entry: body.entry,
        },
    )
    .await?;
    view.map(Json).ok_or_else(|| shadowed(&name))
}

#[utoipa::path(delete, path = "/api/mcp/servers/{name}", operation_id = "mcp_server_remove", tag = "mcp",
    params(("name" = String, Path, description = "A server of the user's mcp.json")),
    responses(
        (status = 204, description = "Removed from the user's mcp.json and stopped"),
        (status = 403, description = "The server comes from another file or a plugin (`mcp/server-not-editable`, naming where to change it)", body = ApiError),
        (status = 404, description = "No such server", body = ApiError)
    ))]
pub async fn remove(
    State(state): State<Arc<ServerState>>,
    Path(name): Path<String>,
) -> Result<StatusCode, ApiError> {
    change(&state, McpServerChange::Remove { name }).await?;
    Ok(StatusCode::NO_CONTENT)
}

#[utoipa::path(post, path = "/api/mcp/servers/{name}/restart", operation_id = "mcp_server_restart", tag = "mcp",
    params(("name" = String, Path, description = "The server: `name`, or `plugin/name` (the slash percent-encoded)")),
    responses(
        (status = 200, description = "Stopped and started again; the server as it settled", body = Object),
        (status = 404, description = "No such server", body = ApiError)
    ))]
pub async fn restart(
    State(state): State<Arc<ServerState>>,
    Path(name): Path<String>,
) -> Result<Json<McpServerView>, ApiError> {
    let mut diags = evoflux_core::Diagnostics::new();
    let slot = runtime(&state, &mut diags).await?;
    let runtime = started(&slot)?;
    runtime.restart_ref(&name).await.map_err(|e| match e {
        McpError::UnknownServer(_) => not_found(&name),
        other @ (McpError::UnknownTool(_)
        | McpError::NotReady { .. }
        | McpError::Timeout { .. }
        | McpError::RequestTimeout { .. }
        | McpError::ResultTooLarge { .. }
        | McpError::InvalidArguments(_)
        | McpError::Protocol { .. }
        | McpError::Transport { .. }
        | McpError::NoRuntime) => ApiError::internal(other.code(), other.to_string()),
    })?;
    runtime.settle(MCP_SETTLE).await;
    view_of(&state, runtime, &name)
        .map(Json)
        .ok_or_else(|| not_found(&name))
}
