//! XLSX to HTML tables, one per sheet, read with calamine's streaming cell
//! reader: values as the file stores them (formulas are never evaluated),
//! rows, columns and cells bounded, so a sheet that claims a million rows
//! costs no more than the bound.

use std::collections::BTreeMap;
use std::io::Cursor;

use calamine::{DataRef, Reader, Xlsx};

use crate::budget::Ctx;
use crate::html::Html;
use crate::notice::NoticeKind;
use crate::package::Package;
use crate::{Part, ViewError};

pub(crate) fn render(bytes: &[u8], ctx: &mut Ctx<'_>) -> Result<Vec<Part>, ViewError> {
    // The archive rules and the macro notice, before calamine reads a part.
    drop(Package::open(bytes, ctx)?);
    let mut book: Xlsx<_> =
        Xlsx::new(Cursor::new(bytes)).map_err(|e| ViewError::Spreadsheet(e.to_string()))?;
    ctx.notices.add(
        NoticeKind::ValuesAsStored,
        "values are shown as the file stores them; formulas are not recalculated",
    );
    let names = book.sheet_names();
    if names.len() > ctx.limits.max_sheets {
        ctx.notices.add(
            NoticeKind::SheetsTruncated,
            format!(
                "the workbook has {} sheets; the first {} are shown",
                names.len(),
                ctx.limits.max_sheets
            ),
        );
    }
    let mut cells_left = ctx.limits.max_cells;
    let mut parts = Vec::new();
    for name in names.iter().take(ctx.limits.max_sheets) {
        ctx.check_time()?;
        if ctx.output_spent() {
            break;
        }
        let grid = read_sheet(&mut book, name, &mut cells_left, ctx)?;
        let mut html = Html::new(ctx.output_left());
        write_table(&mut html, &grid);
        let (html, truncated) = html.finish();
        ctx.spend_output(html.len(), truncated);
        parts.push(Part {
            label: name.clone(),
            html,
        });
    }
    Ok(parts)
}

/// A sheet's shown cells: row -> column -> text, and whether each shown
/// value is a number.
#[derive(Debug, Default)]
struct Grid {
    rows: BTreeMap<u32, BTreeMap<u32, (String, bool)>>,
}

fn read_sheet<RS: std::io::Read + std::io::Seek>(
    book: &mut Xlsx<RS>,
    name: &str,
    cells_left: &mut u64,
    ctx: &mut Ctx<'_>,
) -> Result<Grid, ViewError> {
    let limits = ctx.limits;
    let mut reader = book
        .worksheet_cells_reader(name)
        .map_err(|e| ViewError::Spreadsheet(format!("sheet `{name}`: {e}")))?;
    let mut grid = Grid::default();
    let mut first: Option<(u32, u32)> = None;
    let mut seen = 0u64;
    loop {
        seen += 1;
        if seen.is_multiple_of(4096) {
            ctx.check_time()?;
        }
        let cell = match reader.next_cell() {
            Ok(Some(cell)) => cell,
            Ok(None) => break,
            Err(e) => return Err(ViewError::Spreadsheet(format!("sheet `{name}`: {e}"))),
        };
        let (row, col) = cell.get_position();
        let Some((text, numeric)) = shown(cell.get_value()) else {
            continue;
        };
        let (row0, col0) = *first.get_or_insert((row, col));
        if row < row0 || row - row0 >= limits.max_rows {
            ctx.notices.add(
                NoticeKind::RowsTruncated,
                format!(
                    "only the first {} rows of a sheet are shown",
                    limits.max_rows
                ),
            );
            if row >= row0 {
                break;
            }
            continue;
        }
        if col < col0 || col - col0 >= limits.max_columns {
            ctx.notices.add(
                NoticeKind::ColumnsTruncated,
                format!(
                    "only {} columns of a sheet are shown, from its first used column",
                    limits.max_columns
                ),
            );
            continue;
        }
        if *cells_left == 0 {
            ctx.notices.add(
                NoticeKind::CellsTruncated,
                format!(
                    "the workbook has more than {} filled cells; the rest are not shown",
                    limits.max_cells
                ),
            );
            break;
        }
        *cells_left -= 1;
        grid.rows
            .entry(row)
            .or_default()
            .insert(col, (text, numeric));
    }
    Ok(grid)
}

/// A cell's value as stored, and whether it is a number; `None` for an
/// empty cell.
fn shown(value: &DataRef<'_>) -> Option<(String, bool)> {
    Some(match value {
        DataRef::Empty => return None,
        DataRef::Int(i) => (i.to_string(), true),
        DataRef::Float(f) => (f.to_string(), true),
        DataRef::String(s) => (s.clone(), false),
        DataRef::SharedString(s) => ((*s).to_owned(), false),
        DataRef::Bool(b) => ((if *b { "TRUE" } else { "FALSE" }).to_owned(), false),
        DataRef::DateTime(d) if d.is_datetime() => {
            let (y, mo, da, h, mi, s, _) = d.to_ymd_hms_milli();
            let text = if (h, mi, s) == (0, 0, 0) {
                format!("{y:04}-{mo:02}-{da:02}")
            } else {
                format!("{y:04}-{mo:02}-{da:02} {h:02}:{mi:02}:{s:02}")
            };
            (text, false)
        }
        DataRef::DateTime(d) => (d.as_f64().to_string(), true),
        DataRef::DateTimeIso(s) | DataRef::DurationIso(s) => (s.clone(), false),
        DataRef::Error(e) => (e.to_string(), false),
    })
}

/// `A`, `B`, …, `Z`, `AA`, … for a 0-based column.
fn column_name(mut col: u32) -> String {
    let mut out = Vec::new();
    loop {
        out.push(b'A' + (col % 26) as u8);
        if col < 26 {
            break;
        }
        col = col / 26 - 1;
    }
    out.reverse();
    String::from_utf8(out).unwrap_or_default()
}

fn write_table(html: &mut Html, grid: &Grid) {
    let cols: Vec<u32> = {
        let min = grid
            .rows
            .values()
            .filter_map(|r| r.keys().next())
            .min()
            .copied();
        let max = grid
            .rows
            .values()
            .filter_map(|r| r.keys().last())
            .max()
            .copied();
        match (min, max) {
            (Some(a), Some(b)) => (a..=b).collect(),
            _ => Vec::new(),
        }
    };
    if grid.rows.is_empty() {
        html.raw("<p class=\"empty\">This sheet is empty.</p>");
        return;
    }
    html.raw("<table class=\"sheet\"><thead><tr><th></th>");
    for c in &cols {
        html.raw("<th>");
        html.text(&column_name(*c));
        html.raw("</th>");
    }
    html.raw("</tr></thead><tbody>");
    for (row, cells) in &grid.rows {
        if html.is_truncated() {
            break;
        }
        html.raw(&format!("<tr><th>{}</th>", row + 1));
        for c in &cols {
            match cells.get(c) {
                Some((text, true)) => {
                    html.raw("<td class=\"n\">");
                    html.text(text);
                    html.raw("</td>");
                }
                Some((text, false)) => {
                    html.raw("<td>");
                    html.text(text);
                    html.raw("</td>");
                }
                None => html.raw("<td></td>"),
            }
        }
        html.raw("</tr>");
    }
    html.raw("</tbody></table>");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn column_names() {
        assert_eq!(column_name(0), "A");
        assert_eq!(column_name(25), "Z");
        assert_eq!(column_name(26), "AA");
        assert_eq!(column_name(701), "ZZ");
        assert_eq!(column_name(702), "AAA");
    }
}
