//! What a rendering left out or did not do, said to the reader.

use serde::{Deserialize, Serialize};

/// Why a notice is shown. Closed; each has a stable code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(into = "&'static str", try_from = "String")]
pub enum NoticeKind {
    RowsTruncated,
    ColumnsTruncated,
    CellsTruncated,
    SheetsTruncated,
    SlidesTruncated,
    PagesPartial,
    OutputTruncated,
    ImageOmitted,
    ExternalNotFollowed,
    MacrosNotRun,
    ValuesAsStored,
    PageUnreadable,
    TextOnly,
}

impl NoticeKind {
    pub const ALL: [NoticeKind; 13] = [
        NoticeKind::RowsTruncated,
        NoticeKind::ColumnsTruncated,
        NoticeKind::CellsTruncated,
        NoticeKind::SheetsTruncated,
        NoticeKind::SlidesTruncated,
        NoticeKind::PagesPartial,
        NoticeKind::OutputTruncated,
        NoticeKind::ImageOmitted,
        NoticeKind::ExternalNotFollowed,
        NoticeKind::MacrosNotRun,
        NoticeKind::ValuesAsStored,
        NoticeKind::PageUnreadable,
        NoticeKind::TextOnly,
    ];

    /// The stable code.
    pub fn code(self) -> &'static str {
        match self {
            NoticeKind::RowsTruncated => "viewer/rows-truncated",
            NoticeKind::ColumnsTruncated => "viewer/columns-truncated",
            NoticeKind::CellsTruncated => "viewer/cells-truncated",
            NoticeKind::SheetsTruncated => "viewer/sheets-truncated",
            NoticeKind::SlidesTruncated => "viewer/slides-truncated",
            NoticeKind::PagesPartial => "viewer/pages-partial",
            NoticeKind::OutputTruncated => "viewer/output-truncated",
            NoticeKind::ImageOmitted => "viewer/image-omitted",
            NoticeKind::ExternalNotFollowed => "viewer/external-not-followed",
            NoticeKind::MacrosNotRun => "viewer/macros-not-run",
            NoticeKind::ValuesAsStored => "viewer/values-as-stored",
            NoticeKind::PageUnreadable => "viewer/page-unreadable",
            NoticeKind::TextOnly => "viewer/text-only",
        }
    }
}

impl From<NoticeKind> for &'static str {
    fn from(kind: NoticeKind) -> &'static str {
        kind.code()
    }
}

impl TryFrom<String> for NoticeKind {
    type Error = String;

    fn try_from(code: String) -> Result<NoticeKind, String> {
        NoticeKind::ALL
            .into_iter()
            .find(|k| k.code() == code)
            .ok_or_else(|| format!("unknown notice code `{code}`"))
    }
}

/// One notice: its kind and what the reader is told.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Notice {
    pub code: NoticeKind,
    pub message: String,
}

/// The notices of one rendering: one per kind, the first message kept.
#[derive(Debug, Default)]
pub(crate) struct Notices(Vec<Notice>);

impl Notices {
    pub fn add(&mut self, code: NoticeKind, message: impl Into<String>) {
        if !self.0.iter().any(|n| n.code == code) {
            self.0.push(Notice {
                code,
                message: message.into(),
            });
        }
    }

    pub fn has(&self, code: NoticeKind) -> bool {
        self.0.iter().any(|n| n.code == code)
    }

    pub fn into_vec(self) -> Vec<Notice> {
        self.0
    }
}
