//! The read-only listings of the API channel: agents, skills, the skill
//! settings projection and plugins. Each is the projection the CLI's
//! listing prints, from the same library function.

use std::sync::Arc;

use axum::Json;
use axum::extract::{Query, State};
use evoflux_app::agents_view::agent_listings;
use evoflux_app::skills_view::Depth;
use evoflux_core::AppMode;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

use crate::error::ApiError;
use crate::state::ServerState;

/// A listing's `?mode=`.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct ModeQuery {
    /// `work` or `coding`; both when absent.
    #[param(value_type = Option<String>)]
    pub mode: Option<AppMode>,
}

/// A listing with the diagnostics found while making it.
#[derive(Debug, Serialize, ToSchema)]
pub struct Listing {
    #[schema(value_type = Vec<Object>)]
    pub items: Value,
    #[schema(value_type = Vec<Object>)]
    pub diagnostics: Value,
}

pub(crate) fn listing(
    items: impl Serialize,
    diagnostics: &evoflux_core::Diagnostics,
) -> Result<Json<Listing>, ApiError> {
    Ok(Json(Listing {
        items: serde_json::to_value(items)
            .map_err(|e| ApiError::internal("server/unserializable", e.to_string()))?,
        diagnostics: diagnostics.to_json(),
    }))
}

#[utoipa::path(get, path = "/api/agents", tag = "agents", params(ModeQuery),
    responses((status = 200, description = "Each mode's agents with their effective configuration (the runtime's compiler); invalid files are listed with valid: false", body = Listing)))]
pub async fn agents(
    State(state): State<Arc<ServerState>>,
    Query(q): Query<ModeQuery>,
) -> Result<Json<Listing>, ApiError> {
    let app = state.sessions.app();
    let graph = app.compile(&state.workspaces)?;
    let mut diags = evoflux_core::Diagnostics::new();
    let listings = agent_listings(&graph, q.mode, None, &mut diags);
    listing(listings, &diags)
}

fn skill_rows(state: &ServerState, mode: Option<AppMode>) -> Result<Json<Listing>, ApiError> {
    let view = state
        .sessions
        .app()
        .skills_view(&state.workspaces, Depth::Settled)?;
    listing(view.rows(mode), &view.diagnostics)
}

#[utoipa::path(get, path = "/api/skills", tag = "skills", params(ModeQuery),
    responses((status = 200, description = "The skills of a mode (or every mode): the winner of each slot, even invalid, with its modes and diagnostics", body = Listing)))]
pub async fn skills(
    State(state): State<Arc<ServerState>>,
    Query(q): Query<ModeQuery>,
) -> Result<Json<Listing>, ApiError> {
    skill_rows(&state, q.mode)
}

#[utoipa::path(get, path = "/api/settings/skills", tag = "skills",
    responses((status = 200, description = "The Settings projection: every slot's winner with its preferences and the settings_id changes are keyed by", body = Listing)))]
pub async fn skill_settings(
    State(state): State<Arc<ServerState>>,
) -> Result<Json<Listing>, ApiError> {
    skill_rows(&state, None)
}

#[utoipa::path(get, path = "/api/plugins", tag = "plugins",
    responses((status = 200, description = "Every plugin installation, user ones first, then bundled; credentials are reported as present or missing, never their values", body = Listing)))]
pub async fn plugins(State(state): State<Arc<ServerState>>) -> Result<Json<Listing>, ApiError> {
    let listed = state.sessions.app().plugins().list();
    let diags: evoflux_core::Diagnostics = listed.diagnostics.iter().cloned().collect();
    listing(&listed.plugins, &diags)
}
