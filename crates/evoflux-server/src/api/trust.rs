//! `/api/trust`: the repository trust prompt of the web UI, as
//! `evoflux trust` shows and records it. A page reviews a repository (what
//! trusting it grants, grouped by what each source does, and what changed
//! since it was trusted), then grants that review by its identity, so a
//! repository that changed between showing and granting is refused
//! (`trust/review-stale`) rather than trusted with something nobody saw.
//! Only repositories this server serves may be reviewed, trusted or
//! revoked: the same authorization as a Coding session's workspaces.

use std::path::PathBuf;
use std::sync::Arc;

use axum::Json;
use axum::extract::rejection::{JsonRejection, QueryRejection};
use axum::extract::{Query, State};
use axum::http::StatusCode;
use evoflux_app::trust_review::{ShownGroup, TrustRefusal, TrustReview};
use evoflux_core::trust::TrustState;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::api::blocking;
use crate::api::sessions::authorized;
use crate::error::{ApiError, body_error};
use crate::state::ServerState;

/// `?path=`: a directory of a served repository.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct TrustQuery {
    /// A directory of the repository: one of the server's workspaces or a
    /// directory inside one.
    pub path: String,
}

/// `POST /api/trust`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct GrantBody {
    /// A directory of the repository, as reviewed.
    pub path: String,
    /// The `review` of the `GET /api/trust` answer that was shown.
    pub review: String,
}

/// A repository's trust as the prompt shows it.
#[derive(Debug, Serialize, ToSchema)]
pub struct TrustShown {
    /// The repository root (canonical).
    #[schema(value_type = String)]
    pub repository: PathBuf,
    /// Its `origin` remote, recorded with the trust.
    pub remote: Option<String>,
    /// `{state: trusted | untrusted | remote-changed}` (with the recorded
    /// and current remote when it changed).
    #[schema(value_type = Object)]
    pub trust: TrustState,
    /// Trusting it now grants something not granted before: a front end
    /// asks only then.
    pub grants_anything_new: bool,
    /// It is trusted, and sources changed or were added since (their
    /// items' `status` is `changed` or `added`); they wait until it is
    /// trusted again.
    pub changed_since_trust: bool,
    /// The review's identity: `POST /api/trust` grants exactly this.
    pub review: String,
    /// What trusting grants, by kind (`command-tools`, `mcp-servers`,
    /// `channels`, …): each item with the line `evoflux trust` shows.
    #[schema(value_type = Vec<Object>)]
    pub groups: Vec<ShownGroup>,
    /// What is wrong with those sources (each one with errors does not run).
    #[schema(value_type = Vec<Object>)]
    pub diagnostics: serde_json::Value,
}

impl TrustShown {
    fn new(review: &TrustReview, trust: TrustState) -> TrustShown {
        let anything_new = review.grants_anything_new();
        TrustShown {
            repository: review.repository.clone(),
            remote: review.remote.clone(),
            trust,
            grants_anything_new: anything_new,
            changed_since_trust: review.trusted && anything_new,
            review: review.identity(),
            groups: review.groups(),
            diagnostics: review.diagnostics.to_json(),
        }
    }
}

/// The served directory `path` names (canonical), or why not.
fn served_dir(state: &ServerState, path: &str) -> Result<PathBuf, ApiError> {
    let with_field = |e: ApiError| e.field("path");
    let dir = authorized(state, &[PathBuf::from(path)])
        .map_err(with_field)?
        .into_iter()
        .next()
        .ok_or_else(|| {
            ApiError::unprocessable("server/workspace-invalid", "name a directory in `path`")
                .field("path")
        })?;
    if !dir.is_dir() {
        return Err(ApiError::unprocessable(
            "trust/not-a-directory",
            format!(
                "cannot review {}: it is not a directory; name a directory of the repository",
                dir.display()
            ),
        )
        .field("path"));
    }
    Ok(dir)
}

/// The repository holding `dir` as the prompt shows it now.
fn shown(state: &ServerState, dir: &std::path::Path) -> Result<TrustShown, ApiError> {
    let app = state.sessions.app();
    let review = app.trust_review(dir)?;
    let trust = app.trust_list()?.state(&review.repository);
    Ok(TrustShown::new(&review, trust))
}

fn query_error(e: QueryRejection) -> ApiError {
    ApiError::bad_request("trust/query-invalid", e.body_text()).field("path")
}

#[utoipa::path(get, path = "/api/trust", operation_id = "trust_show", tag = "trust", params(TrustQuery),
    responses(
        (status = 200, description = "What trusting the repository grants, whether it is trusted, what changed since, and the review's identity", body = TrustShown),
        (status = 400, description = "`trust/query-invalid`: no `path`", body = ApiError),
        (status = 403, description = "Not a repository this server serves", body = ApiError),
        (status = 422, description = "Not a directory", body = ApiError)
    ))]
pub async fn show(
    State(state): State<Arc<ServerState>>,
    query: Result<Query<TrustQuery>, QueryRejection>,
) -> Result<Json<TrustShown>, ApiError> {
    let Query(q) = query.map_err(query_error)?;
    let dir = served_dir(&state, &q.path)?;
    blocking(move || shown(&state, &dir)).await.map(Json)
}

#[utoipa::path(post, path = "/api/trust", operation_id = "trust_grant", tag = "trust", request_body = GrantBody,
    responses(
        (status = 200, description = "Trusted as reviewed (written to the trust list `evoflux trust` keeps); the repository as it stands now", body = TrustShown),
        (status = 403, description = "Not a repository this server serves", body = ApiError),
        (status = 409, description = "`trust/review-stale`: the repository changed since the review was shown; nothing was trusted", body = ApiError),
        (status = 422, description = "Not a directory, or not the body this route takes", body = ApiError)
    ))]
pub async fn grant(
    State(state): State<Arc<ServerState>>,
    body: Result<Json<GrantBody>, JsonRejection>,
) -> Result<Json<TrustShown>, ApiError> {
    let Json(body) = body.map_err(body_error)?;
    let dir = served_dir(&state, &body.path)?;
    let s = Arc::clone(&state);
    let granted = blocking(move || {
        match s.sessions.app().grant_reviewed(&dir, &body.review)? {
            Ok(_) => {}
            Err(refusal) => {
                return Err(match refusal {
                    TrustRefusal::Stale { .. } => {
                        ApiError::new(StatusCode::CONFLICT, refusal.code(), refusal.to_string())
                            .field("review")
                    }
                });
            }
        }
        shown(&s, &dir)
    })
    .await?;
    // Its command tools, MCP servers and channels may run from now on.
    state.sources_changed().await;
    Ok(Json(granted))
}

#[utoipa::path(delete, path = "/api/trust", operation_id = "trust_revoke", tag = "trust", params(TrustQuery),
    responses(
        (status = 200, description = "The repository's trust is forgotten (as `evoflux trust --revoke`); the repository as it stands now", body = TrustShown),
        (status = 400, description = "`trust/query-invalid`: no `path`", body = ApiError),
        (status = 403, description = "Not a repository this server serves", body = ApiError),
        (status = 422, description = "Not a directory", body = ApiError)
    ))]
pub async fn revoke(
    State(state): State<Arc<ServerState>>,
    query: Result<Query<TrustQuery>, QueryRejection>,
) -> Result<Json<TrustShown>, ApiError> {
    let Query(q) = query.map_err(query_error)?;
    let dir = served_dir(&state, &q.path)?;
    let s = Arc::clone(&state);
    let now = blocking(move || {
        s.sessions.app().revoke_trust(&dir)?;
        shown(&s, &dir)
    })
    .await?;
    state.sources_changed().await;
    Ok(Json(now))
}
