//! The one error shape of the HTTP API: `{code, message, field?}` with the
//! same stable `area/kebab-name` codes the CLI's diagnostics carry.

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use evoflux_app::SessionError;
use evoflux_harness::StoreError;
use serde::Serialize;

/// An error answer.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct ApiError {
    #[serde(skip)]
    pub status: StatusCode,
    /// Stable, `area/kebab-name`.
    pub code: String,
    pub message: String,
    /// The request field at fault, when one is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
    /// The diagnostics behind a refusal (an invalid file or package), each
    /// with its code, severity and locator.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Vec<Object>>)]
    pub diagnostics: Option<serde_json::Value>,
}

impl ApiError {
    pub fn new(status: StatusCode, code: &str, message: impl Into<String>) -> ApiError {
        ApiError {
            status,
            code: code.to_owned(),
            message: message.into(),
            field: None,
            diagnostics: None,
        }
    }

    /// Attaches the diagnostics behind the refusal (none when empty).
    pub fn diagnostics(mut self, diagnostics: &evoflux_core::Diagnostics) -> ApiError {
        if !diagnostics.is_empty() {
            self.diagnostics = Some(diagnostics.to_json());
        }
        self
    }

    pub fn forbidden(code: &str, message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::FORBIDDEN, code, message)
    }

    pub fn unprocessable(code: &str, message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, code, message)
    }

    pub fn field(mut self, field: &str) -> ApiError {
        self.field = Some(field.to_owned());
        self
    }

    pub fn not_found(code: &str, message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::NOT_FOUND, code, message)
    }

    pub fn conflict(code: &str, message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::CONFLICT, code, message)
    }

    pub fn bad_request(code: &str, message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::BAD_REQUEST, code, message)
    }

    pub fn internal(code: &str, message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, code, message)
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (self.status, Json(&self)).into_response()
    }
}

/// The status and request field a store error answers with.
fn store_status(e: &StoreError) -> (StatusCode, Option<&'static str>) {
    match e {
        StoreError::SessionNotFound(_) | StoreError::PendingInputNotFound { .. } => {
            (StatusCode::NOT_FOUND, None)
        }
        StoreError::ModeMismatch { .. } => (StatusCode::CONFLICT, Some("mode")),
        StoreError::WorkspaceMismatch { .. }
        | StoreError::CodingWorkspaceEmpty
        | StoreError::WorkspaceNotAbsolute(_) => (StatusCode::CONFLICT, Some("workspaces")),
        StoreError::PendingInputAnswered { .. } => (StatusCode::CONFLICT, None),
        StoreError::TitleEmpty => (StatusCode::UNPROCESSABLE_ENTITY, Some("title")),
        StoreError::Cursor(_) => (StatusCode::BAD_REQUEST, Some("before")),
        StoreError::DataDir { .. }
        | StoreError::Open { .. }
        | StoreError::Migrate { .. }
        | StoreError::Database(_)
        | StoreError::DatabaseUrl { .. }
        | StoreError::ArtifactsUrl { .. }
        | StoreError::Artifacts { .. }
        | StoreError::Transfer { .. }
        | StoreError::ImportIntoNonEmpty { .. }
        | StoreError::Corrupt { .. } => (StatusCode::INTERNAL_SERVER_ERROR, None),
    }
}

impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> ApiError {
        let (status, field) = store_status(&e);
        ApiError {
            field: field.map(str::to_owned),
            ..ApiError::new(status, e.code(), e.to_string())
        }
    }
}

impl From<SessionError> for ApiError {
    fn from(e: SessionError) -> ApiError {
        use StatusCode as S;
        // What the request asked for cannot be had (422), the server's
        // sources or trust are in the way (409), or the server failed (500).
        let (status, field) = match &e {
            SessionError::Store(store)
            | SessionError::Lease(evoflux_harness::LeaseError::Store(store)) => {
                let (status, field) = store_status(store);
                (status, field.map(str::to_owned))
            }
            // Another process runs a turn on the session: try again later.
            SessionError::Lease(evoflux_harness::LeaseError::Busy { .. }) => (S::CONFLICT, None),
            SessionError::Workspace { .. } | SessionError::WorkspaceInWorkMode { .. } => {
                (S::UNPROCESSABLE_ENTITY, Some("workspaces".to_owned()))
            }
            SessionError::Lead { .. }
            | SessionError::LeadUnloadable { .. }
            | SessionError::WorkerUnknown { .. } => {
                (S::UNPROCESSABLE_ENTITY, Some("lead".to_owned()))
            }
            SessionError::ModelInvalid { .. } | SessionError::Provider { .. } => {
                (S::UNPROCESSABLE_ENTITY, Some("model".to_owned()))
            }
            SessionError::Compile(_)
            | SessionError::Config { .. }
            | SessionError::Sandbox { .. }
            | SessionError::Trust(_) => (S::CONFLICT, None),
            SessionError::Pipeline(_) | SessionError::Mcp(_) | SessionError::Harness(_) => {
                (S::INTERNAL_SERVER_ERROR, None)
            }
        };
        let message = match e.diagnostics() {
            Some(d) if !d.is_empty() => format!("{e}\n{}", d.render_human()),
            _ => e.to_string(),
        };
        ApiError {
            field,
            ..ApiError::new(status, e.code(), message)
        }
    }
}

/// A request body that is not the JSON its route takes.
pub fn body_error(e: axum::extract::rejection::JsonRejection) -> ApiError {
    ApiError::new(
        StatusCode::UNPROCESSABLE_ENTITY,
        "server/body-invalid",
        e.body_text(),
    )
}
