//! `/api/mcp/servers`: every MCP server (global and per plugin) with its
//! state, transport, tools and last error, as `evoflux mcp list` shows it.
//! The server keeps its own runtime for this view, started on the first
//! request and brought in line with the plugin registry after every plugin
//! change; sessions run their own.

use std::sync::Arc;

use axum::Json;
use axum::extract::{Path, State};
use evoflux_app::mcp_servers::{McpRuntime, ServerListing};

use crate::api::lists::{Listing, listing};
use crate::error::ApiError;
use crate::state::ServerState;

/// How long the first listing waits for the servers to settle.
const MCP_SETTLE: std::time::Duration = std::time::Duration::from_secs(5);

/// Every server's listing, starting the runtime on first use.
async fn servers(
    state: &ServerState,
) -> Result<(Vec<ServerListing>, evoflux_core::Diagnostics), ApiError> {
    let mut diags = evoflux_core::Diagnostics::new();
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
    let listed = slot.as_ref().map(McpRuntime::listing).unwrap_or_default();
    Ok((listed, diags))
}

#[utoipa::path(get, path = "/api/mcp/servers", operation_id = "mcp_server_list", tag = "mcp",
    responses((status = 200, description = "Every MCP server (global and per plugin) with its state, transport, tools and last error, as `evoflux mcp list` shows it; started on the first request", body = Listing)))]
pub async fn list(State(state): State<Arc<ServerState>>) -> Result<Json<Listing>, ApiError> {
    let (listed, diags) = servers(&state).await?;
    listing(listed, &diags)
}

#[utoipa::path(get, path = "/api/mcp/servers/{name}", operation_id = "mcp_server_show", tag = "mcp",
    params(("name" = String, Path, description = "The server: `name`, or `plugin/name` (the slash percent-encoded) for a plugin's")),
    responses(
        (status = 200, description = "One server with its state, tools and last error", body = Object),
        (status = 404, description = "No such server", body = ApiError)
    ))]
pub async fn show(
    State(state): State<Arc<ServerState>>,
    Path(name): Path<String>,
) -> Result<Json<ServerListing>, ApiError> {
    let (listed, _) = servers(&state).await?;
    listed
        .into_iter()
        .find(|s| s.server == name)
        .map(Json)
        .ok_or_else(|| {
            ApiError::not_found(
                "mcp/server-not-found",
                format!("no MCP server `{name}`; GET /api/mcp/servers lists them"),
            )
        })
}
