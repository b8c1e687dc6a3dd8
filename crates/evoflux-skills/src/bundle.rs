//! Loading one bundle into a [`SkillRecord`].
//!
//! A record is everything the catalog, the projections, Settings and the
//! activation need to know about a bundle *without* its body: the body is
//! read again, exactly, only when the skill is activated. Metadata layers
//! apply in a fixed order: SKILL.md front matter, then the `.evoflux.json`
//! sidecar (or the code table for bundled skills), then
//! `agents/evoflux.yaml` / `agents/openai.yaml`. The runtime-preference
//! overlay is the last layer and is applied separately
//! ([`crate::overlay::apply_overlay`]) so one overlay snapshot serves a whole
//! discovery pass.

use std::fs;
use std::path::{Path, PathBuf};

use evoflux_core::hash::sha256_hex;
use evoflux_core::{AppMode, Diagnostics};
use serde::{Deserialize, Serialize};

use crate::agent_meta::{SkillInterface, ToolDependency, read_agent_metadata};
use crate::modes::ModeSet;
use crate::name::BundleName;
use crate::origin::SkillOrigin;
use crate::overlay::SettingsId;
use crate::placeholder::{PlaceholderDirs, expand};
use crate::resources::count_resources;
use crate::scan::{BundleDir, SKILL_FILE};
use crate::sidecar::read_sidecar;
use crate::validate::{ValidationLevel, check_skill_text, read_skill_file};

/// The three user-owned runtime preferences, and the bundle defaults they
/// override.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct RuntimePrefs {
    /// Work/Coding availability.
    pub modes: ModeSet,
    /// Whether the skill joins the Tier-1 catalog and the implicit resolver.
    pub allow_implicit_invocation: bool,
    /// Whether `$name` and `/skill:name` may pick it.
    pub user_invocable: bool,
}

impl Default for RuntimePrefs {
    fn default() -> Self {
        RuntimePrefs {
            modes: ModeSet::BOTH,
            allow_implicit_invocation: true,
            user_invocable: true,
        }
    }
}

/// A discovered skill variant, without its body.
#[derive(Debug, Clone, Serialize)]
pub struct SkillRecord {
    /// The name the skill is addressed by: the declared name, or the legacy
    /// `parent/child` path for a nested bundle, or the folder name when the
    /// declared one is unusable.
    pub name: String,
    /// The bundle's folder path under its root (the slot stem).
    pub bundle: BundleName,
    /// The description with placeholders expanded; empty when missing.
    pub description: String,
    pub skill_file: PathBuf,
    pub bundle_dir: PathBuf,
    pub origin: SkillOrigin,
    pub validation: ValidationLevel,
    /// The bundle's own defaults, before the overlay.
    pub defaults: RuntimePrefs,
    /// The effective preferences (defaults, then overlay).
    pub prefs: RuntimePrefs,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub interface: Option<SkillInterface>,
    pub dependencies: Vec<ToolDependency>,
    pub settings_id: SettingsId,
    /// Whether an overlay record changed the defaults.
    pub settings_overridden: bool,
    /// Runtime preferences can be edited for valid records only.
    pub settings_editable: bool,
    pub valid: bool,
    /// Whether the bundle's files may be changed through Settings.
    pub editable: bool,
    pub symlinked: bool,
    pub resource_count: usize,
    /// First 16 hex digits of the SHA-256 of SKILL.md as read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub revision: Option<String>,
    pub diagnostics: Diagnostics,
}

impl SkillRecord {
    /// The built-in tools this skill declares it needs (its runtime
    /// contract), sorted and deduplicated. Activation checks them and the
    /// harness turns them on; both read this one list.
    pub fn required_builtin_tools(&self) -> Vec<String> {
        use crate::agent_meta::DependencyKind;
        self.dependencies
            .iter()
            .filter(|d| match d.kind {
                DependencyKind::Builtin => true,
                DependencyKind::Mcp | DependencyKind::EnvVar | DependencyKind::Cli => false,
            })
            .map(|d| d.value.clone())
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect()
    }

    pub fn modes(&self) -> ModeSet {
        self.prefs.modes
    }

    /// Valid and available in `mode`: what every runtime surface requires.
    pub fn is_runnable_in(&self, mode: AppMode) -> bool {
        self.valid && self.prefs.modes.contains(mode)
    }

    /// Eligible for the Tier-1 catalog and the implicit resolver.
    pub fn is_implicit_eligible(&self, mode: AppMode) -> bool {
        self.is_runnable_in(mode)
            && self.prefs.allow_implicit_invocation
            && !self.description.trim().is_empty()
    }

    /// Addressable by `$name` / `/skill:name` in `mode`.
    pub fn is_user_invocable_in(&self, mode: AppMode) -> bool {
        self.is_runnable_in(mode) && self.prefs.user_invocable
    }
}

/// What loading needs besides the bundle itself.
#[derive(Debug, Clone)]
pub struct LoadOptions {
    pub placeholders: PlaceholderDirs,
    /// The validator; `None` picks the source's default (strict for plugin
    /// skills, runtime otherwise).
    pub validation: Option<ValidationLevel>,
}

impl LoadOptions {
    pub fn new(placeholders: PlaceholderDirs) -> Self {
        LoadOptions {
            placeholders,
            validation: None,
        }
    }

    #[must_use]
    pub fn with_validation(mut self, level: ValidationLevel) -> Self {
        self.validation = Some(level);
        self
    }
}

/// Loads one bundle. Never fails: every problem becomes a diagnostic on an
/// invalid record, so a malformed bundle never stops the others.
pub fn load_bundle(found: &BundleDir, origin: &SkillOrigin, options: &LoadOptions) -> SkillRecord {
    let skill_file = found.dir.join(SKILL_FILE);
    let text = read_skill_file(&skill_file);
    load_with_text(found, origin, options, text)
}

/// Loads a bundle whose `SKILL.md` text is compiled into the binary (the
/// bundled catalog); `found.dir` names it but nothing is read from disk.
pub fn load_embedded(
    found: &BundleDir,
    origin: &SkillOrigin,
    options: &LoadOptions,
    text: &str,
) -> SkillRecord {
    load_with_text(found, origin, options, Ok(text.to_owned()))
}

fn load_with_text(
    found: &BundleDir,
    origin: &SkillOrigin,
    options: &LoadOptions,
    text: Result<String, evoflux_core::Diagnostic>,
) -> SkillRecord {
    let level = options
        .validation
        .unwrap_or_else(|| origin.source.default_validation());
    let skill_file = found.dir.join(SKILL_FILE);
    let mut diagnostics = Diagnostics::new();
    let skill_file_linked = fs::symlink_metadata(&skill_file)
        .map(|m| m.file_type().is_symlink())
        .unwrap_or(false);
    let symlinked = found.symlinked || origin.root_symlinked || skill_file_linked;

    let (fields, revision) = match text {
        Ok(text) => {
            let check = check_skill_text(&text, &skill_file, &found.name, level);
            diagnostics.extend(check.diagnostics);
            (check.fields, Some(revision_of(&text)))
        }
        Err(d) => {
            diagnostics.push(d);
            (Default::default(), None)
        }
    };

    let base_modes = match origin.source.code_modes() {
        Some(modes) => modes,
        None => {
            let sidecar = read_sidecar(&found.dir);
            diagnostics.extend(sidecar.diagnostic);
            sidecar.modes
        }
    };
    let meta = read_agent_metadata(&found.dir, &mut diagnostics);
    let defaults = RuntimePrefs {
        modes: base_modes,
        // An author's `disable-model-invocation: true` is never undone by
        // a metadata file.
        allow_implicit_invocation: !fields.disable_model_invocation
            && meta.allow_implicit_invocation.unwrap_or(true),
        user_invocable: fields.user_invocable.unwrap_or(true),
    };

    let name = if found.name.is_nested() {
        found.name.stem()
    } else {
        fields
            .name
            .clone()
            .unwrap_or_else(|| found.name.leaf().to_owned())
    };
    let description = fields
        .description
        .as_deref()
        .map(|d| expand(d, &options.placeholders, &found.dir))
        .unwrap_or_default();
    let valid = !diagnostics.has_errors();
    SkillRecord {
        settings_id: SettingsId::for_variant(origin, &found.name),
        name,
        bundle: found.name.clone(),
        description,
        skill_file,
        bundle_dir: found.dir.clone(),
        origin: origin.clone(),
        validation: level,
        defaults,
        prefs: defaults,
        interface: meta.interface,
        dependencies: meta.dependencies,
        settings_overridden: false,
        settings_editable: valid,
        valid,
        editable: origin.source.allows_editing() && !symlinked,
        symlinked,
        resource_count: count_resources(&found.dir),
        revision,
        diagnostics,
    }
}

/// The activation revision of a SKILL.md text.
pub fn revision_of(text: &str) -> String {
    let mut hex = sha256_hex(text.as_bytes()).as_str().to_owned();
    hex.truncate(16);
    hex
}

/// The outcome of `evoflux skills validate PATH`.
#[derive(Debug, Clone, Serialize)]
pub struct ValidationReport {
    pub skill_file: PathBuf,
    pub level: ValidationLevel,
    pub valid: bool,
    pub diagnostics: Diagnostics,
}

/// Validates a bundle folder or a SKILL.md path on its own, with no root:
/// the folder holding SKILL.md names the bundle.
pub fn validate_path(path: &Path, level: ValidationLevel) -> ValidationReport {
    let (dir, skill_file) = if path.is_dir() {
        (path.to_path_buf(), path.join(SKILL_FILE))
    } else {
        let dir = path
            .parent()
            .map_or_else(|| PathBuf::from("."), Path::to_path_buf);
        (dir, path.to_path_buf())
    };
    let folder = std::path::absolute(&dir)
        .ok()
        .and_then(|d| d.file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_default();
    let mut diagnostics = Diagnostics::new();
    match (read_skill_file(&skill_file), BundleName::single(folder)) {
        (Ok(text), Some(name)) => {
            diagnostics.extend(check_skill_text(&text, &skill_file, &name, level).diagnostics);
        }
        (Ok(_), None) => diagnostics.push(
            evoflux_core::Diagnostic::error(
                "skill/name-directory-mismatch",
                "the skill folder has no name",
            )
            .with_file(&skill_file),
        ),
        (Err(d), _) => diagnostics.push(d),
    }
    ValidationReport {
        valid: !diagnostics.has_errors(),
        skill_file,
        level,
        diagnostics,
    }
}
