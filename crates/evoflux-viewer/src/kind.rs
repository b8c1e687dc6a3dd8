//! Which documents the viewer opens, told by the file's extension and
//! confirmed by its first bytes.

use std::path::Path;

use serde::{Deserialize, Serialize};

/// A document kind the viewer renders. Closed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DocumentKind {
    Docx,
    Xlsx,
    Pptx,
    Pdf,
}

impl DocumentKind {
    pub const ALL: [DocumentKind; 4] = [
        DocumentKind::Docx,
        DocumentKind::Xlsx,
        DocumentKind::Pptx,
        DocumentKind::Pdf,
    ];

    /// The kind of a file by its extension (letter case ignored); the
    /// macro-enabled variants render as their plain kind, their macros
    /// never run.
    pub fn of(path: &Path) -> Option<DocumentKind> {
        let ext = path.extension()?.to_str()?.to_ascii_lowercase();
        match ext.as_str() {
            "docx" | "docm" => Some(DocumentKind::Docx),
            "xlsx" | "xlsm" => Some(DocumentKind::Xlsx),
            "pptx" | "pptm" => Some(DocumentKind::Pptx),
            "pdf" => Some(DocumentKind::Pdf),
            _ => None,
        }
    }

    pub const fn as_str(self) -> &'static str {
        match self {
            DocumentKind::Docx => "docx",
            DocumentKind::Xlsx => "xlsx",
            DocumentKind::Pptx => "pptx",
            DocumentKind::Pdf => "pdf",
        }
    }

    /// Whether `head`, the file's first bytes, looks like this kind: a ZIP
    /// for the Office formats, `%PDF-` for a PDF.
    pub fn matches_magic(self, head: &[u8]) -> bool {
        match self {
            DocumentKind::Docx | DocumentKind::Xlsx | DocumentKind::Pptx => {
                head.starts_with(b"PK\x03\x04")
            }
            DocumentKind::Pdf => head.starts_with(b"%PDF-"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_by_extension_and_magic() {
        assert_eq!(
            DocumentKind::of(Path::new("a/B.DOCX")),
            Some(DocumentKind::Docx)
        );
        assert_eq!(
            DocumentKind::of(Path::new("m.xlsm")),
            Some(DocumentKind::Xlsx)
        );
        assert_eq!(
            DocumentKind::of(Path::new("deck.pptx")),
            Some(DocumentKind::Pptx)
        );
        assert_eq!(
            DocumentKind::of(Path::new("x.pdf")),
            Some(DocumentKind::Pdf)
        );
        assert_eq!(DocumentKind::of(Path::new("notes.md")), None);
        assert_eq!(DocumentKind::of(Path::new("docx")), None);
        assert!(DocumentKind::Docx.matches_magic(b"PK\x03\x04rest"));
        assert!(!DocumentKind::Pdf.matches_magic(b"PK\x03\x04"));
        assert!(DocumentKind::Pdf.matches_magic(b"%PDF-1.7"));
    }
}
