//! The bounds every rendering runs under.

use std::time::Duration;

use evoflux_core::archive::ExtractLimits;

/// How much a rendering may read, take and produce.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ViewLimits {
    /// The largest file opened at all.
    pub max_file_bytes: u64,
    /// The archive rules' limits for an OOXML package.
    pub archive: ExtractLimits,
    /// The most one package part (an XML file, an image) may expand to.
    pub max_part_bytes: u64,
    /// Wall-clock time for one rendering.
    pub deadline: Duration,
    /// The HTML produced for one document, all parts together.
    pub max_output_bytes: usize,
    /// Images embedded in the output, all together, and one at most.
    pub max_image_bytes: u64,
    pub max_one_image_bytes: u64,
    /// Spreadsheets: rows and columns shown per sheet, cells in all, sheets.
    pub max_rows: u32,
    pub max_columns: u32,
    pub max_cells: u64,
    pub max_sheets: usize,
    /// Presentations: slides shown.
    pub max_slides: usize,
    /// PDFs: the most pages a file may have, and pages per request.
    pub max_pdf_pages: u32,
    pub pages_per_request: u32,
}

impl ViewLimits {
    pub const DEFAULT: ViewLimits = ViewLimits {
        max_file_bytes: 64 * 1024 * 1024,
        archive: ExtractLimits {
            max_archive_bytes: 64 * 1024 * 1024,
            max_entries: 5_000,
            max_expanded_bytes: 256 * 1024 * 1024,
            ratio_check_min_bytes: 1024 * 1024,
            max_ratio: 200,
        },
        max_part_bytes: 64 * 1024 * 1024,
        deadline: Duration::from_secs(20),
        max_output_bytes: 24 * 1024 * 1024,
        max_image_bytes: 16 * 1024 * 1024,
        max_one_image_bytes: 8 * 1024 * 1024,
        max_rows: 1_000,
        max_columns: 64,
        max_cells: 50_000,
        max_sheets: 64,
        max_slides: 200,
        max_pdf_pages: 5_000,
        pages_per_request: 25,
    };
}

impl Default for ViewLimits {
    fn default() -> Self {
        Self::DEFAULT
    }
}
