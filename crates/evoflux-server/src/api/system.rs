//! Health, info, the OpenAPI document, the home page and the host routes.

use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use serde_json::Value;
use utoipa::ToSchema;

use crate::error::ApiError;
use crate::state::ServerState;

/// `GET /api/health`.
#[derive(Debug, Serialize, ToSchema)]
pub struct Health {
    pub ok: bool,
    pub status: String,
    pub version: String,
}

#[utoipa::path(get, path = "/api/health", tag = "system",
    responses((status = 200, description = "The server is up (public: no token needed)", body = Health)))]
pub async fn health() -> Json<Health> {
    Json(Health {
        ok: true,
        status: "ready".to_owned(),
        version: env!("CARGO_PKG_VERSION").to_owned(),
    })
}

#[utoipa::path(get, path = "/api/info", tag = "system",
    responses(
        (status = 200, description = "The projection of the compiled graph, exactly `evoflux info --json` for the server's workspaces (its JSON Schema is crates/evoflux-graph/schema/info.schema.json)", body = Object),
        (status = 500, description = "The graph could not be compiled", body = ApiError)
    ))]
pub async fn info(State(state): State<Arc<ServerState>>) -> Result<Json<Value>, ApiError> {
    let app = state.sessions.app();
    let graph = app.compile(&state.workspaces)?;
    let projection = app.info(&graph, &state.workspaces, None)?;
    serde_json::to_value(&projection)
        .map(Json)
        .map_err(|e| ApiError::internal("server/info-unserializable", e.to_string()))
}

#[utoipa::path(get, path = "/openapi.json", tag = "system",
    responses((status = 200, description = "This document (OpenAPI 3.1)", body = Object)))]
pub async fn openapi() -> Response {
    (
        [(axum::http::header::CONTENT_TYPE, "application/json")],
        crate::openapi::document(),
    )
        .into_response()
}

/// `GET /.well-known/evoflux/ready`: the process accepts requests and its
/// session database answers. A load balancer sends nothing to a replica
/// that has lost its database: it answers 503 with the store's reason.
pub async fn readiness(State(state): State<Arc<ServerState>>) -> Result<StatusCode, ApiError> {
    match state.store.ping().await {
        Ok(()) => Ok(StatusCode::NO_CONTENT),
        Err(e) => Err(ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "server/database-unavailable",
            format!("the session database does not answer: {e}"),
        )),
    }
}

/// A host route this build reserves but does not run yet (schedule
/// triggers, fleet continuations): it answers why, and no channel can
/// claim the path.
pub async fn reserved() -> ApiError {
    ApiError::new(
        StatusCode::NOT_IMPLEMENTED,
        "server/host-route-not-built",
        "this host route is reserved for schedules and fleets, which this build does not run yet",
    )
}
