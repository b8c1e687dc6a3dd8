//! The read-only document viewer's routes: a session's workspace files
//! and one document rendered. Host routes (`HostRoute::ViewerFiles`,
//! `HostRoute::ViewerDocument`), not a channel: no tool, skill or plugin is
//! given them, and nothing they read or render enters a transcript, an
//! event or a model request. Paths are confined to the session's roots by
//! the tools' one workspace check; rendering runs on a blocking thread, a
//! few at a time, under the viewer's limits.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use axum::Json;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use evoflux_harness::Workspace;
use evoflux_viewer::{DocumentKind, Opened, PageRange, ViewError, ViewRequest};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use crate::error::ApiError;
use crate::state::ServerState;

/// How many entries one listing shows at most.
const MAX_ENTRIES: usize = 2_000;

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct FilesQuery {
    /// The session whose workspace is listed.
    pub session: String,
    /// Which of the session's roots (0 for a Work session's folder; a
    /// Coding session's repositories in order).
    #[serde(default)]
    pub root: usize,
    /// A folder relative to the root; the root itself when empty.
    #[serde(default)]
    pub dir: String,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct FileEntry {
    pub name: String,
    /// Relative to the root, `/`-separated: what `path` and `dir` take.
    pub path: String,
    pub is_dir: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bytes: Option<u64>,
    /// The viewer's kind for a document it opens (`docx`, `xlsx`, `pptx`,
    /// `pdf`); absent for other files.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>)]
    pub document: Option<DocumentKind>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct FileListing {
    /// The session's roots, by folder name, in order.
    pub roots: Vec<String>,
    pub root: usize,
    pub dir: String,
    /// Folders first, then files, each by name; `.git` is left out.
    pub entries: Vec<FileEntry>,
    /// More entries than a listing shows.
    pub truncated: bool,
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct DocumentQuery {
    pub session: String,
    #[serde(default)]
    pub root: usize,
    /// The document, relative to the root.
    pub path: String,
    /// For a PDF: `N` or `A-B` (1-based); the first pages when absent.
    #[serde(default)]
    pub pages: Option<String>,
}

#[derive(Debug, Serialize)]
pub struct DocumentView {
    pub path: String,
    pub name: String,
    #[serde(flatten)]
    pub opened: Opened,
}

/// The session's roots and the one `index` names.
async fn session_root(
    state: &ServerState,
    session: &str,
    index: usize,
) -> Result<(Vec<PathBuf>, PathBuf), ApiError> {
    let id = session.parse().map_err(|_| {
        ApiError::bad_request(
            "server/session-id-invalid",
            format!("`{session}` is not a session id"),
        )
        .field("session")
    })?;
    let session = state.store.load(id).await?;
    let roots = session.workspace.roots().to_vec();
    let root = roots.get(index).cloned().ok_or_else(|| {
        ApiError::bad_request(
            "viewer/root-invalid",
            format!(
                "the session has {} workspace root(s); `root` is 0 to {}",
                roots.len(),
                roots.len().saturating_sub(1)
            ),
        )
        .field("root")
    })?;
    Ok((roots, root))
}

/// `relative` inside `root`, through the tools' workspace check (symlinks
/// followed, nothing outside the root).
fn confine(root: &Path, relative: &str, field: &str) -> Result<PathBuf, ApiError> {
    let workspace = Workspace::new([root]).map_err(|e| {
        ApiError::not_found(
            "viewer/root-missing",
            format!("the session's workspace `{}` is gone: {e}", root.display()),
        )
    })?;
    let argument = if relative.is_empty() { "." } else { relative };
    if Path::new(argument).is_absolute() {
        return Err(ApiError::bad_request(
            "viewer/path-absolute",
            format!("`{relative}` is absolute; give a path relative to the workspace root"),
        )
        .field(field));
    }
    match workspace.resolve(argument) {
        Ok(resolved) => Ok(resolved.path),
        Err(_) if !root.join(argument).exists() => Err(ApiError::not_found(
            "viewer/file-not-found",
            format!("no `{relative}` in the session's workspace"),
        )
        .field(field)),
        Err(_) => Err(ApiError::forbidden(
            "viewer/outside-workspace",
            format!("`{relative}` is outside the session's workspace"),
        )
        .field(field)),
    }
}

/// The root as the confined paths spell it (symlinks resolved), found
/// once per request rather than once per entry.
fn canonical(root: &Path) -> std::path::PathBuf {
    std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf())
}

/// `path` relative to `root` (both canonical), with `/` separators.
fn relative_to(root: &Path, path: &Path) -> String {
    path.strip_prefix(root)
        .unwrap_or(path)
        .components()
        .map(|c| c.as_os_str().to_string_lossy())
        .collect::<Vec<_>>()
        .join("/")
}

#[utoipa::path(get, path = "/api/viewer/files", tag = "viewer",
    params(FilesQuery),
    responses(
        (status = 200, description = "One folder of the session's workspace", body = FileListing),
        (status = 400, description = "A bad session id, root or folder", body = ApiError),
        (status = 403, description = "The folder is outside the workspace", body = ApiError),
        (status = 404, description = "No such session or folder", body = ApiError)
    ))]
pub async fn files(
    State(state): State<Arc<ServerState>>,
    query: Result<Query<FilesQuery>, QueryRejection>,
) -> Result<Json<FileListing>, ApiError> {
    let Query(query) = query.map_err(query_error)?;
    let (roots, root) = session_root(&state, &query.session, query.root).await?;
    let dir = confine(&root, &query.dir, "dir")?;
    let names = roots
        .iter()
        .map(|r| {
            r.file_name()
                .map_or_else(|| r.display().to_string(), |n| n.to_string_lossy().into())
        })
        .collect();
    let root_for_paths = canonical(&root);
    let (entries, truncated) = crate::api::blocking(move || {
        let read = std::fs::read_dir(&dir).map_err(|e| {
            ApiError::bad_request(
                "viewer/not-a-folder",
                format!("`{}` cannot be listed: {e}", dir.display()),
            )
            .field("dir")
        })?;
        let mut entries: Vec<FileEntry> = Vec::new();
        let mut truncated = false;
        for entry in read.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if name == ".git" {
                continue;
            }
            if entries.len() == MAX_ENTRIES {
                truncated = true;
                break;
            }
            let meta = entry.metadata().ok();
            let is_dir = meta.as_ref().is_some_and(std::fs::Metadata::is_dir);
            let path = entry.path();
            entries.push(FileEntry {
                path: relative_to(&root_for_paths, &path),
                document: (!is_dir).then(|| DocumentKind::of(&path)).flatten(),
                bytes: meta.filter(|m| m.is_file()).map(|m| m.len()),
                is_dir,
                name,
            });
        }
        entries.sort_by(|a, b| b.is_dir.cmp(&a.is_dir).then_with(|| a.name.cmp(&b.name)));
        Ok((entries, truncated))
    })
    .await?;
    Ok(Json(FileListing {
        roots: names,
        root: query.root,
        dir: query.dir,
        entries,
        truncated,
    }))
}

/// A query string that does not fit the route's parameters, in the API's
/// one error shape.
fn query_error(e: QueryRejection) -> ApiError {
    ApiError::bad_request("viewer/query-invalid", e.body_text())
}

/// The answer to a document the viewer refuses or cannot read.
fn view_error(e: &ViewError) -> ApiError {
    let status = match e {
        ViewError::UnsupportedKind(_) => StatusCode::UNSUPPORTED_MEDIA_TYPE,
        ViewError::FileTooLarge { .. } => StatusCode::PAYLOAD_TOO_LARGE,
        ViewError::BadPageRange(_) | ViewError::PagesOutside { .. } => StatusCode::BAD_REQUEST,
        ViewError::Io { .. } => StatusCode::INTERNAL_SERVER_ERROR,
        ViewError::KindMismatch { .. }
        | ViewError::Package(_)
        | ViewError::PackageInvalid(_)
        | ViewError::PartTooLarge { .. }
        | ViewError::Xml { .. }
        | ViewError::Spreadsheet(_)
        | ViewError::Pdf(_)
        | ViewError::PdfEncrypted
        | ViewError::PdfTooManyPages { .. }
        | ViewError::DeadlineExceeded { .. } => StatusCode::UNPROCESSABLE_ENTITY,
    };
    let error = ApiError::new(status, e.code(), e.to_string());
    match e {
        ViewError::BadPageRange(_) | ViewError::PagesOutside { .. } => error.field("pages"),
        _ => error.field("path"),
    }
}

#[utoipa::path(get, path = "/api/viewer/document", tag = "viewer",
    params(DocumentQuery),
    responses(
        (status = 200, description = "The document rendered: its parts as inert HTML, what was left out as coded notices, and for a PDF the pages shown", body = Object),
        (status = 400, description = "A bad page range", body = ApiError),
        (status = 403, description = "The path is outside the workspace", body = ApiError),
        (status = 404, description = "No such session or file", body = ApiError),
        (status = 413, description = "The file is larger than the viewer opens", body = ApiError),
        (status = 415, description = "Not a DOCX, XLSX, PPTX or PDF file", body = ApiError),
        (status = 422, description = "The document is refused (an unsafe package, a bomb, an encrypted PDF) or could not be read in time", body = ApiError)
    ))]
pub async fn document(
    State(state): State<Arc<ServerState>>,
    query: Result<Query<DocumentQuery>, QueryRejection>,
) -> Result<Json<DocumentView>, ApiError> {
    let Query(query) = query.map_err(query_error)?;
    let (_, root) = session_root(&state, &query.session, query.root).await?;
    let real = confine(&root, &query.path, "path")?;
    let request = ViewRequest {
        pages: query
            .pages
            .as_deref()
            .filter(|p| !p.is_empty())
            .map(PageRange::parse)
            .transpose()
            .map_err(|e| view_error(&e))?,
    };
    let _slot = state
        .viewer_slots
        .acquire()
        .await
        .map_err(|e| ApiError::internal("server/task-failed", e.to_string()))?;
    let viewer = state.viewer.clone();
    let path = real.clone();
    let opened =
        crate::api::blocking(move || viewer.open(&path, request).map_err(|e| view_error(&e)))
            .await?;
    Ok(Json(DocumentView {
        path: relative_to(&canonical(&root), &real),
        name: real
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default(),
        opened,
    }))
}
