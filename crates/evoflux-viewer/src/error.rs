//! Why a document is not shown.

use std::path::PathBuf;
use std::time::Duration;

use evoflux_core::archive::ExtractError;

use crate::DocumentKind;

/// A document the viewer refuses or cannot read. Each variant names what
/// was wrong; [`ViewError::code`] is its stable code.
#[derive(Debug, thiserror::Error)]
pub enum ViewError {
    #[error("the file is {bytes} bytes; the viewer opens files up to {limit} bytes")]
    FileTooLarge { bytes: u64, limit: u64 },
    #[error("the viewer shows DOCX, XLSX, PPTX and PDF files, not `{0}`")]
    UnsupportedKind(String),
    #[error("the file is named like a {} file but its content is not one", kind.as_str())]
    KindMismatch { kind: DocumentKind },
    #[error("the document package is refused: {0}")]
    Package(#[source] ExtractError),
    #[error("the document package is not valid: {0}")]
    PackageInvalid(String),
    #[error("part `{name}` of the document expands past {limit} bytes")]
    PartTooLarge { name: String, limit: u64 },
    #[error("part `{part}` of the document is not valid XML: {message}")]
    Xml { part: String, message: String },
    #[error("the spreadsheet cannot be read: {0}")]
    Spreadsheet(String),
    #[error("the PDF cannot be read: {0}")]
    Pdf(String),
    #[error("the PDF is encrypted with a password; the viewer opens only unprotected PDFs")]
    PdfEncrypted,
    #[error("the PDF has {pages} pages; the viewer opens PDFs of up to {limit} pages")]
    PdfTooManyPages { pages: u32, limit: u32 },
    #[error("pages {first}-{last} are outside the document, which has {total} pages")]
    PagesOutside { first: u32, last: u32, total: u32 },
    #[error("`{0}` is not a page range: give `N` or `A-B` with 1 <= A <= B")]
    BadPageRange(String),
    #[error("rendering took longer than {} s and was stopped", limit.as_secs())]
    DeadlineExceeded { limit: Duration },
    #[error("cannot read `{}`: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

impl ViewError {
    /// The stable code.
    pub fn code(&self) -> &'static str {
        match self {
            ViewError::FileTooLarge { .. } => "viewer/file-too-large",
            ViewError::UnsupportedKind(_) => "viewer/unsupported-kind",
            ViewError::KindMismatch { .. } => "viewer/kind-mismatch",
            ViewError::Package(e) => match e {
                ExtractError::ArchiveTooLarge { .. }
                | ExtractError::TooManyEntries { .. }
                | ExtractError::ExpandedTooLarge { .. }
                | ExtractError::SuspiciousRatio { .. } => "viewer/package-too-large",
                ExtractError::UnsafeName { .. }
                | ExtractError::Duplicate { .. }
                | ExtractError::DuplicateInDirectory
                | ExtractError::FileIsFolder { .. }
                | ExtractError::CaseFoldDuplicate { .. }
                | ExtractError::Symlink { .. } => "viewer/package-unsafe-entry",
                ExtractError::Encrypted { .. } => "viewer/package-encrypted",
                ExtractError::Invalid(_)
                | ExtractError::NotZip { .. }
                | ExtractError::DestinationExists(_)
                | ExtractError::Io { .. } => "viewer/package-invalid",
            },
            ViewError::PackageInvalid(_) => "viewer/package-invalid",
            ViewError::PartTooLarge { .. } => "viewer/package-too-large",
            ViewError::Xml { .. } => "viewer/xml-invalid",
            ViewError::Spreadsheet(_) => "viewer/spreadsheet-unreadable",
            ViewError::Pdf(_) => "viewer/pdf-unreadable",
            ViewError::PdfEncrypted => "viewer/pdf-encrypted",
            ViewError::PdfTooManyPages { .. } => "viewer/pdf-too-many-pages",
            ViewError::PagesOutside { .. } => "viewer/page-range-outside",
            ViewError::BadPageRange(_) => "viewer/page-range-invalid",
            ViewError::DeadlineExceeded { .. } => "viewer/deadline-exceeded",
            ViewError::Io { .. } => "viewer/io",
        }
    }

    /// Whether the document itself is at fault (the reader is told why),
    /// as against the host failing to read it.
    pub fn is_refusal(&self) -> bool {
        !matches!(self, ViewError::Io { .. })
    }
}
