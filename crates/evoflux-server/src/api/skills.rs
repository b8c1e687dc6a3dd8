//! A skill's runtime preferences (the Settings overlay): which modes it is
//! on in, implicit invocation and manual invocation. A change names the
//! `settings_id` of the variant it was made against; a stale id is a
//! conflict, never applied to another variant.

use std::sync::Arc;

use axum::Json;
use axum::extract::rejection::JsonRejection;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use evoflux_core::AppMode;
use evoflux_harness::skills_view::SkillsView;
use evoflux_skills::overlay::SettingsError;
use evoflux_skills::{ModeSet, PrefsPatch, SkillRecord};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::error::{ApiError, body_error};
use crate::state::ServerState;

/// `PATCH /api/skills/{name}`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PrefsBody {
    /// The `settings_id` the listing showed for this skill.
    pub settings_id: String,
    /// The modes it is on in.
    #[schema(value_type = Option<Vec<String>>)]
    pub modes: Option<Vec<AppMode>>,
    pub allow_implicit_invocation: Option<bool>,
    pub user_invocable: Option<bool>,
}

/// `DELETE /api/skills/{name}` query.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct ResetQuery {
    /// The variant whose preferences go back to its defaults.
    pub settings_id: String,
}

/// The preferences after a change.
#[derive(Debug, Serialize, ToSchema)]
pub struct PrefsResult {
    pub name: String,
    pub settings_id: String,
    #[schema(value_type = Object)]
    pub prefs: serde_json::Value,
}

fn settings_error(e: SettingsError) -> ApiError {
    let status = match &e {
        SettingsError::Malformed { .. } | SettingsError::Lock(_) => StatusCode::CONFLICT,
        SettingsError::NotEditable { .. } => StatusCode::UNPROCESSABLE_ENTITY,
        SettingsError::TooLarge { .. } => StatusCode::PAYLOAD_TOO_LARGE,
        SettingsError::Write(_) | SettingsError::Io { .. } => StatusCode::INTERNAL_SERVER_ERROR,
    };
    ApiError::new(status, e.code(), e.to_string())
}

/// The variant of skill `name` with `settings_id`, in the view.
fn variant<'a>(
    view: &'a SkillsView,
    name: &str,
    settings_id: &str,
) -> Result<&'a SkillRecord, ApiError> {
    let slot = view.slot(name).ok_or_else(|| {
        ApiError::not_found("skill/not-found", format!("no skill named `{name}`"))
    })?;
    slot.candidates
        .iter()
        .find(|c| c.settings_id.as_str() == settings_id)
        .ok_or_else(|| {
            ApiError::conflict(
                "skill/settings-id-stale",
                format!(
                    "`{settings_id}` is not a settings_id of `{name}` now (the skill changed); \
                     list the skills again and retry"
                ),
            )
            .field("settings_id")
        })
}

fn view(state: &ServerState) -> Result<SkillsView, ApiError> {
    let app = state.sessions.app();
    let graph = app.compile(&state.workspaces)?;
    Ok(SkillsView::load(
        &app.dirs,
        &graph,
        evoflux_skills::selection::Depth::Settled,
    ))
}

#[utoipa::path(patch, path = "/api/skills/{name}", tag = "skills", request_body = PrefsBody,
    params(("name" = String, Path, description = "The skill")),
    responses(
        (status = 200, description = "The preferences now in force", body = PrefsResult),
        (status = 404, description = "No such skill", body = ApiError),
        (status = 409, description = "A stale settings_id, or a malformed preferences file (left unchanged)", body = ApiError),
        (status = 422, description = "The skill is invalid, so its preferences cannot be edited", body = ApiError)
    ))]
pub async fn update_prefs(
    State(state): State<Arc<ServerState>>,
    Path(name): Path<String>,
    body: Result<Json<PrefsBody>, JsonRejection>,
) -> Result<Json<PrefsResult>, ApiError> {
    let Json(body) = body.map_err(body_error)?;
    let view = view(&state)?;
    let record = variant(&view, &name, &body.settings_id)?;
    let patch = PrefsPatch {
        modes: body
            .modes
            .map(|ms| ms.into_iter().fold(ModeSet::NONE, ModeSet::with)),
        allow_implicit_invocation: body.allow_implicit_invocation,
        user_invocable: body.user_invocable,
    };
    let prefs = view.store.set(record, patch).map_err(settings_error)?;
    Ok(Json(PrefsResult {
        name: record.name.clone(),
        settings_id: record.settings_id.as_str().to_owned(),
        prefs: serde_json::to_value(prefs).unwrap_or_default(),
    }))
}

#[utoipa::path(delete, path = "/api/skills/{name}", tag = "skills",
    params(("name" = String, Path, description = "The skill"), ResetQuery),
    responses(
        (status = 200, description = "The variant's preferences are back to its defaults", body = PrefsResult),
        (status = 404, description = "No such skill", body = ApiError),
        (status = 409, description = "A stale settings_id, or a malformed preferences file (left unchanged)", body = ApiError)
    ))]
pub async fn reset_prefs(
    State(state): State<Arc<ServerState>>,
    Path(name): Path<String>,
    Query(q): Query<ResetQuery>,
) -> Result<Json<PrefsResult>, ApiError> {
    let view = view(&state)?;
    let record = variant(&view, &name, &q.settings_id)?;
    view.store
        .reset(&record.settings_id)
        .map_err(settings_error)?;
    Ok(Json(PrefsResult {
        name: record.name.clone(),
        settings_id: record.settings_id.as_str().to_owned(),
        prefs: serde_json::to_value(record.defaults).unwrap_or_default(),
    }))
}
