//! The explicit bootstrap step that writes built-in seed files.
//!
//! Loading, listing and validation never write; `evoflux agents init`
//! calls [`init_seeds`] to materialize one seed per built-in agent that has
//! no file yet, so users have something to edit. Existing files are never
//! overwritten.

use std::path::{Path, PathBuf};

use evoflux_core::AppMode;
use evoflux_core::atomic::{AtomicOptions, write_atomic};
use serde::Serialize;

use super::agent_file_path;
use super::profile::{profiles, seed_markdown};

/// What [`init_seeds`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct SeedReport {
    pub created: Vec<PathBuf>,
    /// Files that already existed and were left alone.
    pub kept: Vec<PathBuf>,
}

#[derive(Debug, thiserror::Error)]
#[error("cannot write the seed `{}`: {source}", path.display())]
pub struct SeedError {
    pub path: PathBuf,
    #[source]
    pub source: std::io::Error,
}

/// Writes the seed of every built-in agent of both modes below `root`
/// (`root/agents/<name>.md`, `root/agents/coding/<name>.md`) unless a file
/// is already there.
pub fn init_seeds(root: &Path) -> Result<SeedReport, SeedError> {
    let mut report = SeedReport::default();
    for mode in AppMode::ALL {
        for p in profiles(mode) {
            let path = agent_file_path(root, mode, p.name);
            if path.exists() {
                report.kept.push(path);
                continue;
            }
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent).map_err(|source| SeedError {
                    path: path.clone(),
                    source,
                })?;
            }
            write_atomic(&path, seed_markdown(p).as_bytes(), AtomicOptions::default()).map_err(
                |e| SeedError {
                    path: path.clone(),
                    source: std::io::Error::other(e.to_string()),
                },
            )?;
            report.created.push(path);
        }
    }
    Ok(report)
}
