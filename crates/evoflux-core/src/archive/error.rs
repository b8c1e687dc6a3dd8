//! Why an archive is refused, with its stable code.

use std::io;
use std::path::{Path, PathBuf};

use crate::Diagnostic;

/// Why an entry name is refused. Closed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NameProblem {
    Absolute,
    Backslash,
    Colon,
    EmptySegment,
    DotSegment,
    Traversal,
    NotUtf8,
}

impl NameProblem {
    const fn describe(self) -> &'static str {
        match self {
            NameProblem::Absolute => "is absolute",
            NameProblem::Backslash => "contains a backslash",
            NameProblem::Colon => "contains `:` in a segment",
            NameProblem::EmptySegment => "is empty or has an empty segment",
            NameProblem::DotSegment => "has a `.` segment",
            NameProblem::Traversal => "has a `..` segment",
            NameProblem::NotUtf8 => "is not UTF-8",
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ExtractError {
    #[error("the archive is larger than {limit} bytes")]
    ArchiveTooLarge { limit: u64 },
    #[error("the archive has more than {limit} entries")]
    TooManyEntries { limit: usize },
    #[error("entry `{name}` {}", problem.describe())]
    UnsafeName { name: String, problem: NameProblem },
    #[error("entry `{name}` appears twice")]
    Duplicate { name: String },
    /// The reader folds repeated names into one entry, so the name itself
    /// is no longer known; the repetition is still refused.
    #[error("the central directory repeats an entry name")]
    DuplicateInDirectory,
    #[error("entry `{name}` is a file and also the folder of other entries")]
    FileIsFolder { name: String },
    #[error(
        "entries `{first}` and `{second}` name the same file on a case-insensitive or Unicode-normalizing file system (they differ only in letter case or normalization)"
    )]
    CaseFoldDuplicate { first: String, second: String },
    #[error("entry `{name}` is a symlink; archives may hold only files and folders")]
    Symlink { name: String },
    #[error("entry `{name}` is encrypted")]
    Encrypted { name: String },
    #[error("the archive expands to more than {limit} bytes")]
    ExpandedTooLarge { limit: u64 },
    #[error("entry `{name}` has a suspicious compression ratio ({size} bytes from {compressed})")]
    SuspiciousRatio {
        name: String,
        size: u64,
        compressed: u64,
    },
    #[error("the destination `{0}` already exists")]
    DestinationExists(PathBuf),
    #[error("not a valid ZIP archive: {0}")]
    Invalid(#[from] zip::result::ZipError),
    /// Only [`super::extract_archive`] sniffs the format, and only plugin
    /// packages are extracted to disk, hence the advice.
    #[error(
        "the file is {format}, not a ZIP archive: a plugin archive (.evoplugin or .zip) is the plugin folder packed as a ZIP"
    )]
    NotZip { format: &'static str },
    /// Reading the archive or writing `path` failed; `path` is the file or
    /// folder the error concerns.
    #[error("cannot extract the archive: `{}`: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
}

impl ExtractError {
    /// The stable diagnostic code (see the module documentation for why
    /// these are `plugin/archive-*`).
    pub const fn code(&self) -> &'static str {
        match self {
            ExtractError::ArchiveTooLarge { .. } => "plugin/archive-too-large",
            ExtractError::TooManyEntries { .. } => "plugin/archive-too-many-entries",
            ExtractError::UnsafeName { problem, .. } => match problem {
                NameProblem::Absolute => "plugin/archive-absolute-path",
                NameProblem::Backslash => "plugin/archive-backslash",
                NameProblem::Colon => "plugin/archive-colon-segment",
                NameProblem::EmptySegment | NameProblem::DotSegment => {
                    "plugin/archive-empty-segment"
                }
                NameProblem::Traversal => "plugin/archive-path-traversal",
                NameProblem::NotUtf8 => "plugin/archive-name-not-utf8",
            },
            ExtractError::NotZip { .. } => "plugin/archive-not-zip",
            ExtractError::Duplicate { .. }
            | ExtractError::DuplicateInDirectory
            | ExtractError::FileIsFolder { .. } => "plugin/archive-duplicate-entry",
            ExtractError::CaseFoldDuplicate { .. } => "plugin/archive-case-fold-duplicate",
            ExtractError::Symlink { .. } => "plugin/archive-symlink",
            ExtractError::Encrypted { .. } => "plugin/archive-encrypted",
            ExtractError::ExpandedTooLarge { .. } => "plugin/archive-expanded-too-large",
            ExtractError::SuspiciousRatio { .. } => "plugin/archive-suspicious-ratio",
            ExtractError::DestinationExists(_) => "plugin/archive-destination-exists",
            ExtractError::Invalid(_) => "plugin/archive-invalid",
            ExtractError::Io { .. } => "plugin/archive-io",
        }
    }

    /// Wraps an IO error with the path it concerns.
    pub fn io(path: &Path) -> impl FnOnce(io::Error) -> ExtractError + '_ {
        move |source| ExtractError::Io {
            path: path.to_path_buf(),
            source,
        }
    }

    pub fn to_diagnostic(&self, archive: &Path) -> Diagnostic {
        Diagnostic::error(self.code(), self.to_string()).with_file(archive)
    }
}
