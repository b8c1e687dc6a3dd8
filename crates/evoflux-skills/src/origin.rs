//! Where a bundle came from: its source label, its root, and what follows
//! from them (editability, the settings identity).
//!
//! The source graph decides which roots exist and in which order; it hands
//! each bundle to this crate with a [`SkillOrigin`]. Everything here is a
//! pure function of that typed value, so no behaviour ever depends on
//! comparing a path prefix or a label string.

use std::fmt;
use std::path::{Path, PathBuf};

use serde::{Serialize, Serializer};

use crate::modes::ModeSet;

/// The cross-client folder a project or user root follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum CompatDir {
    /// `.evoflux/skills` (project) or the evoflux config dir (user).
    Evoflux,
    /// `.agents/skills`.
    Agents,
    /// `.claude/skills`.
    Claude,
    /// `.opencode/skills` (project) or `~/.config/opencode/skills` (user).
    Opencode,
}

impl CompatDir {
    pub const ALL: [CompatDir; 4] = [
        CompatDir::Evoflux,
        CompatDir::Agents,
        CompatDir::Claude,
        CompatDir::Opencode,
    ];

    pub const fn as_str(self) -> &'static str {
        match self {
            CompatDir::Evoflux => "evoflux",
            CompatDir::Agents => "agents",
            CompatDir::Claude => "claude",
            CompatDir::Opencode => "opencode",
        }
    }
}

/// The kind of root a bundle was discovered in.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum SkillSource {
    /// A skill root inside an authorized repository.
    Project(CompatDir),
    /// A skill root in the user's home or config dir.
    User(CompatDir),
    /// The administrator root (`/etc/evoflux/skills`).
    Admin,
    /// A skill shipped with the release. Its modes come from the code-owned
    /// table, never from a sidecar, so they travel with the source.
    Bundled { modes: ModeSet },
    /// A skill of an installed or linked plugin.
    Plugin { installation_id: String },
    /// A root named explicitly by the caller (a CLI path, a test).
    Custom,
}

/// How a source relates to the settings identity and to editing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SourceClass {
    /// The root path is part of the identity (same-name skills in two
    /// repositories are different variants).
    Located,
    /// The identity ignores the root path, so an upgrade or a moved home
    /// keeps the user's preferences.
    Portable,
}

impl SkillSource {
    /// The stable label shown to users and mixed into the settings identity.
    pub fn label(&self) -> String {
        match self {
            SkillSource::Project(dir) => format!("project-{}", dir.as_str()),
            SkillSource::User(dir) => format!("global-{}", dir.as_str()),
            SkillSource::Admin => "admin".to_owned(),
            SkillSource::Bundled { .. } => "builtin".to_owned(),
            SkillSource::Plugin { installation_id } => format!("plugin:{installation_id}"),
            SkillSource::Custom => "custom".to_owned(),
        }
    }

    pub fn class(&self) -> SourceClass {
        match self {
            SkillSource::Project(_) | SkillSource::Custom => SourceClass::Located,
            SkillSource::User(_)
            | SkillSource::Admin
            | SkillSource::Bundled { .. }
            | SkillSource::Plugin { .. } => SourceClass::Portable,
        }
    }

    /// Whether bundles from this source may ever be edited through Settings.
    /// Bundled, admin and plugin content belongs to someone else.
    pub fn allows_editing(&self) -> bool {
        match self {
            SkillSource::Project(_) | SkillSource::User(_) | SkillSource::Custom => true,
            SkillSource::Admin | SkillSource::Bundled { .. } | SkillSource::Plugin { .. } => false,
        }
    }

    /// The modes fixed by code for bundled skills; `None` for every other
    /// source (their modes come from the sidecar).
    pub fn code_modes(&self) -> Option<ModeSet> {
        match self {
            SkillSource::Bundled { modes } => Some(*modes),
            SkillSource::Project(_)
            | SkillSource::User(_)
            | SkillSource::Admin
            | SkillSource::Plugin { .. }
            | SkillSource::Custom => None,
        }
    }

    /// Which validator applies by default: plugin skills must conform to
    /// the public format (Agent Plugins skips non-conforming skills).
    pub fn default_validation(&self) -> crate::validate::ValidationLevel {
        match self {
            SkillSource::Plugin { .. } => crate::validate::ValidationLevel::Strict,
            SkillSource::Project(_)
            | SkillSource::User(_)
            | SkillSource::Admin
            | SkillSource::Bundled { .. }
            | SkillSource::Custom => crate::validate::ValidationLevel::Runtime,
        }
    }
}

impl fmt::Display for SkillSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.label())
    }
}

impl Serialize for SkillSource {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.label())
    }
}

/// Everything the caller knows about where a bundle lives.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SkillOrigin {
    pub source: SkillSource,
    /// The skill root as discovered: absolute, not symlink-resolved.
    pub root: PathBuf,
    /// Whether the root itself is (or passes through) a symlink; then every
    /// bundle in it is read-only.
    pub root_symlinked: bool,
    /// The plugin's root directory, for plugin skills.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub plugin_root: Option<PathBuf>,
}

impl SkillOrigin {
    pub fn new(source: SkillSource, root: impl Into<PathBuf>) -> Self {
        SkillOrigin {
            source,
            root: root.into(),
            root_symlinked: false,
            plugin_root: None,
        }
    }

    #[must_use]
    pub fn with_root_symlinked(mut self, symlinked: bool) -> Self {
        self.root_symlinked = symlinked;
        self
    }

    #[must_use]
    pub fn with_plugin_root(mut self, plugin_root: impl Into<PathBuf>) -> Self {
        self.plugin_root = Some(plugin_root.into());
        self
    }

    /// The root part of the settings identity: the absolute root path for
    /// located sources, nothing for portable ones.
    pub fn root_identity(&self) -> String {
        match self.source.class() {
            SourceClass::Located => absolute_lexical(&self.root).to_string_lossy().into_owned(),
            SourceClass::Portable => String::new(),
        }
    }
}

/// `path` made absolute against the current directory without resolving
/// symlinks, so a symlinked checkout keeps the identity of the path the
/// user sees.
fn absolute_lexical(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
}
