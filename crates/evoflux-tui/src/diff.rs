//! A unified diff drawn in colour: added and removed lines, hunk headers,
//! line numbers.
//!
//! The shape follows what people know from codex and Claude Code: each
//! line of a hunk behind a dim gutter with its line number (the new file's
//! for added and context lines, the old file's for removed ones), then its
//! sign and its text; a dim `⋮` between hunks (with the hunk header's
//! context, such as the enclosing function, when the diff names one). The
//! `---`/`+++` file headers are dropped: the caller shows the path.
//!
//! Code is wrapped by cells, not words, and continues under the text
//! column, so indentation stays legible. The diff comes from a tool result
//! and may be cut or malformed: anything that is not a recognised part is
//! shown as plain text, and no input or width panics.

use ratatui::style::Style;
use ratatui::text::{Line, Span};
use unicode_segmentation::UnicodeSegmentation;
use unicode_width::UnicodeWidthStr;

use crate::text::clip;
use crate::theme::{Role, Theme};

/// Cells a tab stands for.
const TAB: &str = "    ";
/// The least room for text beside the line numbers; narrower, the numbers
/// are dropped.
const MIN_TEXT_CELLS: usize = 8;

/// `diff` (unified format, as `ResultMetadata`'s file change carries it)
/// drawn for `width` cells, at most `max_lines` rows, then one dim row
/// that says how many more lines of the diff there are.
pub fn render(diff: &str, width: usize, max_lines: usize, theme: &Theme) -> Vec<Line<'static>> {
    let entries = parse(diff);
    let digits = entries
        .iter()
        .filter_map(|e| e.number)
        .max()
        .map_or(0, |n| n.to_string().len());
    let layout = Layout::new(width.max(1), digits);
    let mut rows: Vec<Row> = Vec::new();
    let mut drawn = 0;
    for entry in &entries {
        if rows.len() > max_lines {
            // Past the cut: the rest is only counted.
            break;
        }
        // One row past the cut is enough to count what is left.
        layout.rows(entry, theme, &mut rows, max_lines + 1);
        drawn += 1;
    }
    if rows.len() <= max_lines {
        return rows.into_iter().map(|r| r.line).collect();
    }
    let more = counted_after(&rows, max_lines)
        + entries[drawn..].iter().filter(|e| e.kind.counts()).count();
    rows.truncate(max_lines);
    let mut lines: Vec<Line<'static>> = rows.into_iter().map(|r| r.line).collect();
    if more > 0 {
        let text = if more == 1 {
            "… 1 more line".to_owned()
        } else {
            format!("… {more} more lines")
        };
        lines.push(Line::from(Span::styled(
            clip(&text, width.max(1)),
            theme.style(Role::Dim),
        )));
    }
    lines
}

/// Lines of the diff among the rows from `from` on: each entry that is a
/// line of the diff, and the one whose first rows were drawn before
/// `from` but whose rest would be cut.
fn counted_after(rows: &[Row], from: usize) -> usize {
    let Some(rest) = rows.get(from..) else {
        return 0;
    };
    let started = rest.iter().filter(|r| r.starts_entry && r.counts).count();
    let cut = rest.first().is_some_and(|r| !r.starts_entry && r.counts);
    started + usize::from(cut)
}

/// What one line of the diff is.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Kind {
    Added,
    Removed,
    Context,
    /// `\ No newline at end of file`.
    NoNewline,
    /// Between two hunks, with the second header's context text.
    Separator(String),
    /// An `@@` line that does not parse.
    BadHunk,
    /// Anything else: shown as it is.
    Other,
}

impl Kind {
    /// Whether the line counts in `… N more lines`.
    fn counts(&self) -> bool {
        match self {
            Kind::Added | Kind::Removed | Kind::Context | Kind::BadHunk | Kind::Other => true,
            Kind::NoNewline | Kind::Separator(_) => false,
        }
    }
}

/// One line of the diff with its line number and text (sign removed).
#[derive(Debug, Clone)]
struct Entry {
    kind: Kind,
    number: Option<u64>,
    text: String,
}

/// A parsed `@@ -a,b +c,d @@ context` header.
struct Hunk {
    old_start: u64,
    old_len: u64,
    new_start: u64,
    new_len: u64,
    context: String,
}

fn parse_range(s: &str) -> Option<(u64, u64)> {
    match s.split_once(',') {
        Some((start, len)) => Some((start.parse().ok()?, len.parse().ok()?)),
        None => Some((s.parse().ok()?, 1)),
    }
}

fn parse_hunk(line: &str) -> Option<Hunk> {
    let rest = line.strip_prefix("@@ -")?;
    let (old, rest) = rest.split_once(" +")?;
    let (new, rest) = rest.split_once(" @@")?;
    let (old_start, old_len) = parse_range(old)?;
    let (new_start, new_len) = parse_range(new)?;
    Some(Hunk {
        old_start,
        old_len,
        new_start,
        new_len,
        context: rest.trim().to_owned(),
    })
}

/// File headers outside hunks, which the caller replaces by the path.
fn is_file_header(line: &str) -> bool {
    const HEADERS: &[&str] = &[
        "--- ",
        "+++ ",
        "diff ",
        "index ",
        "new file mode",
        "deleted file mode",
        "old mode",
        "new mode",
        "similarity index",
        "rename from",
        "rename to",
    ];
    line == "---" || line == "+++" || HEADERS.iter().any(|h| line.starts_with(h))
}

fn parse(diff: &str) -> Vec<Entry> {
    let mut entries = Vec::new();
    // Inside a hunk: the next old and new line numbers, and how many old
    // and new lines the header announced are still to come.
    let mut old = 0u64;
    let mut new = 0u64;
    let mut old_left = 0u64;
    let mut new_left = 0u64;
    let mut in_hunk = false;
    let mut hunks = 0usize;
    for line in diff.lines() {
        if line.starts_with("@@") {
            match parse_hunk(line) {
                Some(h) => {
                    if hunks > 0 {
                        entries.push(Entry {
                            kind: Kind::Separator(h.context),
                            number: None,
                            text: String::new(),
                        });
                    }
                    hunks += 1;
                    old = h.old_start;
                    new = h.new_start;
                    old_left = h.old_len;
                    new_left = h.new_len;
                    in_hunk = old_left > 0 || new_left > 0;
                }
                None => {
                    in_hunk = false;
                    entries.push(Entry {
                        kind: Kind::BadHunk,
                        number: None,
                        text: line.to_owned(),
                    });
                }
            }
            continue;
        }
        if line.starts_with('\\') {
            entries.push(Entry {
                kind: Kind::NoNewline,
                number: None,
                text: line.to_owned(),
            });
            continue;
        }
        if !in_hunk {
            if !is_file_header(line) {
                entries.push(Entry {
                    kind: Kind::Other,
                    number: None,
                    text: line.to_owned(),
                });
            }
            continue;
        }
        let (kind, number, text) = match line.chars().next() {
            Some('+') => {
                let n = new;
                new = new.saturating_add(1);
                new_left = new_left.saturating_sub(1);
                (Kind::Added, n, &line[1..])
            }
            Some('-') => {
                let n = old;
                old = old.saturating_add(1);
                old_left = old_left.saturating_sub(1);
                (Kind::Removed, n, &line[1..])
            }
            // Context; some tools strip an empty context line's space.
            Some(' ') | None => {
                let n = new;
                old = old.saturating_add(1);
                new = new.saturating_add(1);
                old_left = old_left.saturating_sub(1);
                new_left = new_left.saturating_sub(1);
                (Kind::Context, n, line.get(1..).unwrap_or(""))
            }
            Some(_) => {
                // Not a hunk line: the header's counts were wrong.
                in_hunk = false;
                entries.push(Entry {
                    kind: Kind::Other,
                    number: None,
                    text: line.to_owned(),
                });
                continue;
            }
        };
        entries.push(Entry {
            kind,
            number: Some(number),
            text: text.to_owned(),
        });
        if old_left == 0 && new_left == 0 {
            in_hunk = false;
        }
    }
    entries
}

/// One drawn row.
struct Row {
    line: Line<'static>,
    /// The entry's first row (the others are its wrapped rest).
    starts_entry: bool,
    /// The entry counts as a line of the diff.
    counts: bool,
}

/// Where the columns are: `{number:>digits} {sign}{text}`.
struct Layout {
    width: usize,
    /// Cells of the number column and its space; 0 when numbers are off.
    gutter: usize,
    /// Cells of the sign column: 1, or 0 at width 1.
    sign: usize,
}

impl Layout {
    fn new(width: usize, digits: usize) -> Layout {
        let sign = usize::from(width >= 2);
        let gutter = if digits > 0 && width >= digits + 1 + sign + MIN_TEXT_CELLS {
            digits + 1
        } else {
            0
        };
        Layout {
            width,
            gutter,
            sign,
        }
    }

    fn text_cells(&self) -> usize {
        self.width.saturating_sub(self.gutter + self.sign).max(1)
    }

    fn gutter_text(&self, number: Option<u64>) -> String {
        if self.gutter == 0 {
            return String::new();
        }
        let digits = self.gutter - 1;
        match number {
            Some(n) => format!("{n:>digits$} "),
            None => " ".repeat(self.gutter),
        }
    }

    /// The rows of `entry`, appended to `out` until it holds `limit`.
    fn rows(&self, entry: &Entry, theme: &Theme, out: &mut Vec<Row>, limit: usize) {
        let (sign, role) = match &entry.kind {
            Kind::Added => ('+', Some(Role::Added)),
            Kind::Removed => ('-', Some(Role::Removed)),
            Kind::Context => (' ', None),
            Kind::NoNewline => (' ', Some(Role::Dim)),
            Kind::BadHunk => (' ', Some(Role::Hunk)),
            Kind::Other => (' ', None),
            Kind::Separator(context) => {
                out.push(self.separator(context, theme));
                return;
            }
        };
        let style = role.map_or_else(Style::default, |r| theme.style(r));
        let dim = theme.style(Role::Dim);
        let text = clean(&entry.text);
        let counts = entry.kind.counts();
        let room = limit.saturating_sub(out.len()).max(1);
        for (i, chunk) in wrap_cells(&text, self.text_cells(), room)
            .into_iter()
            .enumerate()
        {
            let first = i == 0;
            let mut spans = Vec::with_capacity(3);
            if self.gutter > 0 {
                let gutter = self.gutter_text(if first { entry.number } else { None });
                spans.push(Span::styled(gutter, dim));
            }
            if self.sign > 0 {
                let s = if first { sign } else { ' ' };
                spans.push(Span::styled(s.to_string(), style));
            }
            if !chunk.is_empty() {
                spans.push(Span::styled(chunk, style));
            }
            out.push(Row {
                line: Line::from(spans),
                starts_entry: first,
                counts,
            });
        }
    }

    /// `⋮` in the number column, then the hunk's context, clipped.
    fn separator(&self, context: &str, theme: &Theme) -> Row {
        let dim = theme.style(Role::Dim);
        let mut text = if self.gutter > 0 {
            format!("{:>w$}", "⋮", w = self.gutter - 1)
        } else {
            "⋮".to_owned()
        };
        let context = clean(context);
        if !context.is_empty() {
            text.push_str("  ");
            text.push_str(&context);
        }
        Row {
            line: Line::from(Span::styled(clip(&text, self.width), dim)),
            starts_entry: true,
            counts: false,
        }
    }
}

/// Tabs as four spaces, carriage returns dropped, other control characters
/// shown as `�` (they must never reach the terminal).
fn clean(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\t' => out.push_str(TAB),
            '\r' => {}
            c if c.is_control() => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
    out
}

/// The first `max_rows` (at least one) rows of `text` cut into rows of at
/// most `cells` cells, by grapheme: code keeps its spacing, so no word
/// boundaries. A grapheme wider than `cells` gets a row of its own.
fn wrap_cells(text: &str, cells: usize, max_rows: usize) -> Vec<String> {
    let mut rows = Vec::new();
    let mut row = String::new();
    for g in text.graphemes(true) {
        if rows.len() >= max_rows {
            return rows;
        }
        let before = row.len();
        row.push_str(g);
        // Measured as the whole row, as the terminal measures the span.
        if row.width() > cells && before > 0 {
            row.truncate(before);
            rows.push(std::mem::take(&mut row));
            row.push_str(g);
        }
    }
    rows.push(row);
    rows
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    const SAMPLE: &str = "\
--- a/src/lib.rs
+++ b/src/lib.rs
@@ -1,5 +1,6 @@
 //! The library.
-use std::io;
+use std::io::{self, Write};
+use std::fmt;
 
 pub fn run() {
 \tprintln!(\"hi\");
@@ -98,4 +99,4 @@ impl Config {
     fn load(&self) -> Result<Config, Error> {
-        let text = std::fs::read_to_string(&self.path).map_err(|e| Error::Read { path: self.path.clone(), source: e })?;
+        let text = std::fs::read_to_string(&self.path).map_err(Error::read(&self.path))?;
         parse(&text)
 }
\\ No newline at end of file
";

    fn text(lines: &[Line<'_>]) -> String {
        lines
            .iter()
            .map(|l| {
                l.spans
                    .iter()
                    .map(|s| s.content.as_ref())
                    .collect::<String>()
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    #[test]
    fn sample_at_80() {
        insta::assert_snapshot!(text(&render(SAMPLE, 80, 100, &Theme::plain())));
    }

    #[test]
    fn sample_at_30() {
        insta::assert_snapshot!(text(&render(SAMPLE, 30, 100, &Theme::plain())));
    }

    #[test]
    fn numbers_follow_the_hunk_headers() {
        let lines = render(SAMPLE, 80, 100, &Theme::plain());
        let rows: Vec<String> = text(&lines).lines().map(str::to_owned).collect();
        // Removed lines carry the old number, added and context the new.
        assert_eq!(rows[0], "  1  //! The library.");
        assert_eq!(rows[1], "  2 -use std::io;");
        assert_eq!(rows[2], "  2 +use std::io::{self, Write};");
        assert_eq!(rows[3], "  3 +use std::fmt;");
        assert_eq!(rows[6], "  6      println!(\"hi\");");
        assert_eq!(rows[7], "  ⋮  impl Config {");
        assert!(rows[8].starts_with(" 99      fn load"), "{}", rows[8]);
        assert!(rows[9].starts_with(" 99 -"), "{}", rows[9]);
        assert!(rows[11].starts_with("100 +"), "{}", rows[11]);
        assert!(!text(&lines).contains("+++") && !text(&lines).contains("@@"));
    }

    #[test]
    fn added_and_removed_lines_take_their_roles() {
        let theme = Theme::dark();
        let lines = render(SAMPLE, 80, 100, &theme);
        let added = &lines[2];
        assert_eq!(added.spans[0].style, theme.style(Role::Dim));
        assert_eq!(added.spans[1].content, "+");
        assert_eq!(added.spans[1].style, theme.style(Role::Added));
        assert_eq!(added.spans[2].style, theme.style(Role::Added));
        assert_eq!(lines[1].spans[2].style, theme.style(Role::Removed));
        assert_eq!(lines[0].spans[2].style, Style::default());
        let last = lines.last().unwrap();
        assert_eq!(last.spans.last().unwrap().style, theme.style(Role::Dim));
        assert_ne!(theme.style(Role::Added), Theme::plain().style(Role::Added));
    }

    #[test]
    fn long_diffs_end_with_a_count_of_the_rest() {
        let lines = render(SAMPLE, 80, 4, &Theme::plain());
        assert_eq!(lines.len(), 5);
        // 12 lines of the diff, 4 shown (the separator and the
        // no-newline notice are not lines of the file).
        assert_eq!(text(&lines[4..]), "… 8 more lines");
        // A line cut in the middle of its wrapped rows counts as more.
        let narrow = render(SAMPLE, 30, 10, &Theme::plain());
        assert_eq!(narrow.len(), 11);
        assert_eq!(text(&narrow[10..]), "… 5 more lines");
        let none = render(SAMPLE, 80, 0, &Theme::plain());
        assert_eq!(text(&none), "… 12 more lines");
        assert!(render("", 80, 10, &Theme::plain()).is_empty());
        let one = render("@@ -1 +1 @@\n-a\n+b\n", 80, 1, &Theme::plain());
        assert_eq!(text(&one), "1 -a\n… 1 more line");
    }

    #[test]
    fn malformed_diffs_and_tiny_widths_are_drawn_as_they_are() {
        let odd = "@@ nonsense @@\n+added without a hunk\n@@ -1,1 +1,1 @@\n+x\n+more than announced\n\u{1b}[31m\r\n@@ -18446744073709551615 +18446744073709551615 @@\n y\n z";
        for width in [0, 1, 2, 3, 5, 12, 80] {
            let lines = render(odd, width, 100, &Theme::plain());
            assert!(!lines.is_empty());
            assert!(!text(&lines).chars().any(|c| c.is_control() && c != '\n'));
        }
        let lines = render(odd, 80, 100, &Theme::dark());
        assert_eq!(
            lines[0].spans.last().unwrap().style,
            Theme::dark().style(Role::Hunk)
        );
        let one = render("@@ -1 +1 @@\n+ab", 1, 10, &Theme::plain());
        assert_eq!(text(&one), "a\nb");
    }

    #[test]
    fn a_huge_line_is_wrapped_only_as_far_as_shown() {
        let diff = format!("@@ -1 +1 @@\n+{}\n", "x".repeat(1_000_000));
        let lines = render(&diff, 80, 5, &Theme::plain());
        assert_eq!(lines.len(), 6);
        assert_eq!(text(&lines[5..]), "… 1 more line");
        assert_eq!(lines[1].width(), 80);
    }

    fn any_diff() -> impl Strategy<Value = String> {
        let line = prop_oneof![
            3 => "[ +\\-]?.{0,100}",
            1 => "\\\\.{0,30}",
            1 => (0u64..200, 0u64..9, 0u64..200, 0u64..9, ".{0,20}")
                .prop_map(|(a, b, c, d, s)| format!("@@ -{a},{b} +{c},{d} @@{s}")),
            1 => "(---|\\+\\+\\+|@@) .{0,20}",
            1 => "[\\t\u{4e00}-\u{4e10}\u{1F600}-\u{1F610}e\u{301}\u{200d}]{0,40}",
        ];
        prop::collection::vec(line, 0..40).prop_map(|lines| lines.join("\n"))
    }

    proptest! {
        #[test]
        fn render_never_panics_and_fits(diff in any_diff(), width in 1usize..120, max in 0usize..50) {
            let lines = render(&diff, width, max, &Theme::plain());
            prop_assert!(lines.len() <= max + 1);
            if width >= 12 {
                for l in &lines {
                    prop_assert!(l.width() <= width, "{} > {width}: {:?}", l.width(), l);
                }
            }
        }
    }
}
