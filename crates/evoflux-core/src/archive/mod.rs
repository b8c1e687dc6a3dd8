//! Safe reading and extraction of ZIP archives: the one set of rules every
//! ZIP the host opens passes, whether a plugin package (`.evoplugin`,
//! `.zip`) or an Office document the viewer renders.
//!
//! Every entry name and size is checked before a single byte is written:
//! traversal, absolute names, `:` in a segment (drive letters, alternate
//! streams), backslashes, empty or dot segments, duplicates and names that
//! collide once case-folded or Unicode-normalized, symlink entries, too many
//! entries, too large an archive, too much expanded data and large entries
//! with a suspicious compression ratio are all refused. Extraction then
//! writes only into a fresh destination folder, counts real bytes (declared
//! sizes can lie) and removes the destination again if anything fails, so
//! nothing half-extracted is left behind.
//!
//! It lives here, behind the `archive` feature, so that a crate needing
//! these rules (the viewer) does not depend on the plugin crate for them,
//! and crates that never open a ZIP do not compile the ZIP reader.
//!
//! The stable codes ([`ExtractError::code`]) keep the `plugin/archive-*`
//! names they had when plugin packages were the only archives: users and
//! scripts already rely on them. Other hosts map the closed error to their
//! own codes (the viewer's `viewer/package-*`).

mod check;
mod error;
mod extract;

pub use check::{CheckedEntry, check_entries, check_entry_name};
pub use error::{ExtractError, NameProblem};
pub use extract::{ExtractReport, extract_archive, set_file_mode};

/// Archive limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExtractLimits {
    pub max_archive_bytes: u64,
    pub max_entries: usize,
    pub max_expanded_bytes: u64,
    /// Entries larger than this are checked against `max_ratio`.
    pub ratio_check_min_bytes: u64,
    pub max_ratio: u64,
}

impl ExtractLimits {
    /// EvoFlux's limits: 50 MiB compressed, 2,000 entries, 200 MiB
    /// expanded, and at most 200:1 for entries over 1 MiB.
    pub const DEFAULT: ExtractLimits = ExtractLimits {
        max_archive_bytes: 50 * 1024 * 1024,
        max_entries: 2_000,
        max_expanded_bytes: 200 * 1024 * 1024,
        ratio_check_min_bytes: 1024 * 1024,
        max_ratio: 200,
    };
}

impl Default for ExtractLimits {
    fn default() -> Self {
        Self::DEFAULT
    }
}
