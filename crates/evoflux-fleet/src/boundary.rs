//! Write boundaries: the allowlist of repository paths a fleet step may
//! change.
//!
//! This module is the pure half: the grammar of an entry, normalization and
//! the `covers` / `overlaps` questions. Observing what a step actually
//! changed in a git checkout (and rolling it back) is the executor's job and
//! does not live here, because deciding what a step was allowed to write is
//! contract policy while observing what it did write is a property of the
//! checkout.
//!
//! # Semantics
//!
//! * An entry is repository-relative and uses `/` separators. It is
//!   trimmed; empty segments collapse (`a//b` is `a/b`).
//! * An entry ending in `/` is a **subtree**: it covers every path below
//!   that directory (and the directory itself). Any other entry is an
//!   **exact file**: `src` covers the file `src` and nothing under it.
//!   Prefixes are whole segments, so `src/` never covers `srcx/a`.
//! * Refused, never rewritten: an empty entry, a backslash, glob characters
//!   (`* ? [ ] { }`; globs are not supported), an absolute path or a drive
//!   letter, a `.` or `..` segment, control characters. A boundary that
//!   silently became something else would be wider or narrower than the
//!   contract the operator read.
//! * At most [`WRITE_BOUNDARY_MAX_ENTRIES`] entries are declared. The
//!   normalized boundary collapses exact duplicates and is sorted, so two
//!   declarations that mean the same thing hash the same. An entry covered
//!   by a subtree entry is kept as written (it is not a duplicate).
//! * [`write_boundary_covers`] answers for a candidate path the way git
//!   reports one (repository-relative, `/`-separated; backslashes are read
//!   as `/`). A candidate that is empty, absolute, or has a `.` or `..`
//!   segment is never covered: such a path can only come from somewhere
//!   other than `git status`, and resolving it lexically could let
//!   `src/../secrets` pass as `src/`. Failing closed is the safe answer.
//! * The empty boundary is `readonly`: it covers nothing and overlaps
//!   nothing.

use std::fmt;

use serde::{Deserialize, Serialize};

/// The most entries one `writes` allowlist may declare.
pub const WRITE_BOUNDARY_MAX_ENTRIES: usize = 32;

/// Characters that make an entry look like a glob.
const GLOB_CHARS: &[char] = &['*', '?', '[', ']', '{', '}'];

/// A normalized allowlist: valid entries, de-duplicated, sorted. Read back
/// (from a stored plan) through [`normalize_write_boundary`], so no value
/// of this type ever holds an entry the grammar refuses.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(into = "Vec<String>", try_from = "Vec<String>")]
pub struct WriteBoundary(Vec<String>);

impl TryFrom<Vec<String>> for WriteBoundary {
    type Error = BoundaryError;

    fn try_from(entries: Vec<String>) -> Result<WriteBoundary, BoundaryError> {
        normalize_write_boundary(&entries)
    }
}

impl From<WriteBoundary> for Vec<String> {
    fn from(boundary: WriteBoundary) -> Vec<String> {
        boundary.0
    }
}

/// Why one entry is not a valid boundary entry.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BoundaryEntryError {
    #[error("write boundary entry must not be empty")]
    Empty,
    #[error("write boundary entry '{0}' must use '/' separators")]
    Backslash(String),
    #[error("write boundary entry '{0}' looks like a glob, which write boundaries do not support")]
    Glob(String),
    #[error("write boundary entry '{0}' must be repository-relative, not absolute")]
    Absolute(String),
    #[error("write boundary entry '{0}' must not contain '.' or '..' segments")]
    DotSegment(String),
    #[error("write boundary entry '{0}' must not contain control characters")]
    ControlCharacter(String),
}

/// Why a declared allowlist cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BoundaryError {
    #[error(
        "a write boundary declares at most {WRITE_BOUNDARY_MAX_ENTRIES} entries, this one \
         declares {0}"
    )]
    TooMany(usize),
    #[error("writes[{index}]: {source}")]
    Entry {
        index: usize,
        source: BoundaryEntryError,
    },
}

impl WriteBoundary {
    /// The empty allowlist: `readonly` stated out loud.
    pub fn readonly() -> WriteBoundary {
        WriteBoundary(Vec::new())
    }

    /// The normalized entries, sorted.
    pub fn entries(&self) -> &[String] {
        &self.0
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether this boundary permits a change to `path`; see
    /// [`write_boundary_covers`].
    pub fn covers(&self, path: &str) -> bool {
        write_boundary_covers(self, path)
    }

    /// Whether some path could be covered by both boundaries: two equal
    /// entries, or a subtree containing an entry of the other. The empty
    /// boundary overlaps nothing.
    pub fn overlaps(&self, other: &WriteBoundary) -> bool {
        self.0.iter().any(|a| {
            other
                .0
                .iter()
                .any(|b| a == b || contains(a, b) || contains(b, a))
        })
    }
}

/// `outer` is a subtree containing `inner`.
fn contains(outer: &str, inner: &str) -> bool {
    outer.ends_with('/') && inner.starts_with(outer)
}

impl fmt::Display for WriteBoundary {
    /// `(nothing: readonly)` or the entries joined by `, `.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.is_empty() {
            f.write_str("(nothing: readonly)")
        } else {
            f.write_str(&self.0.join(", "))
        }
    }
}

/// The human rendering of a boundary: `(nothing: readonly)` or the entries
/// joined by `, `.
pub fn describe_write_boundary(boundary: &WriteBoundary) -> String {
    boundary.to_string()
}

/// Normalizes one entry or says why it is not one.
pub fn normalize_write_boundary_entry(entry: &str) -> Result<String, BoundaryEntryError> {
    let trimmed = entry.trim();
    if trimmed.is_empty() {
        return Err(BoundaryEntryError::Empty);
    }
    if trimmed.chars().any(char::is_control) {
        return Err(BoundaryEntryError::ControlCharacter(trimmed.to_owned()));
    }
    if trimmed.contains('\\') {
        return Err(BoundaryEntryError::Backslash(trimmed.to_owned()));
    }
    if trimmed.contains(GLOB_CHARS) {
        return Err(BoundaryEntryError::Glob(trimmed.to_owned()));
    }
    if is_absolute(trimmed) {
        return Err(BoundaryEntryError::Absolute(trimmed.to_owned()));
    }
    relative_segments(trimmed).ok_or_else(|| BoundaryEntryError::DotSegment(trimmed.to_owned()))
}

/// `/x`, or a drive letter `C:` at the start.
fn is_absolute(path: &str) -> bool {
    let bytes = path.as_bytes();
    path.starts_with('/')
        || (bytes.len() >= 2 && bytes[0].is_ascii_alphabetic() && bytes[1] == b':')
}

/// `path` with empty segments collapsed and a trailing `/` kept, or `None`
/// when a segment is `.` or `..` (or nothing is left).
fn relative_segments(path: &str) -> Option<String> {
    let subtree = path.ends_with('/');
    let segments: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    if segments.is_empty() || segments.iter().any(|s| *s == "." || *s == "..") {
        return None;
    }
    let mut out = segments.join("/");
    if subtree {
        out.push('/');
    }
    Some(out)
}

/// Validates and normalizes a declared allowlist: every entry valid, at most
/// [`WRITE_BOUNDARY_MAX_ENTRIES`] declared, duplicates collapsed, sorted.
pub fn normalize_write_boundary<S: AsRef<str>>(
    entries: &[S],
) -> Result<WriteBoundary, BoundaryError> {
    if entries.len() > WRITE_BOUNDARY_MAX_ENTRIES {
        return Err(BoundaryError::TooMany(entries.len()));
    }
    let mut out = Vec::with_capacity(entries.len());
    for (index, entry) in entries.iter().enumerate() {
        let normalized = normalize_write_boundary_entry(entry.as_ref())
            .map_err(|source| BoundaryError::Entry { index, source })?;
        out.push(normalized);
    }
    out.sort();
    out.dedup();
    Ok(WriteBoundary(out))
}

/// Whether `boundary` permits a change to the repository-relative `path`:
/// an exact entry equal to it, or a subtree entry it lies under. See the
/// module documentation for the candidates that are never covered.
pub fn write_boundary_covers(boundary: &WriteBoundary, path: &str) -> bool {
    if boundary.is_empty() {
        return false;
    }
    let candidate = path.replace('\\', "/");
    if candidate.is_empty() || is_absolute(&candidate) {
        return false;
    }
    let Some(candidate) = relative_segments(&candidate) else {
        return false;
    };
    boundary.0.iter().any(|entry| {
        if entry.ends_with('/') {
            candidate.starts_with(entry.as_str())
        } else {
            candidate == *entry
        }
    })
}
