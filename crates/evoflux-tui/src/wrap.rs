//! Word-boundary wrapping of styled lines to a width in terminal cells.
//!
//! Lines are wrapped once, when a message is rendered, rather than by
//! ratatui's `Paragraph` at draw time: the transcript must know how many
//! rows each cell takes to scroll a long history without drawing it, and
//! Markdown needs continuation lines indented under a list item's text,
//! which a paragraph-wide wrap cannot do.
//!
//! Widths are terminal cells as `unicode-width` counts them, grapheme by
//! grapheme (`unicode-segmentation`), which is how ratatui's buffer places
//! text: a CJK character takes two cells, a combining mark none, and a
//! grapheme cluster (an emoji sequence, a letter with its accents) is never
//! split. Control characters take no cell, as ratatui drops them.

use std::borrow::Cow;

use ratatui::style::Style;
use ratatui::text::{Line, Span};
use unicode_segmentation::UnicodeSegmentation;
use unicode_width::UnicodeWidthStr;

/// The cells one grapheme cluster takes.
fn grapheme_width(g: &str) -> usize {
    if g.contains(char::is_control) {
        0
    } else {
        g.width()
    }
}

/// The cells `s` takes, grapheme by grapheme.
pub fn str_width(s: &str) -> usize {
    s.graphemes(true).map(grapheme_width).sum()
}

/// The cells `line` takes.
pub fn width(line: &Line<'_>) -> usize {
    line.spans.iter().map(|s| str_width(&s.content)).sum()
}

/// Every line of `lines` wrapped by [`wrap_line`].
pub fn wrap_lines(lines: &[Line<'static>], width: usize, indent: usize) -> Vec<Line<'static>> {
    lines
        .iter()
        .flat_map(|line| wrap_line(line, width, indent))
        .collect()
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// A blank: a break may drop it.
    Space,
    /// `-` or `/` inside a word: a break may follow it.
    Joiner,
    Other,
}

/// One grapheme cluster of the input, with the span it came from.
#[derive(Debug, Clone, Copy)]
struct Grapheme<'a> {
    text: &'a str,
    span: usize,
    width: usize,
    kind: Kind,
}

fn graphemes<'a>(line: &'a Line<'_>) -> Vec<Grapheme<'a>> {
    let mut out = Vec::new();
    for (span, s) in line.spans.iter().enumerate() {
        for text in s.content.graphemes(true) {
            let kind = match text {
                " " | "\t" => Kind::Space,
                "-" | "/" => Kind::Joiner,
                _ => Kind::Other,
            };
            out.push(Grapheme {
                text,
                span,
                width: grapheme_width(text),
                kind,
            });
        }
    }
    out
}

/// A run of blanks, then a chunk of a word that may end a line (a whole
/// word, or its part up to a `-` or `/`). Indexes into the graphemes.
#[derive(Debug, Clone, Copy)]
struct Piece {
    spaces: (usize, usize),
    chunk: (usize, usize),
}

fn is_word_char(g: &Grapheme<'_>) -> bool {
    g.text.chars().next().is_some_and(char::is_alphanumeric)
}

fn pieces(gs: &[Grapheme<'_>]) -> Vec<Piece> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < gs.len() {
        let space_start = i;
        while i < gs.len() && gs[i].kind == Kind::Space {
            i += 1;
        }
        let spaces = (space_start, i);
        let mut chunk_start = i;
        let mut first = true;
        while i < gs.len() && gs[i].kind != Kind::Space {
            // A break after `-`/`/` only between letters or digits
            // (`well-known`, `src/lib.rs`), never in `--flag` or `/usr`.
            let breaks_after = gs[i].kind == Kind::Joiner
                && i > chunk_start
                && is_word_char(&gs[i - 1])
                && gs.get(i + 1).is_some_and(is_word_char);
            i += 1;
            if breaks_after {
                let spaces = if first { spaces } else { (i, i) };
                out.push(Piece {
                    spaces,
                    chunk: (chunk_start, i),
                });
                first = false;
                chunk_start = i;
            }
        }
        let spaces = if first { spaces } else { (i, i) };
        if spaces.0 != spaces.1 || chunk_start != i {
            out.push(Piece {
                spaces,
                chunk: (chunk_start, i),
            });
        }
    }
    out
}

/// The output being built: finished lines and the current one.
struct Builder<'a> {
    line_style: Style,
    line_alignment: Option<ratatui::layout::Alignment>,
    spans: &'a [Span<'a>],
    width: usize,
    indent: usize,
    out: Vec<Line<'static>>,
    current: Vec<Span<'static>>,
    /// The span index and text of the run being added to `current`.
    run: Option<(usize, String)>,
    /// Cells of `current`, its indent included.
    used: usize,
    /// Whether `current` holds any of the input (not just its indent).
    has_content: bool,
}

impl<'a> Builder<'a> {
    /// An empty builder of `line`'s lines, `width` cells wide, continuation
    /// lines indented by `indent`.
    fn new(line: &'a Line<'static>, width: usize, indent: usize) -> Builder<'a> {
        Builder {
            line_style: line.style,
            line_alignment: line.alignment,
            spans: &line.spans,
            width,
            indent,
            out: Vec::new(),
            current: Vec::new(),
            run: None,
            used: 0,
            has_content: false,
        }
    }

    fn push(&mut self, g: &Grapheme<'_>) {
        match &mut self.run {
            Some((span, text)) if *span == g.span => text.push_str(g.text),
            _ => {
                self.close_run();
                self.run = Some((g.span, g.text.to_owned()));
            }
        }
        self.used += g.width;
        self.has_content = true;
    }

    fn push_all(&mut self, gs: &[Grapheme<'_>]) {
        for g in gs {
            self.push(g);
        }
    }

    fn close_run(&mut self) {
        if let Some((span, text)) = self.run.take() {
            let style = self.spans.get(span).map(|s| s.style).unwrap_or_default();
            self.current.push(Span::styled(text, style));
        }
    }

    fn finish_line(&mut self) {
        self.close_run();
        let mut line = Line::from(std::mem::take(&mut self.current)).style(self.line_style);
        line.alignment = self.line_alignment;
        self.out.push(line);
        self.used = 0;
        self.has_content = false;
    }

    /// Ends the current line and starts a continuation line. Its indent is
    /// left out when `first` (the next grapheme) would not fit after it.
    fn break_line(&mut self, first: Option<&Grapheme<'_>>) {
        self.finish_line();
        let fits = first.is_none_or(|g| self.indent + g.width <= self.width);
        if self.indent > 0 && fits {
            self.current.push(Span::raw(" ".repeat(self.indent)));
            self.used = self.indent;
        }
    }

    /// Adds graphemes one by one, breaking lines wherever they fill.
    fn push_by_cells(&mut self, gs: &[Grapheme<'_>]) {
        for g in gs {
            if self.has_content && self.used + g.width > self.width {
                self.break_line(Some(g));
            } else if !self.has_content && self.used > 0 && self.used + g.width > self.width {
                // A continuation line whose indent leaves no room.
                self.current.clear();
                self.used = 0;
            }
            self.push(g);
        }
    }

    fn into_lines(mut self) -> Vec<Line<'static>> {
        if self.has_content || self.out.is_empty() {
            self.finish_line();
        }
        self.out
    }
}

fn cells(gs: &[Grapheme<'_>], range: (usize, usize)) -> usize {
    gs[range.0..range.1].iter().map(|g| g.width).sum()
}

/// `line` wrapped at word boundaries to `width` cells (a word wider than
/// `width` is broken); continuation lines start with `indent` spaces.
/// Styles are kept span by span. An empty line stays one empty line.
///
/// Breaks fall at blanks, which the break drops, and after a `-` or `/`
/// between letters (`well-known`, `src/lib.rs`). A width of 0 is taken as
/// 1, and the indent is cut to leave at least one cell. Only a grapheme
/// wider than `width` itself (a CJK character at width 1) makes a line
/// wider than `width`.
pub fn wrap_line(line: &Line<'static>, width: usize, indent: usize) -> Vec<Line<'static>> {
    let width = width.max(1);
    let mut b = Builder::new(line, width, indent.min(width - 1));
    let gs = graphemes(line);
    for piece in pieces(&gs) {
        let spaces = cells(&gs, piece.spaces);
        let chunk = cells(&gs, piece.chunk);
        let space_gs = &gs[piece.spaces.0..piece.spaces.1];
        let chunk_gs = &gs[piece.chunk.0..piece.chunk.1];
        if chunk_gs.is_empty() {
            // Trailing blanks: kept when they fit.
            if b.used + spaces <= width {
                b.push_all(space_gs);
            }
        } else if b.used + spaces + chunk <= width {
            b.push_all(space_gs);
            b.push_all(chunk_gs);
        } else if b.has_content && b.indent + chunk <= width {
            b.break_line(None);
            b.push_all(chunk_gs);
        } else {
            // Wider than a whole line: broken by cells, from a line of its
            // own (or from the first line's leading blanks, if they leave
            // room).
            if b.has_content {
                b.break_line(chunk_gs.first());
            } else if b.out.is_empty() && chunk > width && b.used + spaces < width {
                b.push_all(space_gs);
            }
            b.push_by_cells(chunk_gs);
        }
    }
    b.into_lines()
}

/// `line` broken by cells only, with no word logic (code, whose blanks
/// matter): each output line holds as many graphemes as fit in `width`.
pub fn wrap_line_by_cells(line: &Line<'static>, width: usize) -> Vec<Line<'static>> {
    let width = width.max(1);
    let mut b = Builder::new(line, width, 0);
    let gs = graphemes(line);
    b.push_by_cells(&gs);
    b.into_lines()
}

/// The text of `line`, for tests and searches.
pub fn plain(line: &Line<'_>) -> String {
    line.spans.iter().map(|s| s.content.as_ref()).collect()
}

/// `spans` with their text kept only from cell `skip` on: a grapheme cut
/// by the boundary is dropped. For prefixes too deep for a narrow screen.
pub fn skip_cells(spans: Vec<Span<'static>>, skip: usize) -> Vec<Span<'static>> {
    let mut left = skip;
    let mut out = Vec::new();
    for span in spans {
        if left == 0 {
            out.push(span);
            continue;
        }
        let mut kept = String::new();
        for g in span.content.graphemes(true) {
            if left == 0 {
                kept.push_str(g);
            } else {
                left = left.saturating_sub(grapheme_width(g).max(1));
            }
        }
        if !kept.is_empty() {
            out.push(Span::styled(Cow::Owned(kept), span.style));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use ratatui::style::{Modifier, Stylize};

    use super::*;

    fn texts(lines: &[Line<'static>]) -> Vec<String> {
        lines.iter().map(plain).collect()
    }

    fn wrap(s: &str, width: usize, indent: usize) -> Vec<String> {
        texts(&wrap_line(&Line::from(s.to_owned()), width, indent))
    }

    #[test]
    fn wraps_at_spaces_and_drops_them_at_the_break() {
        assert_eq!(
            wrap("the quick brown fox jumps", 10, 0),
            ["the quick", "brown fox", "jumps"]
        );
        assert_eq!(wrap("short", 10, 0), ["short"]);
        assert_eq!(wrap("exactly ten", 11, 0), ["exactly ten"]);
    }

    #[test]
    fn continuation_lines_are_indented() {
        assert_eq!(
            wrap("- one two three four", 9, 2),
            ["- one two", "  three", "  four"]
        );
    }

    #[test]
    fn a_long_word_is_broken_by_cells() {
        assert_eq!(
            wrap("ab abcdefghijkl cd", 5, 0),
            ["ab", "abcde", "fghij", "kl cd"]
        );
        assert_eq!(wrap("abcdefgh", 4, 2), ["abcd", "  ef", "  gh"]);
    }

    #[test]
    fn breaks_after_a_hyphen_or_slash_between_letters() {
        assert_eq!(
            wrap("a well-known thing", 8, 0),
            ["a well-", "known", "thing"]
        );
        assert_eq!(wrap("see src/lib.rs", 8, 0), ["see src/", "lib.rs"]);
        // `--flag` is one word.
        assert_eq!(wrap("x --flag", 6, 0), ["x", "--flag"]);
    }

    #[test]
    fn wide_characters_count_two_cells_and_clusters_stay_whole() {
        assert_eq!(wrap("中文字符", 5, 0), ["中文", "字符"]);
        // e + combining acute: one grapheme of one cell.
        assert_eq!(
            wrap("e\u{301}e\u{301}e\u{301}", 2, 0),
            ["e\u{301}e\u{301}", "e\u{301}"]
        );
        let family = "👨\u{200d}👩\u{200d}👧";
        assert_eq!(wrap(&format!("{family}{family}"), 3, 0), [family, family]);
        // A two-cell grapheme at width 1 has a line of its own.
        assert_eq!(wrap("中a", 1, 0), ["中", "a"]);
    }

    #[test]
    fn styles_survive_breaks() {
        let line = Line::from(vec![
            Span::raw("plain "),
            "bold words here".bold(),
            Span::raw(" end"),
        ]);
        let out = wrap_line(&line, 10, 0);
        assert_eq!(texts(&out), ["plain bold", "words here", "end"]);
        assert_eq!(out[0].spans[1].content, "bold");
        assert!(out[0].spans[1].style.add_modifier.contains(Modifier::BOLD));
        assert!(out[1].spans[0].style.add_modifier.contains(Modifier::BOLD));
        assert!(!out[2].spans[0].style.add_modifier.contains(Modifier::BOLD));
    }

    #[test]
    fn indent_is_unstyled_and_cut_to_the_width() {
        let line = Line::from("aaaa bbbb".bold());
        let out = wrap_line(&line, 6, 2);
        assert_eq!(texts(&out), ["aaaa", "  bbbb"]);
        assert_eq!(out[1].spans[0].style, Style::default());
        // An indent as wide as the line leaves one cell.
        assert_eq!(wrap("ab cd", 2, 5), ["ab", " c", " d"]);
    }

    #[test]
    fn empty_and_degenerate_inputs() {
        assert_eq!(wrap("", 10, 2), [""]);
        assert_eq!(wrap("", 0, 0), [""]);
        assert_eq!(wrap("ab", 0, 0), ["a", "b"]);
        assert_eq!(wrap("   ", 2, 0), [""]);
        assert_eq!(wrap("  lead", 10, 0), ["  lead"]);
    }

    #[test]
    fn wrapping_by_cells_keeps_blanks() {
        let out = wrap_line_by_cells(&Line::from("fn  main() {}"), 5);
        assert_eq!(texts(&out), ["fn  m", "ain()", " {}"]);
    }

    #[test]
    fn skip_cells_drops_a_prefix() {
        let spans = vec![Span::raw("│ "), Span::raw("- ")];
        let out: String = skip_cells(spans, 2)
            .iter()
            .map(|s| s.content.as_ref())
            .collect();
        assert_eq!(out, "- ");
    }

    fn non_space(s: &str) -> String {
        s.chars().filter(|c| !c.is_whitespace()).collect()
    }

    fn word() -> impl Strategy<Value = String> {
        prop_oneof![
            "[a-z]{1,12}",
            "[a-z]{1,4}[-/][a-z]{1,4}",
            "[\u{4e00}-\u{4e80}]{1,6}",
            "[😀-🙏]{1,3}",
            Just("👨\u{200d}👩\u{200d}👧".to_owned()),
            Just("e\u{301}".to_owned()),
            "[a-z]{20,40}",
        ]
    }

    fn text() -> impl Strategy<Value = String> {
        prop::collection::vec((word(), "[ ]{0,3}"), 0..30)
            .prop_map(|ws| ws.into_iter().map(|(w, s)| format!("{w}{s}")).collect())
    }

    proptest! {
        #[test]
        fn wrap_line_keeps_text_and_respects_width(
            s in text(),
            width in 1usize..120,
            indent in 0usize..6,
            split in 0usize..40,
        ) {
            // Two spans, split at a char boundary.
            let at = s.char_indices().nth(split).map_or(s.len(), |(i, _)| i);
            let line = Line::from(vec![
                Span::raw(s[..at].to_owned()),
                Span::styled(s[at..].to_owned(), Style::new().bold()),
            ]);
            let out = wrap_line(&line, width, indent);
            prop_assert!(!out.is_empty());
            for l in &out {
                let w = super::width(l);
                let text = plain(l);
                // Only a lone grapheme wider than the line may exceed it.
                prop_assert!(
                    w <= width || text.trim().graphemes(true).count() == 1,
                    "{text:?} is {w} cells, wider than {width}"
                );
            }
            let joined: String = out.iter().map(plain).collect();
            prop_assert_eq!(non_space(&joined), non_space(&s));
            let by_cells = wrap_line_by_cells(&line, width);
            let joined: String = by_cells.iter().map(plain).collect();
            prop_assert_eq!(joined, s);
        }
    }
}
