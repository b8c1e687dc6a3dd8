//! PDF pages as their text, a page range at a time. The file is checked
//! first (its size, that it is a PDF, that it opens without a password,
//! its page count) and every content stream is decompressed under a bound,
//! so a small file cannot inflate without limit. Pages are not drawn:
//! layout, pictures and fonts are left out, and the reader is told so.

use lopdf::{Document, LoadOptions};

use crate::budget::Ctx;
use crate::html::Html;
use crate::notice::NoticeKind;
use crate::{DocumentKind, PageInfo, PageRange, Part, ViewError};

/// Opens `bytes` as a PDF under the limits, or says why not.
fn load(bytes: &[u8], ctx: &Ctx<'_>) -> Result<Document, ViewError> {
    if !DocumentKind::Pdf.matches_magic(bytes) {
        return Err(ViewError::KindMismatch {
            kind: DocumentKind::Pdf,
        });
    }
    let options = LoadOptions {
        max_decompressed_size: Some(ctx.limits.max_part_bytes as usize),
        ..LoadOptions::default()
    };
    let mut doc = match Document::load_mem_with_options(bytes, options) {
        Ok(doc) => doc,
        Err(lopdf::Error::Decryption(_)) => return Err(ViewError::PdfEncrypted),
        Err(e) => return Err(ViewError::Pdf(e.to_string())),
    };
    // Encrypted with an empty user password (permissions only) opens;
    // anything that needs a password does not.
    if doc.is_encrypted() && doc.decrypt("").is_err() {
        return Err(ViewError::PdfEncrypted);
    }
    Ok(doc)
}

pub(crate) fn render(
    bytes: &[u8],
    request: Option<PageRange>,
    ctx: &mut Ctx<'_>,
) -> Result<(Vec<Part>, PageInfo), ViewError> {
    let doc = load(bytes, ctx)?;
    let pages = doc.get_pages();
    let total = u32::try_from(pages.len()).unwrap_or(u32::MAX);
    if total > ctx.limits.max_pdf_pages {
        return Err(ViewError::PdfTooManyPages {
            pages: total,
            limit: ctx.limits.max_pdf_pages,
        });
    }
    let per_request = ctx.limits.pages_per_request.max(1);
    let asked = request.unwrap_or(PageRange {
        first: 1,
        last: per_request,
    });
    if total == 0 || asked.first > total {
        return Err(ViewError::PagesOutside {
            first: asked.first,
            last: asked.last,
            total,
        });
    }
    let first = asked.first;
    let last = asked
        .last
        .min(total)
        .min(first.saturating_add(per_request - 1));
    if first > 1 || last < total {
        ctx.notices.add(
            NoticeKind::PagesPartial,
            format!(
                "pages {first}-{last} of {total} are shown; ask for others with a page range (at most {per_request} at a time)"
            ),
        );
    }
    ctx.notices.add(
        NoticeKind::TextOnly,
        "PDF pages are shown as their text; layout, pictures and fonts are not drawn",
    );
    let limit = ctx.limits.max_part_bytes as usize;
    let mut parts = Vec::new();
    for page in first..=last {
        ctx.check_time()?;
        if ctx.output_spent() {
            break;
        }
        let mut html = Html::new(ctx.output_left());
        html.raw("<div class=\"page\">");
        match doc.extract_text_with_limit(&[page], limit) {
            Ok(text) if text.trim().is_empty() => {
                html.raw("<p class=\"empty\">This page has no text.</p>");
            }
            Ok(text) => {
                for line in text
                    .lines()
                    .map(str::trim_end)
                    .filter(|l| !l.trim().is_empty())
                {
                    html.raw("<p>");
                    html.text(line);
                    html.raw("</p>");
                }
            }
            Err(e) => {
                ctx.notices.add(
                    NoticeKind::PageUnreadable,
                    format!("the text of some pages cannot be read (page {page}: {e})"),
                );
                html.raw("<p class=\"empty\">This page's text cannot be read.</p>");
            }
        }
        html.raw("</div>");
        let (html, truncated) = html.finish();
        ctx.spend_output(html.len(), truncated);
        parts.push(Part {
            label: format!("Page {page}"),
            html,
        });
    }
    Ok((parts, PageInfo { first, last, total }))
}
