//! The input box at the bottom of the chat screen: multi-line text with a
//! cursor, soft-wrapped at word boundaries, with history and bracketed
//! paste.
//!
//! It is the one place keys turn into text, so the editing rules live
//! here and nowhere else: the cursor is a byte offset that only ever sits
//! on a grapheme boundary (so `é`, `👍🏽` and CJK move and delete as one),
//! Enter submits while Shift/Alt-Enter and Ctrl-J add a line (terminals
//! without keyboard enhancement report Alt-Enter only), and a paste is
//! text, never a submission. What the app does with keys the composer
//! does not use (Esc, Ctrl-C, Tab, PageUp) is the app's: they come back
//! [`ComposerEvent::Unhandled`].
//!
//! Wrapping is a small plain-text wrap of its own (the transcript's
//! [`crate::wrap`] wraps styled lines; here every row must map back to
//! byte ranges of the text so the cursor can be placed and moved by
//! visual rows). One column right of the text is kept free for the
//! cursor, so a full row never pushes it out of the box.

use std::cell::Cell;
use std::ops::Range;

use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use ratatui::buffer::Buffer;
use ratatui::layout::{Position, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Widget};
use unicode_segmentation::UnicodeSegmentation;
use unicode_width::UnicodeWidthStr;

use crate::theme::{Role, Theme};

/// The prompt on the first row; continuation rows are indented as wide.
const PROMPT: &str = "› ";
/// Columns the prompt (and the continuation indent) takes.
const PROMPT_WIDTH: u16 = 2;
/// How a tab is drawn (and how wide it counts).
const TAB: &str = "    ";

/// What a key did to the composer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ComposerEvent {
    /// Enter: the text, taken out of the composer (and into its history).
    Submitted(String),
    /// The text or the cursor changed.
    Changed,
    /// Not a key the composer uses; the caller may.
    Unhandled,
}

/// Where Up/Down are in the history.
#[derive(Debug, Default)]
struct Browse {
    /// The history entry shown, `None` when the user's own draft is.
    index: Option<usize>,
    /// What was being typed when browsing began; Down past the newest
    /// entry brings it back.
    draft: String,
}

/// The composer's state.
#[derive(Debug, Default)]
pub struct Composer {
    text: String,
    /// Byte offset into `text`, always on a grapheme boundary.
    cursor: usize,
    /// Older entries first.
    history: Vec<String>,
    browse: Browse,
    /// What the last word or line kill took, for Ctrl-Y.
    killed: String,
    /// The column Up/Down aim for across rows of different lengths.
    goal_column: Option<usize>,
    /// The text width of the last render (for Up/Down by visual rows
    /// before the app asks again); 0 until the first render.
    wrap_width: Cell<usize>,
    /// The first visual row shown when the text is taller than its box.
    scroll: Cell<usize>,
}

/// One visual row: the bytes of `text` it shows.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Row {
    range: Range<usize>,
    /// The last row of its logical line (the only row that owns the
    /// offset at its end; elsewhere that offset starts the next row).
    line_end: bool,
}

impl Composer {
    pub fn new() -> Composer {
        Composer::default()
    }

    /// One key press (releases are ignored). Enter submits (whitespace
    /// only: clears); Shift/Alt-Enter and Ctrl-J add a line; Backspace,
    /// Delete, Ctrl-W/Alt-Backspace (word), Ctrl-U/Ctrl-K (to line
    /// start/end) delete, and Ctrl-Y puts the last such kill back; arrows, Alt/Ctrl-arrows (word), Home/End and
    /// Ctrl-A/Ctrl-E move; Up/Down move by visual row and walk the history
    /// from the first/last row. Esc, Ctrl-C, Tab, PageUp/PageDown (and
    /// Ctrl-D on an empty composer) are [`ComposerEvent::Unhandled`].
    pub fn handle_key(&mut self, key: KeyEvent) -> ComposerEvent {
        if !matches!(key.kind, KeyEventKind::Press | KeyEventKind::Repeat) {
            return ComposerEvent::Unhandled;
        }
        let mods = key.modifiers;
        let ctrl = mods.contains(KeyModifiers::CONTROL);
        let alt = mods.contains(KeyModifiers::ALT);
        let vertical = matches!(key.code, KeyCode::Up | KeyCode::Down)
            || (ctrl && matches!(key.code, KeyCode::Char('p' | 'n')));
        if !vertical {
            self.goal_column = None;
        }
        match key.code {
            KeyCode::Enter if mods.intersects(KeyModifiers::SHIFT | KeyModifiers::ALT) => {
                self.insert("\n");
            }
            KeyCode::Enter if mods.is_empty() => return self.submit(),
            KeyCode::Enter => return ComposerEvent::Unhandled,
            KeyCode::Char('j') if ctrl && !alt => self.insert("\n"),
            // AltGr arrives as Ctrl+Alt on Windows: a character like any other.
            // A control character without CONTROL (some terminals send C0
            // codes so): never text.
            KeyCode::Char(c) if c.is_control() => return ComposerEvent::Unhandled,
            KeyCode::Char(c) if (!ctrl && !alt) || (ctrl && alt) => {
                let mut buf = [0u8; 4];
                self.insert(c.encode_utf8(&mut buf));
            }
            KeyCode::Char(c) if ctrl => match c {
                'a' => self.cursor = self.line_start(self.cursor),
                'e' => self.cursor = self.line_end(self.cursor),
                'b' => self.cursor = self.prev_grapheme(self.cursor),
                'f' => self.cursor = self.next_grapheme(self.cursor),
                'h' => self.delete_range(self.prev_grapheme(self.cursor)..self.cursor),
                'w' => self.kill(self.prev_word(self.cursor)..self.cursor),
                'u' => self.kill_to_line_start(),
                'k' => self.kill_to_line_end(),
                'y' => {
                    let killed = self.killed.clone();
                    self.insert(&killed);
                }
                'd' if !self.text.is_empty() => {
                    self.delete_range(self.cursor..self.next_grapheme(self.cursor));
                }
                'p' => return self.up(),
                'n' => return self.down(),
                _ => return ComposerEvent::Unhandled,
            },
            // Alt-b / Alt-f: what many terminals send for Alt-Left/Right.
            KeyCode::Char(c) => match c {
                'b' => self.cursor = self.prev_word(self.cursor),
                'f' => self.cursor = self.next_word(self.cursor),
                'd' => self.kill(self.cursor..self.next_word(self.cursor)),
                _ => return ComposerEvent::Unhandled,
            },
            KeyCode::Backspace if alt || ctrl => {
                self.kill(self.prev_word(self.cursor)..self.cursor);
            }
            KeyCode::Backspace => self.delete_range(self.prev_grapheme(self.cursor)..self.cursor),
            KeyCode::Delete if alt || ctrl => {
                self.kill(self.cursor..self.next_word(self.cursor));
            }
            KeyCode::Delete => self.delete_range(self.cursor..self.next_grapheme(self.cursor)),
            KeyCode::Left if alt || ctrl => self.cursor = self.prev_word(self.cursor),
            KeyCode::Left => self.cursor = self.prev_grapheme(self.cursor),
            KeyCode::Right if alt || ctrl => self.cursor = self.next_word(self.cursor),
            KeyCode::Right => self.cursor = self.next_grapheme(self.cursor),
            KeyCode::Home => self.cursor = self.line_start(self.cursor),
            KeyCode::End => self.cursor = self.line_end(self.cursor),
            KeyCode::Up => return self.up(),
            KeyCode::Down => return self.down(),
            KeyCode::Esc
            | KeyCode::Tab
            | KeyCode::BackTab
            | KeyCode::PageUp
            | KeyCode::PageDown
            | KeyCode::Insert
            | KeyCode::F(_)
            | KeyCode::Null
            | KeyCode::CapsLock
            | KeyCode::ScrollLock
            | KeyCode::NumLock
            | KeyCode::PrintScreen
            | KeyCode::Pause
            | KeyCode::Menu
            | KeyCode::KeypadBegin
            | KeyCode::Media(_)
            | KeyCode::Modifier(_) => return ComposerEvent::Unhandled,
        }
        ComposerEvent::Changed
    }

    /// A bracketed paste: inserted as typed text (newlines kept), never sent.
    pub fn paste(&mut self, text: &str) {
        self.goal_column = None;
        let text = normalize_newlines(text);
        self.insert(&text);
    }

    pub fn text(&self) -> &str {
        &self.text
    }

    pub fn is_empty(&self) -> bool {
        self.text.is_empty()
    }

    pub fn clear(&mut self) {
        self.set_text("");
    }

    /// Replaces the text (line endings normalised), the cursor at its end.
    pub fn set_text(&mut self, text: &str) {
        self.text = normalize_newlines(text);
        self.cursor = self.text.len();
        self.browse = Browse::default();
        self.goal_column = None;
        self.scroll.set(0);
    }

    /// The entries Up and Down walk, oldest first (the chat's history file).
    pub fn set_history(&mut self, entries: Vec<String>) {
        self.history = entries;
        self.browse = Browse::default();
    }

    /// The history, oldest first, including what was submitted here.
    pub fn history(&self) -> &[String] {
        &self.history
    }

    /// The word the cursor is in or just after, as `(byte start, word)`:
    /// what completion looks at. The word is whitespace-delimited and ends
    /// at the cursor.
    pub fn word_at_cursor(&self) -> (usize, &str) {
        let before = &self.text[..self.cursor];
        let start = before
            .char_indices()
            .rev()
            .find(|(_, c)| c.is_whitespace())
            .map_or(0, |(i, c)| i + c.len_utf8());
        (start, &self.text[start..self.cursor])
    }

    /// The byte offset of the cursor in [`Composer::text`].
    pub fn cursor_offset(&self) -> usize {
        self.cursor
    }

    /// Moves the cursor to `offset`, or to the grapheme boundary before it
    /// when it is inside a grapheme or past the end.
    pub fn set_cursor(&mut self, offset: usize) {
        self.cursor = self.floor_boundary(offset);
        self.goal_column = None;
    }

    /// Replaces `text[start..cursor]` by `with`, the cursor after it. A
    /// `start` past the cursor or inside a grapheme is moved back to the
    /// boundary before it.
    pub fn replace_to_cursor(&mut self, start: usize, with: &str) {
        let end = self.cursor;
        let start = self.floor_boundary(start.min(end));
        self.edited();
        self.text.replace_range(start..end, "");
        self.cursor = start;
        self.insert(&normalize_newlines(with));
    }

    /// The rows the composer wants at `width` (its wrapped lines, at least
    /// one, at most `max`).
    pub fn height(&self, width: u16, max: u16) -> u16 {
        let rows = self.rows(text_width(width)).len();
        u16::try_from(rows).unwrap_or(u16::MAX).clamp(1, max.max(1))
    }

    /// Draws the composer with its `› ` prompt; `placeholder` shows dim
    /// when it is empty.
    pub fn render(&self, area: Rect, buf: &mut Buffer, theme: &Theme, placeholder: &str) {
        if area.is_empty() {
            return;
        }
        let prompt = Span::styled(PROMPT, theme.style(Role::Accent));
        if self.text.is_empty() {
            let line = Line::from(vec![
                prompt,
                Span::styled(placeholder.to_owned(), theme.style(Role::Dim)),
            ]);
            Paragraph::new(line).render(area, buf);
            return;
        }
        let width = text_width(area.width);
        self.wrap_width.set(width);
        let rows = self.rows(width);
        let (cursor_row, _) = self.locate(&rows, self.cursor);
        let top = self.scroll_top(rows.len(), cursor_row, usize::from(area.height));
        let lines: Vec<Line> = rows
            .iter()
            .enumerate()
            .skip(top)
            .take(usize::from(area.height))
            .map(|(i, row)| {
                let lead = if i == 0 {
                    prompt.clone()
                } else {
                    Span::raw("  ")
                };
                Line::from(vec![
                    lead,
                    Span::raw(display(&self.text[row.range.clone()])),
                ])
            })
            .collect();
        Paragraph::new(lines).render(area, buf);
    }

    /// Where the terminal's cursor goes when the composer is drawn in `area`.
    pub fn cursor(&self, area: Rect) -> Position {
        if area.is_empty() {
            return Position::new(area.x, area.y);
        }
        let width = text_width(area.width);
        self.wrap_width.set(width);
        let rows = self.rows(width);
        let (row, column) = self.locate(&rows, self.cursor);
        let top = self.scroll_top(rows.len(), row, usize::from(area.height));
        let x = usize::from(PROMPT_WIDTH) + column;
        let max_x = usize::from(area.width.saturating_sub(1));
        Position::new(
            area.x + u16::try_from(x.min(max_x)).unwrap_or(0),
            area.y + u16::try_from(row - top).unwrap_or(0),
        )
    }

    // ---- editing -------------------------------------------------------

    fn insert(&mut self, s: &str) {
        self.edited();
        self.text.insert_str(self.cursor, s);
        // Inserting can merge with the grapheme before (a combining mark):
        // the cursor stays on a boundary either way.
        self.cursor = self.floor_boundary(self.cursor + s.len());
    }

    fn delete_range(&mut self, range: Range<usize>) {
        if range.is_empty() {
            return;
        }
        self.edited();
        self.text.replace_range(range.clone(), "");
        self.cursor = self.floor_boundary(range.start);
    }

    /// Deletes `range`, keeping it for Ctrl-Y (the last kill only).
    fn kill(&mut self, range: Range<usize>) {
        if range.is_empty() {
            return;
        }
        self.killed = self.text[range.clone()].to_owned();
        self.delete_range(range);
    }

    fn kill_to_line_start(&mut self) {
        let start = self.line_start(self.cursor);
        if start == self.cursor {
            // At the start of a line: join it to the one before.
            self.kill(self.prev_grapheme(self.cursor)..self.cursor);
        } else {
            self.kill(start..self.cursor);
        }
    }

    fn kill_to_line_end(&mut self) {
        let end = self.line_end(self.cursor);
        if end == self.cursor {
            self.kill(self.cursor..self.next_grapheme(self.cursor));
        } else {
            self.kill(self.cursor..end);
        }
    }

    /// An edit ends history browsing: the edited entry is the new draft.
    fn edited(&mut self) {
        self.browse = Browse::default();
    }

    fn submit(&mut self) -> ComposerEvent {
        if self.text.trim().is_empty() {
            self.clear();
            return ComposerEvent::Changed;
        }
        let text = std::mem::take(&mut self.text);
        if self.history.last() != Some(&text) {
            self.history.push(text.clone());
        }
        self.clear();
        ComposerEvent::Submitted(text)
    }

    // ---- vertical moves and history --------------------------------------

    fn up(&mut self) -> ComposerEvent {
        let rows = self.rows(self.wrap_width.get());
        let (row, column) = self.locate(&rows, self.cursor);
        if row == 0 || self.showing_unedited_entry() {
            return self.history_older();
        }
        let goal = *self.goal_column.get_or_insert(column);
        self.cursor = self.offset_at(&rows[row - 1], goal);
        ComposerEvent::Changed
    }

    fn down(&mut self) -> ComposerEvent {
        let rows = self.rows(self.wrap_width.get());
        let (row, column) = self.locate(&rows, self.cursor);
        if row + 1 >= rows.len() || self.showing_unedited_entry() {
            return self.history_newer();
        }
        let goal = *self.goal_column.get_or_insert(column);
        self.cursor = self.offset_at(&rows[row + 1], goal);
        ComposerEvent::Changed
    }

    fn showing_unedited_entry(&self) -> bool {
        self.browse
            .index
            .and_then(|i| self.history.get(i))
            .is_some_and(|entry| *entry == self.text)
    }

    fn history_older(&mut self) -> ComposerEvent {
        let next = match self.browse.index {
            Some(0) => return ComposerEvent::Changed,
            Some(i) => i - 1,
            None if self.history.is_empty() => return ComposerEvent::Changed,
            None => {
                self.browse.draft = self.text.clone();
                self.history.len() - 1
            }
        };
        self.show_entry(Some(next));
        ComposerEvent::Changed
    }

    fn history_newer(&mut self) -> ComposerEvent {
        match self.browse.index {
            None => return ComposerEvent::Changed,
            Some(i) if i + 1 < self.history.len() => self.show_entry(Some(i + 1)),
            Some(_) => self.show_entry(None),
        }
        ComposerEvent::Changed
    }

    fn show_entry(&mut self, index: Option<usize>) {
        let text = match index.and_then(|i| self.history.get(i)) {
            Some(entry) => entry.clone(),
            None => std::mem::take(&mut self.browse.draft),
        };
        self.text = text;
        self.cursor = self.text.len();
        self.browse.index = index;
        self.goal_column = None;
    }

    // ---- positions -------------------------------------------------------

    fn prev_grapheme(&self, at: usize) -> usize {
        self.text[..at]
            .grapheme_indices(true)
            .next_back()
            .map_or(0, |(i, _)| i)
    }

    fn next_grapheme(&self, at: usize) -> usize {
        self.text[at..]
            .graphemes(true)
            .next()
            .map_or(at, |g| at + g.len())
    }

    /// `at`, or the grapheme boundary before it.
    fn floor_boundary(&self, at: usize) -> usize {
        let at = at.min(self.text.len());
        let mut last = 0;
        for (i, _) in self.text.grapheme_indices(true) {
            if i > at {
                return last;
            }
            last = i;
        }
        if at == self.text.len() { at } else { last }
    }

    /// The start of the word before `at` (whitespace, then a word).
    fn prev_word(&self, at: usize) -> usize {
        let before = &self.text[..at];
        let word_end = before.trim_end_matches(char::is_whitespace).len();
        before[..word_end]
            .char_indices()
            .rev()
            .find(|(_, c)| c.is_whitespace())
            .map_or(0, |(i, c)| i + c.len_utf8())
    }

    /// The end of the word after `at` (whitespace, then a word).
    fn next_word(&self, at: usize) -> usize {
        let after = &self.text[at..];
        let word_start = after.len() - after.trim_start_matches(char::is_whitespace).len();
        after[word_start..]
            .char_indices()
            .find(|(_, c)| c.is_whitespace())
            .map_or(self.text.len(), |(i, _)| at + word_start + i)
    }

    fn line_start(&self, at: usize) -> usize {
        self.text[..at].rfind('\n').map_or(0, |i| i + 1)
    }

    fn line_end(&self, at: usize) -> usize {
        self.text[at..]
            .find('\n')
            .map_or(self.text.len(), |i| at + i)
    }

    // ---- wrapping ----------------------------------------------------------

    /// The visual rows of the text at `width` text columns (0: unwrapped).
    fn rows(&self, width: usize) -> Vec<Row> {
        let mut rows = Vec::new();
        let mut start = 0;
        for line in self.text.split('\n') {
            wrap_into(&mut rows, line, start, width);
            start += line.len() + 1;
        }
        rows
    }

    /// The visual row and column of byte offset `at`.
    fn locate(&self, rows: &[Row], at: usize) -> (usize, usize) {
        let index = rows
            .iter()
            .position(|r| r.range.contains(&at) || (r.line_end && r.range.end == at))
            .unwrap_or(rows.len().saturating_sub(1));
        let column = rows.get(index).map_or(0, |r| {
            columns(&self.text[r.range.start..at.max(r.range.start)])
        });
        (index, column)
    }

    /// The offset in `row` nearest to `column` without passing it.
    fn offset_at(&self, row: &Row, column: usize) -> usize {
        let mut width = 0;
        let text = &self.text[row.range.clone()];
        for (i, g) in text.grapheme_indices(true) {
            let w = grapheme_columns(g);
            if width + w > column {
                return row.range.start + i;
            }
            width += w;
        }
        if row.line_end {
            row.range.end
        } else {
            // The end of a wrapped row starts the next one: stay before it.
            text.grapheme_indices(true)
                .next_back()
                .map_or(row.range.start, |(i, _)| row.range.start + i)
        }
    }

    /// The first row to show in `height` rows so the cursor's row is
    /// visible, moving as little as possible since the last frame.
    fn scroll_top(&self, rows: usize, cursor_row: usize, height: usize) -> usize {
        let height = height.max(1);
        let mut top = self.scroll.get();
        if cursor_row < top {
            top = cursor_row;
        } else if cursor_row >= top + height {
            top = cursor_row + 1 - height;
        }
        top = top.min(rows.saturating_sub(height));
        self.scroll.set(top);
        top
    }
}

/// The columns left for text in a box `width` wide: the prompt's two and
/// one for the cursor after a full row are kept.
fn text_width(width: u16) -> usize {
    usize::from(width.saturating_sub(PROMPT_WIDTH + 1)).max(1)
}

/// Wraps one logical line (no `\n`) starting at byte `base` of the text
/// into rows of at most `width` columns, breaking after whitespace where
/// it can and inside a word only when the word alone is too wide.
/// Whitespace at a break stays at the end of its row (it may hang past
/// the width). `width == 0` does not wrap.
fn wrap_into(rows: &mut Vec<Row>, line: &str, base: usize, width: usize) {
    let mut row_start = 0;
    let mut column = 0;
    // A break opportunity: the byte after a whitespace run and the column
    // there.
    let mut after_space: Option<(usize, usize)> = None;
    for (i, g) in line.grapheme_indices(true) {
        let w = grapheme_columns(g);
        if g.chars().all(char::is_whitespace) {
            column += w;
            after_space = Some((i + g.len(), column));
            continue;
        }
        if width > 0 && column + w > width && column > 0 {
            match after_space {
                Some((at, at_column)) if at > row_start => {
                    rows.push(Row {
                        range: base + row_start..base + at,
                        line_end: false,
                    });
                    row_start = at;
                    column -= at_column;
                    // The word so far still too wide with this grapheme:
                    // break it here too.
                    if column + w > width && column > 0 {
                        rows.push(Row {
                            range: base + row_start..base + i,
                            line_end: false,
                        });
                        row_start = i;
                        column = 0;
                    }
                }
                _ => {
                    rows.push(Row {
                        range: base + row_start..base + i,
                        line_end: false,
                    });
                    row_start = i;
                    column = 0;
                }
            }
            after_space = None;
        }
        column += w;
    }
    rows.push(Row {
        range: base + row_start..base + line.len(),
        line_end: true,
    });
}

/// Columns `g` takes on screen: a tab as [`TAB`], other control
/// characters as the one-column replacement [`display`] draws.
fn grapheme_columns(g: &str) -> usize {
    if g == "\t" {
        TAB.len()
    } else if g.chars().any(char::is_control) {
        1
    } else {
        g.width()
    }
}

fn columns(s: &str) -> usize {
    s.graphemes(true).map(grapheme_columns).sum()
}

/// `s` as drawn: tabs expanded, other control characters shown as `�`
/// so none reaches the terminal.
fn display(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for g in s.graphemes(true) {
        if g == "\t" {
            out.push_str(TAB);
        } else if g.chars().any(char::is_control) {
            out.push('\u{fffd}');
        } else {
            out.push_str(g);
        }
    }
    out
}

/// CRLF and lone CR as LF, as terminals paste them.
fn normalize_newlines(text: &str) -> String {
    text.replace("\r\n", "\n").replace('\r', "\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use ratatui::Terminal;
    use ratatui::backend::TestBackend;

    fn key(code: KeyCode) -> KeyEvent {
        KeyEvent::new(code, KeyModifiers::NONE)
    }

    fn with(code: KeyCode, mods: KeyModifiers) -> KeyEvent {
        KeyEvent::new(code, mods)
    }

    fn ctrl(c: char) -> KeyEvent {
        with(KeyCode::Char(c), KeyModifiers::CONTROL)
    }

    fn typed(text: &str) -> Composer {
        let mut c = Composer::new();
        for ch in text.chars() {
            c.handle_key(key(KeyCode::Char(ch)));
        }
        c
    }

    fn draw(c: &Composer, width: u16, height: u16, placeholder: &str) -> Terminal<TestBackend> {
        let mut terminal = Terminal::new(TestBackend::new(width, height)).unwrap();
        terminal
            .draw(|f| {
                let area = f.area();
                c.render(area, f.buffer_mut(), &Theme::plain(), placeholder);
                f.set_cursor_position(c.cursor(area));
            })
            .unwrap();
        terminal
    }

    #[test]
    fn typing_inserts_at_the_cursor() {
        let mut c = typed("helo");
        c.handle_key(key(KeyCode::Left));
        c.handle_key(key(KeyCode::Left));
        assert_eq!(
            c.handle_key(key(KeyCode::Char('l'))),
            ComposerEvent::Changed
        );
        assert_eq!(c.text(), "hello");
        assert_eq!(c.cursor_offset(), 3);
    }

    #[test]
    fn backspace_and_delete_take_whole_graphemes() {
        // "e" + combining acute, a skin-toned emoji, a CJK char.
        let mut c = Composer::new();
        c.paste("e\u{301}👍🏽中");
        assert_eq!(
            c.handle_key(key(KeyCode::Backspace)),
            ComposerEvent::Changed
        );
        assert_eq!(c.text(), "e\u{301}👍🏽");
        c.handle_key(key(KeyCode::Backspace));
        assert_eq!(c.text(), "e\u{301}");
        c.handle_key(key(KeyCode::Home));
        c.handle_key(key(KeyCode::Delete));
        assert_eq!(c.text(), "");
        assert_eq!(c.cursor_offset(), 0);
    }

    #[test]
    fn left_and_right_step_over_multibyte_graphemes() {
        let mut c = Composer::new();
        c.paste("a中👍🏽b");
        let mut offsets = vec![c.cursor_offset()];
        for _ in 0..5 {
            c.handle_key(key(KeyCode::Left));
            offsets.push(c.cursor_offset());
        }
        assert_eq!(offsets, vec![13, 12, 4, 1, 0, 0]);
        c.handle_key(key(KeyCode::Right));
        c.handle_key(key(KeyCode::Right));
        assert_eq!(c.cursor_offset(), 4);
    }

    #[test]
    fn word_moves_and_word_deletes() {
        let mut c = typed("one two  three");
        c.handle_key(with(KeyCode::Left, KeyModifiers::ALT));
        assert_eq!(c.cursor_offset(), 9);
        c.handle_key(with(KeyCode::Left, KeyModifiers::CONTROL));
        assert_eq!(c.cursor_offset(), 4);
        c.handle_key(with(KeyCode::Right, KeyModifiers::ALT));
        assert_eq!(c.cursor_offset(), 7);
        c.handle_key(ctrl('w'));
        assert_eq!(c.text(), "one   three");
        assert_eq!(c.cursor_offset(), 4);
        c.handle_key(key(KeyCode::End));
        c.handle_key(with(KeyCode::Backspace, KeyModifiers::ALT));
        assert_eq!(c.text(), "one   ");
        c.handle_key(ctrl('w'));
        assert_eq!(c.text(), "");
    }

    #[test]
    fn line_kills_and_line_ends() {
        let mut c = Composer::new();
        c.paste("first line\nsecond line");
        c.handle_key(with(KeyCode::Left, KeyModifiers::ALT));
        c.handle_key(ctrl('u'));
        assert_eq!(c.text(), "first line\nline");
        assert_eq!(c.cursor_offset(), 11);
        // At a line start Ctrl-U joins with the line before.
        c.handle_key(ctrl('u'));
        assert_eq!(c.text(), "first lineline");
        c.handle_key(ctrl('a'));
        assert_eq!(c.cursor_offset(), 0);
        c.handle_key(ctrl('e'));
        assert_eq!(c.cursor_offset(), 14);
        c.handle_key(key(KeyCode::Home));
        c.handle_key(with(KeyCode::Right, KeyModifiers::CONTROL));
        c.handle_key(ctrl('k'));
        assert_eq!(c.text(), "first");
        // The last kill comes back with Ctrl-Y.
        c.handle_key(ctrl('y'));
        c.handle_key(ctrl('y'));
        assert_eq!(c.text(), "first lineline lineline");
    }

    #[test]
    fn control_characters_are_never_text() {
        let mut c = Composer::new();
        assert_eq!(
            c.handle_key(key(KeyCode::Char('\u{2}'))),
            ComposerEvent::Unhandled
        );
        assert!(c.is_empty());
    }

    #[test]
    fn enter_submits_and_newline_keys_do_not() {
        let mut c = typed("hi");
        c.handle_key(with(KeyCode::Enter, KeyModifiers::SHIFT));
        c.handle_key(with(KeyCode::Enter, KeyModifiers::ALT));
        c.handle_key(ctrl('j'));
        c.handle_key(key(KeyCode::Char('x')));
        assert_eq!(c.text(), "hi\n\n\nx");
        assert_eq!(
            c.handle_key(key(KeyCode::Enter)),
            ComposerEvent::Submitted("hi\n\n\nx".into())
        );
        assert!(c.is_empty());
        assert_eq!(c.cursor_offset(), 0);
        assert_eq!(c.history(), ["hi\n\n\nx"]);
    }

    #[test]
    fn whitespace_only_enter_clears_without_submitting() {
        let mut c = Composer::new();
        c.paste("  \n\t ");
        assert_eq!(c.handle_key(key(KeyCode::Enter)), ComposerEvent::Changed);
        assert!(c.is_empty());
        assert!(c.history().is_empty());
    }

    #[test]
    fn app_keys_and_releases_are_unhandled() {
        let mut c = typed("x");
        for k in [
            key(KeyCode::Esc),
            key(KeyCode::Tab),
            key(KeyCode::PageUp),
            key(KeyCode::PageDown),
            ctrl('c'),
        ] {
            assert_eq!(c.handle_key(k), ComposerEvent::Unhandled, "{k:?}");
        }
        // Ctrl-D deletes forward, and is the app's on an empty composer.
        assert_eq!(
            Composer::new().handle_key(ctrl('d')),
            ComposerEvent::Unhandled
        );
        let mut release = key(KeyCode::Char('y'));
        release.kind = KeyEventKind::Release;
        assert_eq!(c.handle_key(release), ComposerEvent::Unhandled);
        let mut repeat = key(KeyCode::Char('y'));
        repeat.kind = KeyEventKind::Repeat;
        assert_eq!(c.handle_key(repeat), ComposerEvent::Changed);
        assert_eq!(c.text(), "xy");
    }

    #[test]
    fn paste_normalises_newlines_keeps_tabs_and_never_submits() {
        let mut c = typed("ab");
        c.handle_key(key(KeyCode::Left));
        c.paste("1\r\n2\r3\n\t4\n");
        assert_eq!(c.text(), "a1\n2\n3\n\t4\nb");
        assert_eq!(c.cursor_offset(), "a1\n2\n3\n\t4\n".len());
        assert!(c.history().is_empty());
    }

    #[test]
    fn history_walk_keeps_the_draft() {
        let mut c = Composer::new();
        c.set_history(vec!["old".into(), "older?".into()]);
        c.handle_key(key(KeyCode::Char('x')));
        c.handle_key(key(KeyCode::Enter));
        c.handle_key(key(KeyCode::Char('x')));
        c.handle_key(key(KeyCode::Enter));
        assert_eq!(
            c.history(),
            ["old", "older?", "x"],
            "no consecutive duplicates"
        );
        c.paste("draft");
        c.handle_key(key(KeyCode::Up));
        assert_eq!(c.text(), "x");
        c.handle_key(key(KeyCode::Up));
        assert_eq!(c.text(), "older?");
        c.handle_key(key(KeyCode::Up));
        assert_eq!(c.text(), "old");
        c.handle_key(key(KeyCode::Up));
        assert_eq!(c.text(), "old", "stays at the oldest");
        c.handle_key(key(KeyCode::Down));
        c.handle_key(key(KeyCode::Down));
        assert_eq!(c.text(), "x");
        c.handle_key(key(KeyCode::Down));
        assert_eq!(c.text(), "draft");
        assert_eq!(c.cursor_offset(), 5);
        c.handle_key(key(KeyCode::Down));
        assert_eq!(c.text(), "draft");
    }

    #[test]
    fn up_moves_between_rows_before_reaching_history() {
        let mut c = Composer::new();
        c.set_history(vec!["earlier".into()]);
        c.paste("abc\ndefgh");
        c.handle_key(key(KeyCode::Up));
        assert_eq!(c.text(), "abc\ndefgh");
        assert_eq!(c.cursor_offset(), 3, "column clamped to the shorter row");
        c.handle_key(key(KeyCode::Down));
        assert_eq!(c.cursor_offset(), 9, "goal column kept");
        c.handle_key(key(KeyCode::Up));
        c.handle_key(key(KeyCode::Up));
        assert_eq!(c.text(), "earlier");
        c.handle_key(key(KeyCode::Down));
        assert_eq!(c.text(), "abc\ndefgh");
    }

    #[test]
    fn up_and_down_follow_wrapped_rows() {
        let mut c = Composer::new();
        c.paste("alpha beta gamma");
        // Width 10: 7 text columns: "alpha ", "beta ", "gamma".
        assert_eq!(c.height(10, 10), 3);
        let _ = c.cursor(Rect::new(0, 0, 10, 3));
        c.handle_key(key(KeyCode::Up));
        assert_eq!(c.word_at_cursor(), (6, "beta"));
        c.handle_key(key(KeyCode::Up));
        assert_eq!(
            c.cursor_offset(),
            5,
            "stays on the first row, before the space"
        );
        c.handle_key(key(KeyCode::Down));
        c.handle_key(key(KeyCode::Down));
        assert_eq!(c.cursor_offset(), 16);
    }

    #[test]
    fn edited_history_entry_becomes_the_draft() {
        let mut c = Composer::new();
        c.set_history(vec!["a".into(), "b".into()]);
        c.handle_key(key(KeyCode::Up));
        c.handle_key(key(KeyCode::Char('!')));
        c.handle_key(key(KeyCode::Up));
        assert_eq!(c.text(), "b");
        c.handle_key(key(KeyCode::Down));
        assert_eq!(c.text(), "b!");
    }

    #[test]
    fn completion_helpers_work_on_the_word_before_the_cursor() {
        let mut c = typed("open @src/ma now");
        for _ in 0..4 {
            c.handle_key(key(KeyCode::Left));
        }
        assert_eq!(c.word_at_cursor(), (5, "@src/ma"));
        c.replace_to_cursor(5, "@src/main.rs");
        assert_eq!(c.text(), "open @src/main.rs now");
        assert_eq!(c.cursor_offset(), 17);
        // A bad start does not panic.
        c.replace_to_cursor(1000, "");
        assert_eq!(c.text(), "open @src/main.rs now");
        let mut c = Composer::new();
        c.paste("中");
        c.replace_to_cursor(1, "x");
        assert_eq!(c.text(), "x");
    }

    #[test]
    fn cursor_after_wide_chars_and_at_wrap_points() {
        let mut c = Composer::new();
        c.paste("中文ab");
        let area = Rect::new(3, 4, 20, 2);
        assert_eq!(c.cursor(area), Position::new(3 + 2 + 6, 4));
        c.handle_key(key(KeyCode::Home));
        c.handle_key(key(KeyCode::Right));
        assert_eq!(c.cursor(area), Position::new(3 + 2 + 2, 4));

        // Width 10: 7 columns of text. "aaaaaaa" fills the row; the cursor
        // sits in the kept column after it.
        let mut c = typed("aaaaaaa");
        assert_eq!(c.height(10, 5), 1);
        assert_eq!(c.cursor(Rect::new(0, 0, 10, 5)), Position::new(9, 0));
        c.handle_key(key(KeyCode::Char('b')));
        assert_eq!(c.height(10, 5), 2);
        assert_eq!(c.cursor(Rect::new(0, 0, 10, 5)), Position::new(3, 1));
        // After the space at a word wrap: the start of the next row.
        let mut c = typed("hello world");
        c.handle_key(with(KeyCode::Left, KeyModifiers::ALT));
        assert_eq!(c.cursor(Rect::new(0, 0, 10, 5)), Position::new(2, 1));
        // Wide chars that do not fit move to the next row whole.
        let mut c = Composer::new();
        c.paste("中文中文");
        assert_eq!(c.height(9, 5), 2);
        assert_eq!(c.cursor(Rect::new(0, 0, 9, 5)), Position::new(4, 1));
    }

    #[test]
    fn height_is_at_least_one_and_at_most_max() {
        let c = Composer::new();
        assert_eq!(c.height(40, 5), 1);
        let mut c = Composer::new();
        c.paste("1\n2\n3\n4\n5\n6\n7");
        assert_eq!(c.height(40, 5), 5);
        assert_eq!(c.height(40, 10), 7);
        let mut c = Composer::new();
        c.paste("x\n");
        assert_eq!(c.height(40, 10), 2, "the empty last line is a row");
    }

    #[test]
    fn prompt_is_accent_and_placeholder_dim() {
        let theme = Theme::dark();
        let area = Rect::new(0, 0, 20, 1);
        let mut buf = Buffer::empty(area);
        Composer::new().render(area, &mut buf, &theme, "Ask");
        assert_eq!(buf[(0, 0)].symbol(), "›");
        assert_eq!(buf[(0, 0)].fg, theme.style(Role::Accent).fg.unwrap());
        assert_eq!(buf[(2, 0)].fg, theme.style(Role::Dim).fg.unwrap());
        let mut buf = Buffer::empty(area);
        typed("hi").render(area, &mut buf, &theme, "Ask");
        assert_eq!(buf[(2, 0)].symbol(), "h");
        assert_ne!(buf[(2, 0)].fg, theme.style(Role::Dim).fg.unwrap());
    }

    #[test]
    fn snapshot_three_lines() {
        let mut c = Composer::new();
        c.paste("first line\nsecond, with 中文\n\tthird");
        let t = draw(&c, 30, 3, "");
        insta::assert_snapshot!(t.backend());
        assert_eq!(t.backend().cursor_position(), Position::new(2 + 4 + 5, 2));
    }

    #[test]
    fn snapshot_placeholder() {
        let c = Composer::new();
        let t = draw(&c, 30, 1, "Ask anything");
        insta::assert_snapshot!(t.backend());
        assert_eq!(t.backend().cursor_position(), Position::new(2, 0));
    }

    #[test]
    fn snapshot_wrapped_long_line_at_width_20() {
        let mut c = Composer::new();
        c.paste("The quick brown fox jumps over the lazy dog and a supercalifragilistic word");
        assert_eq!(c.height(20, 10), 6);
        let t = draw(&c, 20, 6, "");
        insta::assert_snapshot!(t.backend());
    }

    #[test]
    fn snapshot_scrolled_beyond_max_height() {
        let mut c = Composer::new();
        c.paste("one\ntwo\nthree\nfour\nfive\nsix");
        assert_eq!(c.height(20, 3), 3);
        let t = draw(&c, 20, 3, "");
        insta::assert_snapshot!(t.backend());
        assert_eq!(t.backend().cursor_position(), Position::new(5, 2));
        // Moving up past the top scrolls back, one row at a time.
        for _ in 0..3 {
            c.handle_key(key(KeyCode::Up));
        }
        let t = draw(&c, 20, 3, "");
        insta::assert_snapshot!("scrolled_up", t.backend());
        assert_eq!(t.backend().cursor_position(), Position::new(5, 0));
    }

    fn arb_key() -> impl Strategy<Value = KeyEvent> {
        let code = prop_oneof![
            prop::sample::select(vec![
                'a',
                ' ',
                '中',
                'é',
                '\u{301}',
                '👍',
                '\u{1f3fd}',
                '\t'
            ])
            .prop_map(KeyCode::Char),
            Just(KeyCode::Enter),
            Just(KeyCode::Backspace),
            Just(KeyCode::Delete),
            Just(KeyCode::Left),
            Just(KeyCode::Right),
            Just(KeyCode::Up),
            Just(KeyCode::Down),
            Just(KeyCode::Home),
            Just(KeyCode::End),
            Just(KeyCode::Esc),
            prop::sample::select(vec![
                'w', 'u', 'k', 'j', 'a', 'e', 'd', 'b', 'f', 'h', 'p', 'n'
            ])
            .prop_map(KeyCode::Char),
        ];
        let mods = prop::sample::select(vec![
            KeyModifiers::NONE,
            KeyModifiers::SHIFT,
            KeyModifiers::ALT,
            KeyModifiers::CONTROL,
        ]);
        (code, mods).prop_map(|(code, mods)| KeyEvent::new(code, mods))
    }

    proptest! {
        #[test]
        fn random_keys_never_panic(
            keys in prop::collection::vec(arb_key(), 0..60),
            paste in "[a \n\r中é\u{301}]{0,8}",
            width in 1u16..30,
        ) {
            let mut c = Composer::new();
            c.set_history(vec!["h1".into(), "h2\nh2".into()]);
            let area = Rect::new(0, 0, width, 4);
            for (i, k) in keys.into_iter().enumerate() {
                if i == 7 {
                    c.paste(&paste);
                }
                c.handle_key(k);
                let at = c.cursor_offset();
                prop_assert!(at <= c.text().len());
                prop_assert!(c.text().is_char_boundary(at));
                let pos = c.cursor(area);
                prop_assert!(pos.x < area.right() && pos.y < area.bottom());
                let _ = c.word_at_cursor();
            }
            let mut buf = Buffer::empty(area);
            c.render(area, &mut buf, &Theme::plain(), "…");
        }
    }
}
