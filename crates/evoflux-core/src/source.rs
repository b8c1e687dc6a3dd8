//! The one size bound of a source file: an agent, a skill, a worker
//! recipe, a fleet, a config or MCP document. Every reader of sources goes
//! through [`read_source`], so a 50 MB agent file is refused as SKILL.md
//! is, with the same words, instead of being hashed and parsed on every
//! command.

use std::fs::File;
use std::io::{self, Read};
use std::path::Path;

/// Largest source file read (512 KiB).
pub const MAX_SOURCE_FILE_BYTES: u64 = 512 * 1024;

/// Why a source file was not read.
#[derive(Debug, thiserror::Error)]
pub enum SourceReadError {
    #[error(
        "the file is larger than {} KiB: move long material into files it links to",
        limit / 1024
    )]
    TooLarge { limit: u64 },
    #[error("cannot read file: {0}")]
    Io(#[from] io::Error),
}

/// Reads at most [`MAX_SOURCE_FILE_BYTES`] of `path` (never more, so a huge
/// file costs nothing).
pub fn read_source(path: &Path) -> Result<Vec<u8>, SourceReadError> {
    read_source_up_to(path, MAX_SOURCE_FILE_BYTES)
}

/// [`read_source`] with another bound, for a file evoflux reads but does
/// not own and whose owner makes it larger (Claude Code's `~/.claude.json`
/// also keeps its history).
pub fn read_source_up_to(path: &Path, limit: u64) -> Result<Vec<u8>, SourceReadError> {
    let mut bytes = Vec::new();
    File::open(path)?
        .take(limit.saturating_add(1))
        .read_to_end(&mut bytes)?;
    if bytes.len() as u64 > limit {
        return Err(SourceReadError::TooLarge { limit });
    }
    Ok(bytes)
}
