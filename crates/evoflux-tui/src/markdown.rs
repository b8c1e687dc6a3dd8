//! The agent's Markdown as styled terminal lines.
//!
//! The text is parsed with pulldown-cmark (CommonMark plus tables,
//! strikethrough and task lists, what models write) and turned into
//! ratatui [`Line`]s already wrapped to the width, so the transcript knows
//! each message's height without drawing it (see [`crate::wrap`]).
//!
//! Choices a reader would otherwise have to guess:
//! - Blocks are separated by one blank line; items of a tight list are not.
//! - Continuation lines of a list item are indented under the item's text,
//!   and quotes draw a `│ ` bar on every line, nesting included. When the
//!   nesting is deeper than half the width, its outer part is cut so the
//!   text keeps at least half the line.
//! - Code blocks are never wrapped at words: a long code line is broken by
//!   cells and continued on the next row (nothing is hidden, unlike
//!   clipping), behind a two-space gutter that copies as harmless
//!   indentation. Tabs become four spaces.
//! - Tables fit the width by shrinking their widest columns and wrapping
//!   cell text inside its column; when even that cannot fit, each row is
//!   shown as `header: value` lines.
//! - Links show as `text (url)`, the url left out when it is the text.
//! - Control characters (an escape sequence in the model's output) are
//!   shown as their visible Unicode pictures, never sent to the terminal.
//! - A message still streaming is a partial document: an unclosed fence is
//!   code to the end, an unterminated `**` is literal text, half a table is
//!   a paragraph until its delimiter row arrives. Nothing panics on any
//!   input or width.

use std::borrow::Cow;

use evoflux_code::highlight::{HighlightLanguage, Token, TokenClass, highlight};
use pulldown_cmark::{Alignment, CodeBlockKind, Event, Options, Parser, Tag, TagEnd};
use ratatui::style::Style;
use ratatui::text::{Line, Span};

use crate::theme::{Role, Theme};
use crate::wrap::{self, skip_cells, wrap_line, wrap_line_by_cells};

/// The left gutter of code block lines.
const CODE_GUTTER: &str = "  ";
/// Between table columns.
const COLUMN_SEPARATOR: &str = " │ ";
/// The narrowest a table column is shrunk to before the table is shown
/// row by row instead.
const MIN_COLUMN: usize = 3;

/// `markdown` drawn for `width` cells. `highlight` colours fenced code
/// with the web UI's highlighter (off while a message streams, so a
/// growing block is not re-highlighted at every token).
pub fn render(markdown: &str, width: usize, highlight: bool, theme: &Theme) -> Vec<Line<'static>> {
    let mut options = Options::empty();
    options.insert(Options::ENABLE_TABLES);
    options.insert(Options::ENABLE_STRIKETHROUGH);
    options.insert(Options::ENABLE_TASKLISTS);
    let mut renderer = Renderer::new(width.max(1), highlight, theme);
    for event in Parser::new_ext(markdown, options) {
        renderer.event(event);
    }
    renderer.finish()
}

/// A block that prefixes the lines inside it.
#[derive(Debug)]
enum Container {
    Quote,
    /// A list; `next` is the number of its next item when ordered.
    List {
        next: Option<u64>,
    },
    /// A list item; its marker is drawn on its first line only.
    Item {
        marker: String,
        pending: bool,
    },
}

/// A code block (or raw HTML block) being collected.
#[derive(Debug)]
struct Verbatim {
    kind: VerbatimKind,
    text: String,
}

#[derive(Debug)]
enum VerbatimKind {
    /// Fenced or indented code, with its fence's first word.
    Code { tag: Option<String> },
    /// Raw HTML, shown as text wrapped at words.
    Html,
}

/// A table being collected: each cell is one logical line.
#[derive(Debug, Default)]
struct Table {
    alignments: Vec<Alignment>,
    head: Vec<Line<'static>>,
    rows: Vec<Vec<Line<'static>>>,
    row: Vec<Line<'static>>,
}

/// An open link: its destination and the text seen so far.
#[derive(Debug)]
struct OpenLink {
    dest: String,
    text: String,
}

struct Renderer<'t> {
    width: usize,
    highlight: bool,
    theme: &'t Theme,
    out: Vec<Line<'static>>,
    containers: Vec<Container>,
    /// The styles of the open inline tags, innermost last.
    styles: Vec<Style>,
    /// The logical line of inline text being collected.
    inline: Vec<Span<'static>>,
    heading: bool,
    links: Vec<OpenLink>,
    verbatim: Option<Verbatim>,
    table: Option<Table>,
    /// A block ended: the next one starts after a blank line.
    pending_blank: bool,
}

impl<'t> Renderer<'t> {
    fn new(width: usize, highlight: bool, theme: &'t Theme) -> Renderer<'t> {
        Renderer {
            width,
            highlight,
            theme,
            out: Vec::new(),
            containers: Vec::new(),
            styles: Vec::new(),
            inline: Vec::new(),
            heading: false,
            links: Vec::new(),
            verbatim: None,
            table: None,
            pending_blank: false,
        }
    }

    fn event(&mut self, event: Event<'_>) {
        match event {
            Event::Start(tag) => self.start(tag),
            Event::End(tag) => self.end(tag),
            Event::Text(text) => self.text(&text),
            Event::Code(code) => {
                let style = self.style().patch(self.theme.style(Role::InlineCode));
                self.push_inline(&code, style);
            }
            Event::InlineMath(math) => self.push_inline(&format!("${math}$"), self.style()),
            Event::DisplayMath(math) => self.push_inline(&format!("$${math}$$"), self.style()),
            Event::Html(html) => self.text(&html),
            Event::InlineHtml(html) => self.push_inline(&html, self.style()),
            Event::FootnoteReference(label) => {
                self.push_inline(&format!("[^{label}]"), self.style());
            }
            Event::SoftBreak => self.push_inline(" ", self.style()),
            Event::HardBreak => {
                if self.table.is_some() {
                    self.push_inline(" ", self.style());
                } else {
                    self.flush_inline();
                }
            }
            Event::Rule => self.rule(),
            Event::TaskListMarker(done) => {
                let mark = if done { "[x] " } else { "[ ] " };
                self.push_inline(mark, self.style());
            }
        }
    }

    fn start(&mut self, tag: Tag<'_>) {
        match tag {
            Tag::Paragraph | Tag::DefinitionListTitle | Tag::DefinitionListDefinition => {
                self.flush_inline();
            }
            Tag::Heading { .. } => {
                self.block_start();
                self.heading = true;
            }
            Tag::BlockQuote(_) => {
                self.block_start();
                self.containers.push(Container::Quote);
            }
            Tag::CodeBlock(kind) => {
                self.block_start();
                let tag = match kind {
                    CodeBlockKind::Fenced(info) => {
                        info.split_whitespace().next().map(str::to_owned)
                    }
                    CodeBlockKind::Indented => None,
                };
                self.verbatim = Some(Verbatim {
                    kind: VerbatimKind::Code { tag },
                    text: String::new(),
                });
            }
            Tag::MetadataBlock(_) => {
                self.block_start();
                self.verbatim = Some(Verbatim {
                    kind: VerbatimKind::Code { tag: None },
                    text: String::new(),
                });
            }
            Tag::HtmlBlock => {
                self.block_start();
                self.verbatim = Some(Verbatim {
                    kind: VerbatimKind::Html,
                    text: String::new(),
                });
            }
            Tag::List(start) => {
                self.block_start();
                self.containers.push(Container::List { next: start });
            }
            Tag::Item => {
                self.block_start();
                let marker = match self.containers.last_mut() {
                    Some(Container::List { next: Some(n) }) => {
                        let marker = format!("{n}. ");
                        *n = n.saturating_add(1);
                        marker
                    }
                    _ => "- ".to_owned(),
                };
                self.containers.push(Container::Item {
                    marker,
                    pending: true,
                });
            }
            Tag::FootnoteDefinition(label) => {
                self.block_start();
                self.push_inline(&format!("[^{label}]: "), self.style());
            }
            Tag::DefinitionList => self.block_start(),
            Tag::Table(alignments) => {
                self.block_start();
                self.table = Some(Table {
                    alignments,
                    ..Table::default()
                });
            }
            Tag::TableHead | Tag::TableRow => {
                if let Some(table) = &mut self.table {
                    table.row.clear();
                }
            }
            Tag::TableCell => self.inline.clear(),
            Tag::Emphasis => self.styles.push(self.theme.style(Role::Italic)),
            Tag::Strong => self.styles.push(self.theme.style(Role::Bold)),
            Tag::Strikethrough => self.styles.push(self.theme.style(Role::Strike)),
            Tag::Superscript | Tag::Subscript => self.styles.push(Style::default()),
            Tag::Link { dest_url, .. } => {
                self.styles.push(self.theme.style(Role::Link));
                self.links.push(OpenLink {
                    dest: dest_url.into_string(),
                    text: String::new(),
                });
            }
            Tag::Image { .. } => {
                let dim = self.theme.style(Role::Dim);
                self.push_inline("[image: ", self.style().patch(dim));
                self.styles.push(dim);
            }
        }
    }

    fn end(&mut self, tag: TagEnd) {
        match tag {
            TagEnd::Paragraph
            | TagEnd::DefinitionListTitle
            | TagEnd::DefinitionListDefinition
            | TagEnd::FootnoteDefinition => self.block_end(),
            TagEnd::DefinitionList => self.pending_blank = true,
            TagEnd::Heading(_) => {
                self.block_end();
                self.heading = false;
            }
            TagEnd::BlockQuote(_) => {
                self.flush_inline();
                self.pop_container(|c| matches!(c, Container::Quote));
                self.pending_blank = true;
            }
            TagEnd::CodeBlock | TagEnd::HtmlBlock | TagEnd::MetadataBlock(_) => {
                self.flush_verbatim();
            }
            TagEnd::List(_) => {
                self.flush_inline();
                self.pop_container(|c| matches!(c, Container::List { .. }));
                // A nested tight list does not part its item from the next.
                if !self
                    .containers
                    .iter()
                    .any(|c| matches!(c, Container::Item { .. }))
                {
                    self.pending_blank = true;
                }
            }
            TagEnd::Item => {
                self.flush_inline();
                let empty = matches!(
                    self.containers.last(),
                    Some(Container::Item { pending: true, .. })
                );
                if empty {
                    // An item with nothing in it yet: its marker alone.
                    self.emit(vec![Line::default()], Wrap::Cells, "");
                }
                self.pop_container(|c| matches!(c, Container::Item { .. }));
            }
            TagEnd::Table => self.flush_table(),
            TagEnd::TableHead => {
                if let Some(table) = &mut self.table {
                    table.head = std::mem::take(&mut table.row);
                }
            }
            TagEnd::TableRow => {
                if let Some(table) = &mut self.table {
                    let row = std::mem::take(&mut table.row);
                    table.rows.push(row);
                }
            }
            TagEnd::TableCell => {
                let cell = Line::from(std::mem::take(&mut self.inline));
                if let Some(table) = &mut self.table {
                    table.row.push(cell);
                }
            }
            TagEnd::Emphasis
            | TagEnd::Strong
            | TagEnd::Strikethrough
            | TagEnd::Superscript
            | TagEnd::Subscript => {
                self.styles.pop();
            }
            TagEnd::Link => {
                self.styles.pop();
                if let Some(link) = self.links.pop() {
                    let dest = link.dest.trim();
                    let same = dest == link.text
                        || dest.strip_prefix("mailto:") == Some(link.text.as_str());
                    if !dest.is_empty() && !same {
                        let style = self.style().patch(self.theme.style(Role::Dim));
                        self.push_inline(&format!(" ({dest})"), style);
                    }
                }
            }
            TagEnd::Image => {
                self.styles.pop();
                self.push_inline("]", self.style());
            }
        }
    }

    /// The style of inline text here: the quote's and heading's under the
    /// open inline tags'.
    fn style(&self) -> Style {
        let mut style = Style::default();
        if self
            .containers
            .iter()
            .any(|c| matches!(c, Container::Quote))
        {
            style = style.patch(self.theme.style(Role::Quote));
        }
        if self.heading {
            style = style.patch(self.theme.style(Role::Heading));
        }
        self.styles.iter().fold(style, |s, t| s.patch(*t))
    }

    fn text(&mut self, text: &str) {
        match &mut self.verbatim {
            Some(verbatim) => verbatim.text.push_str(text),
            None => self.push_inline(text, self.style()),
        }
    }

    fn push_inline(&mut self, text: &str, style: Style) {
        if text.is_empty() {
            return;
        }
        let text = visible(text, " ");
        for link in &mut self.links {
            link.text.push_str(&text);
        }
        self.inline.push(Span::styled(text.into_owned(), style));
    }

    fn pop_container(&mut self, which: impl Fn(&Container) -> bool) {
        if let Some(at) = self.containers.iter().rposition(which) {
            self.containers.truncate(at);
        }
    }

    /// A block (or container) starts: what came before is written.
    fn block_start(&mut self) {
        self.flush_inline();
        self.blank_if_pending();
    }

    /// A leaf block ends: written, and parted from the next.
    fn block_end(&mut self) {
        self.flush_inline();
        self.pending_blank = true;
    }

    fn blank_if_pending(&mut self) {
        if !std::mem::take(&mut self.pending_blank) || self.out.is_empty() {
            return;
        }
        let (first, rest) = self.prefixes(false);
        let (prefix, _, _) = self.fit_prefixes(first, rest);
        // The quote bars, without their trailing blanks.
        self.out.push(Line::from(trim_end(prefix)));
    }

    /// The prefixes of a block's first line and of its other lines, from
    /// the containers; `take_marker` puts the innermost pending item marker
    /// on the first line (once).
    fn prefixes(&mut self, take_marker: bool) -> (Vec<Span<'static>>, Vec<Span<'static>>) {
        let quote = self.theme.style(Role::Quote);
        let mut first = Vec::new();
        let mut rest = Vec::new();
        for container in &mut self.containers {
            match container {
                Container::Quote => {
                    first.push(Span::styled("│ ", quote));
                    rest.push(Span::styled("│ ", quote));
                }
                Container::List { .. } => {}
                Container::Item { marker, pending } => {
                    let blank = Span::raw(" ".repeat(wrap::str_width(marker)));
                    if *pending && take_marker {
                        *pending = false;
                        first.push(Span::raw(marker.clone()));
                    } else {
                        first.push(blank.clone());
                    }
                    rest.push(blank);
                }
            }
        }
        (first, rest)
    }

    /// Writes `lines` (one block's logical lines) under the containers'
    /// prefixes and `gutter`, wrapped to what is left of the width.
    fn emit(&mut self, lines: Vec<Line<'static>>, how: Wrap, gutter: &'static str) {
        self.blank_if_pending();
        let (mut first, mut rest) = self.prefixes(true);
        if !gutter.is_empty() {
            let dim = self.theme.style(Role::Dim);
            first.push(Span::styled(gutter, dim));
            rest.push(Span::styled(gutter, dim));
        }
        let (first, rest, available) = self.fit_prefixes(first, rest);
        let mut is_first = true;
        for line in lines {
            let wrapped = match how {
                Wrap::Words => wrap_line(&line, available, 0),
                Wrap::Cells => wrap_line_by_cells(&line, available),
                Wrap::None => vec![line],
            };
            for part in wrapped {
                let prefix = if is_first { &first } else { &rest };
                is_first = false;
                let mut spans = prefix.clone();
                spans.extend(part.spans);
                self.out.push(Line::from(spans).style(part.style));
            }
        }
    }

    /// Cuts prefixes wider than half the width from the left; returns them
    /// with the cells left for text.
    fn fit_prefixes(
        &self,
        first: Vec<Span<'static>>,
        rest: Vec<Span<'static>>,
    ) -> (Vec<Span<'static>>, Vec<Span<'static>>, usize) {
        let cells = |spans: &[Span<'static>]| -> usize {
            spans.iter().map(|s| wrap::str_width(&s.content)).sum()
        };
        let max = self.width / 2;
        let first = match cells(&first) {
            w if w > max => skip_cells(first, w - max),
            _ => first,
        };
        let rest = match cells(&rest) {
            w if w > max => skip_cells(rest, w - max),
            _ => rest,
        };
        let used = cells(&first).max(cells(&rest));
        (first, rest, self.width.saturating_sub(used).max(1))
    }

    fn flush_inline(&mut self) {
        if self.inline.is_empty() || self.table.is_some() {
            return;
        }
        let line = Line::from(std::mem::take(&mut self.inline));
        self.emit(vec![line], Wrap::Words, "");
    }

    fn rule(&mut self) {
        self.block_start();
        let (first, rest) = self.prefixes(true);
        let (first, _, available) = self.fit_prefixes(first, rest);
        let mut spans = first;
        spans.push(Span::styled(
            "─".repeat(available),
            self.theme.style(Role::Dim),
        ));
        self.out.push(Line::from(spans));
        self.pending_blank = true;
    }

    fn flush_verbatim(&mut self) {
        let Some(verbatim) = self.verbatim.take() else {
            return;
        };
        let text = verbatim.text.strip_suffix('\n').unwrap_or(&verbatim.text);
        match verbatim.kind {
            VerbatimKind::Html => {
                let style = self.style();
                let lines = text
                    .split('\n')
                    .map(|l| {
                        let l = l.strip_suffix('\r').unwrap_or(l);
                        Line::from(Span::styled(visible(l, "    ").into_owned(), style))
                    })
                    .collect();
                self.emit(lines, Wrap::Words, "");
            }
            VerbatimKind::Code { tag } => {
                if !text.is_empty() {
                    let lines = self.code_lines(text, tag.as_deref());
                    self.emit(lines, Wrap::Cells, CODE_GUTTER);
                }
            }
        }
        self.pending_blank = true;
    }

    /// The lines of a code block, highlighted when asked and the tag is a
    /// known language; plain [`Role::Code`] otherwise, or when the
    /// highlighter refuses.
    fn code_lines(&self, code: &str, tag: Option<&str>) -> Vec<Line<'static>> {
        let tokens = match tag.and_then(HighlightLanguage::from_fence) {
            Some(language) if self.highlight => highlight(language, code)
                .ok()
                .map(|tokens| byte_tokens(code, &tokens)),
            _ => None,
        };
        let plain = self.theme.style(Role::Code);
        let mut next = 0;
        let mut lines = Vec::new();
        let mut start = 0;
        for line in code.split('\n') {
            let end = start + line.len();
            let content_end = if line.ends_with('\r') { end - 1 } else { end };
            let spans = match &tokens {
                None => vec![Span::styled(
                    visible(&code[start..content_end], "    ").into_owned(),
                    plain,
                )],
                Some(tokens) => self.highlighted(code, start, content_end, tokens, &mut next),
            };
            lines.push(Line::from(spans));
            start = end + 1;
        }
        lines
    }

    /// The spans of `code[start..end]` (one line) coloured by `tokens`
    /// (byte ranges, in order); `next` is the first token not yet passed.
    fn highlighted(
        &self,
        code: &str,
        start: usize,
        end: usize,
        tokens: &[(usize, usize, TokenClass)],
        next: &mut usize,
    ) -> Vec<Span<'static>> {
        let mut spans = Vec::new();
        let piece = |from: usize, to: usize, style: Style| {
            Span::styled(visible(&code[from..to], "    ").into_owned(), style)
        };
        while tokens.get(*next).is_some_and(|t| t.1 <= start) {
            *next += 1;
        }
        let mut at = start;
        let mut i = *next;
        while let Some(&(from, to, class)) = tokens.get(i) {
            if from >= end {
                break;
            }
            let from = from.max(at);
            let to_here = to.min(end);
            if from > at {
                spans.push(piece(at, from, Style::default()));
            }
            if to_here > from {
                spans.push(piece(from, to_here, self.theme.style(Role::Token(class))));
            }
            at = at.max(to_here);
            if to > end {
                break;
            }
            i += 1;
        }
        *next = i;
        if at < end {
            spans.push(piece(at, end, Style::default()));
        }
        spans
    }

    fn flush_table(&mut self) {
        let Some(table) = self.table.take() else {
            return;
        };
        self.inline.clear();
        let columns = table
            .rows
            .iter()
            .map(Vec::len)
            .chain([table.head.len(), table.alignments.len()])
            .max()
            .unwrap_or(0);
        if columns > 0 {
            let lines = self.table_lines(&table, columns);
            self.emit(lines, Wrap::None, "");
        }
        self.pending_blank = true;
    }

    /// The table laid out in what is left of the width beside the
    /// containers' prefixes.
    fn table_lines(&mut self, table: &Table, columns: usize) -> Vec<Line<'static>> {
        let (first, rest) = self.prefixes(false);
        let (_, _, available) = self.fit_prefixes(first, rest);
        let bold = self.theme.style(Role::Bold);
        let cell = |row: &[Line<'static>], c: usize| row.get(c).cloned().unwrap_or_default();
        let head: Vec<Line<'static>> = (0..columns)
            .map(|c| {
                let mut line = cell(&table.head, c);
                for span in &mut line.spans {
                    span.style = span.style.patch(bold);
                }
                line
            })
            .collect();
        let rows: Vec<Vec<Line<'static>>> = table
            .rows
            .iter()
            .map(|row| (0..columns).map(|c| cell(row, c)).collect())
            .collect();
        let all = || std::iter::once(&head).chain(rows.iter());
        let natural: Vec<usize> = (0..columns)
            .map(|c| all().map(|r| wrap::width(&r[c])).max().unwrap_or(0).max(1))
            .collect();
        let longest_word: Vec<usize> = (0..columns)
            .map(|c| all().map(|r| longest_word(&r[c])).max().unwrap_or(0))
            .collect();
        let separators = wrap::str_width(COLUMN_SEPARATOR) * (columns - 1);
        let budget = available.saturating_sub(separators);
        let mut widths = natural.clone();
        // Shrink the widest columns, first not below their longest word,
        // then down to the minimum.
        let word_floor: Vec<usize> = (0..columns)
            .map(|c| longest_word[c].max(MIN_COLUMN).min(natural[c]))
            .collect();
        shrink(&mut widths, &word_floor, budget);
        let floor: Vec<usize> = natural.iter().map(|n| (*n).min(MIN_COLUMN)).collect();
        shrink(&mut widths, &floor, budget);
        if widths.iter().sum::<usize>() > budget {
            return self.table_as_records(&head, &rows, available);
        }
        let alignments: Vec<Alignment> = (0..columns)
            .map(|c| table.alignments.get(c).copied().unwrap_or(Alignment::None))
            .collect();
        let dim = self.theme.style(Role::Dim);
        let mut lines = self.table_row(&head, &widths, &alignments);
        let rule: Vec<String> = widths.iter().map(|w| "─".repeat(*w)).collect();
        lines.push(Line::from(Span::styled(rule.join("─┼─"), dim)));
        for row in &rows {
            lines.extend(self.table_row(row, &widths, &alignments));
        }
        lines
    }

    /// One table row: each cell wrapped in its column, aligned.
    fn table_row(
        &self,
        row: &[Line<'static>],
        widths: &[usize],
        alignments: &[Alignment],
    ) -> Vec<Line<'static>> {
        let dim = self.theme.style(Role::Dim);
        let cells: Vec<Vec<Line<'static>>> = row
            .iter()
            .zip(widths)
            .map(|(cell, w)| wrap_line(cell, *w, 0))
            .collect();
        let height = cells.iter().map(Vec::len).max().unwrap_or(1);
        let last = widths.len().saturating_sub(1);
        (0..height)
            .map(|r| {
                let mut spans = Vec::new();
                for (c, (column, w)) in cells.iter().zip(widths).enumerate() {
                    if c > 0 {
                        spans.push(Span::styled(COLUMN_SEPARATOR, dim));
                    }
                    let content = column.get(r).cloned().unwrap_or_default();
                    let pad = w.saturating_sub(wrap::width(&content));
                    let (left, right) = match alignments.get(c) {
                        Some(Alignment::Right) => (pad, 0),
                        Some(Alignment::Center) => (pad / 2, pad - pad / 2),
                        Some(Alignment::Left | Alignment::None) | None => (0, pad),
                    };
                    if left > 0 {
                        spans.push(Span::raw(" ".repeat(left)));
                    }
                    spans.extend(content.spans);
                    // No trailing blanks after the last column.
                    if right > 0 && c < last {
                        spans.push(Span::raw(" ".repeat(right)));
                    }
                }
                // An empty last cell leaves no trailing blanks either.
                Line::from(trim_end(spans))
            })
            .collect()
    }

    /// A table too wide for any column layout: each row as `header: value`
    /// lines, rows parted by blank lines.
    fn table_as_records(
        &self,
        head: &[Line<'static>],
        rows: &[Vec<Line<'static>>],
        available: usize,
    ) -> Vec<Line<'static>> {
        let mut lines = Vec::new();
        if rows.is_empty() {
            for h in head {
                lines.extend(wrap_line(h, available, 2));
            }
        }
        for (i, row) in rows.iter().enumerate() {
            if i > 0 {
                lines.push(Line::default());
            }
            for (h, value) in head.iter().zip(row) {
                let mut spans = h.spans.clone();
                if !spans.is_empty() {
                    spans.push(Span::raw(": "));
                }
                spans.extend(value.spans.iter().cloned());
                lines.extend(wrap_line(&Line::from(spans), available, 2));
            }
        }
        lines
    }

    fn finish(mut self) -> Vec<Line<'static>> {
        self.flush_verbatim();
        self.flush_table();
        self.flush_inline();
        self.out
    }
}

/// How [`Renderer::emit`] fits lines to the width.
#[derive(Debug, Clone, Copy)]
enum Wrap {
    /// At word boundaries (prose).
    Words,
    /// By cells only (code).
    Cells,
    /// Already laid out (tables).
    None,
}

/// Shrinks the widest of `widths` one cell at a time, none below its
/// `floor`, until their sum is at most `budget` or none can shrink.
fn shrink(widths: &mut [usize], floor: &[usize], budget: usize) {
    let mut total: usize = widths.iter().sum();
    while total > budget {
        let widest = widths
            .iter()
            .enumerate()
            .filter(|(c, w)| **w > floor[*c])
            .max_by_key(|(c, w)| (**w, std::cmp::Reverse(*c)))
            .map(|(c, _)| c);
        let Some(c) = widest else {
            return;
        };
        widths[c] -= 1;
        total -= 1;
    }
}

/// `spans` without the blanks they end with.
fn trim_end(mut spans: Vec<Span<'static>>) -> Vec<Span<'static>> {
    while let Some(last) = spans.last_mut() {
        let trimmed = last.content.trim_end();
        if trimmed.is_empty() {
            spans.pop();
        } else {
            if trimmed.len() < last.content.len() {
                last.content = Cow::Owned(trimmed.to_owned());
            }
            break;
        }
    }
    spans
}

/// The cells of the longest part of `line` [`wrap_line`] keeps whole
/// (roughly: words, split after `-` and `/` too).
fn longest_word(line: &Line<'_>) -> usize {
    wrap::plain(line)
        .split_inclusive([' ', '-', '/'])
        .map(wrap::str_width)
        .max()
        .unwrap_or(0)
}

/// `text` safe to draw: tabs as `tab`, newlines as blanks, other control
/// characters as their visible Unicode pictures (`␛` for an escape), so
/// the model's output cannot drive the terminal.
fn visible<'a>(text: &'a str, tab: &str) -> Cow<'a, str> {
    if !text.contains(char::is_control) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\t' => out.push_str(tab),
            '\n' | '\r' => out.push(' '),
            '\u{0}'..='\u{1f}' => {
                out.push(char::from_u32(0x2400 + u32::from(c)).unwrap_or('\u{fffd}'));
            }
            '\u{7f}' => out.push('\u{2421}'),
            c if c.is_control() => out.push('\u{fffd}'),
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// The highlighter's tokens (UTF-16 code unit ranges, in order) as byte
/// ranges of `code`, each on a character boundary.
fn byte_tokens(code: &str, tokens: &[Token]) -> Vec<(usize, usize, TokenClass)> {
    let mut chars = code.char_indices();
    let mut unit = 0;
    let mut byte = 0;
    // Moves forward to the first character boundary at or after `target`.
    let mut to_byte = |target: usize| -> usize {
        while unit < target {
            match chars.next() {
                Some((_, c)) => {
                    unit += c.len_utf16();
                    byte += c.len_utf8();
                }
                None => break,
            }
        }
        byte
    };
    let mut out: Vec<(usize, usize, TokenClass)> = Vec::with_capacity(tokens.len());
    for token in tokens {
        let start = to_byte(token.start);
        let end = to_byte(token.end);
        let start = out.last().map_or(start, |last| start.max(last.1));
        if end > start {
            out.push((start, end, token.class));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use ratatui::style::Modifier;

    use super::*;

    fn text(lines: &[Line<'static>]) -> String {
        lines.iter().map(wrap::plain).collect::<Vec<_>>().join("\n")
    }

    fn plain(markdown: &str, width: usize) -> String {
        text(&render(markdown, width, false, &Theme::plain()))
    }

    /// The span whose text is exactly `content`.
    fn span<'a>(lines: &'a [Line<'static>], content: &str) -> &'a Span<'static> {
        lines
            .iter()
            .flat_map(|l| l.spans.iter())
            .find(|s| s.content == content)
            .unwrap_or_else(|| panic!("no span {content:?} in {lines:#?}"))
    }

    #[test]
    fn headings_lists_and_nesting() {
        let md = "# Title\n\nIntro text.\n\n## Steps\n\n- first\n- second, which is long enough to wrap under its text\n  - nested *one*\n  - nested two\n    1. deep\n    2. deeper\n- [x] done\n- [ ] todo\n\n10. ten\n11. eleven\n\nAfter.\n";
        let lines = render(md, 40, false, &Theme::plain());
        insta::assert_snapshot!("headings_lists", text(&lines));
        let title = span(&lines, "Title");
        assert!(title.style.add_modifier.contains(Modifier::BOLD));
        let one = span(&lines, "one");
        assert!(one.style.add_modifier.contains(Modifier::ITALIC));
    }

    #[test]
    fn a_loose_list_parts_its_items() {
        insta::assert_snapshot!(plain("- one\n\n- two\n\n  more of two\n", 40), @r"
        - one

        - two

          more of two
        ");
    }

    const TABLE: &str = "| Name | Kind | Description |\n|:-----|:----:|------------:|\n| `wrap` | module | Word-boundary wrapping of styled lines |\n| markdown | module | Renders the agent's Markdown as lines |\n| theme | module | Styles by role |\n";

    #[test]
    fn a_table_at_width_80() {
        insta::assert_snapshot!("table_80", plain(TABLE, 80));
    }

    #[test]
    fn a_table_at_width_30_shrinks_and_wraps_its_widest_column() {
        let out = plain(TABLE, 30);
        insta::assert_snapshot!("table_30", out);
        assert!(out.lines().all(|l| wrap::str_width(l) <= 30));
    }

    #[test]
    fn a_table_far_too_narrow_becomes_records() {
        let md = "| alpha | beta | gamma | delta |\n|---|---|---|---|\n| one | two | three | four |\n| 1 | 2 | 3 | 4 |\n";
        insta::assert_snapshot!(plain(md, 16), @r"
        alpha: one
        beta: two
        gamma: three
        delta: four

        alpha: 1
        beta: 2
        gamma: 3
        delta: 4
        ");
    }

    const CODE: &str = "Before:\n\n```rust\nfn main() {\n\tlet s = \"héllo 🌍\"; // greet\n    println!(\"{s}\");\n}\n```\n\nAfter.\n";

    #[test]
    fn a_code_block_plain() {
        let lines = render(CODE, 40, false, &Theme::dark());
        insta::assert_snapshot!("code_plain", text(&lines));
        let code = theme_style(Role::Code);
        assert!(
            lines
                .iter()
                .flat_map(|l| &l.spans)
                .filter(|s| s.content.contains("fn main"))
                .all(|s| s.style == code)
        );
    }

    fn theme_style(role: Role) -> Style {
        Theme::dark().style(role)
    }

    #[test]
    fn a_code_block_highlighted() {
        let lines = render(CODE, 40, true, &Theme::dark());
        // The same text as without highlighting.
        assert_eq!(text(&lines), text(&render(CODE, 40, false, &Theme::dark())));
        insta::assert_snapshot!("code_highlighted", text(&lines));
        let keyword = theme_style(Role::Token(TokenClass::Keyword));
        assert_eq!(span(&lines, "fn").style, keyword);
        assert_eq!(span(&lines, "let").style, keyword);
        // After the non-ASCII string, offsets still land on the comment.
        assert_eq!(
            span(&lines, "// greet").style,
            theme_style(Role::Token(TokenClass::Comment))
        );
        assert_eq!(
            span(&lines, "\"héllo 🌍\"").style,
            theme_style(Role::Token(TokenClass::String))
        );
    }

    #[test]
    fn an_unknown_fence_tag_is_plain_code() {
        let lines = render("```nosuchlang\nfn x\n```\n", 40, true, &Theme::dark());
        assert_eq!(span(&lines, "fn x").style, theme_style(Role::Code));
    }

    #[test]
    fn long_code_lines_are_broken_by_cells_not_words() {
        let md = "```\nlet value = some_function(argument_one, argument_two);\n```\n";
        insta::assert_snapshot!(plain(md, 24), @r"
          let value = some_funct
          ion(argument_one, argu
          ment_two);
        ");
    }

    #[test]
    fn a_long_paragraph_wraps_at_word_boundaries() {
        let md = "The quick brown fox jumps over the lazy dog, and then **keeps running** through the forest until it reaches a river, where it stops to drink some `cold_water()` before heading home.";
        let out = plain(md, 40);
        insta::assert_snapshot!("paragraph_40", out);
        assert!(out.lines().all(|l| wrap::str_width(l) <= 40));
    }

    #[test]
    fn links_show_their_url_unless_it_is_the_text() {
        let md = "See [the docs](https://example.com/docs) or <https://example.com> or <me@example.com>, and ![a cat](cat.png).";
        let lines = render(md, 120, false, &Theme::plain());
        insta::assert_snapshot!(text(&lines), @"See the docs (https://example.com/docs) or https://example.com or me@example.com, and [image: a cat].");
        let link = Theme::plain().style(Role::Link);
        assert_eq!(span(&lines, "the docs").style, link);
    }

    #[test]
    fn quotes_draw_a_bar_on_every_line() {
        let md = "> A quoted remark that is long enough to wrap.\n>\n> > nested\n\nout\n";
        let lines = render(md, 30, false, &Theme::plain());
        insta::assert_snapshot!("quotes", text(&lines));
        assert!(
            span(&lines, "nested")
                .style
                .add_modifier
                .contains(Modifier::ITALIC)
        );
    }

    #[test]
    fn rules_breaks_and_html() {
        let md = "one  \ntwo\nthree\n\n---\n\n<div>raw</div>\n\nHello <b>bold</b>.\n";
        insta::assert_snapshot!(plain(md, 20), @r"
        one
        two three

        ────────────────────

        <div>raw</div>

        Hello <b>bold</b>.
        ");
    }

    #[test]
    fn inline_styles_by_role() {
        let theme = Theme::dark();
        let lines = render("*it* **bold** ~~gone~~ `code`", 40, false, &theme);
        assert_eq!(span(&lines, "it").style, theme.style(Role::Italic));
        assert_eq!(span(&lines, "bold").style, theme.style(Role::Bold));
        assert_eq!(span(&lines, "gone").style, theme.style(Role::Strike));
        assert_eq!(span(&lines, "code").style, theme.style(Role::InlineCode));
    }

    #[test]
    fn code_in_a_list_item_and_indented_code() {
        let md = "- step:

  ```sh
  make all
  ```

      indented code
";
        insta::assert_snapshot!(plain(md, 40), @r"
        - step:

            make all

            indented code
        ");
    }

    #[test]
    fn control_characters_are_shown_not_sent() {
        let out = plain("a \u{1b}[31mred\u{7}\n", 40);
        assert_eq!(out, "a ␛[31mred␇");
    }

    #[test]
    fn a_partial_stream_renders_sensibly() {
        let md = "# Plan\n\nSome **bold text\n\n| a | b |\n|---|---|\n| 1 |\n\n```python\ndef f():\n    return 1";
        insta::assert_snapshot!("partial", plain(md, 40));
        // Every prefix of a document renders.
        let full = format!("{md}\n```\n\n- item\n  > quote `code` [link](u\n");
        for (i, _) in full.char_indices() {
            for width in [1, 7, 40] {
                let _ = render(&full[..i], width, i % 2 == 0, &Theme::dark());
            }
        }
    }

    #[test]
    fn deep_nesting_keeps_half_the_width_for_text() {
        let md = "- a\n  - b\n    - c\n      - d\n        - e\n          - f text here\n";
        for line in plain(md, 10).lines() {
            assert!(wrap::str_width(line) <= 10, "{line:?}");
        }
    }

    #[test]
    #[ignore = "timing: run with --ignored --nocapture"]
    fn time_a_long_document() {
        let mut md = String::new();
        let mut i = 0;
        while md.lines().count() < 2000 {
            md.push_str(&format!("## Section {i}\n\nA paragraph with **bold**, *italic*, `code` and a [link](https://example.com/{i}) that runs long enough to wrap across a few lines at a hundred columns of width, more or less.\n\n- item one\n- item two with more words\n  - nested item\n\n```rust\nfn f{i}(x: u32) -> u32 {{\n    // double it\n    x * 2\n}}\n```\n\n"));
            i += 1;
        }
        let lines = md.lines().count();
        for (label, hl) in [
            ("plain", false),
            ("highlighted (cold)", true),
            ("highlighted (warm)", true),
        ] {
            let start = std::time::Instant::now();
            let out = render(&md, 100, hl, &Theme::dark());
            println!(
                "{lines}-line document, {label}: {:?} ({} lines out)",
                start.elapsed(),
                out.len()
            );
        }
        // A transcript: 2,000 short messages, each rendered on its own.
        let message = "A reply with **bold** and `code`, long enough to wrap once or twice at a hundred columns wide, as most are.\n\n- one\n- two\n";
        for (label, hl) in [("plain", false), ("highlighted", true)] {
            let start = std::time::Instant::now();
            let rows: usize = (0..2000)
                .map(|_| render(message, 100, hl, &Theme::dark()).len())
                .sum();
            println!(
                "2000 messages, {label}: {:?} ({rows} lines out)",
                start.elapsed()
            );
        }
    }

    fn markdownish() -> impl Strategy<Value = String> {
        let piece = prop_oneof![
            Just("# ".to_owned()),
            Just("- ".to_owned()),
            Just("1. ".to_owned()),
            Just("> ".to_owned()),
            Just("```rust\n".to_owned()),
            Just("```\n".to_owned()),
            Just("| a | b |\n|---|:-:|\n".to_owned()),
            Just(" | ".to_owned()),
            Just("**".to_owned()),
            Just("*".to_owned()),
            Just("`".to_owned()),
            Just("[x](y)".to_owned()),
            Just("\n".to_owned()),
            Just("\n\n".to_owned()),
            Just("  ".to_owned()),
            Just("\t".to_owned()),
            Just("---\n".to_owned()),
            "[a-z]{1,15}",
            "[\u{4e00}-\u{4e80}]{1,5}",
            "[😀-🙏]{1,2}",
            "[ -~]{1,10}",
        ];
        prop::collection::vec(piece, 0..40).prop_map(|v| v.concat())
    }

    proptest! {
        #[test]
        fn render_never_panics_and_fits_the_width(md in markdownish(), width in 1usize..100, hl in any::<bool>()) {
            let lines = render(&md, width, hl, &Theme::dark());
            if width >= 8 {
                for line in &lines {
                    let w = wrap::width(line);
                    prop_assert!(w <= width, "{:?} is {} cells, wider than {}", wrap::plain(line), w, width);
                }
            }
        }
    }
}
