//! The plugin lifecycle: create, inspect, pack, install, link, update,
//! enable, disable, uninstall and credentials, over the registry and the
//! storage layout of [`PluginPaths`].
//!
//! Every mutation runs under the registry's cross-process lock, from the
//! first check to the registry write, so two processes never interleave.
//! Files move into place before the registry names them, and the registry
//! write is the commit point: a process killed anywhere before it leaves
//! the registry as it was, and the leftovers (a staging folder, an
//! unregistered tree, a backup of a tree being replaced) are recognised and
//! cleaned up or restored by [`PluginManager::recover`] at the start of the
//! next mutation. A step that fails without being killed restores the
//! previous state itself.
//!
//! Imports and links are enabled only when asked to: the library takes an
//! explicit `enabled` flag and the CLI and API default it to false, so a
//! user reviews the trust record (`show`) before enabling.

use std::collections::BTreeMap;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::time::Duration;

use evoflux_core::Diagnostic;
use evoflux_graph::{ListedSkill, PluginRoot};
use serde::Serialize;
use serde_json::json;

use crate::archive::ExtractLimits;
use crate::bundled::bundled_installations;
use crate::claude_import::{self, ImportReport, is_claude_plugin};
use crate::credentials::{
    CredentialChange, CredentialDeclaration, CredentialState, CredentialValues, apply_changes,
};
use crate::error::{BuiltinOperation, PluginError};
use crate::inspect::{PluginInspection, inspect};
use crate::installation::{Capabilities, InstallationId, PluginInstallation, SourceType, utc_now};
use crate::manifest::{PluginManifest, validate_manifest};
use crate::pack::{PackOptions, PackReport, pack};
use crate::paths::PluginPaths;
use crate::registry::{KeptData, Registry, RegistryGuard};
use crate::schema::{PLUGIN_SCHEMA_1_0_0, check_plugin_name};
use crate::scope::{Scope, ScopedDiagnostic};
use crate::skills::{StrictSkillValidator, loadable_skill_dirs};
use crate::staging::{StagedPackage, inspect_archive, stage_archive, stage_directory, staging_dir};

/// Prefix of a tree moved aside while an update replaces it.
const UPDATE_BACKUP_PREFIX: &str = ".update-backup-";
/// Prefix of an installation tree moved aside while it is uninstalled.
const UNINSTALL_PREFIX: &str = ".uninstall-";

/// An installation as listed: what it is and what a client may do.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PluginSummary {
    pub installation: PluginInstallation,
    pub capabilities: Capabilities,
    /// The credentials form, secrets masked.
    pub credentials: CredentialState,
}

/// An installation with its static inspection (manifest, skills, MCP
/// servers, diagnostics and the trust review).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PluginDetail {
    pub installation: PluginInstallation,
    pub capabilities: Capabilities,
    pub credentials: CredentialState,
    pub inspection: PluginInspection,
    /// Whether each MCP server would start (`needs-credentials` while a
    /// required credential is missing).
    pub servers: Vec<crate::mcp::ServerReadiness>,
}

/// Every installation: the user's (by name, then id), then the bundled ones.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Listing {
    pub plugins: Vec<PluginSummary>,
    /// A malformed registry, ignored records, unavailable bundled plugins.
    pub diagnostics: Vec<Diagnostic>,
}

/// The result of an uninstall.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Uninstalled {
    pub installation: PluginInstallation,
    /// Whether `PLUGIN_DATA` (and the credentials in it) was removed too.
    pub removed_data: bool,
}

/// A new installation (install or link).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NewInstallation {
    #[serde(flatten)]
    pub detail: PluginDetail,
    /// Whether the data folder an earlier installation of this plugin left
    /// behind (an uninstall that kept its data) was reattached: the new
    /// installation has that installation's id and so its `PLUGIN_DATA`
    /// and credentials.
    pub reattached_data: bool,
    /// Links of the source folder the installed copy left out.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub left_out: Vec<crate::tree::LeftOutLink>,
    /// What the installed copy of a source folder left out by the packing
    /// rule (`.env`, `.evopluginignore`), as `pack` lists it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub excluded: Vec<crate::pack::ExcludedEntry>,
    /// When the source was a Claude Code plugin: what its import carried
    /// over and what it left out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub imported: Option<ImportReport>,
}

/// Which kept data folders to act on. Closed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DataSelector {
    /// Every kept folder of the plugin with this manifest name.
    Name(String),
    /// The folder `data/<id>`, whether a record names it or not.
    Id(InstallationId),
}

/// A data folder that no installation owns.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct KeptDataEntry {
    pub id: InstallationId,
    /// The plugin it was kept for; `None` for a folder no record names
    /// (kept by an older evoflux, or left behind by a failed removal).
    pub name: Option<String>,
    pub version: Option<String>,
    /// ISO-8601 UTC, when recorded.
    pub kept_at: Option<String>,
    pub path: PathBuf,
}

/// Every kept data folder: the recorded ones oldest first, then the
/// unrecorded ones by id.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct KeptDataListing {
    pub kept: Vec<KeptDataEntry>,
    /// A malformed registry, unreadable data folder.
    pub diagnostics: Vec<Diagnostic>,
}

/// What `update` does to an enabled installation whose new version adds to
/// its trust review. Closed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UpdateTrust {
    /// Leave it disabled until the user reviews the difference and enables
    /// it again (what a user gets by default).
    ReviewAgain,
    /// Leave it enabled (or enable it) without a new review: deliberate
    /// automation that reviewed the package elsewhere.
    Enable,
}

/// How the enabled state came out of an update. Closed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum UpdateReview {
    /// Enabled before, and the new version adds nothing to review: still
    /// enabled.
    NothingNew,
    /// Enabled before, and the new version adds to the trust review: now
    /// disabled until it is reviewed and enabled.
    Required,
    /// Disabled before: still disabled.
    Disabled,
    /// Enabled on request ([`UpdateTrust::Enable`]), whatever it adds.
    EnabledOnRequest,
}

/// The result of an update: the installation, what its new version adds
/// to the trust review and what that did to its enabled state.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Updated {
    #[serde(flatten)]
    pub detail: PluginDetail,
    pub trust_change: crate::trust::TrustChange,
    pub review: UpdateReview,
    /// Links of the source folder the installed copy left out.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub left_out: Vec<crate::tree::LeftOutLink>,
    /// What the installed copy of a source folder left out by the packing
    /// rule (`.env`, `.evopluginignore`), as `pack` lists it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub excluded: Vec<crate::pack::ExcludedEntry>,
    /// When the source was a Claude Code plugin: what its import carried
    /// over and what it left out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub imported: Option<ImportReport>,
}

/// A new package scaffold.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CreateOptions {
    pub name: String,
    pub description: Option<String>,
    pub version: Option<String>,
    /// The starter skill; defaults to the plugin name.
    pub skill: Option<String>,
}

/// Where a package to install comes from. Closed.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Source {
    Folder(PathBuf),
    Archive(PathBuf),
}

impl Source {
    fn classify(path: &Path) -> Result<Source, PluginError> {
        let canonical = path
            .canonicalize()
            .map_err(|_| PluginError::SourceMissing(path.to_path_buf()))?;
        match fs::metadata(&canonical) {
            Ok(m) if m.is_dir() => Ok(Source::Folder(canonical)),
            Ok(m) if m.is_file() => Ok(Source::Archive(canonical)),
            _ => Err(PluginError::SourceMissing(path.to_path_buf())),
        }
    }

    fn path(&self) -> &Path {
        match self {
            Source::Folder(p) | Source::Archive(p) => p,
        }
    }
}

/// A Claude Code plugin imported into the staging folder.
struct Imported {
    /// Removes the import when dropped.
    _temp: tempfile::TempDir,
    package: PathBuf,
    report: ImportReport,
}

/// The lifecycle over one data dir and cache dir.
#[derive(Debug, Clone)]
pub struct PluginManager {
    paths: PluginPaths,
    registry: Registry,
    validator: StrictSkillValidator,
    /// The crash-test seam, only in a build with the `test-hooks` feature.
    #[cfg(feature = "test-hooks")]
    commit_pause: Option<PathBuf>,
}

/// Set by crash tests only, read only by a `test-hooks` build: the path
/// of a marker to create just before each registry commit, after which
/// the process waits (up to two minutes) to be killed at the most delicate
/// moment of a mutation.
#[cfg(feature = "test-hooks")]
pub const COMMIT_PAUSE_VAR: &str = "EVOFLUX_TEST_PLUGIN_COMMIT_PAUSE";

impl PluginManager {
    pub fn new(paths: PluginPaths) -> Self {
        PluginManager {
            registry: Registry::new(paths.registry_file()),
            paths,
            validator: StrictSkillValidator,
            #[cfg(feature = "test-hooks")]
            commit_pause: std::env::var_os(COMMIT_PAUSE_VAR)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from),
        }
    }

    /// Overrides how long a mutation waits for another one to finish.
    pub fn with_lock_wait(mut self, wait: Duration) -> Self {
        self.registry = self.registry.with_lock_wait(wait);
        self
    }

    pub fn paths(&self) -> &PluginPaths {
        &self.paths
    }

    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    /// The crash-test seam ([`COMMIT_PAUSE_VAR`]); nothing at all in a
    /// build without the `test-hooks` feature.
    #[cfg(feature = "test-hooks")]
    fn pause_before_commit(&self) {
        if let Some(marker) = &self.commit_pause {
            let _ = fs::write(marker, std::process::id().to_string());
            for _ in 0..1200 {
                std::thread::sleep(Duration::from_millis(100));
            }
        }
    }

    #[cfg(not(feature = "test-hooks"))]
    #[inline(always)]
    fn pause_before_commit(&self) {}

    fn refuse_bundled_tree(&self, path: &Path) -> Result<(), PluginError> {
        if self.paths.is_in_bundled_tree(path) {
            return Err(PluginError::InsideBundledTree {
                path: path.to_path_buf(),
                tree: self.paths.bundled_dir(),
            });
        }
        Ok(())
    }

    /// The bundled record with this id, if it is one.
    fn bundled(&self, id: &InstallationId) -> Option<PluginInstallation> {
        bundled_installations(&self.paths)
            .0
            .into_iter()
            .find(|r| &r.id == id)
    }

    fn refuse_builtin(
        &self,
        id: &InstallationId,
        operation: BuiltinOperation,
    ) -> Result<(), PluginError> {
        match self.bundled(id) {
            Some(b) => Err(PluginError::Builtin {
                name: b.name,
                operation,
            }),
            None => Ok(()),
        }
    }

    // ---- reading -------------------------------------------------------

    /// Statically inspects a plugin folder or `.evoplugin`/`.zip` archive
    /// (extracted as `install` would, see [`inspect_archive`]). A Claude
    /// Code plugin is inspected as the package its import makes, with the
    /// import's report; nothing is written outside the cache.
    pub fn inspect(&self, path: &Path) -> PluginInspection {
        let canonical = path.canonicalize().unwrap_or_else(|_| path.to_path_buf());
        // What `install` takes as an archive is inspected as one.
        if let Ok(Source::Archive(file)) = Source::classify(path) {
            return inspect_archive(
                &file,
                &self.paths.cache_dir,
                &ExtractLimits::DEFAULT,
                &self.validator,
            );
        }
        if !is_claude_plugin(&canonical) {
            return inspect(path, &self.validator);
        }
        match self.import_to_temp(&canonical) {
            Ok(imported) => {
                let mut inspection = inspect(&imported.package, &self.validator);
                inspection.root = canonical;
                inspection.imported = Some(imported.report);
                inspection
            }
            Err(e) => {
                let mut inspection = inspect(path, &self.validator);
                inspection.diagnostics.push(ScopedDiagnostic::new(
                    Scope::Manifest,
                    Diagnostic::error(e.code(), e.to_string()).with_file(&canonical),
                ));
                inspection
            }
        }
    }

    /// Every installation, user ones first. Never fails: problems are
    /// diagnostics.
    pub fn list(&self) -> Listing {
        let read = self.registry.read();
        let mut diagnostics = read.diagnostics;
        let mut user = read.installations;
        user.sort_by(|a, b| (&a.name, &a.id).cmp(&(&b.name, &b.id)));
        let (bundled, bundled_diags) = bundled_installations(&self.paths);
        diagnostics.extend(bundled_diags);
        let plugins = user
            .into_iter()
            .chain(bundled)
            .map(|r| self.summary(r))
            .collect();
        Listing {
            plugins,
            diagnostics,
        }
    }

    fn summary(&self, installation: PluginInstallation) -> PluginSummary {
        PluginSummary {
            capabilities: installation.capabilities(),
            credentials: self.credential_state(&installation),
            installation,
        }
    }

    fn detail(&self, installation: PluginInstallation) -> PluginDetail {
        let inspection = inspect(&installation.root, &self.validator);
        self.detail_with(installation, inspection)
    }

    fn detail_with(
        &self,
        installation: PluginInstallation,
        inspection: PluginInspection,
    ) -> PluginDetail {
        let credentials = self.credential_state(&installation);
        PluginDetail {
            capabilities: installation.capabilities(),
            servers: crate::mcp::ServerReadiness::of_all(
                &inspection.mcp_servers,
                &credentials.missing,
            ),
            credentials,
            installation,
            inspection,
        }
    }

    /// The record with `id`, user or bundled.
    pub fn get(&self, id: &InstallationId) -> Result<PluginInstallation, PluginError> {
        let read = self.registry.read_strict()?;
        if let Some(r) = read.installations.into_iter().find(|r| &r.id == id) {
            return Ok(r);
        }
        self.bundled(id)
            .ok_or_else(|| PluginError::NotFound(id.clone()))
    }

    /// One installation with its inspection and trust review: what to read
    /// before `enable`.
    pub fn show(&self, id: &InstallationId) -> Result<PluginDetail, PluginError> {
        Ok(self.detail(self.get(id)?))
    }

    /// The enabled plugins as graph roots: installed and linked ones
    /// (`bundled: false`, the `plugin` layer) in name order, then the
    /// bundled ones (`bundled: true`). A plugin whose root is gone or whose
    /// manifest no longer validates contributes nothing and is reported.
    /// Each root lists the skills it may load by the rule inspection uses
    /// ([`loadable_skill_dirs`]), read now: a skill folder that resolves
    /// outside the plugin root is never handed to the graph.
    pub fn enabled_plugin_roots(&self) -> (Vec<PluginRoot>, Vec<Diagnostic>) {
        let read = self.registry.read();
        let mut diagnostics = read.diagnostics;
        let mut user: Vec<PluginInstallation> = read
            .installations
            .into_iter()
            .filter(|r| r.enabled)
            .collect();
        user.sort_by(|a, b| (&a.name, &a.id).cmp(&(&b.name, &b.id)));
        let (bundled, bundled_diags) = bundled_installations(&self.paths);
        diagnostics.extend(bundled_diags);
        let mut roots = Vec::new();
        for r in user.into_iter().chain(bundled) {
            if manifest_of(&r.root).is_none() {
                diagnostics.push(
                    Diagnostic::warning(
                        "plugin/installation-unavailable",
                        format!(
                            "plugin `{}` ({}) is enabled but `{}` holds no valid plugin.json; its skills are not loaded",
                            r.name,
                            r.id,
                            r.root.display()
                        ),
                    )
                    .with_file(&r.root),
                );
                continue;
            }
            let skills = loadable_skill_dirs(&r.root)
                .into_iter()
                .map(|d| ListedSkill {
                    name: d.dir,
                    dir: d.path,
                })
                .collect();
            roots.push(PluginRoot {
                bundled: r.is_builtin(),
                installation: r.id.to_string(),
                name: r.name,
                dir: r.root,
                skills,
            });
        }
        (roots, diagnostics)
    }

    // ---- authoring -----------------------------------------------------

    /// Scaffolds a plugin at `dest` (which must not exist) with a manifest
    /// and a starter skill, and rolls it back unless it validates.
    pub fn create(
        &self,
        dest: &Path,
        options: &CreateOptions,
    ) -> Result<PluginInspection, PluginError> {
        check_plugin_name(&options.name).map_err(|e| PluginError::InvalidName {
            name: options.name.clone(),
            reason: e.to_string(),
        })?;
        let skill = options
            .skill
            .clone()
            .unwrap_or_else(|| options.name.replace('.', "-"));
        if !evoflux_skills::validate::is_portable_name(&skill) {
            return Err(PluginError::InvalidName {
                name: skill,
                reason: "a skill name is lowercase letters, digits and single inner hyphens".into(),
            });
        }
        self.refuse_bundled_tree(dest)?;
        if fs::symlink_metadata(dest).is_ok() {
            return Err(PluginError::DestinationExists(dest.to_path_buf()));
        }
        let mut manifest = serde_json::Map::new();
        manifest.insert("$schema".into(), json!(PLUGIN_SCHEMA_1_0_0));
        manifest.insert("name".into(), json!(options.name));
        if let Some(v) = &options.version {
            manifest.insert("version".into(), json!(v));
        }
        if let Some(d) = &options.description {
            manifest.insert("description".into(), json!(d));
        }
        let skill_md = format!(
            "---\nname: {skill}\ndescription: {}\n---\n# {skill}\n\nDescribe, step by step, how the agent should do this task.\n",
            json!(format!(
                "Describe what {skill} does and when to use it (replace this text)."
            ))
        );
        let written = (|| -> io::Result<()> {
            fs::create_dir_all(dest.join("skills").join(&skill))?;
            let mut text = serde_json::to_string_pretty(&manifest).map_err(io::Error::other)?;
            text.push('\n');
            fs::write(dest.join("plugin.json"), text)?;
            fs::write(dest.join("skills").join(&skill).join("SKILL.md"), skill_md)
        })();
        if let Err(e) = written {
            let _ = fs::remove_dir_all(dest);
            return Err(PluginError::io("create", dest)(e));
        }
        let inspection = inspect(dest, &self.validator);
        if !inspection.valid || inspection.skills.iter().any(|s| !s.valid) {
            let _ = fs::remove_dir_all(dest);
            return Err(PluginError::InvalidPackage {
                path: dest.to_path_buf(),
                diagnostics: inspection.diagnostics,
            });
        }
        Ok(inspection)
    }

    /// Packs a plugin folder; the output never lands inside the package or
    /// the bundled tree, and bundled packages are not packable.
    pub fn pack(&self, root: &Path, output: Option<PathBuf>) -> Result<PackReport, PluginError> {
        self.refuse_bundled_tree(root)?;
        let options = PackOptions {
            output,
            forbidden_roots: vec![self.paths.bundled_dir()],
        };
        Ok(pack(root, &options, &self.validator)?)
    }

    // ---- lifecycle -----------------------------------------------------

    fn stage(&self, source: &Source) -> Result<(StagedPackage, Option<ImportReport>), PluginError> {
        match source {
            Source::Folder(dir) if is_claude_plugin(dir) => {
                let imported = self.import_to_temp(dir)?;
                let (staged, _) = self.stage(&Source::Folder(imported.package.clone()))?;
                Ok((staged, Some(imported.report)))
            }
            Source::Folder(dir) => {
                let original = inspect(dir, &self.validator);
                if !original.valid {
                    return Err(PluginError::InvalidPackage {
                        path: dir.clone(),
                        diagnostics: original.diagnostics,
                    });
                }
                Ok((
                    stage_directory(dir, &self.paths.cache_dir, &self.validator)?,
                    None,
                ))
            }
            Source::Archive(file) => Ok((
                stage_archive(
                    file,
                    &self.paths.cache_dir,
                    &ExtractLimits::DEFAULT,
                    &self.validator,
                )?,
                None,
            )),
        }
    }

    /// A Claude Code plugin imported into a temporary package in the
    /// staging folder, removed when the result is dropped.
    fn import_to_temp(&self, dir: &Path) -> Result<Imported, PluginError> {
        let staging = staging_dir(&self.paths.cache_dir);
        fs::create_dir_all(&staging).map_err(PluginError::io("create", &staging))?;
        let temp = tempfile::Builder::new()
            .prefix("import-")
            .tempdir_in(&staging)
            .map_err(PluginError::io("create a folder in", &staging))?;
        let package = temp.path().join("package");
        let report = claude_import::import(dir, &package)?;
        Ok(Imported {
            _temp: temp,
            package,
            report,
        })
    }

    /// Writes the Claude Code plugin at `source` as an Agent Plugins
    /// package in the new folder `dest`, and inspects the result.
    pub fn import_claude(
        &self,
        source: &Path,
        dest: &Path,
    ) -> Result<(ImportReport, PluginInspection), PluginError> {
        let source = source
            .canonicalize()
            .map_err(|_| PluginError::SourceMissing(source.to_path_buf()))?;
        let report = claude_import::import(&source, dest)?;
        Ok((report, inspect(dest, &self.validator)))
    }

    /// Installs a copy of a plugin folder or `.evoplugin`/`.zip` archive.
    /// A plugin name has one installation: a name already installed or
    /// linked is refused (update that installation instead). When an
    /// uninstall of this plugin kept its data, the new installation takes
    /// that installation's id and so its data; otherwise it gets a new id.
    pub fn install(&self, path: &Path, enabled: bool) -> Result<NewInstallation, PluginError> {
        self.install_recorded(path, enabled, None)
    }

    /// Installs an archive a client uploaded (saved at `archive`), recorded
    /// with the source `upload:<filename>` rather than where the upload
    /// was buffered.
    pub fn install_upload(
        &self,
        archive: &Path,
        filename: &str,
        enabled: bool,
    ) -> Result<NewInstallation, PluginError> {
        self.install_recorded(archive, enabled, Some(format!("upload:{filename}")))
    }

    fn install_recorded(
        &self,
        path: &Path,
        enabled: bool,
        source_ref: Option<String>,
    ) -> Result<NewInstallation, PluginError> {
        let source = Source::classify(path)?;
        self.refuse_bundled_tree(source.path())?;
        let mut guard = self.registry.lock()?;
        self.recover(&guard);
        let (staged, imported) = self.stage(&source)?;
        let left_out = staged.left_out().to_vec();
        let excluded = staged.excluded().to_vec();
        let manifest = staged_manifest(&staged)?;
        let source_ref = source_ref.unwrap_or_else(|| source.path().display().to_string());
        refuse_taken_name(guard.installations(), &manifest.name)?;
        let (id, kept, reattached_data) = self.reattach(guard.kept_data(), &manifest.name);
        let home = self.paths.installation_dir(&id);
        let root = home.join(version_segment(
            manifest.version.as_deref(),
            staged.digest().map(|d| d.as_str()),
        ));
        let inspection = match staged.persist(&root, &self.validator) {
            Ok(i) => i,
            Err(e) => {
                let _ = fs::remove_dir_all(&home);
                return Err(e.into());
            }
        };
        let record = PluginInstallation::new_record(
            id.clone(),
            manifest,
            root,
            SourceType::Installed,
            source_ref,
            inspection.content_sha256.clone(),
            enabled,
        );
        let mut all = guard.installations().to_vec();
        all.push(record.clone());
        self.pause_before_commit();
        if let Err(e) = guard.commit_with_kept(all, kept) {
            let _ = fs::remove_dir_all(&home);
            return Err(e);
        }
        self.ensure_data_dir(&id);
        drop(guard);
        Ok(NewInstallation {
            detail: self.detail_with(record, inspection),
            reattached_data,
            left_out,
            excluded,
            imported,
        })
    }

    /// Registers a development folder in place (nothing is copied). A link
    /// that resolves outside the folder is reported (`plugin/escaping-symlink`)
    /// and fails only the components that reach through it; the others
    /// load. The name rule and the reattaching of kept data are those of
    /// [`install`](Self::install).
    pub fn link(&self, path: &Path, enabled: bool) -> Result<NewInstallation, PluginError> {
        let root = match Source::classify(path)? {
            Source::Folder(dir) => dir,
            Source::Archive(file) => return Err(PluginError::SourceMissing(file)),
        };
        self.refuse_bundled_tree(&root)?;
        let inspection = inspect(&root, &self.validator);
        if !inspection.valid {
            return Err(PluginError::InvalidPackage {
                path: root,
                diagnostics: inspection.diagnostics,
            });
        }
        let Some(manifest) = inspection.manifest.clone() else {
            return Err(PluginError::InvalidPackage {
                path: root,
                diagnostics: inspection.diagnostics,
            });
        };
        let mut guard = self.registry.lock()?;
        self.recover(&guard);
        let source_ref = root.display().to_string();
        refuse_taken_name(guard.installations(), &manifest.name)?;
        let (id, kept, reattached_data) = self.reattach(guard.kept_data(), &manifest.name);
        let record = PluginInstallation::new_record(
            id.clone(),
            manifest,
            root,
            SourceType::Linked,
            source_ref,
            inspection.content_sha256.clone(),
            enabled,
        );
        let mut all = guard.installations().to_vec();
        all.push(record.clone());
        self.pause_before_commit();
        guard.commit_with_kept(all, kept)?;
        self.ensure_data_dir(&id);
        drop(guard);
        // A link keeps its links in place: what escapes is reported in the
        // inspection's diagnostics, nothing is left out (the folder is the
        // developer's own, `.env` included).
        Ok(NewInstallation {
            detail: self.detail_with(record, inspection),
            reattached_data,
            left_out: Vec::new(),
            excluded: Vec::new(),
            imported: None,
        })
    }

    /// The id a new installation of `name` gets and the kept data that
    /// remains: the most recently kept data folder of that name that still
    /// exists is reattached (its id reused); records of that name whose
    /// folder is gone are dropped.
    fn reattach(&self, kept: &[KeptData], name: &str) -> (InstallationId, Vec<KeptData>, bool) {
        let exists = |k: &KeptData| self.paths.plugin_data_dir(&k.id).is_dir();
        let chosen = kept
            .iter()
            .rev()
            .find(|k| k.name == name && exists(k))
            .map(|k| k.id.clone());
        let remaining = kept
            .iter()
            .filter(|k| k.name != name || (exists(k) && Some(&k.id) != chosen.as_ref()))
            .cloned()
            .collect();
        match chosen {
            Some(id) => (id, remaining, true),
            None => (InstallationId::generate(), remaining, false),
        }
    }

    /// The version folder of an installed record, checked to be one
    /// segment directly under `installed/<id>/`.
    fn owned_root(&self, record: &PluginInstallation) -> Result<PathBuf, PluginError> {
        let home = self.paths.installation_dir(&record.id);
        let owned = record.root.parent() == Some(home.as_path())
            && record
                .root
                .file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| !n.starts_with('.'));
        if owned {
            Ok(record.root.clone())
        } else {
            Err(PluginError::RootNotManaged {
                id: record.id.clone(),
                root: record.root.clone(),
                expected: home,
            })
        }
    }

    /// Replaces an installed plugin's files in place from a folder or
    /// archive of the same plugin. The id, install time and data folder are
    /// kept. An enabled installation stays enabled only when the new
    /// version's trust review adds nothing to the installed one's (no new
    /// command, host, environment name or capability); otherwise it is
    /// left disabled until the user reviews the difference and enables it,
    /// unless `trust` is [`UpdateTrust::Enable`].
    pub fn update(
        &self,
        id: &InstallationId,
        path: &Path,
        trust: UpdateTrust,
    ) -> Result<Updated, PluginError> {
        self.update_recorded(id, path, trust, None)
    }

    /// Updates from an archive a client uploaded; see
    /// [`install_upload`](Self::install_upload).
    pub fn update_upload(
        &self,
        id: &InstallationId,
        archive: &Path,
        filename: &str,
        trust: UpdateTrust,
    ) -> Result<Updated, PluginError> {
        self.update_recorded(id, archive, trust, Some(format!("upload:{filename}")))
    }

    fn update_recorded(
        &self,
        id: &InstallationId,
        path: &Path,
        trust: UpdateTrust,
        source_ref: Option<String>,
    ) -> Result<Updated, PluginError> {
        self.refuse_builtin(id, BuiltinOperation::Update)?;
        let source = Source::classify(path)?;
        self.refuse_bundled_tree(source.path())?;
        let mut guard = self.registry.lock()?;
        self.recover(&guard);
        let Some(record) = guard.find(id).cloned() else {
            return Err(PluginError::NotFound(id.clone()));
        };
        match record.source_type {
            SourceType::Installed => {}
            SourceType::Linked => {
                return Err(PluginError::LinkedNotUpdatable { name: record.name });
            }
            SourceType::Builtin => {
                return Err(PluginError::Builtin {
                    name: record.name,
                    operation: BuiltinOperation::Update,
                });
            }
        }
        let old_root = self.owned_root(&record)?;
        let reviewed = inspect(&old_root, &self.validator).trust;
        let (staged, imported) = self.stage(&source)?;
        let manifest = staged_manifest(&staged)?;
        if manifest.name != record.name {
            return Err(PluginError::NameMismatch {
                id: id.clone(),
                expected: record.name,
                found: manifest.name,
            });
        }
        let trust_change = staged.inspection().trust.added_since(&reviewed);
        let (enabled, review) = match trust {
            UpdateTrust::Enable => (true, UpdateReview::EnabledOnRequest),
            UpdateTrust::ReviewAgain if !record.enabled => (false, UpdateReview::Disabled),
            UpdateTrust::ReviewAgain if trust_change.is_empty() => (true, UpdateReview::NothingNew),
            UpdateTrust::ReviewAgain => (false, UpdateReview::Required),
        };
        let left_out = staged.left_out().to_vec();
        let excluded = staged.excluded().to_vec();
        let done = |detail: PluginDetail| Updated {
            detail,
            trust_change: trust_change.clone(),
            review,
            left_out: left_out.clone(),
            excluded: excluded.clone(),
            imported: imported.clone(),
        };
        let home = self.paths.installation_dir(id);
        let new_root = home.join(version_segment(
            manifest.version.as_deref(),
            staged.digest().map(|d| d.as_str()),
        ));
        let updated = |inspection: &PluginInspection| PluginInstallation {
            version: manifest.version.clone(),
            description: manifest.description.clone(),
            root: new_root.clone(),
            source_ref: source_ref
                .clone()
                .unwrap_or_else(|| source.path().display().to_string()),
            content_sha256: inspection.content_sha256.clone(),
            enabled,
            updated_at: utc_now(),
            ..record.clone()
        };
        let replace = |all: &[PluginInstallation], new: &PluginInstallation| {
            all.iter()
                .map(|r| {
                    if r.id == new.id {
                        new.clone()
                    } else {
                        r.clone()
                    }
                })
                .collect::<Vec<_>>()
        };
        if new_root == old_root {
            let backup = home.join(format!(
                "{UPDATE_BACKUP_PREFIX}{}",
                InstallationId::generate()
            ));
            fs::rename(&old_root, &backup).map_err(PluginError::io("move aside", &old_root))?;
            let inspection = match staged.persist(&new_root, &self.validator) {
                Ok(i) => i,
                Err(e) => {
                    let _ = fs::remove_dir_all(&new_root);
                    let _ = fs::rename(&backup, &old_root);
                    return Err(e.into());
                }
            };
            let new = updated(&inspection);
            let all = replace(guard.installations(), &new);
            self.pause_before_commit();
            if let Err(e) = guard.commit(all) {
                let _ = fs::remove_dir_all(&new_root);
                let _ = fs::rename(&backup, &old_root);
                return Err(e);
            }
            let _ = fs::remove_dir_all(&backup);
            drop(guard);
            Ok(done(self.detail_with(new, inspection)))
        } else {
            if fs::symlink_metadata(&new_root).is_ok() {
                fs::remove_dir_all(&new_root).map_err(PluginError::io("remove", &new_root))?;
            }
            let inspection = staged.persist(&new_root, &self.validator)?;
            let new = updated(&inspection);
            let all = replace(guard.installations(), &new);
            self.pause_before_commit();
            if let Err(e) = guard.commit(all) {
                let _ = fs::remove_dir_all(&new_root);
                return Err(e);
            }
            let _ = fs::remove_dir_all(&old_root);
            drop(guard);
            Ok(done(self.detail_with(new, inspection)))
        }
    }

    /// Enables or disables an installation. Bundled plugins are always
    /// enabled.
    pub fn set_enabled(
        &self,
        id: &InstallationId,
        enabled: bool,
    ) -> Result<PluginDetail, PluginError> {
        let operation = if enabled {
            BuiltinOperation::Enable
        } else {
            BuiltinOperation::Disable
        };
        self.refuse_builtin(id, operation)?;
        let mut guard = self.registry.lock()?;
        let Some(record) = guard.find(id).cloned() else {
            return Err(PluginError::NotFound(id.clone()));
        };
        let new = PluginInstallation {
            enabled,
            updated_at: utc_now(),
            ..record
        };
        let all = guard
            .installations()
            .iter()
            .map(|r| {
                if r.id == new.id {
                    new.clone()
                } else {
                    r.clone()
                }
            })
            .collect();
        guard.commit(all)?;
        drop(guard);
        Ok(self.detail(new))
    }

    /// Removes an installation. Its `PLUGIN_DATA` (credentials included)
    /// is kept unless `remove_data`, and recorded as kept data of its
    /// plugin name, so a later install of that plugin reattaches it (see
    /// [`kept_data`](Self::kept_data)). A linked folder is never touched.
    pub fn uninstall(
        &self,
        id: &InstallationId,
        remove_data: bool,
    ) -> Result<Uninstalled, PluginError> {
        self.refuse_builtin(id, BuiltinOperation::Uninstall)?;
        let mut guard = self.registry.lock()?;
        self.recover(&guard);
        let Some(record) = guard.find(id).cloned() else {
            return Err(PluginError::NotFound(id.clone()));
        };
        let remaining: Vec<PluginInstallation> = guard
            .installations()
            .iter()
            .filter(|r| &r.id != id)
            .cloned()
            .collect();
        let mut kept = guard.kept_data().to_vec();
        if !remove_data && self.paths.plugin_data_dir(id).is_dir() {
            kept.push(KeptData {
                id: id.clone(),
                name: record.name.clone(),
                version: record.version.clone(),
                kept_at: utc_now(),
            });
        }
        match record.source_type {
            SourceType::Installed => {
                self.owned_root(&record)?;
                let home = self.paths.installation_dir(id);
                let trash = self.paths.installed_dir().join(format!(
                    "{UNINSTALL_PREFIX}{id}-{}",
                    InstallationId::generate()
                ));
                let moved = match fs::rename(&home, &trash) {
                    Ok(()) => true,
                    Err(e) if e.kind() == io::ErrorKind::NotFound => false,
                    Err(e) => return Err(PluginError::io("move aside", &home)(e)),
                };
                self.pause_before_commit();
                if let Err(e) = guard.commit_with_kept(remaining, kept) {
                    if moved {
                        let _ = fs::rename(&trash, &home);
                    }
                    return Err(e);
                }
                let _ = fs::remove_dir_all(&trash);
            }
            SourceType::Linked => {
                self.pause_before_commit();
                guard.commit_with_kept(remaining, kept)?;
            }
            SourceType::Builtin => {
                return Err(PluginError::Builtin {
                    name: record.name,
                    operation: BuiltinOperation::Uninstall,
                });
            }
        }
        drop(guard);
        if remove_data {
            let data = self.paths.plugin_data_dir(id);
            match fs::remove_dir_all(&data) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => return Err(PluginError::io("remove", &data)(e)),
            }
        }
        Ok(Uninstalled {
            installation: record,
            removed_data: remove_data,
        })
    }

    fn ensure_data_dir(&self, id: &InstallationId) {
        let _ = evoflux_core::private::create_private_dir(&self.paths.plugin_data_dir(id));
    }

    /// Cleans up after a process that was killed mid-mutation. Runs under
    /// the lock, so nothing found here belongs to a live operation:
    ///
    /// - every staging folder is abandoned: removed;
    /// - `installed/<id>` without a registry record is a killed install
    ///   (or an uninstall that committed): removed;
    /// - `installed/.uninstall-<id>-…` is restored when the record still
    ///   exists and its tree is gone (killed before the commit), else
    ///   removed;
    /// - inside a recorded `installed/<id>/`, an update backup is restored
    ///   when the registry does not describe the tree in place (killed
    ///   before the commit), else removed; every other folder there is a
    ///   version the registry does not name: removed.
    ///
    /// Data folders are never touched.
    pub fn recover(&self, guard: &RegistryGuard<'_>) {
        if let Ok(entries) = fs::read_dir(self.paths.staging_dir()) {
            for e in entries.flatten() {
                let _ = fs::remove_dir_all(e.path());
            }
        }
        let installed = self.paths.installed_dir();
        let Ok(entries) = fs::read_dir(&installed) else {
            return;
        };
        let records: BTreeMap<String, &PluginInstallation> = guard
            .installations()
            .iter()
            .map(|r| (r.id.to_string(), r))
            .collect();
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            let path = e.path();
            if let Some(rest) = name.strip_prefix(UNINSTALL_PREFIX) {
                let id = rest.split('-').next().unwrap_or_default();
                let home = installed.join(id);
                let restore = records.contains_key(id) && fs::symlink_metadata(&home).is_err();
                if !(restore && fs::rename(&path, &home).is_ok()) {
                    let _ = fs::remove_dir_all(&path);
                }
                continue;
            }
            match records.get(&name) {
                None => {
                    let _ = fs::remove_dir_all(&path);
                }
                Some(record) => self.recover_installation(record, &path),
            }
        }
    }

    fn recover_installation(&self, record: &PluginInstallation, home: &Path) {
        let Ok(entries) = fs::read_dir(home) else {
            return;
        };
        let mut backups = Vec::new();
        for e in entries.flatten() {
            let path = e.path();
            if path == record.root {
                continue;
            }
            if e.file_name()
                .to_string_lossy()
                .starts_with(UPDATE_BACKUP_PREFIX)
            {
                backups.push(path);
            } else {
                let _ = fs::remove_dir_all(&path);
            }
        }
        for backup in backups {
            let in_place = inspect(&record.root, &self.validator).content_sha256;
            let committed = in_place.is_some() && in_place == record.content_sha256;
            if committed {
                let _ = fs::remove_dir_all(&backup);
            } else {
                let _ = fs::remove_dir_all(&record.root);
                if fs::rename(&backup, &record.root).is_err() {
                    let _ = fs::remove_dir_all(&backup);
                }
            }
        }
    }

    // ---- kept data -----------------------------------------------------

    /// Every data folder no installation owns: the ones uninstalls kept
    /// (with their plugin name), then unrecorded `data/<id>` folders.
    /// The data of bundled plugins is never listed.
    pub fn kept_data(&self) -> KeptDataListing {
        let read = self.registry.read();
        let mut diagnostics = read.diagnostics;
        let owned = self.owned_ids(&read.installations);
        let mut kept: Vec<KeptDataEntry> = read
            .kept_data
            .iter()
            .map(|k| KeptDataEntry {
                id: k.id.clone(),
                name: Some(k.name.clone()),
                version: k.version.clone(),
                kept_at: Some(k.kept_at.clone()),
                path: self.paths.plugin_data_dir(&k.id),
            })
            .collect();
        let recorded: Vec<InstallationId> = read.kept_data.iter().map(|k| k.id.clone()).collect();
        let data_dir = self.paths.home().join("data");
        let mut unrecorded = Vec::new();
        match fs::read_dir(&data_dir) {
            Ok(entries) => {
                for e in entries.flatten() {
                    let Some(id) = e
                        .file_name()
                        .to_str()
                        .and_then(|n| n.parse::<InstallationId>().ok())
                    else {
                        continue;
                    };
                    if owned.contains(&id) || recorded.contains(&id) || !e.path().is_dir() {
                        continue;
                    }
                    unrecorded.push(KeptDataEntry {
                        path: self.paths.plugin_data_dir(&id),
                        id,
                        name: None,
                        version: None,
                        kept_at: None,
                    });
                }
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => diagnostics.push(
                Diagnostic::warning(
                    "plugin/data-unreadable",
                    format!("cannot list plugin data folders: {e}"),
                )
                .with_file(&data_dir),
            ),
        }
        unrecorded.sort_by(|a, b| a.id.cmp(&b.id));
        kept.extend(unrecorded);
        KeptDataListing { kept, diagnostics }
    }

    /// The ids whose data folders belong to an installation: the user's
    /// and the bundled ones.
    fn owned_ids(&self, installations: &[PluginInstallation]) -> Vec<InstallationId> {
        installations
            .iter()
            .map(|r| r.id.clone())
            .chain(
                bundled_installations(&self.paths)
                    .0
                    .into_iter()
                    .map(|r| r.id),
            )
            .collect()
    }

    /// Deletes kept data folders (and their records): every one kept for a
    /// plugin name, or one by id. The data of an existing installation is
    /// refused: it goes with `uninstall` and its `remove_data`.
    pub fn remove_kept_data(
        &self,
        selector: &DataSelector,
    ) -> Result<Vec<KeptDataEntry>, PluginError> {
        let mut guard = self.registry.lock()?;
        let not_found = || PluginError::KeptDataNotFound {
            selector: selector.clone(),
        };
        let targets: Vec<KeptDataEntry> = match selector {
            DataSelector::Name(name) => guard
                .kept_data()
                .iter()
                .filter(|k| &k.name == name)
                .map(|k| KeptDataEntry {
                    id: k.id.clone(),
                    name: Some(k.name.clone()),
                    version: k.version.clone(),
                    kept_at: Some(k.kept_at.clone()),
                    path: self.paths.plugin_data_dir(&k.id),
                })
                .collect(),
            DataSelector::Id(id) => {
                if let Some(r) = guard.find(id) {
                    return Err(PluginError::DataInUse {
                        id: id.clone(),
                        name: r.name.clone(),
                    });
                }
                if let Some(b) = self.bundled(id) {
                    return Err(PluginError::DataInUse {
                        id: id.clone(),
                        name: b.name,
                    });
                }
                let path = self.paths.plugin_data_dir(id);
                match guard.kept_data().iter().find(|k| &k.id == id) {
                    Some(k) => vec![KeptDataEntry {
                        id: k.id.clone(),
                        name: Some(k.name.clone()),
                        version: k.version.clone(),
                        kept_at: Some(k.kept_at.clone()),
                        path,
                    }],
                    None if path.is_dir() => vec![KeptDataEntry {
                        id: id.clone(),
                        name: None,
                        version: None,
                        kept_at: None,
                        path,
                    }],
                    None => Vec::new(),
                }
            }
        };
        if targets.is_empty() {
            return Err(not_found());
        }
        let remaining: Vec<KeptData> = guard
            .kept_data()
            .iter()
            .filter(|k| !targets.iter().any(|t| t.id == k.id))
            .cloned()
            .collect();
        if remaining.len() != guard.kept_data().len() {
            let installations = guard.installations().to_vec();
            guard.commit_with_kept(installations, remaining)?;
        }
        for t in &targets {
            match fs::remove_dir_all(&t.path) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => return Err(PluginError::io("remove", &t.path)(e)),
            }
        }
        drop(guard);
        Ok(targets)
    }

    // ---- credentials ---------------------------------------------------

    fn declaration(
        &self,
        installation: &PluginInstallation,
    ) -> Result<Option<CredentialDeclaration>, PluginError> {
        match manifest_of(&installation.root) {
            Some(m) => CredentialDeclaration::of(&m),
            None => Ok(None),
        }
    }

    fn credential_state(&self, installation: &PluginInstallation) -> CredentialState {
        let decl = match self.declaration(installation) {
            Ok(Some(d)) => d,
            Ok(None) => return CredentialState::unsupported(),
            Err(e) => return CredentialState::broken(&e),
        };
        match CredentialValues::read(&self.paths.credentials_file(&installation.id)) {
            Ok(values) => CredentialState::new(&decl, &values),
            Err(e) => CredentialState::broken(&e),
        }
    }

    /// The credentials form of an installation, secrets masked.
    pub fn credentials(&self, id: &InstallationId) -> Result<CredentialState, PluginError> {
        let installation = self.get(id)?;
        Ok(self.credential_state(&installation))
    }

    /// The credential fields an installation declares: what a front end
    /// asks the user for. A plugin that declares none, or whose
    /// declaration is invalid, is an error.
    pub fn credential_fields(
        &self,
        id: &InstallationId,
    ) -> Result<Vec<crate::credentials::CredentialField>, PluginError> {
        let installation = self.get(id)?;
        let decl = self
            .declaration(&installation)?
            .ok_or_else(|| PluginError::CredentialsNotSupported(installation.name.clone()))?;
        Ok(decl.fields)
    }

    /// Applies credential changes (all or nothing) and returns the new
    /// form, secrets masked.
    pub fn change_credentials(
        &self,
        id: &InstallationId,
        changes: &BTreeMap<String, CredentialChange>,
    ) -> Result<CredentialState, PluginError> {
        let installation = self.get(id)?;
        let decl = self
            .declaration(&installation)?
            .ok_or_else(|| PluginError::CredentialsNotSupported(installation.name.clone()))?;
        // Serialize read-modify-write with every other mutation.
        let guard = self.registry.lock()?;
        let file = self.paths.credentials_file(id);
        let values = CredentialValues::read(&file)?;
        let new = apply_changes(&installation.name, &decl, &values, changes)?;
        new.write(&file)?;
        drop(guard);
        Ok(CredentialState::new(&decl, &new))
    }
}

/// Refuses a second installation of `name`: a plugin name has one
/// installation, installed or linked.
fn refuse_taken_name(installations: &[PluginInstallation], name: &str) -> Result<(), PluginError> {
    match installations.iter().find(|r| r.name == name) {
        Some(existing) => Err(PluginError::AlreadyInstalled {
            name: name.to_owned(),
            source_ref: existing.source_ref.clone(),
            id: existing.id.clone(),
            source_type: existing.source_type,
        }),
        None => Ok(()),
    }
}

/// The version folder name: the version reduced to `[A-Za-z0-9._-]` (at
/// most 80 characters), or the first 16 hex digits of the digest when
/// there is no usable version. A name starting with `.` is never used: it
/// could be `..`, and dot names are reserved for backups.
pub fn version_segment(version: Option<&str>, digest: Option<&str>) -> String {
    let from_version: Option<String> = version.map(|v| {
        v.chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                    c
                } else {
                    '-'
                }
            })
            .take(80)
            .collect()
    });
    match from_version {
        Some(s) if !s.is_empty() && !s.starts_with('.') => s,
        _ => digest
            .map(|d| d.chars().take(16).collect())
            .filter(|d: &String| !d.is_empty())
            .unwrap_or_else(|| "package".to_owned()),
    }
}

fn staged_manifest(staged: &StagedPackage) -> Result<PluginManifest, PluginError> {
    staged
        .inspection()
        .manifest
        .clone()
        .ok_or_else(|| PluginError::InvalidPackage {
            path: staged.root().to_path_buf(),
            diagnostics: staged.inspection().diagnostics.clone(),
        })
}

/// The valid manifest at `root`, if any (a cheap check: no tree walk).
fn manifest_of(root: &Path) -> Option<PluginManifest> {
    let file = root.join("plugin.json");
    let meta = fs::metadata(&file).ok()?;
    if !meta.is_file() || meta.len() > crate::tree::PackageLimits::DEFAULT.max_manifest_bytes {
        return None;
    }
    let text = fs::read_to_string(&file).ok()?;
    validate_manifest(&text, &file).manifest
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_segments() {
        assert_eq!(version_segment(Some("1.2.3"), Some("abcdef")), "1.2.3");
        assert_eq!(version_segment(Some("1.0 beta/2"), None), "1.0-beta-2");
        assert_eq!(
            version_segment(Some(".."), Some("0123456789abcdef0123")),
            "0123456789abcdef"
        );
        assert_eq!(
            version_segment(None, Some("0123456789abcdef0123")),
            "0123456789abcdef"
        );
        assert_eq!(version_segment(Some(""), None), "package");
        assert_eq!(version_segment(Some(&"x".repeat(100)), None).len(), 80);
    }
}
