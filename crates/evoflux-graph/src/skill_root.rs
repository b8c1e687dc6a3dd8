//! Listing the skill bundles inside one skills root: the part of discovery
//! that knows how a skills folder is laid out.
//!
//! A bundle is a folder holding a file named exactly `SKILL.md`. The walk is
//! breadth-first (so shallower bundles are always found before a limit cuts
//! the walk), bounded, skips hidden folders and never descends into a
//! bundle's resource folders: a `SKILL.md` under `references/` is an example,
//! not a skill. A bundle below another folder is a legacy nested skill
//! named `parent/child`. Unreadable folders are reported and skipped, so
//! one bad folder never hides the rest of the root.
//!
//! Discovery calls this for every skills root (`.agents/skills`, the
//! `skills/` folder of `.evoflux/`); each bundle becomes one
//! `skills/<name>` candidate. A plugin's `skills/` is not scanned here: the
//! plugin crate lists its loadable bundles (immediate children that stay
//! inside the plugin root) and discovery takes that list as it is.

use std::collections::{HashSet, VecDeque};
use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use evoflux_core::Diagnostic;
use evoflux_core::Diagnostics;

/// The skill file's exact name.
pub const SKILL_FILE: &str = "SKILL.md";
/// Folders a bundle keeps its resources in; never searched for skills.
pub const RESOURCE_DIRS: [&str; 9] = [
    "agents",
    "assets",
    "evals",
    "evaluations",
    "examples",
    "reference",
    "references",
    "scripts",
    "templates",
];

/// Bounds on one root's walk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WalkLimits {
    /// Deepest folder level below the root that is inspected (root = 0).
    pub max_depth: usize,
    /// Most folders read.
    pub max_dirs: usize,
    /// Most directory entries looked at.
    pub max_entries: usize,
}

impl Default for WalkLimits {
    fn default() -> Self {
        WalkLimits {
            max_depth: 6,
            max_dirs: 2_000,
            max_entries: 20_000,
        }
    }
}

/// One bundle found in a root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FoundBundle {
    /// The bundle folder (under the root, not symlink-resolved).
    pub dir: PathBuf,
    /// Folder names from the root down to the bundle; more than one for a
    /// legacy nested skill (`parent/child`).
    pub segments: Vec<String>,
    /// Whether the folder or one of its ancestors below the root is a
    /// symlink (then the bundle is readable but never editable).
    pub symlinked: bool,
}

/// The bundles of one root and what went wrong finding them.
#[derive(Debug, Clone, Default)]
pub struct RootScan {
    pub bundles: Vec<FoundBundle>,
    pub diagnostics: Diagnostics,
}

struct Pending {
    dir: PathBuf,
    segments: Vec<String>,
    symlinked: bool,
}

/// Lists the bundles under `root`, shallowest first, each level sorted by
/// folder name so the order never depends on the filesystem.
pub fn scan_root(root: &Path, limits: WalkLimits) -> RootScan {
    let mut out = RootScan::default();
    // Folders already queued, by (device, inode): a symlink cycle or a
    // symlink to a folder walked anyway is visited once.
    let mut seen: HashSet<(u64, u64)> = HashSet::new();
    if let Ok(meta) = fs::metadata(root) {
        seen.insert((meta.dev(), meta.ino()));
    }
    let mut queue = VecDeque::from([Pending {
        dir: root.to_path_buf(),
        segments: Vec::new(),
        symlinked: false,
    }]);
    let mut dirs_read = 0usize;
    let mut entries_seen = 0usize;
    let mut limit_hit: Option<&'static str> = None;

    while let Some(current) = queue.pop_front() {
        if dirs_read == limits.max_dirs {
            limit_hit = Some("directory");
            break;
        }
        dirs_read += 1;
        let read = match fs::read_dir(&current.dir) {
            Ok(read) => read,
            Err(e) => {
                // A missing root is normal (most candidate roots do not
                // exist); anything else is worth a warning.
                if !(current.segments.is_empty() && e.kind() == std::io::ErrorKind::NotFound) {
                    out.diagnostics.push(
                        Diagnostic::warning(
                            "skill/dir-unreadable",
                            format!("cannot read folder: {e}; skipped"),
                        )
                        .with_file(&current.dir),
                    );
                }
                continue;
            }
        };
        let mut children: Vec<(String, PathBuf, bool, (u64, u64))> = Vec::new();
        let mut stop = false;
        for entry in read {
            if entries_seen == limits.max_entries {
                limit_hit = Some("entry");
                stop = true;
                break;
            }
            entries_seen += 1;
            let Ok(entry) = entry else { continue };
            let Some(name) = entry.file_name().to_str().map(str::to_owned) else {
                continue;
            };
            if name.starts_with('.') {
                continue;
            }
            let Ok(file_type) = entry.file_type() else {
                continue;
            };
            if !(file_type.is_dir() || file_type.is_symlink()) {
                continue;
            }
            let path = entry.path();
            let meta = if file_type.is_symlink() {
                fs::metadata(&path)
            } else {
                entry.metadata()
            };
            if let Ok(meta) = meta
                && meta.is_dir()
            {
                children.push((name, path, file_type.is_symlink(), (meta.dev(), meta.ino())));
            }
        }
        if !current.segments.is_empty() && is_skill_file(&current.dir.join(SKILL_FILE)) {
            out.bundles.push(FoundBundle {
                dir: current.dir.clone(),
                segments: current.segments.clone(),
                symlinked: current.symlinked,
            });
        }
        if stop {
            break;
        }
        if current.segments.len() >= limits.max_depth {
            continue;
        }
        children.sort();
        for (name, path, is_link, key) in children {
            if RESOURCE_DIRS.contains(&name.as_str()) && !current.segments.is_empty() {
                continue;
            }
            if !seen.insert(key) {
                continue;
            }
            let mut segments = current.segments.clone();
            segments.push(name);
            queue.push_back(Pending {
                dir: path,
                segments,
                symlinked: current.symlinked || is_link,
            });
        }
    }
    if let Some(what) = limit_hit {
        out.diagnostics.push(
            Diagnostic::warning(
                "skill/scan-limit",
                format!(
                    "stopped listing skills at the {what} limit ({} folders, {} entries): \
                     bundles further down this root were not loaded",
                    limits.max_dirs, limits.max_entries
                ),
            )
            .with_file(root),
        );
    }
    for bundle in &out.bundles {
        if bundle.segments.len() > 1 {
            out.diagnostics.push(
                Diagnostic::warning(
                    "skill/nested-legacy-skill",
                    format!(
                        "skill nested below another folder gets the legacy name `{}`; move it \
                         directly under the skills folder",
                        bundle.segments.join("/")
                    ),
                )
                .with_file(bundle.dir.join(SKILL_FILE)),
            );
        }
    }
    out
}

/// A `SKILL.md` that is a regular file (possibly through a symlink).
fn is_skill_file(path: &Path) -> bool {
    fs::metadata(path).map(|m| m.is_file()).unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn skill(root: &Path, rel: &str) {
        let dir = root.join(rel);
        fs::create_dir_all(&dir).unwrap();
        fs::write(
            dir.join(SKILL_FILE),
            "---\nname: x\ndescription: d\n---\nb\n",
        )
        .unwrap();
    }

    fn names(scan: &RootScan) -> Vec<String> {
        scan.bundles.iter().map(|b| b.segments.join("/")).collect()
    }

    #[test]
    fn lists_direct_and_nested_skipping_resources_and_hidden() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        skill(root, "beta");
        skill(root, "alpha");
        skill(root, "alpha/references/example");
        skill(root, "alpha/scripts/tool");
        skill(root, "alpha/child");
        skill(root, ".hidden/x");
        skill(root, "category/deep");
        fs::create_dir_all(root.join("empty")).unwrap();
        fs::write(root.join("SKILL.md"), "root file is not a bundle").unwrap();
        let scan = scan_root(root, WalkLimits::default());
        assert_eq!(
            names(&scan),
            ["alpha", "beta", "alpha/child", "category/deep"]
        );
        assert_eq!(
            scan.diagnostics.codes(),
            ["skill/nested-legacy-skill", "skill/nested-legacy-skill"]
        );
    }

    #[test]
    fn missing_root_is_silent_and_depth_is_bounded() {
        let tmp = tempfile::tempdir().unwrap();
        let scan = scan_root(&tmp.path().join("nope"), WalkLimits::default());
        assert!(scan.bundles.is_empty() && scan.diagnostics.is_empty());

        skill(tmp.path(), "a/b/c");
        let shallow = WalkLimits {
            max_depth: 2,
            ..WalkLimits::default()
        };
        assert!(scan_root(tmp.path(), shallow).bundles.is_empty());
        assert_eq!(
            names(&scan_root(tmp.path(), WalkLimits::default())),
            ["a/b/c"]
        );
    }

    #[test]
    fn dir_limit_reports_and_keeps_shallow_bundles() {
        let tmp = tempfile::tempdir().unwrap();
        for i in 0..10 {
            skill(tmp.path(), &format!("s{i}"));
        }
        let limits = WalkLimits {
            max_dirs: 4,
            ..WalkLimits::default()
        };
        let scan = scan_root(tmp.path(), limits);
        assert_eq!(names(&scan), ["s0", "s1", "s2"]);
        assert_eq!(scan.diagnostics.codes(), ["skill/scan-limit"]);
    }

    #[test]
    fn symlinked_bundle_is_marked_and_cycles_end() {
        let tmp = tempfile::tempdir().unwrap();
        let elsewhere = tmp.path().join("elsewhere");
        skill(&elsewhere, "linked");
        let root = tmp.path().join("root");
        skill(&root, "plain");
        std::os::unix::fs::symlink(elsewhere.join("linked"), root.join("linked")).unwrap();
        std::os::unix::fs::symlink(&root, root.join("plain").join("loop")).unwrap();
        let scan = scan_root(&root, WalkLimits::default());
        let found: Vec<(String, bool)> = scan
            .bundles
            .iter()
            .map(|b| (b.segments.join("/"), b.symlinked))
            .collect();
        assert_eq!(
            found,
            [("linked".to_owned(), true), ("plain".to_owned(), false)]
        );
    }
}
