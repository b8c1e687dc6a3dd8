//! `POST /api/highlight`: one code block's tokens for the web UI, a thin
//! front over `evoflux_code::highlight` (the page may download nothing and
//! vendors no highlighter, so the server's grammars do it).
//!
//! The answer is ranges and classes, never HTML: the page builds the spans
//! with `textContent`, so code from a model stays text. Blocks are
//! highlighted on blocking threads, two at a time, each bounded in size and
//! time by the library.

use axum::Json;
use axum::extract::rejection::JsonRejection;
use axum::http::StatusCode;
use evoflux_code::highlight::{HighlightError, HighlightLanguage, Token, highlight};
use serde::{Deserialize, Serialize};
use tokio::sync::Semaphore;
use utoipa::ToSchema;

use crate::error::{ApiError, body_error};

/// Blocks highlighted at once; more wait their turn, so a page full of
/// code cannot take every blocking thread.
static SLOTS: Semaphore = Semaphore::const_new(2);

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct HighlightRequest {
    /// The block's fence tag (`rust`, `rs`, `py`, `ts`, `c++`, `yaml` …).
    pub language: String,
    /// The block's text, at most 256 KiB of UTF-8.
    pub code: String,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct Highlighted {
    /// The language's canonical name (`rust` for `rs`).
    #[schema(value_type = String)]
    pub language: HighlightLanguage,
    /// `[start, end, class]` per token, in order and not overlapping;
    /// offsets are UTF-16 code units of `code` (what a JavaScript string
    /// indexes). Classes: keyword, string, escape, comment, number,
    /// constant, function, type, variable, property, attribute, tag,
    /// label, operator, punctuation. Text outside every token has none.
    #[schema(value_type = Vec<Vec<Object>>)]
    pub spans: Vec<Token>,
}

fn highlight_error(e: &HighlightError) -> ApiError {
    let (status, field) = match e {
        HighlightError::UnknownLanguage { .. } => (StatusCode::UNPROCESSABLE_ENTITY, "language"),
        HighlightError::TooLarge { .. } => (StatusCode::PAYLOAD_TOO_LARGE, "code"),
        HighlightError::TimedOut { .. } => (StatusCode::UNPROCESSABLE_ENTITY, "code"),
        HighlightError::Failed { .. } => (StatusCode::INTERNAL_SERVER_ERROR, "language"),
    };
    ApiError::new(status, e.code(), e.to_string()).field(field)
}

#[utoipa::path(post, path = "/api/highlight", tag = "highlight", request_body = HighlightRequest,
    responses(
        (status = 200, description = "The block's tokens by class", body = Highlighted),
        (status = 413, description = "`code` is over 256 KiB (highlight/too-large)", body = ApiError),
        (status = 422, description = "A language that is not highlighted (highlight/unknown-language), or a block that took too long (highlight/timed-out)", body = ApiError)
    ))]
pub async fn highlight_block(
    body: Result<Json<HighlightRequest>, JsonRejection>,
) -> Result<Json<Highlighted>, ApiError> {
    let Json(body) = body.map_err(body_error)?;
    let language = HighlightLanguage::parse(&body.language).map_err(|e| highlight_error(&e))?;
    let _slot = SLOTS
        .acquire()
        .await
        .map_err(|e| ApiError::internal("server/task-failed", e.to_string()))?;
    let spans = crate::api::blocking(move || {
        highlight(language, &body.code).map_err(|e| highlight_error(&e))
    })
    .await?;
    Ok(Json(Highlighted { language, spans }))
}
