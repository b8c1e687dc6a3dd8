//! `artifact`: the one write an artifact-write worker (an architect
//! writing a plan) has. It writes a whole file under the primary root's
//! `.evoflux/artifacts/` and nowhere else, so a worker whose job is a
//! terminal artifact cannot touch the workspace's own files.

use std::path::{Component, Path, PathBuf};

use serde_json::Value;

use crate::args::Args;
use crate::beneath::{Entry, Folder};
use crate::error::ToolError;
use crate::output::ToolOutput;
use crate::workspace::Workspace;

/// Where artifacts live, relative to the primary workspace root.
pub const ARTIFACTS_DIR: &str = ".evoflux/artifacts";

/// Parameters of `artifact`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArtifactInput {
    /// Relative to [`ARTIFACTS_DIR`].
    pub path: String,
    pub content: String,
}

impl ArtifactInput {
    pub const FIELDS: &'static [&'static str] = &["path", "content"];

    pub fn parse(input: &Value) -> Result<ArtifactInput, ToolError> {
        let args = Args::new(input, Self::FIELDS)?;
        Ok(ArtifactInput {
            path: args.string("path")?,
            content: args.string("content")?,
        })
    }
}

/// The artifact's path relative to the artifacts folder, lexically: a
/// path that names the folder itself (`.evoflux/artifacts/PLAN.md`) is
/// taken as inside it; anything absolute or climbing out is refused.
fn relative(path: &str) -> Result<PathBuf, ToolError> {
    let trimmed = Path::new(path.trim());
    let trimmed = trimmed.strip_prefix(ARTIFACTS_DIR).unwrap_or(trimmed);
    let mut out = PathBuf::new();
    for c in trimmed.components() {
        match c {
            Component::Normal(part) => out.push(part),
            Component::CurDir => {}
            Component::ParentDir | Component::RootDir | Component::Prefix(_) => {
                return Err(ToolError::input(
                    "path",
                    format!(
                        "`{path}` leaves {ARTIFACTS_DIR}/; name a file inside it, such as PLAN.md"
                    ),
                ));
            }
        }
    }
    if out.as_os_str().is_empty() {
        return Err(ToolError::input("path", "names no file"));
    }
    Ok(out)
}

/// Where an `artifact` call with the `path` argument writes, under the
/// primary workspace `root`; `None` when the path is refused.
pub fn artifact_path(root: &Path, path: &str) -> Option<PathBuf> {
    relative(path)
        .ok()
        .map(|rel| root.join(ARTIFACTS_DIR).join(rel))
}

pub(crate) fn run(ws: &Workspace, input: &ArtifactInput) -> Result<ToolOutput, ToolError> {
    let rel = relative(&input.path)?;
    let shown = format!("{ARTIFACTS_DIR}/{}", rel.display());
    let target = Path::new(ARTIFACTS_DIR).join(&rel);
    let (Some(parent), Some(name)) = (target.parent(), target.file_name()) else {
        return Err(ToolError::input("path", "names no file"));
    };
    // Every folder on the way is opened without following a link, so a
    // link planted in the folder cannot carry the write elsewhere.
    let folder = Folder::open(&ws.roots()[0], parent, true)
        .map_err(ToolError::io("create the parent directories of", &shown))?;
    let entry = folder.entry(name).map_err(ToolError::io("write", &shown))?;
    if entry == Entry::Dir {
        return Err(ToolError::WrongKind {
            path: shown,
            expected: "a file",
            actual: "a directory",
        });
    }
    let existed = entry != Entry::Missing;
    folder
        .replace(name, input.content.as_bytes())
        .map_err(ToolError::io("write", &shown))?;
    let verb = if existed { "Overwrote" } else { "Created" };
    Ok(ToolOutput::ok(format!(
        "{verb} {shown} ({} bytes)",
        input.content.len()
    )))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ws() -> (tempfile::TempDir, Workspace) {
        let dir = tempfile::tempdir().unwrap();
        let ws = Workspace::new([dir.path()]).unwrap();
        (dir, ws)
    }

    fn input(path: &str) -> ArtifactInput {
        ArtifactInput::parse(&json!({"path": path, "content": "# Plan\n"})).unwrap()
    }

    #[test]
    fn writes_only_under_the_artifacts_folder() {
        let (dir, ws) = ws();
        let out = run(&ws, &input("PLAN.md")).unwrap();
        assert!(
            out.text.contains("Created .evoflux/artifacts/PLAN.md"),
            "{}",
            out.text
        );
        let plan = dir.path().join(".evoflux/artifacts/PLAN.md");
        assert_eq!(std::fs::read_to_string(&plan).unwrap(), "# Plan\n");
        // Naming the folder itself is the same file.
        let out = run(&ws, &input(".evoflux/artifacts/PLAN.md")).unwrap();
        assert!(out.text.starts_with("Overwrote"), "{}", out.text);
        run(&ws, &input("notes/a.md")).unwrap();
        assert!(dir.path().join(".evoflux/artifacts/notes/a.md").is_file());
    }

    #[test]
    fn refuses_paths_that_leave_the_folder() {
        let (dir, ws) = ws();
        for bad in ["../src/main.rs", "/etc/passwd", "a/../../x", ""] {
            let e = run(&ws, &input(bad)).unwrap_err();
            assert_eq!(e.code(), "tool/input-invalid", "{bad}");
        }
        // A symlink planted inside the folder does not carry the write out.
        let outside = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join(ARTIFACTS_DIR)).unwrap();
        std::os::unix::fs::symlink(outside.path(), dir.path().join(ARTIFACTS_DIR).join("out"))
            .unwrap();
        let e = run(&ws, &input("out/x.md")).unwrap_err();
        assert_eq!(e.code(), "tool/link-on-path");
        assert!(!outside.path().join("x.md").exists());
        assert!(!dir.path().join("src").exists());
    }
}
