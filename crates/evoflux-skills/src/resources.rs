//! A bundle's task resources: the manifest advertised on activation and the
//! path rules of `read_resource`.
//!
//! Task resources are the files a skill body may point the model at
//! (`references/`, `scripts/`, `assets/`, anything else). Control-plane
//! files are not task resources: `SKILL.md` itself, the `.evoflux.json`
//! sidecar, `agents/` metadata and `evals/` fixtures are neither listed nor
//! readable, and neither is anything reached through a symlink, so a bundle
//! can never expose a file outside itself.

use std::fs::{self, File};
use std::io::{self, Read};
use std::path::{Component, Path, PathBuf};

use serde::Serialize;

use crate::scan::SKILL_FILE;
use crate::sidecar::SIDECAR_FILE;

/// Top-level folders of a bundle that hold control-plane files.
pub const CONTROL_PLANE_DIRS: [&str; 2] = ["agents", "evals"];
/// Most manifest entries listed on activation.
pub const MAX_MANIFEST_ENTRIES: usize = 200;
/// Most filesystem entries looked at while listing (a bound on huge trees).
pub const MAX_LISTING_ENTRIES: usize = 10_000;
/// Largest resource `read_resource` returns (256 KiB).
pub const MAX_RESOURCE_BYTES: u64 = 256 * 1024;

/// One task resource.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ResourceEntry {
    /// POSIX path relative to the bundle.
    pub path: String,
    pub size: u64,
}

/// Every task resource of a bundle, sorted by path, bounded by
/// [`MAX_LISTING_ENTRIES`]. Hidden entries are skipped.
pub fn list_resources(bundle_dir: &Path) -> Vec<ResourceEntry> {
    let mut out = Vec::new();
    let mut budget = MAX_LISTING_ENTRIES;
    walk(bundle_dir, &mut Vec::new(), &mut out, &mut budget, true);
    out.sort_by(|a, b| a.path.cmp(&b.path));
    out
}

/// How many entries [`list_resources`] would list, without reading each
/// file's size: what a skill record carries, computed for every candidate
/// on every discovery pass.
pub fn count_resources(bundle_dir: &Path) -> usize {
    let mut out = Vec::new();
    let mut budget = MAX_LISTING_ENTRIES;
    walk(bundle_dir, &mut Vec::new(), &mut out, &mut budget, false);
    out.len()
}

fn walk(
    dir: &Path,
    prefix: &mut Vec<String>,
    out: &mut Vec<ResourceEntry>,
    budget: &mut usize,
    sizes: bool,
) {
    let Ok(read) = fs::read_dir(dir) else { return };
    let mut entries: Vec<(String, fs::DirEntry)> = read
        .filter_map(Result::ok)
        .filter_map(|e| e.file_name().to_str().map(|n| (n.to_owned(), e)))
        .collect();
    entries.sort_by(|a, b| a.0.cmp(&b.0));
    for (name, entry) in entries {
        if *budget == 0 {
            return;
        }
        *budget -= 1;
        if name.starts_with('.') {
            continue;
        }
        let top = prefix.is_empty();
        if top && (name == SKILL_FILE || CONTROL_PLANE_DIRS.contains(&name.as_str())) {
            continue;
        }
        // `symlink_metadata` via DirEntry: symlinks are never followed.
        let Ok(file_type) = entry.file_type() else {
            continue;
        };
        if file_type.is_dir() {
            prefix.push(name);
            walk(&entry.path(), prefix, out, budget, sizes);
            prefix.pop();
        } else if file_type.is_file() {
            let size = if sizes {
                entry.metadata().map(|m| m.len()).unwrap_or(0)
            } else {
                0
            };
            let mut path = prefix.join("/");
            if !path.is_empty() {
                path.push('/');
            }
            path.push_str(&name);
            out.push(ResourceEntry { path, size });
        }
    }
}

/// Why a resource cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum ResourceError {
    #[error("resource path `{path}` is not allowed: {why}")]
    PathInvalid { path: String, why: &'static str },
    #[error(
        "`{path}` is skill control-plane metadata (SKILL.md, .evoflux.json, agents/, evals/), not a task resource"
    )]
    ControlPlane { path: String },
    #[error("`{path}` passes through a symlink; only files inside the bundle can be read")]
    Symlink { path: String },
    #[error("`{path}` resolves outside the skill bundle")]
    OutsideBundle { path: String },
    #[error("`{path}` is not a file in this skill; see the resource list in the activation")]
    NotFound { path: String },
    #[error("`{path}` is larger than {} KiB", MAX_RESOURCE_BYTES / 1024)]
    TooLarge { path: String },
    #[error("`{path}` is not UTF-8 text")]
    NotUtf8 { path: String },
    #[error("cannot read `{path}`: {source}")]
    Io {
        path: String,
        #[source]
        source: io::Error,
    },
}

impl ResourceError {
    /// The stable code of this failure.
    pub fn code(&self) -> &'static str {
        match self {
            ResourceError::PathInvalid { .. } => "skill/resource-path-invalid",
            ResourceError::ControlPlane { .. } => "skill/resource-control-plane",
            ResourceError::Symlink { .. } => "skill/resource-symlink",
            ResourceError::OutsideBundle { .. } => "skill/resource-outside-bundle",
            ResourceError::NotFound { .. } => "skill/resource-not-found",
            ResourceError::TooLarge { .. } => "skill/resource-too-large",
            ResourceError::NotUtf8 { .. } => "skill/resource-not-utf8",
            ResourceError::Io { .. } => "skill/resource-unreadable",
        }
    }
}

/// A resource read for the model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkillResource {
    pub path: String,
    pub text: String,
}

impl SkillResource {
    /// `<skill_resource skill=".." path="..">text</skill_resource>`.
    pub fn render(&self, skill_name: &str) -> String {
        format!(
            "<skill_resource skill=\"{}\" path=\"{}\">\n{}\n</skill_resource>",
            crate::activation::escape_attr(skill_name),
            crate::activation::escape_attr(&self.path),
            self.text
        )
    }
}

/// Checks `rel` against the path rules and returns its normal components.
pub fn check_resource_path(rel: &str) -> Result<Vec<String>, ResourceError> {
    let parts = normal_components(rel)?;
    let Some(first) = parts.first() else {
        return Err(ResourceError::PathInvalid {
            path: rel.to_owned(),
            why: "names no file",
        });
    };
    let control = (parts.len() == 1 && (first == SKILL_FILE || first == SIDECAR_FILE))
        || (parts.len() > 1 && CONTROL_PLANE_DIRS.contains(&first.as_str()));
    if control {
        return Err(ResourceError::ControlPlane {
            path: rel.to_owned(),
        });
    }
    Ok(parts)
}

/// The normal components of a POSIX path relative to a bundle: not empty,
/// no NUL, no backslash, not absolute, no `..`. The one path grammar of
/// reading resources and of editing bundles.
pub fn normal_components(rel: &str) -> Result<Vec<String>, ResourceError> {
    let invalid = |why| ResourceError::PathInvalid {
        path: rel.to_owned(),
        why,
    };
    if rel.is_empty() {
        return Err(invalid("empty path"));
    }
    if rel.contains('\0') {
        return Err(invalid("contains NUL"));
    }
    if rel.contains('\\') {
        return Err(invalid("use `/` separators, not backslashes"));
    }
    if rel.starts_with('/') {
        return Err(invalid("absolute paths are not allowed"));
    }
    let mut parts = Vec::new();
    for comp in Path::new(rel).components() {
        match comp {
            Component::Normal(s) => match s.to_str() {
                Some(s) => parts.push(s.to_owned()),
                None => return Err(invalid("not UTF-8")),
            },
            Component::CurDir => {}
            Component::ParentDir => return Err(invalid("`..` is not allowed")),
            Component::RootDir | Component::Prefix(_) => {
                return Err(invalid("absolute paths are not allowed"));
            }
        }
    }
    if parts.is_empty() {
        return Err(invalid("names no file"));
    }
    Ok(parts)
}

/// Reads one task resource of the bundle at `bundle_dir`.
pub fn read_resource(bundle_dir: &Path, rel: &str) -> Result<SkillResource, ResourceError> {
    let parts = check_resource_path(rel)?;
    let path = rel.to_owned();
    let mut current = bundle_dir.to_path_buf();
    for part in &parts {
        current.push(part);
        match fs::symlink_metadata(&current) {
            Ok(meta) if meta.file_type().is_symlink() => {
                return Err(ResourceError::Symlink { path });
            }
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                return Err(ResourceError::NotFound { path });
            }
            Err(source) => return Err(ResourceError::Io { path, source }),
        }
    }
    let target: PathBuf = current;
    let (real_bundle, real_target) = match (fs::canonicalize(bundle_dir), fs::canonicalize(&target))
    {
        (Ok(b), Ok(t)) => (b, t),
        (Err(source), _) | (_, Err(source)) => return Err(ResourceError::Io { path, source }),
    };
    if !real_target.starts_with(&real_bundle) {
        return Err(ResourceError::OutsideBundle { path });
    }
    let meta = fs::metadata(&target).map_err(|source| ResourceError::Io {
        path: path.clone(),
        source,
    })?;
    if !meta.is_file() {
        return Err(ResourceError::NotFound { path });
    }
    if meta.len() > MAX_RESOURCE_BYTES {
        return Err(ResourceError::TooLarge { path });
    }
    let mut bytes = Vec::new();
    File::open(&target)
        .and_then(|f| f.take(MAX_RESOURCE_BYTES + 1).read_to_end(&mut bytes))
        .map_err(|source| ResourceError::Io {
            path: path.clone(),
            source,
        })?;
    if bytes.len() as u64 > MAX_RESOURCE_BYTES {
        return Err(ResourceError::TooLarge { path });
    }
    let text =
        String::from_utf8(bytes).map_err(|_| ResourceError::NotUtf8 { path: path.clone() })?;
    Ok(SkillResource { path, text })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bundle() -> tempfile::TempDir {
        let tmp = tempfile::tempdir().unwrap();
        let b = tmp.path();
        for (rel, text) in [
            ("SKILL.md", "---\nname: b\n---\nx"),
            (".evoflux.json", "{}"),
            ("agents/evoflux.yaml", "a: 1"),
            ("evals/trigger-cases.json", "[]"),
            ("references/guide.md", "guide text"),
            ("scripts/run.sh", "echo hi"),
            ("notes.txt", "n"),
            ("nested/agents/ok.md", "deeper agents/ is ordinary"),
        ] {
            let p = b.join(rel);
            fs::create_dir_all(p.parent().unwrap()).unwrap();
            fs::write(p, text).unwrap();
        }
        fs::write(b.join("bin.dat"), [0xff, 0xfe, 0x00]).unwrap();
        fs::write(b.join("big.txt"), vec![b'a'; 300 * 1024]).unwrap();
        std::os::unix::fs::symlink("/etc/hostname", b.join("link.txt")).unwrap();
        tmp
    }

    #[test]
    fn manifest_excludes_control_plane_and_symlinks() {
        let b = bundle();
        let paths: Vec<String> = list_resources(b.path())
            .into_iter()
            .map(|e| e.path)
            .collect();
        assert_eq!(
            paths,
            [
                "big.txt",
                "bin.dat",
                "nested/agents/ok.md",
                "notes.txt",
                "references/guide.md",
                "scripts/run.sh"
            ]
        );
    }

    #[test]
    fn read_rules() {
        let b = bundle();
        let ok = read_resource(b.path(), "references/guide.md").unwrap();
        assert_eq!(ok.text, "guide text");
        assert_eq!(
            read_resource(b.path(), "./scripts/run.sh").unwrap().text,
            "echo hi"
        );
        let code = |rel: &str| read_resource(b.path(), rel).unwrap_err().code();
        assert_eq!(code("../x"), "skill/resource-path-invalid");
        assert_eq!(code("references/../../x"), "skill/resource-path-invalid");
        assert_eq!(code("/etc/passwd"), "skill/resource-path-invalid");
        assert_eq!(code("references\\guide.md"), "skill/resource-path-invalid");
        assert_eq!(code("a\0b"), "skill/resource-path-invalid");
        assert_eq!(code(""), "skill/resource-path-invalid");
        assert_eq!(code("SKILL.md"), "skill/resource-control-plane");
        assert_eq!(code(".evoflux.json"), "skill/resource-control-plane");
        assert_eq!(code("agents/evoflux.yaml"), "skill/resource-control-plane");
        assert_eq!(
            code("evals/trigger-cases.json"),
            "skill/resource-control-plane"
        );
        assert_eq!(code("link.txt"), "skill/resource-symlink");
        assert_eq!(code("missing.md"), "skill/resource-not-found");
        assert_eq!(code("references"), "skill/resource-not-found");
        assert_eq!(code("big.txt"), "skill/resource-too-large");
        assert_eq!(code("bin.dat"), "skill/resource-not-utf8");
        let rendered = ok.render("my \"skill\"");
        assert!(rendered.starts_with(
            "<skill_resource skill=\"my &quot;skill&quot;\" path=\"references/guide.md\">"
        ));
    }
}
