//! `/api/agents`: an agent's file and effective configuration, and
//! creating, replacing and deleting the user's agent files, each checked
//! against the whole team of its mode ([`evoflux_app::agent_files`]).
//! Work agents are `/api/agents/{name}`, Coding agents
//! `/api/agents/coding/{name}`.

use std::sync::Arc;

use axum::Json;
use axum::extract::rejection::JsonRejection;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use evoflux_agents::team::form::unknown_entries;
use evoflux_agents::team::{AgentForm, FormError, read_form, write_form};
use evoflux_app::agent_files::{AgentChange, AgentDetail, AgentEditError};
use evoflux_core::AppMode;
use serde::Deserialize;
use utoipa::ToSchema;

use crate::error::{ApiError, body_error};
use crate::state::ServerState;

/// `POST /api/agents`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewAgent {
    /// `name` (Work) or `coding/name` (Coding).
    pub name: String,
    /// The whole Markdown file: front matter and prompt.
    pub content: String,
}

/// `PUT /api/agents/{name}`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AgentContent {
    /// When given, it must be the name the URL names.
    pub name: Option<String>,
    pub content: String,
}

fn api_error(e: AgentEditError) -> ApiError {
    let e = match e {
        AgentEditError::Session(s) => return ApiError::from(s),
        other => other,
    };
    let status = match &e {
        AgentEditError::Name(_) => StatusCode::BAD_REQUEST,
        AgentEditError::Exists(_) => StatusCode::CONFLICT,
        AgentEditError::NotFound(_) => StatusCode::NOT_FOUND,
        AgentEditError::NotEditable { .. } => StatusCode::FORBIDDEN,
        AgentEditError::Invalid { .. } | AgentEditError::TeamBroken { .. } => {
            StatusCode::UNPROCESSABLE_ENTITY
        }
        AgentEditError::Io { .. } | AgentEditError::Session(_) => StatusCode::INTERNAL_SERVER_ERROR,
    };
    let message = match e.diagnostics() {
        Some(d) if !d.is_empty() => format!("{e}\n{}", d.render_human()),
        _ => e.to_string(),
    };
    ApiError::new(status, e.code(), message)
}

fn qualified(mode: AppMode, name: &str) -> String {
    evoflux_agents::team::qualified_name(mode, name)
}

#[utoipa::path(post, path = "/api/agents", operation_id = "create_agent", tag = "agents", request_body = NewAgent,
    responses(
        (status = 201, description = "Created in the user's agents folder; the team still holds", body = Object),
        (status = 400, description = "Not an agent name", body = ApiError),
        (status = 409, description = "The user already has that agent", body = ApiError),
        (status = 422, description = "The file has errors, or the team would break (nothing was written)", body = ApiError)
    ))]
pub async fn create(
    State(state): State<Arc<ServerState>>,
    body: Result<Json<NewAgent>, JsonRejection>,
) -> Result<(StatusCode, Json<AgentDetail>), ApiError> {
    let Json(body) = body.map_err(body_error)?;
    let detail = state
        .sessions
        .app()
        .change_agent(
            &state.workspaces,
            &body.name,
            AgentChange::Create {
                content: body.content,
            },
        )
        .map_err(api_error)?;
    Ok((StatusCode::CREATED, Json(detail)))
}

fn show(state: &ServerState, name: String) -> Result<Json<AgentDetail>, ApiError> {
    state
        .sessions
        .app()
        .agent_detail(&state.workspaces, &name)
        .map(Json)
        .map_err(api_error)
}

#[utoipa::path(get, path = "/api/agents/{name}", tag = "agents",
    params(("name" = String, Path, description = "A Work agent")),
    responses(
        (status = 200, description = "The file's text and its effective configuration (the runtime's compiler)", body = Object),
        (status = 404, description = "No such agent", body = ApiError)
    ))]
pub async fn show_work(
    State(state): State<Arc<ServerState>>,
    Path(name): Path<String>,
) -> Result<Json<AgentDetail>, ApiError> {
    show(&state, qualified(AppMode::Work, &name))
}

#[utoipa::path(get, path = "/api/agents/coding/{name}", tag = "agents",
    params(("name" = String, Path, description = "A Coding agent")),
    responses(
        (status = 200, description = "The file's text and its effective configuration (the runtime's compiler)", body = Object),
        (status = 404, description = "No such agent", body = ApiError)
    ))]
pub async fn show_coding(
    State(state): State<Arc<ServerState>>,
    Path(name): Path<String>,
) -> Result<Json<AgentDetail>, ApiError> {
    show(&state, qualified(AppMode::Coding, &name))
}

fn replace(
    state: &ServerState,
    name: String,
    body: Result<Json<AgentContent>, JsonRejection>,
) -> Result<Json<AgentDetail>, ApiError> {
    let Json(body) = body.map_err(body_error)?;
    if let Some(named) = &body.name
        && *named != name
    {
        return Err(ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "agent/name-mismatch",
            format!("the body names `{named}` but the URL names `{name}`"),
        )
        .field("name"));
    }
    state
        .sessions
        .app()
        .change_agent(
            &state.workspaces,
            &name,
            AgentChange::Replace {
                content: body.content,
            },
        )
        .map(Json)
        .map_err(api_error)
}

#[utoipa::path(put, path = "/api/agents/{name}", tag = "agents", request_body = AgentContent,
    params(("name" = String, Path, description = "A Work agent")),
    responses(
        (status = 200, description = "Replaced; the team still holds", body = Object),
        (status = 403, description = "Not the user's file", body = ApiError),
        (status = 404, description = "No such agent", body = ApiError),
        (status = 422, description = "The file has errors, or the team would break (nothing was changed)", body = ApiError)
    ))]
pub async fn replace_work(
    State(state): State<Arc<ServerState>>,
    Path(name): Path<String>,
    body: Result<Json<AgentContent>, JsonRejection>,
) -> Result<Json<AgentDetail>, ApiError> {
    replace(&state, qualified(AppMode::Work, &name), body)
}

#[utoipa::path(put, path = "/api/agents/coding/{name}", tag = "agents", request_body = AgentContent,
    params(("name" = String, Path, description = "A Coding agent")),
    responses(
        (status = 200, description = "Replaced; the team still holds", body = Object),
        (status = 403, description = "Not the user's file", body = ApiError),
        (status = 404, description = "No such agent", body = ApiError),
        (status = 422, description = "The file has errors, or the team would break (nothing was changed)", body = ApiError)
    ))]
pub async fn replace_coding(
    State(state): State<Arc<ServerState>>,
    Path(name): Path<String>,
    body: Result<Json<AgentContent>, JsonRejection>,
) -> Result<Json<AgentDetail>, ApiError> {
    replace(&state, qualified(AppMode::Coding, &name), body)
}

fn delete(state: &ServerState, name: String) -> Result<StatusCode, ApiError> {
    state
        .sessions
        .app()
        .change_agent(&state.workspaces, &name, AgentChange::Delete)
        .map(|_| StatusCode::NO_CONTENT)
        .map_err(api_error)
}

#[utoipa::path(delete, path = "/api/agents/{name}", tag = "agents",
    params(("name" = String, Path, description = "A Work agent")),
    responses(
        (status = 204, description = "Deleted; the team still holds"),
        (status = 403, description = "Not the user's file", body = ApiError),
        (status = 404, description = "No such agent", body = ApiError),
        (status = 422, description = "The team would lose its only lead (nothing was deleted)", body = ApiError)
    ))]
pub async fn delete_work(
    State(state): State<Arc<ServerState>>,
    Path(name): Path<String>,
) -> Result<StatusCode, ApiError> {
    delete(&state, qualified(AppMode::Work, &name))
}

#[utoipa::path(delete, path = "/api/agents/coding/{name}", tag = "agents",
    params(("name" = String, Path, description = "A Coding agent")),
    responses(
        (status = 204, description = "Deleted; the team still holds"),
        (status = 403, description = "Not the user's file", body = ApiError),
        (status = 404, description = "No such agent", body = ApiError),
        (status = 422, description = "The team would lose its only lead (nothing was deleted)", body = ApiError)
    ))]
pub async fn delete_coding(
    State(state): State<Arc<ServerState>>,
    Path(name): Path<String>,
) -> Result<StatusCode, ApiError> {
    delete(&state, qualified(AppMode::Coding, &name))
}

/// `POST /api/agent-form/read`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct FormRead {
    /// A whole agent file.
    pub content: String,
}

/// The Form view of an agent file.
#[derive(Debug, serde::Serialize, ToSchema)]
pub struct FormView {
    #[schema(value_type = Object)]
    pub form: AgentForm,
    /// The prompt below the front matter.
    pub body: String,
    /// Keys the Form view does not show; a Form save keeps them byte for
    /// byte.
    pub unknown_keys: Vec<String>,
}

/// `POST /api/agent-form/write`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct FormWrite {
    /// The file as it is (the Raw view's text).
    pub content: String,
    #[schema(value_type = Object)]
    pub form: AgentForm,
    /// The prompt; the file's own is kept when absent.
    pub body: Option<String>,
}

/// The file a Form save produces.
#[derive(Debug, serde::Serialize, ToSchema)]
pub struct FormWritten {
    pub content: String,
}

fn form_error(e: FormError) -> ApiError {
    let code = match &e {
        FormError::FrontMatter(_) => "agent/front-matter-invalid",
        FormError::Unsupported(_) => "agent/form-unsupported",
        FormError::Render(_) => "agent/form-render-failed",
    };
    ApiError::unprocessable(code, e.to_string()).field("content")
}

#[utoipa::path(post, path = "/api/agent-form/read", tag = "agents", request_body = FormRead,
    responses(
        (status = 200, description = "The Form view's values of an agent file (the editor's one reader), its prompt and the keys the Form keeps untouched", body = FormView),
        (status = 422, description = "Front matter that the Form view cannot edit without losing text; use the Raw view", body = ApiError)
    ))]
pub async fn read_form_view(
    body: Result<Json<FormRead>, JsonRejection>,
) -> Result<Json<FormView>, ApiError> {
    let Json(body) = body.map_err(body_error)?;
    let (form, prompt) = read_form(&body.content).map_err(form_error)?;
    let unknown_keys = unknown_entries(&body.content).map_err(form_error)?;
    Ok(Json(FormView {
        form,
        body: prompt,
        unknown_keys,
    }))
}

#[utoipa::path(post, path = "/api/agent-form/write", tag = "agents", request_body = FormWrite,
    responses(
        (status = 200, description = "The file with the Form's values written over it: unknown keys, comments and unchanged values keep their exact text", body = FormWritten),
        (status = 422, description = "Front matter that the Form view cannot edit without losing text", body = ApiError)
    ))]
pub async fn write_form_view(
    body: Result<Json<FormWrite>, JsonRejection>,
) -> Result<Json<FormWritten>, ApiError> {
    let Json(body) = body.map_err(body_error)?;
    let content =
        write_form(&body.content, &body.form, body.body.as_deref()).map_err(form_error)?;
    Ok(Json(FormWritten { content }))
}
