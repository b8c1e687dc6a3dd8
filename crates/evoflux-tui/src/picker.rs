//! A searchable list in a box: `/resume`'s sessions, `/model`'s models,
//! an `ask_user` question's options; and the completion popup above the
//! composer (`/commands`, `@files`, `$skills`).
//!
//! Both are small state machines over keys so the app only routes keys
//! and reads the outcome: a [`Picker`] filters by every word of its query
//! (so `fix login` finds "Fix the login bug"), keeps the selection on the
//! same item while the list shrinks, and scrolls to keep it in view; a
//! [`Completion`] only moves and accepts, and leaves every other key to
//! the composer (the app recomputes its candidates after each edit).

use std::cell::Cell;

use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Clear, Paragraph, Widget};
use unicode_segmentation::UnicodeSegmentation;
use unicode_width::UnicodeWidthStr;

use crate::text::{clip, one_line};
use crate::theme::{Role, Theme};

/// Rows PageUp/PageDown move before the picker has been drawn.
const DEFAULT_PAGE: usize = 10;
/// Columns between a label and its detail.
const GAP: usize = 2;

/// One row of a picker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PickerItem {
    /// What the row shows first (a title).
    pub label: String,
    /// What it shows after, dim (a date, an id, a description).
    pub detail: String,
    /// What choosing it gives back.
    pub value: String,
}

/// What a key did to a picker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PickerEvent {
    /// Enter on a row: its value.
    Chosen(String),
    /// Esc.
    Cancelled,
    /// The query or the selection changed.
    Changed,
    Unhandled,
}

/// A list with a query line that filters it (label and detail, every
/// word of the query, case-insensitively).
#[derive(Debug)]
pub struct Picker {
    pub title: String,
    items: Vec<PickerItem>,
    /// `false`: no query line; keys 1–9 choose.
    searchable: bool,
    query: String,
    /// Indexes into `items` of the rows the query lets through, in order.
    matches: Vec<usize>,
    /// Index into `matches`.
    selected: usize,
    /// The first match shown (kept between frames so the list moves as
    /// little as possible).
    scroll: Cell<usize>,
    /// List rows of the last frame: how far PageUp/PageDown go.
    page: Cell<usize>,
}

impl Picker {
    /// A picker with a query line.
    pub fn new(title: impl Into<String>, items: Vec<PickerItem>) -> Picker {
        let matches = (0..items.len()).collect();
        Picker {
            title: title.into(),
            items,
            searchable: true,
            query: String::new(),
            matches,
            selected: 0,
            scroll: Cell::new(0),
            page: Cell::new(DEFAULT_PAGE),
        }
    }

    /// Without the query line, for a few options (an `ask_user`
    /// question's): typing does not filter, and 1–9 choose an option
    /// directly.
    pub fn without_search(mut self) -> Picker {
        self.searchable = false;
        self.query.clear();
        self.refilter();
        self
    }

    pub fn handle_key(&mut self, key: KeyEvent) -> PickerEvent {
        if !matches!(key.kind, KeyEventKind::Press | KeyEventKind::Repeat) {
            return PickerEvent::Unhandled;
        }
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        let alt = key.modifiers.contains(KeyModifiers::ALT);
        match key.code {
            KeyCode::Esc => PickerEvent::Cancelled,
            KeyCode::Enter => match self.selected_item() {
                Some(item) => PickerEvent::Chosen(item.value.clone()),
                None => PickerEvent::Unhandled,
            },
            KeyCode::Up => self.step(-1),
            KeyCode::Down => self.step(1),
            KeyCode::Char('p') if ctrl => self.step(-1),
            KeyCode::Char('n') if ctrl => self.step(1),
            KeyCode::PageUp => self.jump(self.selected.saturating_sub(self.page.get())),
            KeyCode::PageDown => self.jump(self.selected.saturating_add(self.page.get())),
            KeyCode::Home => self.jump(0),
            KeyCode::End => self.jump(usize::MAX),
            KeyCode::Char('u') if ctrl && self.searchable => self.set_query(""),
            KeyCode::Backspace if self.searchable => {
                let mut query = std::mem::take(&mut self.query);
                let keep = query
                    .grapheme_indices(true)
                    .next_back()
                    .map_or(0, |(i, _)| i);
                query.truncate(keep);
                self.set_query(&query)
            }
            KeyCode::Char(c) if !ctrl && !alt && self.searchable => {
                let mut query = std::mem::take(&mut self.query);
                query.push(c);
                self.set_query(&query)
            }
            KeyCode::Char(c @ '1'..='9') if !ctrl && !alt => {
                let index = c as usize - '1' as usize;
                match self.matches.get(index).and_then(|&i| self.items.get(i)) {
                    Some(item) => PickerEvent::Chosen(item.value.clone()),
                    None => PickerEvent::Unhandled,
                }
            }
            _ => PickerEvent::Unhandled,
        }
    }

    /// The query typed so far.
    pub fn query(&self) -> &str {
        &self.query
    }

    /// Sets the query (typing does this), keeping the selected item
    /// selected when it still matches.
    pub fn set_query(&mut self, query: &str) -> PickerEvent {
        if !self.searchable {
            return PickerEvent::Unhandled;
        }
        self.query = query.to_owned();
        self.refilter();
        PickerEvent::Changed
    }

    /// The item Enter would choose, if any matches.
    pub fn selected_item(&self) -> Option<&PickerItem> {
        self.matches
            .get(self.selected)
            .and_then(|&i| self.items.get(i))
    }

    /// The items the query lets through, in order.
    pub fn matching(&self) -> impl Iterator<Item = &PickerItem> {
        self.matches.iter().filter_map(|&i| self.items.get(i))
    }

    /// The rows it wants (border, query, items, at most `max`). Counted
    /// over all items, so the box does not jump while the query narrows.
    pub fn height(&self, max: u16) -> u16 {
        let rows = 2 + usize::from(self.searchable) + self.items.len().max(1);
        u16::try_from(rows).unwrap_or(u16::MAX).min(max)
    }

    pub fn render(&self, area: Rect, buf: &mut Buffer, theme: &Theme) {
        Clear.render(area, buf);
        let block = Block::bordered()
            .border_style(theme.style(Role::Dim))
            .title(Line::from(Span::styled(
                format!(" {} ", self.title),
                theme.style(Role::Accent),
            )));
        let inner = block.inner(area);
        block.render(area, buf);
        if inner.is_empty() {
            return;
        }
        let mut lines = Vec::new();
        if self.searchable {
            let query = if self.query.is_empty() {
                Span::styled("type to filter", theme.style(Role::Dim))
            } else {
                Span::raw(self.query.clone())
            };
            lines.push(Line::from(vec![
                Span::styled("> ", theme.style(Role::Accent)),
                query,
            ]));
        }
        let list_rows = usize::from(inner.height).saturating_sub(lines.len());
        self.page.set(list_rows.max(1));
        if self.matches.is_empty() {
            lines.push(Line::from(Span::styled(
                "  no matches",
                theme.style(Role::Dim),
            )));
        } else {
            let top = keep_visible(&self.scroll, self.selected, list_rows, self.matches.len());
            let width = usize::from(inner.width);
            let layout = self.columns(width);
            for (row, &index) in self.matches.iter().enumerate().skip(top).take(list_rows) {
                let Some(item) = self.items.get(index) else {
                    continue;
                };
                lines.push(self.row(item, row, row == self.selected, &layout, width, theme));
            }
        }
        Paragraph::new(lines).render(inner, buf);
    }

    /// Where labels and details go at `width` (after the gutter): the
    /// label column and the detail column, shared by every row so details line
    /// up.
    fn columns(&self, width: usize) -> Columns {
        let gutter = if self.searchable { 2 } else { 5 };
        let avail = width.saturating_sub(gutter);
        let widest = |f: fn(&PickerItem) -> &str| {
            self.matching()
                .map(|item| one_line(f(item)).width())
                .max()
                .unwrap_or(0)
        };
        let detail = widest(|i| &i.detail).min(avail / 2);
        let reserved = if detail > 0 { detail + GAP } else { 0 };
        let label = widest(|i| &i.label).min(avail.saturating_sub(reserved));
        Columns {
            label,
            detail: avail.saturating_sub(label + GAP),
        }
    }

    fn row(
        &self,
        item: &PickerItem,
        row: usize,
        selected: bool,
        layout: &Columns,
        width: usize,
        theme: &Theme,
    ) -> Line<'static> {
        let marker = if selected { "› " } else { "  " };
        let gutter = if self.searchable {
            marker.to_owned()
        } else if row < 9 {
            format!("{marker}{}. ", row + 1)
        } else {
            format!("{marker}   ")
        };
        let label = clip(&one_line(&item.label), layout.label);
        let pad = layout.label.saturating_sub(label.width());
        let mut spans = vec![Span::raw(gutter), Span::raw(label)];
        if !item.detail.is_empty() && layout.detail > 0 {
            spans.push(Span::raw(" ".repeat(pad + GAP)));
            spans.push(Span::styled(
                clip(&one_line(&item.detail), layout.detail),
                theme.style(Role::Dim),
            ));
        }
        let mut line = Line::from(spans);
        if selected {
            let used: usize = line.spans.iter().map(|s| s.content.width()).sum();
            line.spans
                .push(Span::raw(" ".repeat(width.saturating_sub(used))));
            line = line.patch_style(theme.style(Role::Selected));
        }
        line
    }

    fn refilter(&mut self) {
        let previous = self.matches.get(self.selected).copied();
        let words: Vec<String> = self
            .query
            .split_whitespace()
            .map(str::to_lowercase)
            .collect();
        self.matches = self
            .items
            .iter()
            .enumerate()
            .filter(|(_, item)| {
                let label = item.label.to_lowercase();
                let detail = item.detail.to_lowercase();
                words
                    .iter()
                    .all(|w| label.contains(w.as_str()) || detail.contains(w.as_str()))
            })
            .map(|(i, _)| i)
            .collect();
        self.selected = previous
            .and_then(|p| self.matches.iter().position(|&m| m == p))
            .unwrap_or(0)
            .min(self.matches.len().saturating_sub(1));
    }

    /// Up/Down: one row, wrapping at the ends.
    fn step(&mut self, delta: isize) -> PickerEvent {
        let len = self.matches.len();
        if len == 0 {
            return PickerEvent::Changed;
        }
        self.selected = match delta {
            d if d < 0 => self.selected.checked_sub(1).unwrap_or(len - 1),
            _ => (self.selected + 1) % len,
        };
        PickerEvent::Changed
    }

    /// PageUp/PageDown/Home/End: to `to`, clamped to the list.
    fn jump(&mut self, to: usize) -> PickerEvent {
        self.selected = to.min(self.matches.len().saturating_sub(1));
        PickerEvent::Changed
    }
}

/// The picker's column widths.
#[derive(Debug)]
struct Columns {
    label: usize,
    detail: usize,
}

/// The first row to show of `len` in `rows` rows so `selected` is
/// visible, moving `scroll` as little as possible.
fn keep_visible(scroll: &Cell<usize>, selected: usize, rows: usize, len: usize) -> usize {
    let rows = rows.max(1);
    let mut top = scroll.get();
    if selected < top {
        top = selected;
    } else if selected >= top + rows {
        top = selected + 1 - rows;
    }
    top = top.min(len.saturating_sub(rows));
    scroll.set(top);
    top
}

/// Completion candidates above the composer for the word at the cursor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Completion {
    /// Byte offset in the composer's text where the completed word starts.
    pub start: usize,
    /// `(shown, replacement)` pairs.
    pub candidates: Vec<(String, String)>,
    pub selected: usize,
}

/// What a key did to the completion popup.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CompletionEvent {
    /// Tab or Enter: replace from `start` to the cursor with this.
    Accept {
        start: usize,
        replacement: String,
    },
    Closed,
    Changed,
    Unhandled,
}

impl Completion {
    /// The popup for the word at `start`, the first candidate selected.
    pub fn new(start: usize, candidates: Vec<(String, String)>) -> Completion {
        Completion {
            start,
            candidates,
            selected: 0,
        }
    }

    pub fn handle_key(&mut self, key: KeyEvent) -> CompletionEvent {
        if !matches!(key.kind, KeyEventKind::Press | KeyEventKind::Repeat) {
            return CompletionEvent::Unhandled;
        }
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        match key.code {
            KeyCode::Tab | KeyCode::Enter if key.modifiers.is_empty() => {
                match self.candidates.get(self.selected_index()) {
                    Some((_, r)) => CompletionEvent::Accept {
                        start: self.start,
                        replacement: r.clone(),
                    },
                    None => CompletionEvent::Closed,
                }
            }
            KeyCode::Esc => CompletionEvent::Closed,
            KeyCode::Up => self.step(false),
            KeyCode::Down => self.step(true),
            KeyCode::Char('p') if ctrl => self.step(false),
            KeyCode::Char('n') if ctrl => self.step(true),
            _ => CompletionEvent::Unhandled,
        }
    }

    pub fn height(&self, max: u16) -> u16 {
        u16::try_from(self.candidates.len())
            .unwrap_or(u16::MAX)
            .min(max)
    }

    pub fn render(&self, area: Rect, buf: &mut Buffer, theme: &Theme) {
        Clear.render(area, buf);
        if area.is_empty() {
            return;
        }
        let rows = usize::from(area.height);
        let selected = self.selected_index();
        // Stateless (the struct is plain data): the selection is the
        // bottom row once it passes the first page.
        let top = selected.saturating_sub(rows - 1);
        let width = usize::from(area.width);
        let lines: Vec<Line> = self
            .candidates
            .iter()
            .enumerate()
            .skip(top)
            .take(rows)
            .map(|(i, (shown, _))| {
                let text = clip(&one_line(shown), width.saturating_sub(2));
                let marker = if i == selected { "› " } else { "  " };
                let pad = width.saturating_sub(2 + text.width());
                let style = if i == selected {
                    theme.style(Role::Selected)
                } else {
                    Style::default()
                };
                Line::from(format!("{marker}{text}{}", " ".repeat(pad))).style(style)
            })
            .collect();
        Paragraph::new(lines).render(area, buf);
    }

    /// `selected`, clamped to the candidates.
    fn selected_index(&self) -> usize {
        self.selected.min(self.candidates.len().saturating_sub(1))
    }

    fn step(&mut self, down: bool) -> CompletionEvent {
        let len = self.candidates.len();
        if len == 0 {
            return CompletionEvent::Changed;
        }
        let at = self.selected_index();
        self.selected = if down {
            (at + 1) % len
        } else {
            at.checked_sub(1).unwrap_or(len - 1)
        };
        CompletionEvent::Changed
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ratatui::Terminal;
    use ratatui::backend::TestBackend;

    fn key(code: KeyCode) -> KeyEvent {
        KeyEvent::new(code, KeyModifiers::NONE)
    }

    fn item(label: &str, detail: &str) -> PickerItem {
        PickerItem {
            label: label.into(),
            detail: detail.into(),
            value: format!("v:{label}"),
        }
    }

    fn sessions() -> Vec<PickerItem> {
        vec![
            item("Fix the login bug in the auth service", "2026-12-01 10:32"),
            item("Refactor the graph loader", "2026-11-30 17:05"),
            item("Write release notes for 0.4", "2026-11-29 09:12"),
            item("Investigate flaky nextest run on CI", "2026-11-28 22:40"),
            item("Port the TUI composer", "2026-11-27 08:00"),
            item("Login page copy", "2026-11-26 13:13"),
            item("Benchmark the parser", "2026-11-25 11:11"),
            item("中文标题的会话", "2026-11-24 06:30"),
        ]
    }

    fn type_str(p: &mut Picker, s: &str) {
        for c in s.chars() {
            assert_eq!(p.handle_key(key(KeyCode::Char(c))), PickerEvent::Changed);
        }
    }

    fn draw(width: u16, height: u16, f: impl Fn(Rect, &mut Buffer)) -> Terminal<TestBackend> {
        let mut terminal = Terminal::new(TestBackend::new(width, height)).unwrap();
        terminal
            .draw(|frame| f(frame.area(), frame.buffer_mut()))
            .unwrap();
        terminal
    }

    fn labels(p: &Picker) -> Vec<&str> {
        p.matching().map(|i| i.label.as_str()).collect()
    }

    #[test]
    fn every_query_word_must_match_label_or_detail() {
        let mut p = Picker::new("Resume", sessions());
        type_str(&mut p, "LOGIN");
        assert_eq!(
            labels(&p),
            ["Fix the login bug in the auth service", "Login page copy"]
        );
        type_str(&mut p, " 11-26");
        assert_eq!(labels(&p), ["Login page copy"]);
        assert_eq!(p.query(), "LOGIN 11-26");
        p.handle_key(KeyEvent::new(KeyCode::Char('u'), KeyModifiers::CONTROL));
        assert_eq!(p.matching().count(), 8);
        type_str(&mut p, "中文");
        assert_eq!(labels(&p), ["中文标题的会话"]);
        p.handle_key(key(KeyCode::Backspace));
        assert_eq!(p.query(), "中");
    }

    #[test]
    fn selection_stays_on_its_item_or_clamps_when_the_list_shrinks() {
        let mut p = Picker::new("Resume", sessions());
        p.handle_key(key(KeyCode::End));
        assert_eq!(p.selected_item().unwrap().label, "中文标题的会话");
        type_str(&mut p, "the");
        // The selected item is gone: back inside the shorter list.
        assert!(p.selected < p.matching().count());
        assert_eq!(p.selected_item().unwrap().label, labels(&p)[0]);
        p.handle_key(key(KeyCode::Down));
        let chosen = p.selected_item().unwrap().clone();
        p.handle_key(key(KeyCode::Backspace));
        assert_eq!(p.selected_item(), Some(&chosen), "kept while widening");
        type_str(&mut p, "zzz");
        assert_eq!(p.selected_item(), None);
        assert_eq!(p.handle_key(key(KeyCode::Enter)), PickerEvent::Unhandled);
        assert_eq!(p.handle_key(key(KeyCode::Down)), PickerEvent::Changed);
    }

    #[test]
    fn moves_wrap_and_enter_chooses() {
        let mut p = Picker::new("Models", sessions());
        p.handle_key(key(KeyCode::Up));
        assert_eq!(p.selected, 7);
        p.handle_key(key(KeyCode::Down));
        assert_eq!(p.selected, 0);
        p.handle_key(key(KeyCode::PageDown));
        assert_eq!(p.selected, 7, "clamped to the end");
        p.handle_key(key(KeyCode::PageUp));
        assert_eq!(p.selected, 0);
        p.handle_key(KeyEvent::new(KeyCode::Char('n'), KeyModifiers::CONTROL));
        assert_eq!(
            p.handle_key(key(KeyCode::Enter)),
            PickerEvent::Chosen("v:Refactor the graph loader".into())
        );
        assert_eq!(p.handle_key(key(KeyCode::Esc)), PickerEvent::Cancelled);
        let mut release = key(KeyCode::Down);
        release.kind = KeyEventKind::Release;
        assert_eq!(p.handle_key(release), PickerEvent::Unhandled);
    }

    #[test]
    fn without_search_number_keys_choose() {
        let mut p = Picker::new(
            "Apply the migration?",
            vec![item("Yes", ""), item("No", "")],
        )
        .without_search();
        assert_eq!(
            p.handle_key(key(KeyCode::Char('2'))),
            PickerEvent::Chosen("v:No".into())
        );
        assert_eq!(
            p.handle_key(key(KeyCode::Char('3'))),
            PickerEvent::Unhandled
        );
        assert_eq!(
            p.handle_key(key(KeyCode::Char('y'))),
            PickerEvent::Unhandled
        );
        assert_eq!(p.query(), "");
        assert_eq!(p.height(20), 4);
        let t = draw(30, 4, |area, buf| p.render(area, buf, &Theme::plain()));
        insta::assert_snapshot!(t.backend());
    }

    #[test]
    fn height_counts_border_query_and_items() {
        let p = Picker::new("Resume", sessions());
        assert_eq!(p.height(100), 2 + 1 + 8);
        assert_eq!(p.height(6), 6);
        assert_eq!(Picker::new("Empty", vec![]).height(100), 4);
    }

    #[test]
    fn scroll_keeps_the_selection_visible() {
        let mut p = Picker::new("Resume", sessions());
        // 7 rows: border, query, 4 items, border.
        for _ in 0..6 {
            p.handle_key(key(KeyCode::Down));
        }
        let t = draw(60, 7, |area, buf| p.render(area, buf, &Theme::plain()));
        let screen = t.backend().to_string();
        assert!(screen.contains("› Benchmark the parser"), "{screen}");
        assert!(!screen.contains("Fix the login"), "{screen}");
        // Back up: the list scrolls only as far as needed.
        for _ in 0..3 {
            p.handle_key(key(KeyCode::Up));
        }
        let t = draw(60, 7, |area, buf| p.render(area, buf, &Theme::plain()));
        let screen = t.backend().to_string();
        assert!(screen.contains("› Investigate flaky"), "{screen}");
        assert!(screen.contains("Benchmark the parser"), "{screen}");
        // PageDown moves by the rows drawn.
        p.handle_key(key(KeyCode::Home));
        p.handle_key(key(KeyCode::PageDown));
        assert_eq!(p.selected, 4);
    }

    #[test]
    fn selected_row_and_detail_styles() {
        let theme = Theme::dark();
        let p = Picker::new("Resume", sessions());
        let area = Rect::new(0, 0, 60, 6);
        let mut buf = Buffer::empty(area);
        p.render(area, &mut buf, &theme);
        let selected = theme.style(Role::Selected).add_modifier;
        // Row 2 (after border and query) is the selected first item, to
        // the right edge; row 3 is not.
        assert!(buf[(3, 2)].modifier.contains(selected));
        assert!(buf[(58, 2)].modifier.contains(selected));
        assert!(!buf[(3, 3)].modifier.contains(selected));
        let detail_x = (1..59)
            .find(|&x| buf[(x, 3)].symbol() == "2")
            .expect("a date on the row");
        assert_eq!(buf[(detail_x, 3)].fg, theme.style(Role::Dim).fg.unwrap());
    }

    #[test]
    fn snapshot_picker_80x12() {
        let mut p = Picker::new("Resume a session", sessions());
        p.handle_key(key(KeyCode::Down));
        let t = draw(80, 12, |area, buf| p.render(area, buf, &Theme::plain()));
        insta::assert_snapshot!(t.backend());
    }

    #[test]
    fn snapshot_picker_40x8() {
        let mut p = Picker::new("Resume a session", sessions());
        type_str(&mut p, "the");
        let t = draw(40, 8, |area, buf| p.render(area, buf, &Theme::plain()));
        insta::assert_snapshot!(t.backend());
    }

    #[test]
    fn snapshot_no_matches() {
        let mut p = Picker::new("Models", sessions());
        type_str(&mut p, "nothing like this");
        let t = draw(40, 5, |area, buf| p.render(area, buf, &Theme::plain()));
        insta::assert_snapshot!(t.backend());
    }

    #[test]
    fn truncate_marks_cuts() {
        assert_eq!(clip(&one_line("hello"), 5), "hello");
        assert_eq!(clip(&one_line("hello world"), 6), "hello…");
        assert_eq!(clip(&one_line("中文中文"), 5), "中文…");
        assert_eq!(clip(&one_line("abc"), 0), "");
        assert_eq!(clip(&one_line("two\nlines\u{7}"), 20), "two lines");
    }

    fn completion() -> Completion {
        Completion::new(
            6,
            vec![
                ("/model  choose the model".into(), "/model ".into()),
                ("/mcp  list MCP servers".into(), "/mcp ".into()),
                ("/memory  edit memory".into(), "/memory ".into()),
                ("/merge  merge a branch".into(), "/merge ".into()),
            ],
        )
    }

    #[test]
    fn completion_moves_accepts_and_closes() {
        let mut c = completion();
        assert_eq!(c.handle_key(key(KeyCode::Up)), CompletionEvent::Changed);
        assert_eq!(c.selected, 3);
        c.handle_key(KeyEvent::new(KeyCode::Char('n'), KeyModifiers::CONTROL));
        assert_eq!(c.selected, 0);
        c.handle_key(key(KeyCode::Down));
        assert_eq!(
            c.handle_key(key(KeyCode::Tab)),
            CompletionEvent::Accept {
                start: 6,
                replacement: "/mcp ".into()
            }
        );
        assert_eq!(
            c.handle_key(key(KeyCode::Enter)),
            CompletionEvent::Accept {
                start: 6,
                replacement: "/mcp ".into()
            }
        );
        assert_eq!(
            c.handle_key(key(KeyCode::Char('x'))),
            CompletionEvent::Unhandled
        );
        assert_eq!(
            c.handle_key(key(KeyCode::Backspace)),
            CompletionEvent::Unhandled
        );
        assert_eq!(c.handle_key(key(KeyCode::Esc)), CompletionEvent::Closed);
        let mut empty = Completion::new(0, vec![]);
        assert_eq!(empty.handle_key(key(KeyCode::Tab)), CompletionEvent::Closed);
        assert_eq!(empty.height(5), 0);
        // A selection out of range (the field is public) is clamped.
        c.selected = 99;
        assert_eq!(
            c.handle_key(key(KeyCode::Tab)),
            CompletionEvent::Accept {
                start: 6,
                replacement: "/merge ".into()
            }
        );
    }

    #[test]
    fn snapshot_completion_popup() {
        let mut c = completion();
        assert_eq!(c.height(3), 3);
        c.handle_key(key(KeyCode::Up));
        // Three rows of four: the selected last one is in view.
        let t = draw(30, 3, |area, buf| c.render(area, buf, &Theme::plain()));
        insta::assert_snapshot!(t.backend());
    }
}
