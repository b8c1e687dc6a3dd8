//! `/api/skills/{name}`: a skill's detail (its file, its bundle's files,
//! the candidates it shadows), the bundle editor (create in the user's
//! skill folder, replace, delete; editable bundles only, through
//! [`evoflux_skills::authoring`]) and its runtime preferences (the
//! Settings overlay: modes, implicit and manual invocation). A preference
//! change names the `settings_id` of the variant it was made against; a
//! stale id is a conflict, never applied to another variant.

use std::sync::Arc;

use axum::Json;
use axum::extract::rejection::JsonRejection;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use evoflux_app::skills_view::{Depth, SkillRow, SkillsView};
use evoflux_core::AppMode;
use evoflux_skills::authoring::{
    AuthoringError, BundleEdit, BundleFile, Encoding, FileWrite, bundle_files, create_bundle,
    delete_bundle, edit_refusal, replace_bundle,
};
use evoflux_skills::overlay::SettingsError;
use evoflux_skills::{ModeSet, PrefsPatch, SkillRecord};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::api::blocking;
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
pub struct DeleteQuery {
    /// With it, only this variant's preferences go back to its defaults;
    /// without it, the editable bundle is deleted.
    pub settings_id: Option<String>,
}

/// `GET /api/skills/{name}` query.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct ShowQuery {
    /// `work` or `coding`: 404 when the skill is not in that mode.
    #[param(value_type = Option<String>)]
    pub mode: Option<AppMode>,
}

/// One file an edit writes.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct FileBody {
    /// POSIX path in the bundle.
    pub path: String,
    pub content: String,
    /// `utf-8` (default) or `base64`.
    #[schema(value_type = Option<String>)]
    #[serde(default)]
    pub encoding: Encoding,
}

/// `POST /api/skills`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewSkill {
    /// Lowercase letters, digits and single inner hyphens; the front
    /// matter's `name` must agree.
    pub name: String,
    /// The whole SKILL.md.
    pub content: String,
    /// The bundle's default modes; both when absent.
    #[schema(value_type = Option<Vec<String>>)]
    pub modes: Option<Vec<AppMode>>,
    #[serde(default)]
    pub files: Vec<FileBody>,
    /// Must be empty for a new skill.
    #[serde(default)]
    pub deleted_files: Vec<String>,
}

/// `PUT /api/skills/{name}`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SkillEdit {
    /// When given, it must be the name the URL names.
    pub name: Option<String>,
    pub content: String,
    /// The bundle's default modes; absent leaves its sidecar untouched
    /// (runtime preferences are never baked into the bundle).
    #[schema(value_type = Option<Vec<String>>)]
    pub modes: Option<Vec<AppMode>>,
    #[serde(default)]
    pub files: Vec<FileBody>,
    #[serde(default)]
    pub deleted_files: Vec<String>,
}

/// A skill as the editor shows it.
#[derive(Debug, Serialize, ToSchema)]
pub struct SkillDetail {
    #[schema(value_type = Object)]
    #[serde(flatten)]
    pub row: SkillRow,
    /// SKILL.md as it is now.
    pub content: Option<String>,
    #[schema(value_type = Vec<Object>)]
    pub files: Vec<BundleFile>,
    pub bundle_truncated: bool,
    /// The SKILL.md of every lower candidate of the slot.
    pub shadowed_paths: Vec<String>,
    /// Whether the bundle's files may be edited, and why not.
    pub edit_refusal: Option<String>,
    #[schema(value_type = Vec<Object>)]
    pub diagnostics_detail: serde_json::Value,
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
    Ok(state
        .sessions
        .app()
        .skills_view(&state.workspaces, Depth::Settled)?)
}

#[utoipa::path(patch, path = "/api/skills/{name}", operation_id = "skill_update_prefs", tag = "skills", request_body = PrefsBody,
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
    state.sources_changed().await;
    Ok(Json(PrefsResult {
        name: record.name.clone(),
        settings_id: record.settings_id.as_str().to_owned(),
        prefs: serde_json::to_value(prefs).unwrap_or_default(),
    }))
}

fn authoring_error(e: AuthoringError) -> ApiError {
    let status = match &e {
        AuthoringError::NameInvalid { .. } | AuthoringError::Invalid { .. } => {
            StatusCode::UNPROCESSABLE_ENTITY
        }
        AuthoringError::Exists { .. } => StatusCode::CONFLICT,
        AuthoringError::NotEditable { .. } => StatusCode::FORBIDDEN,
        AuthoringError::PathInvalid { .. }
        | AuthoringError::Encoding { .. }
        | AuthoringError::DeleteMissing { .. } => StatusCode::BAD_REQUEST,
        AuthoringError::TooLarge { .. }
        | AuthoringError::TooManyFiles { .. }
        | AuthoringError::TooManyEntries => StatusCode::PAYLOAD_TOO_LARGE,
        AuthoringError::Io { .. } => StatusCode::INTERNAL_SERVER_ERROR,
    };
    let field = match &e {
        AuthoringError::NameInvalid { .. } => Some("name"),
        AuthoringError::Invalid { .. } => Some("content"),
        AuthoringError::PathInvalid { .. } | AuthoringError::Encoding { .. } => Some("files"),
        AuthoringError::DeleteMissing { .. } => Some("deleted_files"),
        AuthoringError::Exists { .. }
        | AuthoringError::NotEditable { .. }
        | AuthoringError::TooLarge { .. }
        | AuthoringError::TooManyFiles { .. }
        | AuthoringError::TooManyEntries
        | AuthoringError::Io { .. } => None,
    };
    let mut out = ApiError::new(status, e.code(), e.to_string());
    if let Some(d) = e.diagnostics() {
        out = out.diagnostics(d);
    }
    match field {
        Some(f) => out.field(f),
        None => out,
    }
}

/// A list of modes as a set; an empty list is refused.
fn mode_set(modes: Vec<AppMode>) -> Result<ModeSet, ApiError> {
    if modes.is_empty() {
        return Err(ApiError::unprocessable(
            "skill/modes-empty",
            "a skill is available in at least one mode: give `work`, `coding` or both",
        )
        .field("modes"));
    }
    Ok(modes.into_iter().fold(ModeSet::NONE, ModeSet::with))
}

fn edit_of(
    content: String,
    modes: Option<Vec<AppMode>>,
    files: Vec<FileBody>,
    deleted_files: Vec<String>,
) -> Result<BundleEdit, ApiError> {
    Ok(BundleEdit {
        skill_md: content,
        modes: modes.map(mode_set).transpose()?,
        files: files
            .into_iter()
            .map(|f| FileWrite {
                path: f.path,
                content: f.content,
                encoding: f.encoding,
            })
            .collect(),
        deleted_files,
    })
}

/// The record the editor acts on: the slot's management winner (the true
/// winner, even invalid, so it can be repaired).
fn winner<'a>(view: &'a SkillsView, name: &str) -> Result<&'a SkillRecord, ApiError> {
    view.slot(name)
        .and_then(|s| evoflux_skills::projection::management_choice(&s.candidates, None))
        .map(|e| e.record)
        .ok_or_else(|| ApiError::not_found("skill/not-found", format!("no skill named `{name}`")))
}

fn detail(view: &SkillsView, name: &str, mode: Option<AppMode>) -> Result<SkillDetail, ApiError> {
    let not_found = || ApiError::not_found("skill/not-found", format!("no skill named `{name}`"));
    let slot = view.slot(name).ok_or_else(not_found)?;
    let row = view
        .rows(mode)
        .into_iter()
        .find(|r| r.name == name || r.name == slot.name)
        .ok_or_else(|| match mode {
            Some(m) => ApiError::not_found(
                "skill/not-in-mode",
                format!("`{name}` is not available in {m} mode"),
            ),
            None => not_found(),
        })?;
    let record = winner(view, name)?;
    let files = bundle_files(record);
    Ok(SkillDetail {
        content: evoflux_skills::activation::current_text(record).ok(),
        files: files.files,
        bundle_truncated: files.truncated,
        shadowed_paths: slot
            .candidates
            .iter()
            .skip(1)
            .map(|c| c.skill_file.display().to_string())
            .collect(),
        edit_refusal: edit_refusal(record).map(str::to_owned),
        diagnostics_detail: record.diagnostics.to_json(),
        row,
    })
}

#[utoipa::path(get, path = "/api/skills/{name}", operation_id = "skill_show", tag = "skills",
    params(("name" = String, Path, description = "The skill"), ShowQuery),
    responses(
        (status = 200, description = "The skill's winner (even invalid) with its SKILL.md, its bundle's files and the candidates it shadows", body = SkillDetail),
        (status = 404, description = "No such skill, or not in the mode asked for", body = ApiError)
    ))]
pub async fn show(
    State(state): State<Arc<ServerState>>,
    Path(name): Path<String>,
    Query(q): Query<ShowQuery>,
) -> Result<Json<SkillDetail>, ApiError> {
    let view = view(&state)?;
    detail(&view, &name, q.mode).map(Json)
}

#[utoipa::path(post, path = "/api/skills", operation_id = "create_skill", tag = "skills", request_body = NewSkill,
    responses(
        (status = 201, description = "Created in the user's skill folder", body = SkillDetail),
        (status = 400, description = "A file path or encoding is not allowed", body = ApiError),
        (status = 409, description = "A skill folder of that name exists", body = ApiError),
        (status = 413, description = "Over the bundle limits (2 MiB a file, 20 MiB, 2,000 entries)", body = ApiError),
        (status = 422, description = "Not a portable name, or SKILL.md is invalid (nothing was written)", body = ApiError)
    ))]
pub async fn create(
    State(state): State<Arc<ServerState>>,
    body: Result<Json<NewSkill>, JsonRejection>,
) -> Result<(StatusCode, Json<SkillDetail>), ApiError> {
    let Json(body) = body.map_err(body_error)?;
    if !body.deleted_files.is_empty() {
        return Err(ApiError::bad_request(
            "skill/edit-delete-missing",
            "a new skill has no files to delete: leave deleted_files empty",
        )
        .field("deleted_files"));
    }
    let edit = edit_of(
        body.content,
        Some(body.modes.unwrap_or_else(|| AppMode::ALL.to_vec())),
        body.files,
        Vec::new(),
    )?;
    let skills_dir = state.sessions.app().dirs.config_dir().join("skills");
    let name = body.name;
    {
        let name = name.clone();
        blocking(move || create_bundle(&skills_dir, &name, &edit).map_err(authoring_error)).await?;
    }
    state.sources_changed().await;
    let view = view(&state)?;
    Ok((StatusCode::CREATED, Json(detail(&view, &name, None)?)))
}

#[utoipa::path(put, path = "/api/skills/{name}", operation_id = "replace_skill", tag = "skills", request_body = SkillEdit,
    params(("name" = String, Path, description = "The skill")),
    responses(
        (status = 200, description = "The bundle was replaced whole (staged, checked, swapped)", body = SkillDetail),
        (status = 400, description = "A file path or encoding is not allowed", body = ApiError),
        (status = 403, description = "A builtin, admin, plugin or symlinked bundle", body = ApiError),
        (status = 404, description = "No such skill", body = ApiError),
        (status = 413, description = "Over the bundle limits", body = ApiError),
        (status = 422, description = "The body names another skill, or SKILL.md is invalid (nothing was changed)", body = ApiError)
    ))]
pub async fn replace(
    State(state): State<Arc<ServerState>>,
    Path(name): Path<String>,
    body: Result<Json<SkillEdit>, JsonRejection>,
) -> Result<Json<SkillDetail>, ApiError> {
    let Json(body) = body.map_err(body_error)?;
    if body.name.as_ref().is_some_and(|n| *n != name) {
        return Err(ApiError::unprocessable(
            "skill/name-mismatch",
            format!("the body names another skill than `{name}`; renaming is not an edit"),
        )
        .field("name"));
    }
    let edit = edit_of(body.content, body.modes, body.files, body.deleted_files)?;
    let view = view(&state)?;
    let record = winner(&view, &name)?.clone();
    blocking(move || replace_bundle(&record, &edit).map_err(authoring_error)).await?;
    state.sources_changed().await;
    let view = self::view(&state)?;
    detail(&view, &name, None).map(Json)
}

/// What `DELETE /api/skills/{name}` did.
#[derive(Debug, Serialize, ToSchema)]
#[serde(tag = "result", rename_all = "kebab-case")]
pub enum Deleted {
    /// The variant's preferences are back to its defaults.
    PrefsReset(PrefsResult),
    /// The bundle is gone (and its preferences with it).
    BundleDeleted { name: String },
}

#[utoipa::path(delete, path = "/api/skills/{name}", operation_id = "skill_delete", tag = "skills",
    params(("name" = String, Path, description = "The skill"), DeleteQuery),
    responses(
        (status = 200, description = "With settings_id, that variant's preferences were reset; without, the editable bundle was deleted", body = Deleted),
        (status = 403, description = "A builtin, admin, plugin or symlinked bundle (nothing was changed)", body = ApiError),
        (status = 404, description = "No such skill", body = ApiError),
        (status = 409, description = "A stale settings_id, or a malformed preferences file (left unchanged)", body = ApiError)
    ))]
pub async fn delete(
    State(state): State<Arc<ServerState>>,
    Path(name): Path<String>,
    Query(q): Query<DeleteQuery>,
) -> Result<Json<Deleted>, ApiError> {
    let view = view(&state)?;
    if let Some(settings_id) = q.settings_id {
        let record = variant(&view, &name, &settings_id)?;
        view.store
            .reset(&record.settings_id)
            .map_err(settings_error)?;
        state.sources_changed().await;
        return Ok(Json(Deleted::PrefsReset(PrefsResult {
            name: record.name.clone(),
            settings_id: record.settings_id.as_str().to_owned(),
            prefs: serde_json::to_value(record.defaults).unwrap_or_default(),
        })));
    }
    let record = winner(&view, &name)?.clone();
    if let Some(reason) = edit_refusal(&record) {
        return Err(authoring_error(AuthoringError::NotEditable {
            name: record.name.clone(),
            reason,
        }));
    }
    // The overlay record goes first, so a skill created again under this
    // name does not inherit the old preferences.
    view.store
        .reset(&record.settings_id)
        .map_err(settings_error)?;
    let gone = record.name.clone();
    blocking(move || delete_bundle(&record).map_err(authoring_error)).await?;
    state.sources_changed().await;
    Ok(Json(Deleted::BundleDeleted { name: gone }))
}
