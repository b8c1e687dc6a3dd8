//! `/api/scheduler`: the schedules with their next and last run, a
//! schedule's history, a run on demand and turning one on or off, as
//! `evoflux schedule` does. The server's own scheduler fires them on time.

use std::sync::Arc;

use axum::Json;
use axum::extract::rejection::JsonRejection;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use evoflux_app::scheduler::{self, ScheduleEditError, ScheduleRow};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use utoipa::ToSchema;

use crate::error::{ApiError, body_error};
use crate::state::ServerState;

async fn rows(
    state: &ServerState,
) -> Result<(Vec<ScheduleRow>, evoflux_core::Diagnostics), ApiError> {
    let graph = state.sessions.app().compile(&state.workspaces)?;
    let rows = scheduler::rows(&state.store, &graph).await?;
    Ok((rows, graph.diagnostics.errors()))
}

async fn row(state: &ServerState, name: &str) -> Result<ScheduleRow, ApiError> {
    rows(state)
        .await?
        .0
        .into_iter()
        .find(|r| r.name == name)
        .ok_or_else(|| {
            ApiError::not_found(
                "schedule/not-found",
                format!("no schedule `{name}`; GET /api/scheduler lists them"),
            )
        })
}

/// `GET /api/scheduler`: a listing with where the user's own schedules go.
#[derive(Debug, Serialize, ToSchema)]
pub struct ScheduleListing {
    #[schema(value_type = Vec<Object>)]
    pub items: Value,
    #[schema(value_type = Vec<Object>)]
    pub diagnostics: Value,
    /// The folder a new schedule file of the user's goes in
    /// (`<name>.toml`); a trusted repository's go in its
    /// `.evoflux/schedules/`.
    #[schema(value_type = String)]
    pub folder: std::path::PathBuf,
}

#[utoipa::path(get, path = "/api/scheduler", operation_id = "schedule_list", tag = "scheduler",
    responses((status = 200, description = "Every schedule with its trigger, mode, file, whether it is editable, next run and newest run; the folder new ones go in", body = ScheduleListing)))]
pub async fn list(
    State(state): State<Arc<ServerState>>,
) -> Result<Json<ScheduleListing>, ApiError> {
    let (rows, diags) = rows(&state).await?;
    Ok(Json(ScheduleListing {
        items: serde_json::to_value(rows)
            .map_err(|e| ApiError::internal("server/unserializable", e.to_string()))?,
        diagnostics: diags.to_json(),
        folder: scheduler::user_folder(state.sessions.app()),
    }))
}

#[utoipa::path(get, path = "/api/scheduler/{name}", operation_id = "schedule_show", tag = "scheduler",
    params(("name" = String, Path, description = "The schedule's name (its file's stem)")),
    responses(
        (status = 200, description = "One schedule with its next run and its ten newest runs", body = Object),
        (status = 404, description = "No such schedule", body = ApiError)
    ))]
pub async fn show(
    State(state): State<Arc<ServerState>>,
    Path(name): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let row = row(&state, &name).await?;
    let runs = state.store.schedule_runs(&name, 10).await?;
    Ok(Json(json!({ "schedule": row, "runs": runs })))
}

/// `?limit=`.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct HistoryQuery {
    /// How many runs, newest first (1 to 1000; default 20).
    #[param(minimum = 1, maximum = 1000)]
    pub limit: Option<u32>,
}

#[utoipa::path(get, path = "/api/scheduler/{name}/history", operation_id = "schedule_history", tag = "scheduler",
    params(("name" = String, Path, description = "The schedule's name"), HistoryQuery),
    responses(
        (status = 200, description = "The schedule's runs, newest first: fired, skipped, missed, failed", body = Object),
        (status = 400, description = "A limit out of range", body = ApiError),
        (status = 404, description = "No such schedule", body = ApiError)
    ))]
pub async fn history(
    State(state): State<Arc<ServerState>>,
    Path(name): Path<String>,
    Query(q): Query<HistoryQuery>,
) -> Result<Json<Value>, ApiError> {
    let limit = q.limit.unwrap_or(20);
    if !(1..=1000).contains(&limit) {
        return Err(
            ApiError::bad_request("schedule/limit-invalid", "limit is 1 to 1000").field("limit"),
        );
    }
    row(&state, &name).await?;
    let runs = state.store.schedule_runs(&name, limit).await?;
    Ok(Json(json!({ "name": name, "runs": runs })))
}

#[utoipa::path(post, path = "/api/scheduler/{name}/run", operation_id = "schedule_run", tag = "scheduler",
    params(("name" = String, Path, description = "The schedule's name")),
    responses(
        (status = 202, description = "The run started (a new session); its history entry says how it ends", body = Object),
        (status = 404, description = "No such schedule", body = ApiError)
    ))]
pub async fn run(
    State(state): State<Arc<ServerState>>,
    Path(name): Path<String>,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    let row = row(&state, &name).await?;
    let run = state.scheduler.start_now(&name, &row.schedule).await?;
    Ok((StatusCode::ACCEPTED, Json(json!({ "run": run }))))
}

/// `PATCH /api/scheduler/{name}`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ScheduleEnabledBody {
    pub enabled: bool,
}

fn edit_error(e: ScheduleEditError) -> ApiError {
    let status = match &e {
        ScheduleEditError::NotFound(_) => StatusCode::NOT_FOUND,
        ScheduleEditError::Builtin { .. } | ScheduleEditError::NotEditable { .. } => {
            StatusCode::FORBIDDEN
        }
        ScheduleEditError::Invalid { .. }
        | ScheduleEditError::EnabledInvalid { .. }
        | ScheduleEditError::FormatUnsupported { .. }
        | ScheduleEditError::Unverified { .. } => StatusCode::CONFLICT,
        ScheduleEditError::Unreadable { .. } | ScheduleEditError::Write(_) => {
            StatusCode::INTERNAL_SERVER_ERROR
        }
    };
    ApiError::new(status, e.code(), e.to_string())
}

#[utoipa::path(patch, path = "/api/scheduler/{name}", operation_id = "schedule_set_enabled", tag = "scheduler", request_body = ScheduleEnabledBody,
    params(("name" = String, Path, description = "The schedule's name")),
    responses(
        (status = 200, description = "`enabled` is set in the schedule's file (nothing else in it changes); the schedule as it is now, and whether the file changed", body = Object),
        (status = 403, description = "A built-in schedule, or one of a plugin or the administrator: not the user's file", body = ApiError),
        (status = 404, description = "No such schedule", body = ApiError),
        (status = 409, description = "The file cannot be edited safely (it changed, or `enabled` is not a boolean); nothing was written", body = ApiError)
    ))]
pub async fn set_enabled(
    State(state): State<Arc<ServerState>>,
    Path(name): Path<String>,
    body: Result<Json<ScheduleEnabledBody>, JsonRejection>,
) -> Result<Json<Value>, ApiError> {
    let Json(body) = body.map_err(body_error)?;
    let graph = state.sessions.app().compile(&state.workspaces)?;
    let change = crate::api::blocking(move || {
        scheduler::set_enabled(&graph, &name, body.enabled).map_err(edit_error)
    })
    .await?;
    let row = row(&state, &change.name).await?;
    Ok(Json(json!({ "schedule": row, "changed": change.changed })))
}
