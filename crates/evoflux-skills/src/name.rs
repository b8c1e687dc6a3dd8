//! `BundleName`: where a bundle sits under its root.
//!
//! A bundle directly under a root is named by its folder (`review`). A
//! bundle found deeper is a legacy nested skill and is named by its path
//! from the root (`parent/child`); invocation writes it `parent:child`.

use std::fmt;

use serde::{Serialize, Serializer};

/// The folder path of a bundle relative to its skills root, one or more
/// non-empty segments.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BundleName {
    segments: Vec<String>,
}

impl BundleName {
    /// A bundle directly under its root. `None` for an empty name.
    pub fn single(folder: impl Into<String>) -> Option<BundleName> {
        Self::from_segments(vec![folder.into()])
    }

    /// A bundle at a relative folder path. `None` when the path is empty or
    /// has an empty, `.` or `..` segment.
    pub fn from_segments(segments: Vec<String>) -> Option<BundleName> {
        let ok = !segments.is_empty()
            && segments
                .iter()
                .all(|s| !s.is_empty() && s != "." && s != ".." && !s.contains('/'));
        ok.then_some(BundleName { segments })
    }

    /// The last folder name.
    pub fn leaf(&self) -> &str {
        self.segments.last().map_or("", String::as_str)
    }

    /// Whether the bundle is nested below another folder of the root.
    pub fn is_nested(&self) -> bool {
        self.segments.len() > 1
    }

    pub fn segments(&self) -> &[String] {
        &self.segments
    }

    /// `parent/child` (or just `child`): the legacy name and the slot stem.
    pub fn stem(&self) -> String {
        self.segments.join("/")
    }
}

impl fmt::Display for BundleName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.stem())
    }
}

impl Serialize for BundleName {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.stem())
    }
}
