//! `/api/scheduler`: the schedules with their next and last run, a
//! schedule's history, and a run on demand, as `evoflux schedule` shows
//! them. The server's own scheduler fires them on time.

use std::sync::Arc;

use axum::Json;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use evoflux_app::scheduler::{self, ScheduleRow};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::api::lists::{Listing, listing};
use crate::error::ApiError;
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

#[utoipa::path(get, path = "/api/scheduler", operation_id = "schedule_list", tag = "scheduler",
    responses((status = 200, description = "Every schedule with its trigger, mode, file, next run and newest run", body = Listing)))]
pub async fn list(State(state): State<Arc<ServerState>>) -> Result<Json<Listing>, ApiError> {
    let (rows, diags) = rows(&state).await?;
    listing(rows, &diags)
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
