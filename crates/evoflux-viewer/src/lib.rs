//! The host's read-only document viewer.
//!
//! DOCX, XLSX, PPTX and PDF files in a session's workspace are checked
//! ([`package`] for OOXML archives, [`pdf`] for PDFs), rendered to bounded
//! HTML fragments and cached by content hash ([`cache`]). It is a product
//! surface of the host, not a capability: nothing here is a tool, a skill
//! or a plugin contribution, nothing it renders enters a transcript or a
//! model request, and it never creates, edits, exports or recalculates a
//! document. Every renderer runs under [`ViewLimits`]: a file size, archive
//! limits, a deadline, an output budget and per-kind bounds (rows, cells,
//! slides, pages), each overrun refused or truncated with a [`Notice`].
//!
//! The HTML it returns is inert markup built by escaping every piece of
//! document text, with no inline style or script and no address but
//! `data:` pictures; the web UI keeps only the elements and attributes it
//! expects, under a page policy that runs no inline script.

mod budget;
pub mod cache;
mod docx;
mod error;
mod html;
mod kind;
mod limits;
mod notice;
pub mod package;
pub mod pdf;
mod pptx;
mod xlsx;
mod xml;

use serde::{Deserialize, Serialize};

pub use cache::Cache;
pub use error::ViewError;
pub use kind::DocumentKind;
pub use limits::ViewLimits;
pub use notice::{Notice, NoticeKind};

/// Bumped whenever a renderer's output changes, so cached renderings of an
/// older build are not served.
pub const RENDERER_VERSION: u32 = 1;

/// What the reader asks for beyond the file itself.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ViewRequest {
    /// The PDF pages to render (1-based, inclusive); the first pages when
    /// `None`. Ignored for the other kinds.
    pub pages: Option<PageRange>,
}

/// A 1-based, inclusive page range.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct PageRange {
    pub first: u32,
    pub last: u32,
}

impl PageRange {
    /// Reads `N` or `A-B`.
    pub fn parse(text: &str) -> Result<PageRange, ViewError> {
        let bad = || ViewError::BadPageRange(text.to_owned());
        let (a, b) = match text.split_once('-') {
            Some((a, b)) => (a.trim(), b.trim()),
            None => (text.trim(), text.trim()),
        };
        let first: u32 = a.parse().map_err(|_| bad())?;
        let last: u32 = b.parse().map_err(|_| bad())?;
        if first == 0 || last < first {
            return Err(bad());
        }
        Ok(PageRange { first, last })
    }
}

/// One rendered unit: the document body, a sheet, a slide or a page.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Part {
    /// What the reader calls it: `Document`, a sheet's name, `Slide 3`,
    /// `Page 12`.
    pub label: String,
    /// An inert HTML fragment.
    pub html: String,
}

/// Which pages of a PDF were rendered, out of how many.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct PageInfo {
    pub first: u32,
    pub last: u32,
    pub total: u32,
}

/// A rendered document.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Rendered {
    pub kind: DocumentKind,
    pub parts: Vec<Part>,
    /// What was left out, refused inside the document or not done, each
    /// with a stable code.
    pub notices: Vec<Notice>,
    /// For a PDF: the pages rendered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pages: Option<PageInfo>,
}

/// Checks and renders `bytes` as a document of `kind` under `limits`.
/// Synchronous and CPU-bound: a server runs it on a blocking thread.
pub fn render(
    kind: DocumentKind,
    bytes: &[u8],
    request: ViewRequest,
    limits: &ViewLimits,
) -> Result<Rendered, ViewError> {
    if bytes.len() as u64 > limits.max_file_bytes {
        return Err(ViewError::FileTooLarge {
            bytes: bytes.len() as u64,
            limit: limits.max_file_bytes,
        });
    }
    let mut ctx = budget::Ctx::new(limits);
    let (parts, pages) = match kind {
        DocumentKind::Docx => (docx::render(bytes, &mut ctx)?, None),
        DocumentKind::Xlsx => (xlsx::render(bytes, &mut ctx)?, None),
        DocumentKind::Pptx => (pptx::render(bytes, &mut ctx)?, None),
        DocumentKind::Pdf => {
            let (parts, info) = pdf::render(bytes, request.pages, &mut ctx)?;
            (parts, Some(info))
        }
    };
    Ok(Rendered {
        kind,
        parts,
        notices: ctx.into_notices(),
        pages,
    })
}

/// A document opened from a file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Opened {
    #[serde(flatten)]
    pub rendered: Rendered,
    /// The file's size and SHA-256 (the cache key's content part).
    pub bytes: u64,
    pub sha256: String,
    /// Whether the rendering came from the cache.
    pub cached: bool,
}

/// Opens files as documents: kind by extension, confirmed by content;
/// renderings cached by content hash when a cache is given.
#[derive(Debug, Clone)]
pub struct Viewer {
    limits: ViewLimits,
    cache: Option<Cache>,
}

impl Viewer {
    pub fn new(limits: ViewLimits, cache: Option<Cache>) -> Viewer {
        Viewer { limits, cache }
    }

    pub fn limits(&self) -> &ViewLimits {
        &self.limits
    }

    /// Reads, checks and renders the document at `path` (a path the caller
    /// already confined to where the reader may look).
    pub fn open(&self, path: &std::path::Path, request: ViewRequest) -> Result<Opened, ViewError> {
        use std::io::Read as _;
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let kind = DocumentKind::of(path).ok_or(ViewError::UnsupportedKind(name))?;
        let io = |source| ViewError::Io {
            path: path.to_path_buf(),
            source,
        };
        let file = std::fs::File::open(path).map_err(io)?;
        let len = file.metadata().map_err(io)?.len();
        if len > self.limits.max_file_bytes {
            return Err(ViewError::FileTooLarge {
                bytes: len,
                limit: self.limits.max_file_bytes,
            });
        }
        let mut bytes = Vec::with_capacity(len as usize);
        file.take(self.limits.max_file_bytes + 1)
            .read_to_end(&mut bytes)
            .map_err(io)?;
        if !kind.matches_magic(&bytes) {
            return Err(ViewError::KindMismatch { kind });
        }
        let sha256 = cache::content_hash(&bytes);
        let key = Cache::key(&sha256, kind, request);
        if let Some(rendered) = self.cache.as_ref().and_then(|c| c.get(&key)) {
            return Ok(Opened {
                rendered,
                bytes: bytes.len() as u64,
                sha256,
                cached: true,
            });
        }
        let rendered = render(kind, &bytes, request, &self.limits)?;
        if let Some(cache) = &self.cache {
            // A cache that cannot be written costs a rendering next time,
            // nothing else.
            let _ = cache.put(&key, &rendered);
        }
        Ok(Opened {
            rendered,
            bytes: bytes.len() as u64,
            sha256,
            cached: false,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn page_ranges() {
        assert_eq!(
            PageRange::parse("3-10").ok(),
            Some(PageRange { first: 3, last: 10 })
        );
        assert_eq!(
            PageRange::parse("7").ok(),
            Some(PageRange { first: 7, last: 7 })
        );
        for bad in ["0", "5-2", "a", "1-", ""] {
            assert_eq!(
                PageRange::parse(bad).map_err(|e| e.code()).err(),
                Some("viewer/page-range-invalid"),
                "{bad}"
            );
        }
    }
}
