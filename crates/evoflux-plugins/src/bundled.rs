//! Release-bundled plugins: first-party packages compiled into the binary.
//!
//! They use the same portable format as any plugin, so the rest of evoflux
//! (inspection, the graph's skill discovery, the MCP runtime) reads them
//! from a folder. The embedded files are therefore materialized once into
//! `{CACHE_DIR}/agent-plugins/bundled/<dir>-<digest>/`, a content-addressed
//! folder whose files are verified byte for byte on every use and rewritten
//! when anything differs. They are immutable from the user's side: never
//! written to the registry, always enabled, every lifecycle capability
//! false, and no lifecycle operation (create, pack, link, install) may
//! target their tree.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use evoflux_core::hash::{ContentHash, content_hash};
use serde::Serialize;

use crate::installation::{EPOCH_TIMESTAMP, InstallationId, PluginInstallation, SourceType};
use crate::manifest::validate_manifest;
use crate::paths::PluginPaths;
use crate::tree::{EntryKind, PackageLimits, walk};

/// One embedded file.
#[derive(Debug, Clone, Copy)]
pub struct EmbeddedFile {
    /// `/`-separated, relative to the plugin root.
    pub path: &'static str,
    pub bytes: &'static [u8],
    pub executable: bool,
}

/// One embedded package.
#[derive(Debug, Clone, Copy)]
pub struct EmbeddedPlugin {
    /// The folder name in the source tree and in `source_ref`.
    pub dir: &'static str,
    pub files: &'static [EmbeddedFile],
}

macro_rules! embedded {
    ($dir:literal, [$($path:literal $(exec $exec:literal)?),+ $(,)?]) => {
        EmbeddedPlugin {
            dir: $dir,
            files: &[$(EmbeddedFile {
                path: $path,
                bytes: include_bytes!(concat!(env!("CARGO_MANIFEST_DIR"), "/bundled/", $dir, "/", $path)),
                executable: false $(|| $exec)?,
            }),+],
        }
    };
}

/// The packages this release ships.
pub static BUNDLED: &[EmbeddedPlugin] = &[embedded!(
    "evoflux-git-kit",
    [
        "plugin.json",
        "skills/git-workflow/.evoflux.json",
        "skills/git-workflow/SKILL.md",
        "skills/git-workflow/references/conflicts.md",
    ]
)];

impl EmbeddedPlugin {
    /// A digest of the embedded files, naming the materialized folder so
    /// that two releases never share one.
    pub fn digest(&self) -> ContentHash {
        #[derive(Serialize)]
        struct Item<'a> {
            path: &'a str,
            executable: bool,
            sha256: ContentHash,
        }
        let items: Vec<Item<'_>> = self
            .files
            .iter()
            .map(|f| Item {
                path: f.path,
                executable: f.executable,
                sha256: evoflux_core::hash::sha256_hex(f.bytes),
            })
            .collect();
        // Serializing plain structs of strings and bools cannot fail.
        content_hash(&items).unwrap_or_else(|_| evoflux_core::hash::sha256_hex(b""))
    }

    fn manifest_text(&self) -> Option<&'static str> {
        self.files
            .iter()
            .find(|f| f.path == "plugin.json")
            .and_then(|f| std::str::from_utf8(f.bytes).ok())
    }

    /// The folder this package is materialized into.
    pub fn folder(&self, paths: &PluginPaths) -> PathBuf {
        let digest = self.digest();
        paths
            .bundled_dir()
            .join(format!("{}-{}", self.dir, &digest.as_str()[..16]))
    }

    /// Whether `root` holds exactly the embedded files.
    fn is_intact(&self, root: &Path) -> bool {
        let walked = walk(root, &PackageLimits::DEFAULT);
        if !walked.complete {
            return false;
        }
        let mut files = 0usize;
        for entry in &walked.tree.entries {
            match &entry.kind {
                EntryKind::Dir => {}
                EntryKind::Link { .. } => return false,
                EntryKind::File { executable, .. } => {
                    files += 1;
                    let Some(expected) = self.files.iter().find(|f| f.path == entry.path) else {
                        return false;
                    };
                    if expected.executable != *executable
                        || fs::read(root.join(&entry.path)).ok().as_deref() != Some(expected.bytes)
                    {
                        return false;
                    }
                }
            }
        }
        files == self.files.len()
    }

    /// Makes sure the package is on disk and intact; returns its root.
    pub fn materialize(&self, paths: &PluginPaths) -> io::Result<PathBuf> {
        let folder = self.folder(paths);
        if folder.is_dir() && self.is_intact(&folder) {
            return Ok(folder);
        }
        let parent = paths.bundled_dir();
        fs::create_dir_all(&parent)?;
        let temp = tempfile::Builder::new()
            .prefix(".materialize-")
            .tempdir_in(&parent)?;
        let staged = temp.path().join("package");
        for file in self.files {
            let to = staged.join(file.path);
            if let Some(dir) = to.parent() {
                fs::create_dir_all(dir)?;
            }
            fs::write(&to, file.bytes)?;
            set_read_only(&to, file.executable)?;
        }
        if fs::symlink_metadata(&folder).is_ok() {
            // Tampered or half-written: replace it whole.
            let trash = temp.path().join("old");
            fs::rename(&folder, &trash)?;
        }
        match fs::rename(&staged, &folder) {
            Ok(()) => Ok(folder),
            // Another process materialized it first.
            Err(_) if self.is_intact(&folder) => Ok(folder),
            Err(e) => Err(e),
        }
    }

    /// The virtual registry record of this package at `root`.
    pub fn installation(&self, root: PathBuf) -> Option<PluginInstallation> {
        let text = self.manifest_text()?;
        let manifest = validate_manifest(text, Path::new("plugin.json")).manifest?;
        Some(PluginInstallation {
            id: InstallationId::builtin(&manifest.name),
            name: manifest.name,
            version: manifest.version,
            description: manifest.description,
            root,
            source_type: SourceType::Builtin,
            source_ref: format!("evoflux://builtin/{}", self.dir),
            content_sha256: None,
            enabled: true,
            managed_by: None,
            managed_project_id: None,
            managed_resource_id: None,
            managed_version_id: None,
            installed_at: EPOCH_TIMESTAMP.to_owned(),
            updated_at: EPOCH_TIMESTAMP.to_owned(),
        })
    }
}

/// Bundled files are read-only on disk: a hint that editing them is
/// pointless (they are rewritten from the binary).
#[cfg(unix)]
fn set_read_only(path: &Path, executable: bool) -> io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let mode = if executable { 0o555 } else { 0o444 };
    fs::set_permissions(path, fs::Permissions::from_mode(mode))
}

#[cfg(not(unix))]
fn set_read_only(_path: &Path, _executable: bool) -> io::Result<()> {
    Ok(())
}

/// The bundled installations, materialized, in name order. A package
/// that cannot be materialized is reported and left out.
pub fn bundled_installations(
    paths: &PluginPaths,
) -> (Vec<PluginInstallation>, Vec<evoflux_core::Diagnostic>) {
    let mut out = Vec::new();
    let mut diagnostics = Vec::new();
    for plugin in BUNDLED {
        let record = plugin
            .materialize(paths)
            .map_err(|e| e.to_string())
            .and_then(|root| {
                plugin
                    .installation(root)
                    .ok_or_else(|| "its manifest is invalid".to_owned())
            });
        match record {
            Ok(r) => out.push(r),
            Err(why) => diagnostics.push(evoflux_core::Diagnostic::error(
                "plugin/bundled-unavailable",
                format!("bundled plugin `{}` is unavailable: {why}", plugin.dir),
            )),
        }
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    (out, diagnostics)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inspect::inspect;
    use crate::skills::StrictSkillValidator;

    #[test]
    fn bundled_plugins_are_valid_and_clean() {
        let dir = tempfile::tempdir().unwrap();
        let paths = PluginPaths::new(dir.path().join("data"), dir.path().join("cache"));
        let (records, diags) = bundled_installations(&paths);
        assert!(diags.is_empty(), "{diags:?}");
        assert!(!records.is_empty());
        for r in &records {
            let i = inspect(&r.root, &StrictSkillValidator);
            assert!(i.valid, "{:?}", i.diagnostics);
            assert!(
                i.diagnostics.is_empty(),
                "bundled plugins ship without warnings: {:?}",
                i.diagnostics
            );
            assert!(i.valid_skills().count() >= 1);
            assert_eq!(r.id, InstallationId::builtin(&r.name));
            assert!(r.enabled);
            assert_eq!(r.source_type, SourceType::Builtin);
            assert!(paths.is_in_bundled_tree(&r.root));
        }
    }

    #[test]
    fn tampering_is_repaired() {
        let dir = tempfile::tempdir().unwrap();
        let paths = PluginPaths::new(dir.path().join("data"), dir.path().join("cache"));
        let plugin = &BUNDLED[0];
        let root = plugin.materialize(&paths).unwrap();
        let skill = root.join("skills/git-workflow/SKILL.md");
        let mut perms = fs::metadata(&skill).unwrap().permissions();
        #[allow(clippy::permissions_set_readonly_false)]
        perms.set_readonly(false);
        fs::set_permissions(&skill, perms).unwrap();
        fs::write(&skill, "tampered").unwrap();
        fs::create_dir_all(root.join("skills/extra")).unwrap();
        fs::write(root.join("skills/extra/SKILL.md"), "x").unwrap();
        assert!(!plugin.is_intact(&root));
        assert_eq!(plugin.materialize(&paths).unwrap(), root);
        assert!(plugin.is_intact(&root));
        assert!(!root.join("skills/extra").exists());
    }
}
