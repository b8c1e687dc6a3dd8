//! Shared fixture helpers: bundles are written into temp dirs by each test.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::fs;
use std::path::{Path, PathBuf};

use evoflux_skills::overlay::OverlaySnapshot;
use evoflux_skills::{
    BundleDir, LoadOptions, PlaceholderDirs, SkillOrigin, SkillRecord, SkillSource, WalkLimits,
    apply_overlay, load_bundle, scan_root,
};

/// Writes `files` (relative path, content) below `dir`.
pub fn write_files(dir: &Path, files: &[(&str, &str)]) {
    for (rel, text) in files {
        let p = dir.join(rel);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(p, text).unwrap();
    }
}

/// A minimal valid SKILL.md.
pub fn skill_md(name: &str, description: &str, body: &str) -> String {
    format!("---\nname: {name}\ndescription: {description}\n---\n{body}\n")
}

/// Writes a bundle `root/<folder>/SKILL.md` (plus extra files).
pub fn bundle(root: &Path, folder: &str, skill: &str, extra: &[(&str, &str)]) -> PathBuf {
    let dir = root.join(folder);
    write_files(&dir, &[("SKILL.md", skill)]);
    write_files(&dir, extra);
    dir
}

pub fn options(config: &Path) -> LoadOptions {
    LoadOptions::new(PlaceholderDirs::from_config_dir(config))
}

/// Lists and loads every bundle of one root, overlaid with `overlay`.
pub fn load_root(
    root: &Path,
    source: SkillSource,
    overlay: Option<&OverlaySnapshot>,
) -> Vec<SkillRecord> {
    let origin = SkillOrigin::new(source, root);
    let opts = options(Path::new("/cfg"));
    scan_root(root, WalkLimits::default())
        .bundles
        .iter()
        .map(|b| {
            let mut r = load_bundle(b, &origin, &opts);
            if let Some(o) = overlay {
                apply_overlay(&mut r, o);
            }
            r
        })
        .collect()
}

/// Loads one bundle folder directly under `root`.
pub fn load_one(root: &Path, folder: &str, source: SkillSource) -> SkillRecord {
    let found = BundleDir {
        dir: root.join(folder),
        name: evoflux_skills::BundleName::single(folder).unwrap(),
        symlinked: false,
    };
    load_bundle(
        &found,
        &SkillOrigin::new(source, root),
        &options(Path::new("/cfg")),
    )
}

pub fn codes(r: &SkillRecord) -> Vec<&str> {
    r.diagnostics.codes()
}

/// SHA-256 of every regular file below `dir`, for byte-for-byte checks.
pub fn tree_digest(dir: &Path) -> Vec<(String, String)> {
    let mut out = Vec::new();
    fn walk(base: &Path, dir: &Path, out: &mut Vec<(String, String)>) {
        let mut entries: Vec<_> = fs::read_dir(dir).unwrap().map(|e| e.unwrap()).collect();
        entries.sort_by_key(|e| e.file_name());
        for e in entries {
            let p = e.path();
            let ft = e.file_type().unwrap();
            if ft.is_dir() {
                walk(base, &p, out);
            } else if ft.is_file() {
                let bytes = fs::read(&p).unwrap();
                out.push((
                    p.strip_prefix(base).unwrap().display().to_string(),
                    evoflux_core::hash::sha256_hex(&bytes).to_string(),
                ));
            }
        }
    }
    walk(dir, dir, &mut out);
    out
}
