//! What a run actually did, for grounding a result's claims.
//!
//! Every input is optional: a validator without evidence checks shape and
//! existence; with evidence it also checks that citations were read and
//! that reported writes happened. The filesystem is injected so the worker
//! and the coordinator's sealed revalidation see the same capabilities.

use std::collections::BTreeMap;
use std::io;
use std::path::{Component, Path, PathBuf};

/// Read access to the workspace.
pub trait ResultFilesystem {
    fn read_to_string(&self, path: &Path) -> io::Result<String>;
    fn path_exists(&self, path: &Path) -> bool;
    fn is_directory(&self, path: &Path) -> bool;
}

/// The live disk.
#[derive(Debug, Clone, Copy, Default)]
pub struct DiskFilesystem;

impl ResultFilesystem for DiskFilesystem {
    fn read_to_string(&self, path: &Path) -> io::Result<String> {
        std::fs::read_to_string(path)
    }
    fn path_exists(&self, path: &Path) -> bool {
        path.exists()
    }
    fn is_directory(&self, path: &Path) -> bool {
        path.is_dir()
    }
}

/// Effects observed in the run's own tool stream.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct RunEffects {
    /// Paths the run wrote.
    pub written_paths: Vec<PathBuf>,
    /// Paths whose write attempts were all refused.
    pub refused_paths: Vec<PathBuf>,
    /// Validation commands the run executed, canonicalized.
    pub validation_commands: Vec<String>,
}

/// Optional evidence about a run.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct RunEvidence {
    /// Inclusive 1-based line spans read, per path. `None`: reads were not
    /// recorded, so citations are checked for existence only.
    pub read_spans: Option<BTreeMap<PathBuf, Vec<(u32, u32)>>>,
    pub effects: Option<RunEffects>,
}

/// Where and how a result is validated.
#[derive(Clone, Copy)]
pub struct ValidationContext<'a> {
    pub cwd: &'a Path,
    pub network_allowed: bool,
    pub filesystem: &'a dyn ResultFilesystem,
    pub evidence: &'a RunEvidence,
}

impl std::fmt::Debug for ValidationContext<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ValidationContext")
            .field("cwd", &self.cwd)
            .field("network_allowed", &self.network_allowed)
            .field("evidence", &self.evidence)
            .finish_non_exhaustive()
    }
}

/// Joins `p` to `cwd` and removes `.` and `..` lexically.
pub fn resolve(cwd: &Path, p: &Path) -> PathBuf {
    let joined = if p.is_absolute() {
        p.to_path_buf()
    } else {
        cwd.join(p)
    };
    let mut out = PathBuf::new();
    for c in joined.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// Whether `p` (resolved) stays inside `cwd`.
pub fn inside(cwd: &Path, resolved: &Path) -> bool {
    resolved.starts_with(resolve(cwd, Path::new(".")))
}
