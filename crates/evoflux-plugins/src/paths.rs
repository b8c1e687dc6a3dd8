//! Where plugin state lives.
//!
//! ```text
//! {DATA_DIR}/agent-plugins/
//! ├── registry.json
//! ├── installed/<installation-id>/<version-or-digest>/
//! └── data/<installation-id>/            (PLUGIN_DATA, credentials.json)
//! {CACHE_DIR}/agent-plugins/staging/     (installs in progress)
//! {CACHE_DIR}/agent-plugins/bundled/     (the release-bundled packages, materialized)
//! ```
//!
//! Every path is derived from explicit directories, never from the real
//! home directory behind the caller's back.

use std::path::{Path, PathBuf};

use evoflux_core::dirs::Dirs;

use crate::installation::InstallationId;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PluginPaths {
    pub data_dir: PathBuf,
    pub cache_dir: PathBuf,
}

impl PluginPaths {
    pub fn new(data_dir: impl Into<PathBuf>, cache_dir: impl Into<PathBuf>) -> Self {
        PluginPaths {
            data_dir: data_dir.into(),
            cache_dir: cache_dir.into(),
        }
    }

    pub fn from_dirs(dirs: &Dirs) -> Self {
        Self::new(dirs.data_dir(), dirs.cache_dir())
    }

    /// `{DATA_DIR}/agent-plugins`.
    pub fn home(&self) -> PathBuf {
        self.data_dir.join("agent-plugins")
    }

    pub fn registry_file(&self) -> PathBuf {
        self.home().join("registry.json")
    }

    /// `installed/`: one folder per managed installation.
    pub fn installed_dir(&self) -> PathBuf {
        self.home().join("installed")
    }

    /// `installed/<id>`: owns every version tree of that installation.
    pub fn installation_dir(&self, id: &InstallationId) -> PathBuf {
        self.installed_dir().join(id.as_str())
    }

    /// `data/<id>`: PLUGIN_DATA and credentials; survives updates.
    pub fn plugin_data_dir(&self, id: &InstallationId) -> PathBuf {
        self.home().join("data").join(id.as_str())
    }

    pub fn credentials_file(&self, id: &InstallationId) -> PathBuf {
        self.plugin_data_dir(id).join("credentials.json")
    }

    /// `{CACHE_DIR}/agent-plugins/staging`.
    pub fn staging_dir(&self) -> PathBuf {
        crate::staging::staging_dir(&self.cache_dir)
    }

    /// `{CACHE_DIR}/agent-plugins/bundled`: the release-bundled tree.
    pub fn bundled_dir(&self) -> PathBuf {
        self.cache_dir.join("agent-plugins").join("bundled")
    }

    /// Whether `path` (resolved through existing links) lies inside the
    /// release-bundled tree.
    pub fn is_in_bundled_tree(&self, path: &Path) -> bool {
        let tree = resolve(&self.bundled_dir());
        resolve(path).starts_with(tree)
    }
}

/// `path` made absolute, normalized, and resolved through the links of its
/// longest existing ancestor.
pub(crate) fn resolve(path: &Path) -> PathBuf {
    let abs = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let abs = crate::tree::normalize_lexically(&abs).unwrap_or(abs);
    crate::tree::resolve_existing_prefix(&abs).unwrap_or(abs)
}
