//! `/api/plugins`: the plugin lifecycle over HTTP, on the one
//! [`PluginManager`] the CLI drives — inspect, install or link, upload
//! (streamed, at most [`MAX_UPLOAD_BYTES`]), update and update from an
//! upload, create, pack, the package editor confined to a plugin root,
//! credentials (secrets masked in every answer), enable and disable, and
//! uninstall. What a client may do with an installation is its
//! `capabilities`, from the library, never inferred from its source type.
//! After every change the server's MCP view follows the registry, and
//! every live session reopens on the new sources before its next turn.

use std::collections::BTreeMap;
use std::path::{Path as FsPath, PathBuf};
use std::sync::Arc;

use axum::Json;
use axum::extract::multipart::{Multipart, MultipartRejection};
use axum::extract::rejection::JsonRejection;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use evoflux_plugins::credentials::{CredentialChange, CredentialValue};
use evoflux_plugins::error::PluginError;
use evoflux_plugins::installation::InstallationId;
use evoflux_plugins::lifecycle::{CreateOptions, PluginManager, UpdateTrust};
use evoflux_plugins::workspace::{EntryKind, PackageWorkspace, WorkspaceError};
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::io::AsyncWriteExt;
use utoipa::ToSchema;

use crate::api::blocking;
use crate::error::{ApiError, body_error};
use crate::state::ServerState;

/// Largest archive an upload may send (50 MiB).
pub const MAX_UPLOAD_BYTES: u64 = 50 * 1024 * 1024;
/// The multipart field that carries the archive.
const ARCHIVE_FIELD: &str = "archive";

/// The status a plugin error answers with: a missing installation 404, a
/// bundled plugin 403, a conflict with what exists (the bundled tree, a
/// name already installed, a destination, the registry) 409, a verdict on
/// the request (a package, a name, a value) 422, the server's failure 500.
fn plugin_error(e: PluginError) -> ApiError {
    use StatusCode as S;
    let (status, field) = match &e {
        PluginError::NotFound(_)
        | PluginError::InvalidId(_)
        | PluginError::KeptDataNotFound { .. } => (S::NOT_FOUND, None),
        PluginError::Builtin { .. } => (S::FORBIDDEN, None),
        PluginError::InsideBundledTree { .. }
        | PluginError::AlreadyInstalled { .. }
        | PluginError::DestinationExists(_)
        | PluginError::DataInUse { .. }
        | PluginError::LinkedNotUpdatable { .. }
        | PluginError::Lock(_)
        | PluginError::RegistryMalformed { .. }
        | PluginError::CredentialsMalformed { .. } => (S::CONFLICT, None),
        PluginError::SourceMissing(_) => (S::UNPROCESSABLE_ENTITY, Some("path")),
        PluginError::UnknownCredential { .. } | PluginError::InvalidCredential { .. } => {
            (S::UNPROCESSABLE_ENTITY, Some("values"))
        }
        PluginError::CredentialsNotSupported(_)
        | PluginError::CredentialsDeclarationInvalid { .. } => (S::UNPROCESSABLE_ENTITY, None),
        other if other.is_validation() => (S::UNPROCESSABLE_ENTITY, None),
        _ => (S::INTERNAL_SERVER_ERROR, None),
    };
    let diagnostics: evoflux_core::Diagnostics = e
        .package_diagnostics()
        .iter()
        .map(|d| d.diagnostic.clone())
        .collect();
    let out = ApiError::new(status, e.code(), e.to_string()).diagnostics(&diagnostics);
    match field {
        Some(f) => out.field(f),
        None => out,
    }
}

fn workspace_error(e: WorkspaceError) -> ApiError {
    use StatusCode as S;
    let status = match &e {
        WorkspaceError::NotAPackage(_) => S::UNPROCESSABLE_ENTITY,
        WorkspaceError::BundledTree(_) => S::CONFLICT,
        WorkspaceError::PathInvalid { .. } | WorkspaceError::Symlink { .. } => S::BAD_REQUEST,
        WorkspaceError::NotFound { .. } => S::NOT_FOUND,
        WorkspaceError::Exists { .. }
        | WorkspaceError::IsFolder { .. }
        | WorkspaceError::NotAFolder { .. }
        | WorkspaceError::FolderNotEmpty { .. }
        | WorkspaceError::Manifest => S::CONFLICT,
        WorkspaceError::TooLarge { .. } => S::PAYLOAD_TOO_LARGE,
        WorkspaceError::NotText { .. } => S::UNPROCESSABLE_ENTITY,
        WorkspaceError::Io { .. } => S::INTERNAL_SERVER_ERROR,
    };
    let field = match &e {
        WorkspaceError::NotAPackage(_) | WorkspaceError::BundledTree(_) => "root",
        WorkspaceError::PathInvalid { .. }
        | WorkspaceError::Symlink { .. }
        | WorkspaceError::NotFound { .. }
        | WorkspaceError::Exists { .. }
        | WorkspaceError::IsFolder { .. }
        | WorkspaceError::NotAFolder { .. }
        | WorkspaceError::FolderNotEmpty { .. }
        | WorkspaceError::Manifest
        | WorkspaceError::NotText { .. } => "path",
        WorkspaceError::TooLarge { .. } | WorkspaceError::Io { .. } => "content",
    };
    ApiError::new(status, e.code(), e.to_string()).field(field)
}

fn manager(state: &ServerState) -> PluginManager {
    state.sessions.app().plugins()
}

/// Runs a plugin change off the async workers, answers with what it
/// returned, and tells the server its sources changed.
async fn change<T: serde::Serialize + Send + 'static>(
    state: &ServerState,
    f: impl FnOnce(&PluginManager) -> Result<T, PluginError> + Send + 'static,
) -> Result<Value, ApiError> {
    let plugins = manager(state);
    let done = blocking(move || f(&plugins).map_err(plugin_error).and_then(to_json)).await?;
    state.sources_changed().await;
    Ok(done)
}

/// A path a client names: absolute, since the server's working folder
/// means nothing to it.
fn absolute(path: &str, field: &str) -> Result<PathBuf, ApiError> {
    let p = PathBuf::from(path);
    if p.is_absolute() {
        Ok(p)
    } else {
        Err(ApiError::unprocessable(
            "plugin/path-not-absolute",
            format!("`{path}` is not an absolute path; give the whole path"),
        )
        .field(field))
    }
}

fn installation_id(id: &str) -> Result<InstallationId, ApiError> {
    id.parse::<InstallationId>()
        .map_err(|e| plugin_error(PluginError::InvalidId(e)))
}

fn to_json(value: impl serde::Serialize) -> Result<Value, ApiError> {
    serde_json::to_value(value)
        .map_err(|e| ApiError::internal("server/unserializable", e.to_string()))
}

/// `GET /api/plugins/inspect` query.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct PathQuery {
    /// An absolute path to a plugin folder.
    pub path: String,
}

#[utoipa::path(get, path = "/api/plugins/inspect", operation_id = "plugin_inspect", tag = "plugins", params(PathQuery),
    responses(
        (status = 200, description = "The static inspection of a plugin folder: manifest, skills, MCP servers, diagnostics and the trust review", body = Object),
        (status = 422, description = "Not an absolute path", body = ApiError)
    ))]
pub async fn inspect(
    State(state): State<Arc<ServerState>>,
    Query(q): Query<PathQuery>,
) -> Result<Json<Value>, ApiError> {
    let path = absolute(&q.path, "path")?;
    let plugins = manager(&state);
    blocking(move || to_json(plugins.inspect(&path)))
        .await
        .map(Json)
}

/// How `POST /api/plugins/install` takes the folder. Closed.
#[derive(Debug, Clone, Copy, Default, Deserialize, ToSchema)]
#[serde(rename_all = "kebab-case")]
pub enum InstallMode {
    /// A managed copy (a folder or an archive).
    #[default]
    Install,
    /// The development folder in place.
    Link,
}

/// `POST /api/plugins/install`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct InstallBody {
    /// An absolute path to a plugin folder or `.evoplugin`/`.zip` archive.
    pub path: String,
    #[serde(default)]
    pub mode: InstallMode,
    /// Off by default: enabling follows the trust review.
    #[serde(default)]
    pub enabled: bool,
}

#[utoipa::path(post, path = "/api/plugins/install", operation_id = "plugin_install", tag = "plugins", request_body = InstallBody,
    responses(
        (status = 201, description = "Installed or linked: the installation, its capabilities, credentials form and inspection", body = Object),
        (status = 409, description = "Inside the bundled tree, or the plugin is already installed", body = ApiError),
        (status = 422, description = "An invalid package (its diagnostics say why) or a missing path", body = ApiError)
    ))]
pub async fn install(
    State(state): State<Arc<ServerState>>,
    body: Result<Json<InstallBody>, JsonRejection>,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    let Json(body) = body.map_err(body_error)?;
    let path = absolute(&body.path, "path")?;
    let done = change(&state, move |plugins| match body.mode {
        InstallMode::Install => plugins.install(&path, body.enabled),
        InstallMode::Link => plugins.link(&path, body.enabled),
    })
    .await?;
    Ok((StatusCode::CREATED, Json(done)))
}

/// An uploaded archive, buffered in the cache folder until installed.
struct Upload {
    file: tempfile::TempPath,
    filename: String,
}

/// Streams the `archive` field to a temporary file, refusing anything but
/// one `.evoplugin`/`.zip` file of at most [`MAX_UPLOAD_BYTES`].
async fn receive(
    state: &ServerState,
    multipart: Result<Multipart, MultipartRejection>,
) -> Result<Upload, ApiError> {
    let bad =
        |code: &str, message: String| ApiError::unprocessable(code, message).field(ARCHIVE_FIELD);
    let mut multipart = multipart.map_err(|e| bad("plugin/upload-invalid", e.body_text()))?;
    let mut upload = None;
    loop {
        let field = multipart
            .next_field()
            .await
            .map_err(|e| upload_stream_error(&e.body_text(), e.status()))?;
        let Some(mut field) = field else { break };
        if field.name() != Some(ARCHIVE_FIELD) || upload.is_some() {
            return Err(bad(
                "plugin/upload-invalid",
                format!(
                    "send one multipart field `{ARCHIVE_FIELD}` holding the package, and nothing else"
                ),
            ));
        }
        let filename = field
            .file_name()
            .map(|n| n.rsplit(['/', '\\']).next().unwrap_or(n).to_owned())
            .unwrap_or_default();
        let lower = filename.to_ascii_lowercase();
        if !(lower.ends_with(".evoplugin") || lower.ends_with(".zip")) {
            return Err(bad(
                "plugin/upload-not-an-archive",
                format!("`{filename}` is not a `.evoplugin` or `.zip` archive"),
            ));
        }
        let dir = state.sessions.app().dirs.cache_dir().join("uploads");
        std::fs::create_dir_all(&dir).map_err(|e| {
            ApiError::internal("plugin/io", format!("cannot create {}: {e}", dir.display()))
        })?;
        let temp = tempfile::Builder::new()
            .prefix(".upload-")
            .suffix(if lower.ends_with(".zip") {
                ".zip"
            } else {
                ".evoplugin"
            })
            .tempfile_in(&dir)
            .map_err(|e| ApiError::internal("plugin/io", e.to_string()))?;
        let (std_file, path) = temp.into_parts();
        let mut out = tokio::fs::File::from_std(std_file);
        let mut written = 0u64;
        while let Some(chunk) = field
            .chunk()
            .await
            .map_err(|e| upload_stream_error(&e.body_text(), e.status()))?
        {
            written += chunk.len() as u64;
            if written > MAX_UPLOAD_BYTES {
                return Err(too_large());
            }
            out.write_all(&chunk)
                .await
                .map_err(|e| ApiError::internal("plugin/io", e.to_string()))?;
        }
        out.flush()
            .await
            .map_err(|e| ApiError::internal("plugin/io", e.to_string()))?;
        upload = Some(Upload {
            file: path,
            filename,
        });
    }
    upload.ok_or_else(|| {
        bad(
            "plugin/upload-missing",
            format!("the request has no multipart field `{ARCHIVE_FIELD}`"),
        )
    })
}

fn too_large() -> ApiError {
    ApiError::new(
        StatusCode::PAYLOAD_TOO_LARGE,
        "plugin/upload-too-large",
        format!(
            "the archive is larger than {} MiB",
            MAX_UPLOAD_BYTES / (1024 * 1024)
        ),
    )
    .field(ARCHIVE_FIELD)
}

fn upload_stream_error(message: &str, status: StatusCode) -> ApiError {
    if status == StatusCode::PAYLOAD_TOO_LARGE {
        return too_large();
    }
    ApiError::unprocessable("plugin/upload-invalid", message.to_owned()).field(ARCHIVE_FIELD)
}

/// `POST /api/plugins/upload` query.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct UploadQuery {
    /// Off by default: enabling follows the trust review.
    pub enabled: Option<bool>,
}

/// The multipart body of an upload.
#[derive(Debug, ToSchema)]
#[allow(dead_code)]
pub struct ArchiveUpload {
    /// A `.evoplugin` or `.zip` file of at most 50 MiB.
    #[schema(value_type = String, format = Binary)]
    pub archive: Vec<u8>,
}

#[utoipa::path(post, path = "/api/plugins/upload", operation_id = "plugin_upload", tag = "plugins", params(UploadQuery),
    request_body(content = ArchiveUpload, content_type = "multipart/form-data"),
    responses(
        (status = 201, description = "Installed from the archive (source `upload:<filename>`)", body = Object),
        (status = 409, description = "The plugin is already installed", body = ApiError),
        (status = 413, description = "The archive is over 50 MiB", body = ApiError),
        (status = 422, description = "Not an archive, or an invalid package", body = ApiError)
    ))]
pub async fn upload(
    State(state): State<Arc<ServerState>>,
    Query(q): Query<UploadQuery>,
    multipart: Result<Multipart, MultipartRejection>,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    let upload = receive(&state, multipart).await?;
    let enabled = q.enabled.unwrap_or(false);
    let done = change(&state, move |plugins| {
        plugins.install_upload(&upload.file, &upload.filename, enabled)
    })
    .await?;
    Ok((StatusCode::CREATED, Json(done)))
}

/// `POST /api/plugins/{id}/update`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateBody {
    /// An absolute path to the new version's folder or archive.
    pub path: String,
}

#[utoipa::path(post, path = "/api/plugins/{id}/update", operation_id = "plugin_update", tag = "plugins", request_body = UpdateBody,
    params(("id" = String, Path, description = "The installation id")),
    responses(
        (status = 200, description = "Updated in place; an enabled installation whose new version adds to its trust review is left disabled until reviewed (`review`)", body = Object),
        (status = 403, description = "A bundled plugin", body = ApiError),
        (status = 404, description = "No such installation", body = ApiError),
        (status = 409, description = "A linked installation (edit its folder instead)", body = ApiError),
        (status = 422, description = "An invalid package, or another plugin", body = ApiError)
    ))]
pub async fn update(
    State(state): State<Arc<ServerState>>,
    Path(id): Path<String>,
    body: Result<Json<UpdateBody>, JsonRejection>,
) -> Result<Json<Value>, ApiError> {
    let Json(body) = body.map_err(body_error)?;
    let id = installation_id(&id)?;
    let path = absolute(&body.path, "path")?;
    let done = change(&state, move |plugins| {
        plugins.update(&id, &path, UpdateTrust::ReviewAgain)
    })
    .await?;
    Ok(Json(done))
}

#[utoipa::path(post, path = "/api/plugins/{id}/update-upload", operation_id = "plugin_update_upload", tag = "plugins",
    params(("id" = String, Path, description = "The installation id")),
    request_body(content = ArchiveUpload, content_type = "multipart/form-data"),
    responses(
        (status = 200, description = "Updated from the archive", body = Object),
        (status = 403, description = "A bundled plugin", body = ApiError),
        (status = 404, description = "No such installation", body = ApiError),
        (status = 409, description = "A linked installation", body = ApiError),
        (status = 413, description = "The archive is over 50 MiB", body = ApiError),
        (status = 422, description = "Not an archive, or an invalid package", body = ApiError)
    ))]
pub async fn update_upload(
    State(state): State<Arc<ServerState>>,
    Path(id): Path<String>,
    multipart: Result<Multipart, MultipartRejection>,
) -> Result<Json<Value>, ApiError> {
    let id = installation_id(&id)?;
    // Refuse a missing installation before reading a large body.
    let plugins = manager(&state);
    plugins.get(&id).map_err(plugin_error)?;
    let upload = receive(&state, multipart).await?;
    let done = change(&state, move |plugins| {
        plugins.update_upload(
            &id,
            &upload.file,
            &upload.filename,
            UpdateTrust::ReviewAgain,
        )
    })
    .await?;
    Ok(Json(done))
}

/// `POST /api/plugins/create`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateBody {
    /// An absolute path that does not exist yet.
    pub destination: String,
    pub name: String,
    pub description: Option<String>,
    pub version: Option<String>,
    /// The starter skill's name; the plugin's name by default.
    pub skill_name: Option<String>,
}

#[utoipa::path(post, path = "/api/plugins/create", operation_id = "create_plugin", tag = "plugins", request_body = CreateBody,
    responses(
        (status = 201, description = "A new package with a manifest and a starter skill: its path and inspection", body = Object),
        (status = 409, description = "The destination exists, or is inside the bundled tree", body = ApiError),
        (status = 422, description = "An invalid plugin or skill name", body = ApiError)
    ))]
pub async fn create(
    State(state): State<Arc<ServerState>>,
    body: Result<Json<CreateBody>, JsonRejection>,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    let Json(body) = body.map_err(body_error)?;
    let dest = absolute(&body.destination, "destination")?;
    let options = CreateOptions {
        name: body.name,
        description: body.description,
        version: body.version,
        skill: body.skill_name,
    };
    let plugins = manager(&state);
    let done = blocking(move || {
        let inspection = plugins.create(&dest, &options).map_err(plugin_error)?;
        Ok(json!({"path": dest, "inspection": to_json(inspection)?}))
    })
    .await?;
    Ok((StatusCode::CREATED, Json(done)))
}

/// `POST /api/plugins/pack`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PackBody {
    /// An absolute path to the plugin folder.
    pub path: String,
    /// Where the archive goes (absolute); beside the folder by default.
    pub output: Option<String>,
}

#[utoipa::path(post, path = "/api/plugins/pack", operation_id = "plugin_pack", tag = "plugins", request_body = PackBody,
    responses(
        (status = 200, description = "The `.evoplugin` archive written: its path, entry count, digest and what was left out", body = Object),
        (status = 409, description = "The output exists", body = ApiError),
        (status = 422, description = "An invalid package", body = ApiError)
    ))]
pub async fn pack(
    State(state): State<Arc<ServerState>>,
    body: Result<Json<PackBody>, JsonRejection>,
) -> Result<Json<Value>, ApiError> {
    let Json(body) = body.map_err(body_error)?;
    let path = absolute(&body.path, "path")?;
    let output = body
        .output
        .as_deref()
        .map(|o| absolute(o, "output"))
        .transpose()?;
    let plugins = manager(&state);
    blocking(move || {
        let report = plugins.pack(&path, output).map_err(plugin_error)?;
        Ok(json!({
            "path": report.output,
            "entries": report.entries,
            "content_sha256": report.content_sha256.as_str(),
            "excluded": to_json(&report.excluded)?,
        }))
    })
    .await
    .map(Json)
}

/// A package root query.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct RootQuery {
    /// The plugin folder (absolute).
    pub root: String,
}

/// A file of a package.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct EntryQuery {
    /// The plugin folder (absolute).
    pub root: String,
    /// POSIX path inside it.
    pub path: String,
}

fn open_workspace(state: &ServerState, root: &str) -> Result<PackageWorkspace, ApiError> {
    let root = absolute(root, "root")?;
    PackageWorkspace::open(&root, manager(state).paths()).map_err(workspace_error)
}

/// The result of an editor change: the package inspected again.
fn changed(plugins: &PluginManager, root: &FsPath) -> Result<Value, ApiError> {
    Ok(json!({"ok": true, "inspection": to_json(plugins.inspect(root))?}))
}

#[utoipa::path(get, path = "/api/plugins/workspace/tree", operation_id = "plugin_tree", tag = "plugins", params(RootQuery),
    responses(
        (status = 200, description = "Every entry of the package (at most 2,000; caches and .git skipped)", body = Object),
        (status = 409, description = "Inside the bundled tree", body = ApiError),
        (status = 422, description = "Not a plugin folder", body = ApiError)
    ))]
pub async fn tree(
    State(state): State<Arc<ServerState>>,
    Query(q): Query<RootQuery>,
) -> Result<Json<Value>, ApiError> {
    let ws = open_workspace(&state, &q.root)?;
    blocking(move || to_json(ws.tree().map_err(workspace_error)?))
        .await
        .map(Json)
}

#[utoipa::path(get, path = "/api/plugins/workspace/file", operation_id = "plugin_file", tag = "plugins", params(EntryQuery),
    responses(
        (status = 200, description = "The file's text", body = Object),
        (status = 400, description = "A path outside the package or through a symlink", body = ApiError),
        (status = 404, description = "No such file", body = ApiError),
        (status = 413, description = "Over 1 MiB", body = ApiError),
        (status = 422, description = "Not a plugin folder, or not UTF-8 text", body = ApiError)
    ))]
pub async fn file(
    State(state): State<Arc<ServerState>>,
    Query(q): Query<EntryQuery>,
) -> Result<Json<Value>, ApiError> {
    let ws = open_workspace(&state, &q.root)?;
    let content = ws.read(&q.path).map_err(workspace_error)?;
    Ok(Json(
        json!({"root": ws.root(), "path": q.path, "content": content}),
    ))
}

/// `PUT /api/plugins/workspace/file`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SaveBody {
    pub root: String,
    pub path: String,
    pub content: String,
}

#[utoipa::path(put, path = "/api/plugins/workspace/file", operation_id = "plugin_save_file", tag = "plugins", request_body = SaveBody,
    responses(
        (status = 200, description = "Saved atomically (an existing exec bit kept); the package inspected again", body = Object),
        (status = 400, description = "A path outside the package or through a symlink", body = ApiError),
        (status = 404, description = "Its folder does not exist", body = ApiError),
        (status = 409, description = "The path is a folder", body = ApiError),
        (status = 413, description = "Over 1 MiB", body = ApiError),
        (status = 422, description = "Not a plugin folder", body = ApiError)
    ))]
pub async fn save_file(
    State(state): State<Arc<ServerState>>,
    body: Result<Json<SaveBody>, JsonRejection>,
) -> Result<Json<Value>, ApiError> {
    let Json(body) = body.map_err(body_error)?;
    let ws = open_workspace(&state, &body.root)?;
    ws.write(&body.path, &body.content)
        .map_err(workspace_error)?;
    let out = changed(&manager(&state), ws.root())?;
    state.sources_changed().await;
    Ok(Json(out))
}

/// `POST /api/plugins/workspace/entry`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewEntry {
    pub root: String,
    pub path: String,
    /// `file` or `directory`.
    #[schema(value_type = String)]
    pub kind: EntryKind,
}

#[utoipa::path(post, path = "/api/plugins/workspace/entry", operation_id = "plugin_create_entry", tag = "plugins", request_body = NewEntry,
    responses(
        (status = 201, description = "An empty file or folder; the package inspected again", body = Object),
        (status = 400, description = "A path outside the package or through a symlink", body = ApiError),
        (status = 409, description = "It exists", body = ApiError),
        (status = 422, description = "Not a plugin folder", body = ApiError)
    ))]
pub async fn create_entry(
    State(state): State<Arc<ServerState>>,
    body: Result<Json<NewEntry>, JsonRejection>,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    let Json(body) = body.map_err(body_error)?;
    let ws = open_workspace(&state, &body.root)?;
    ws.create(&body.path, body.kind).map_err(workspace_error)?;
    let out = changed(&manager(&state), ws.root())?;
    state.sources_changed().await;
    Ok((StatusCode::CREATED, Json(out)))
}

#[utoipa::path(delete, path = "/api/plugins/workspace/entry", operation_id = "plugin_delete_entry", tag = "plugins", params(EntryQuery),
    responses(
        (status = 200, description = "Deleted (a file, or an empty folder); the package inspected again", body = Object),
        (status = 400, description = "A path outside the package or through a symlink", body = ApiError),
        (status = 404, description = "No such entry", body = ApiError),
        (status = 409, description = "The root plugin.json, or a folder that is not empty", body = ApiError),
        (status = 422, description = "Not a plugin folder", body = ApiError)
    ))]
pub async fn delete_entry(
    State(state): State<Arc<ServerState>>,
    Query(q): Query<EntryQuery>,
) -> Result<Json<Value>, ApiError> {
    let ws = open_workspace(&state, &q.root)?;
    ws.delete(&q.path).map_err(workspace_error)?;
    let out = changed(&manager(&state), ws.root())?;
    state.sources_changed().await;
    Ok(Json(out))
}

#[utoipa::path(get, path = "/api/plugins/{id}", operation_id = "plugin_show", tag = "plugins",
    params(("id" = String, Path, description = "The installation id")),
    responses(
        (status = 200, description = "The installation with its capabilities, credentials form (secrets masked) and inspection", body = Object),
        (status = 404, description = "No such installation", body = ApiError)
    ))]
pub async fn show(
    State(state): State<Arc<ServerState>>,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let id = installation_id(&id)?;
    let plugins = manager(&state);
    blocking(move || plugins.show(&id).map_err(plugin_error).and_then(to_json))
        .await
        .map(Json)
}

/// `DELETE /api/plugins/{id}` query.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct UninstallQuery {
    /// Remove `PLUGIN_DATA` (and the credentials in it) too; kept by
    /// default, so installing the plugin again reattaches it.
    pub remove_data: Option<bool>,
}

#[utoipa::path(delete, path = "/api/plugins/{id}", operation_id = "plugin_uninstall", tag = "plugins",
    params(("id" = String, Path, description = "The installation id"), UninstallQuery),
    responses(
        (status = 200, description = "Uninstalled: the installation and whether its data went too", body = Object),
        (status = 403, description = "A bundled plugin", body = ApiError),
        (status = 404, description = "No such installation", body = ApiError)
    ))]
pub async fn uninstall(
    State(state): State<Arc<ServerState>>,
    Path(id): Path<String>,
    Query(q): Query<UninstallQuery>,
) -> Result<Json<Value>, ApiError> {
    let id = installation_id(&id)?;
    let remove_data = q.remove_data.unwrap_or(false);
    let done = change(&state, move |plugins| plugins.uninstall(&id, remove_data)).await?;
    Ok(Json(done))
}

/// `PATCH /api/plugins/{id}/enabled`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct EnabledBody {
    pub enabled: bool,
}

#[utoipa::path(patch, path = "/api/plugins/{id}/enabled", operation_id = "plugin_set_enabled", tag = "plugins", request_body = EnabledBody,
    params(("id" = String, Path, description = "The installation id")),
    responses(
        (status = 200, description = "Enabled or disabled; its skills and MCP servers follow at every session's next turn", body = Object),
        (status = 403, description = "A bundled plugin (always enabled)", body = ApiError),
        (status = 404, description = "No such installation", body = ApiError)
    ))]
pub async fn set_enabled(
    State(state): State<Arc<ServerState>>,
    Path(id): Path<String>,
    body: Result<Json<EnabledBody>, JsonRejection>,
) -> Result<Json<Value>, ApiError> {
    let Json(body) = body.map_err(body_error)?;
    let id = installation_id(&id)?;
    let done = change(&state, move |plugins| {
        plugins.set_enabled(&id, body.enabled)
    })
    .await?;
    Ok(Json(done))
}

#[utoipa::path(get, path = "/api/plugins/{id}/credentials", operation_id = "plugin_credentials", tag = "plugins",
    params(("id" = String, Path, description = "The installation id")),
    responses(
        (status = 200, description = "The credentials form: every declared field, whether it is configured, secrets masked", body = Object),
        (status = 404, description = "No such installation", body = ApiError)
    ))]
pub async fn credentials(
    State(state): State<Arc<ServerState>>,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let id = installation_id(&id)?;
    let plugins = manager(&state);
    blocking(move || {
        plugins
            .credentials(&id)
            .map_err(plugin_error)
            .and_then(to_json)
    })
    .await
    .map(Json)
}

/// `PUT /api/plugins/{id}/credentials`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CredentialsBody {
    /// By field key: a string or a boolean sets it, `null` or `""` clears
    /// it, the mask leaves a secret unchanged.
    #[schema(value_type = Object)]
    pub values: BTreeMap<String, Option<CredentialInput>>,
}

/// One credential value as JSON.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub enum CredentialInput {
    Bool(bool),
    Text(String),
}

async fn change_credentials(
    state: &ServerState,
    id: InstallationId,
    changes: impl FnOnce(&PluginManager) -> Result<BTreeMap<String, CredentialChange>, PluginError>
    + Send
    + 'static,
) -> Result<Json<Value>, ApiError> {
    change(state, move |plugins| {
        let changes = changes(plugins)?;
        plugins.change_credentials(&id, &changes)
    })
    .await
    .map(Json)
}

#[utoipa::path(put, path = "/api/plugins/{id}/credentials", operation_id = "plugin_set_credentials", tag = "plugins", request_body = CredentialsBody,
    params(("id" = String, Path, description = "The installation id")),
    responses(
        (status = 200, description = "Saved (all or nothing); the form again, secrets masked", body = Object),
        (status = 404, description = "No such installation", body = ApiError),
        (status = 422, description = "An unknown key, an invalid value, or a plugin without credentials", body = ApiError)
    ))]
pub async fn set_credentials(
    State(state): State<Arc<ServerState>>,
    Path(id): Path<String>,
    body: Result<Json<CredentialsBody>, JsonRejection>,
) -> Result<Json<Value>, ApiError> {
    let Json(body) = body.map_err(body_error)?;
    let id = installation_id(&id)?;
    let changes = body
        .values
        .into_iter()
        .map(|(key, value)| {
            let change = match value {
                None => CredentialChange::Clear,
                Some(CredentialInput::Bool(b)) => CredentialChange::Set(CredentialValue::Bool(b)),
                Some(CredentialInput::Text(t)) => CredentialChange::Set(CredentialValue::Text(t)),
            };
            (key, change)
        })
        .collect();
    change_credentials(&state, id, move |_| Ok(changes)).await
}

#[utoipa::path(delete, path = "/api/plugins/{id}/credentials", operation_id = "plugin_clear_credentials", tag = "plugins",
    params(("id" = String, Path, description = "The installation id")),
    responses(
        (status = 200, description = "Every credential cleared; the form again", body = Object),
        (status = 404, description = "No such installation", body = ApiError),
        (status = 422, description = "A plugin without credentials", body = ApiError)
    ))]
pub async fn clear_credentials(
    State(state): State<Arc<ServerState>>,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let id = installation_id(&id)?;
    let for_fields = id.clone();
    change_credentials(&state, id, move |plugins| {
        let fields = plugins.credential_fields(&for_fields)?;
        Ok(fields
            .into_iter()
            .map(|f| (f.key, CredentialChange::Clear))
            .collect())
    })
    .await
}
