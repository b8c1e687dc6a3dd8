//! The chat screen's state machine: keys, pastes, mouse wheel and the
//! session's events in; [`Action`]s out; a frame drawn on demand.
//!
//! The layout, top to bottom: the transcript (scrolled from its bottom,
//! following new output unless the user scrolled up), what waits in the
//! queue, an approval or a picker when one is open (or the completion
//! popup), the status line, and the composer, always the last rows.
//!
//! What the user types while a turn runs stays in the composer; Enter
//! queues it, and [`App::turn_ended`] hands the next queued message back.
//! Esc or Ctrl-C during a turn asks for its cancellation; the decision is
//! the host's.

use std::collections::{HashMap, VecDeque};

use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers, MouseEvent, MouseEventKind};
use evoflux_protocol::metadata::ResultMetadata;
use evoflux_protocol::{Event, Message, Usage};
use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Widget as _};

use crate::composer::{Composer, ComposerEvent};
use crate::picker::{Completion, CompletionEvent, Picker, PickerEvent, PickerItem};
use crate::status::Status;
use crate::theme::{Role, Theme};
use crate::tools::ToolShapes;
use crate::transcript::{NoticeKind, Transcript, line_text};
use crate::wrap;

/// Rows the composer may grow to.
const COMPOSER_MAX_ROWS: u16 = 10;
/// Rows the completion popup may take.
const COMPLETION_ROWS: u16 = 8;
/// Rows the mouse wheel scrolls per notch.
const WHEEL_ROWS: usize = 3;

/// What the screen asks of the session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Send this (a message, a `/command` or a `!command`; the CLI tells
    /// which).
    Submit(String),
    /// Cancel the running turn.
    Cancel,
    /// The user's answer to the approval of `call_id`.
    Decide {
        call_id: String,
        answer: ApprovalAnswer,
    },
    /// A row of a picker the CLI opened was chosen.
    Picked { kind: PickerKind, value: String },
    /// The answer typed at the form field [`App::ask_field`] put.
    FormAnswer(String),
    /// Esc or Ctrl-C at a form field: the form is cancelled.
    FormCancel,
    /// End the chat.
    Quit,
}

/// What a picker lists, so its choice goes where it belongs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PickerKind {
    /// Sessions to resume.
    Session,
    /// Models to switch to.
    Model,
    /// The options of the agent's question.
    Answer,
}

/// The answers an approval can get.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ApprovalAnswer {
    Once,
    ForSession,
    ForWorkspace,
    /// Denied, with what the user wants the model to read.
    Deny(Option<String>),
    /// Esc or Ctrl-C: the call is denied and the turn cancelled.
    Cancel,
}

/// Which "always" answers an approval may offer (the engine decides).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Remembers {
    Never,
    Session,
    SessionOrWorkspace,
}

/// What the user is asked to allow.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ApprovalSubject {
    /// A call of a tool whose policy asks.
    Call,
    /// One command outside the sandbox, for the agent's reason.
    OutsideSandbox { justification: String },
    /// A change of one of the agent's own controls.
    Control { path: String, control: String },
    /// An MCP server asks the model for an answer (sampling).
    Sampling {
        server: String,
        preview: String,
        max_tokens: u32,
    },
}

/// An approval put to the user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApprovalPrompt {
    pub call_id: String,
    pub tool: String,
    pub arguments: serde_json::Value,
    pub subject: ApprovalSubject,
    /// Where a command would run.
    pub workdir: Option<String>,
    pub remembers: Remembers,
}

/// An open approval, and the reason being typed after `n`.
#[derive(Debug)]
struct Asking {
    prompt: ApprovalPrompt,
    reason: Option<String>,
}

#[derive(Debug)]
enum Overlay {
    Approval(Asking),
    Picker { kind: PickerKind, picker: Picker },
}

/// The transcript search (Ctrl-F).
#[derive(Debug, Default)]
struct Search {
    query: String,
    /// The row of the current match, counted up from the last row (which
    /// stays put as cells above are drawn).
    at: Option<usize>,
}

/// Candidates for the word at the composer's cursor: `(start, [(shown,
/// replacement)])`. The CLI's completion of `/commands`, `@files` and
/// `$skills`.
pub type Completer = Box<dyn Fn(&str, usize) -> (usize, Vec<(String, String)>) + Send>;

/// The chat screen.
pub struct App {
    theme: Theme,
    transcript: Transcript,
    composer: Composer,
    status: Status,
    overlay: Option<Overlay>,
    completion: Option<Completion>,
    completer: Option<Completer>,
    queued: VecDeque<String>,
    running: bool,
    /// Rows scrolled up from the bottom; 0 follows new output.
    scroll: usize,
    /// The first cell drawn, the rows drawn and the width at the last
    /// draw: growth below is told from rows drawn above.
    last_tail: Option<(usize, usize, usize)>,
    /// The viewport's height and width at the last draw.
    last_view: usize,
    last_width: usize,
    search: Option<Search>,
    /// Ctrl-C at an empty, idle composer: a second one ends the chat.
    quit_armed: bool,
    /// A short message in the status line until the next key.
    hint: Option<String>,
    /// The MCP form field the composer answers now ([`App::ask_field`]).
    field: Option<String>,
}

impl std::fmt::Debug for App {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("App")
            .field("running", &self.running)
            .field("queued", &self.queued)
            .field("scroll", &self.scroll)
            .finish_non_exhaustive()
    }
}

impl App {
    pub fn new(theme: Theme) -> App {
        App {
            theme,
            transcript: Transcript::default(),
            composer: Composer::new(),
            status: Status::default(),
            overlay: None,
            completion: None,
            completer: None,
            queued: VecDeque::new(),
            running: false,
            scroll: 0,
            last_tail: None,
            last_view: 0,
            last_width: 80,
            search: None,
            quit_armed: false,
            hint: None,
            field: None,
        }
    }

    /// Asks one field of an MCP server's form: the prompt shows, and the
    /// next Enter answers it ([`Action::FormAnswer`]), even while a turn
    /// runs; Esc or Ctrl-C cancels the form ([`Action::FormCancel`]).
    pub fn ask_field(&mut self, prompt: impl Into<String>) {
        let prompt = prompt.into();
        self.notice(NoticeKind::Info, prompt.clone());
        self.field = Some(prompt);
    }

    /// The form is done (answered, declined or cancelled).
    pub fn end_form(&mut self) {
        self.field = None;
    }

    pub fn transcript(&mut self) -> &mut Transcript {
        &mut self.transcript
    }

    pub fn status(&mut self) -> &mut Status {
        &mut self.status
    }

    pub fn composer(&mut self) -> &mut Composer {
        &mut self.composer
    }

    /// Another session opened: its tools, its stored conversation, its
    /// usage so far; what was shown of the last one goes.
    pub fn open_session(&mut self, shapes: ToolShapes, messages: &[Message], usage: Usage) {
        self.open_session_with(shapes, messages, &HashMap::new(), usage);
    }

    /// [`App::open_session`] with the metadata stored beside results, by
    /// call id (diffs, exit codes).
    pub fn open_session_with(
        &mut self,
        shapes: ToolShapes,
        messages: &[Message],
        metadata: &HashMap<String, ResultMetadata>,
        usage: Usage,
    ) {
        self.transcript = Transcript::new(shapes);
        self.transcript.load_with(messages, metadata);
        self.status = Status {
            usage,
            ..Status::default()
        };
        self.scroll = 0;
        self.overlay = None;
    }

    /// The session's tools changed.
    pub fn set_tools(&mut self, shapes: ToolShapes) {
        self.transcript.set_shapes(shapes);
    }

    pub fn set_completer(&mut self, completer: Completer) {
        self.completer = Some(completer);
    }

    /// A notice in the conversation (what a `/command` answers).
    pub fn notice(&mut self, kind: NoticeKind, text: impl Into<String>) {
        self.transcript.notice(kind, text);
        self.scroll = 0;
    }

    /// A transient hint in the status line.
    pub fn hint(&mut self, text: impl Into<String>) {
        self.hint = Some(text.into());
    }

    /// One of the session's events.
    pub fn apply(&mut self, event: &Event) {
        self.status.apply(event);
        self.transcript.apply(event);
        if let Event::InputRequested { options, .. } = event
            && !options.is_empty()
        {
            let mut items: Vec<PickerItem> = options
                .iter()
                .map(|o| PickerItem {
                    label: o.clone(),
                    detail: String::new(),
                    value: o.clone(),
                })
                .collect();
            items.push(PickerItem {
                label: "Type another answer".into(),
                detail: "Esc".into(),
                value: String::new(),
            });
            self.overlay = Some(Overlay::Picker {
                kind: PickerKind::Answer,
                picker: Picker::new("The agent asks", items).without_search(),
            });
        }
    }

    /// The CLI sent a message: a turn runs until [`App::turn_ended`].
    pub fn turn_started(&mut self) {
        self.running = true;
        self.quit_armed = false;
    }

    /// The turn ended: the next queued message, which the CLI sends.
    pub fn turn_ended(&mut self) -> Option<String> {
        self.running = false;
        self.hint = None;
        if let Some(Overlay::Approval(_)) = self.overlay {
            self.overlay = None;
        }
        self.status.turn_started = None;
        self.queued.pop_front()
    }

    pub fn is_running(&self) -> bool {
        self.running
    }

    /// Something on screen moves by itself (a clock, a spinner): the CLI
    /// redraws on a timer while this holds.
    pub fn animating(&self) -> bool {
        self.running || self.transcript.has_running_call()
    }

    /// Puts an approval to the user; its answer comes back as
    /// [`Action::Decide`].
    pub fn ask_approval(&mut self, prompt: ApprovalPrompt) {
        self.overlay = Some(Overlay::Approval(Asking {
            prompt,
            reason: None,
        }));
    }

    /// The approval of `call_id` was decided elsewhere (another client,
    /// the cancellation): it is no longer asked.
    pub fn approval_closed(&mut self, call_id: &str) {
        if matches!(&self.overlay, Some(Overlay::Approval(a)) if a.prompt.call_id == call_id) {
            self.overlay = None;
        }
    }

    /// Opens a picker whose choice comes back as [`Action::Picked`].
    pub fn pick(&mut self, kind: PickerKind, title: &str, items: Vec<PickerItem>) {
        self.overlay = Some(Overlay::Picker {
            kind,
            picker: Picker::new(title, items),
        });
    }

    /// A bracketed paste: into the reason being typed, else the composer.
    pub fn paste(&mut self, text: &str) {
        if let Some(Overlay::Approval(Asking {
            reason: Some(reason),
            ..
        })) = &mut self.overlay
        {
            reason.push_str(&text.replace(['\r', '\n'], " "));
            return;
        }
        self.composer.paste(text);
        self.refresh_completion();
    }

    pub fn mouse(&mut self, event: MouseEvent) {
        match event.kind {
            MouseEventKind::ScrollUp => self.scroll_by(WHEEL_ROWS as isize),
            MouseEventKind::ScrollDown => self.scroll_by(-(WHEEL_ROWS as isize)),
            _ => {}
        }
    }

    fn scroll_by(&mut self, rows: isize) {
        // Up to the top when the last frame drew from the first cell; no
        // bound yet when cells above were not drawn (the frame clamps).
        let max = match self.last_tail {
            Some((0, rows, _)) => rows.saturating_sub(self.last_view),
            Some(_) => usize::MAX,
            None => 0,
        };
        self.scroll = self.scroll.saturating_add_signed(rows).min(max);
    }

    /// A key; what it asks of the session, if anything.
    pub fn key(&mut self, key: KeyEvent) -> Option<Action> {
        if key.kind == KeyEventKind::Release {
            return None;
        }
        self.hint = None;
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        let ctrl_c = ctrl && key.code == KeyCode::Char('c');
        if !ctrl_c {
            self.quit_armed = false;
        }
        if let Some(overlay) = &mut self.overlay {
            match overlay {
                Overlay::Approval(asking) => {
                    let (action, close) = approval_key(asking, key);
                    if close {
                        self.overlay = None;
                    }
                    return action;
                }
                Overlay::Picker { kind, picker } => {
                    let kind = *kind;
                    if ctrl_c {
                        self.overlay = None;
                        return self.running.then_some(Action::Cancel);
                    }
                    match picker.handle_key(key) {
                        PickerEvent::Chosen(value) => {
                            self.overlay = None;
                            return match kind {
                                PickerKind::Answer if value.is_empty() => None,
                                PickerKind::Answer => self.submit(value),
                                PickerKind::Session | PickerKind::Model => {
                                    Some(Action::Picked { kind, value })
                                }
                            };
                        }
                        PickerEvent::Cancelled => {
                            self.overlay = None;
                            return None;
                        }
                        PickerEvent::Changed => return None,
                        PickerEvent::Unhandled => {}
                    }
                    // An answer picker lets the user type their own.
                    if kind != PickerKind::Answer {
                        return None;
                    }
                    self.overlay = None;
                }
            }
        }
        if let Some(search) = &mut self.search {
            match key.code {
                KeyCode::Esc => self.search = None,
                KeyCode::Enter => self.find_next(),
                KeyCode::Char('f') if ctrl => self.find_next(),
                KeyCode::Backspace => {
                    search.query.pop();
                    search.at = None;
                }
                KeyCode::Char(c) if !ctrl => {
                    search.query.push(c);
                    search.at = None;
                    self.find_next();
                }
                _ => {}
            }
            return None;
        }
        match key.code {
            KeyCode::Char('c') if ctrl => return self.ctrl_c(),
            KeyCode::Char('d') if ctrl && self.composer.is_empty() && !self.running => {
                return Some(Action::Quit);
            }
            KeyCode::Char('o') if ctrl => {
                let all = self.transcript.toggle_expand_all();
                self.hint = Some(if all {
                    "every call's output is shown (Ctrl-O hides)".into()
                } else {
                    "call output collapsed (Ctrl-O shows)".into()
                });
                return None;
            }
            KeyCode::Char('f') if ctrl => {
                self.search = Some(Search::default());
                return None;
            }
            KeyCode::PageUp => {
                self.scroll_by(self.page() as isize);
                return None;
            }
            KeyCode::PageDown => {
                self.scroll_by(-(self.page() as isize));
                return None;
            }
            KeyCode::Home if ctrl || self.composer.is_empty() => {
                self.scroll = usize::MAX;
                self.scroll_by(0);
                return None;
            }
            KeyCode::End if ctrl || self.composer.is_empty() => {
                self.scroll = 0;
                return None;
            }
            KeyCode::Esc if self.completion.is_none() => {
                if self.field.take().is_some() {
                    return Some(Action::FormCancel);
                }
                if self.running {
                    return Some(Action::Cancel);
                }
                return None;
            }
            _ => {}
        }
        // Enter on what is already typed in full sends it.
        let typed_in_full = key.code == KeyCode::Enter
            && self.completion.as_ref().is_some_and(|c| {
                let (_, word) = self.composer.word_at_cursor();
                c.candidates
                    .get(c.selected)
                    .is_some_and(|(_, r)| r.trim_end() == word.trim_end())
            });
        if typed_in_full {
            self.completion = None;
        }
        if let Some(completion) = &mut self.completion {
            match completion.handle_key(key) {
                CompletionEvent::Accept { start, replacement } => {
                    self.completion = None;
                    self.composer.replace_to_cursor(start, &replacement);
                    self.refresh_completion();
                    return None;
                }
                CompletionEvent::Closed => {
                    self.completion = None;
                    return None;
                }
                CompletionEvent::Changed => return None,
                CompletionEvent::Unhandled => {}
            }
        }
        match self.composer.handle_key(key) {
            ComposerEvent::Submitted(text) => {
                self.completion = None;
                self.submit(text)
            }
            ComposerEvent::Changed => {
                self.refresh_completion();
                None
            }
            ComposerEvent::Unhandled => {
                if key.code == KeyCode::Tab {
                    self.refresh_completion();
                }
                None
            }
        }
    }

    /// Sends `text`, or queues it behind the running turn.
    fn submit(&mut self, text: String) -> Option<Action> {
        self.scroll = 0;
        if self.field.take().is_some() {
            return Some(Action::FormAnswer(text));
        }
        if self.running {
            self.queued.push_back(text);
            return None;
        }
        Some(Action::Submit(text))
    }

    fn ctrl_c(&mut self) -> Option<Action> {
        if self.field.take().is_some() {
            return Some(Action::FormCancel);
        }
        if self.running {
            return Some(Action::Cancel);
        }
        if !self.composer.is_empty() {
            self.composer.clear();
            self.completion = None;
            return None;
        }
        if self.quit_armed {
            return Some(Action::Quit);
        }
        self.quit_armed = true;
        self.hint = Some("Ctrl-C again (or Ctrl-D) ends the chat".into());
        None
    }

    fn page(&self) -> usize {
        self.last_view.saturating_sub(2).max(1)
    }

    /// Candidates for the word at the cursor, when it is one completion
    /// knows (`/command` at the start, `@path`, `$skill`).
    fn refresh_completion(&mut self) {
        let Some(completer) = &self.completer else {
            return;
        };
        let (_, word) = self.composer.word_at_cursor();
        let triggered = word.starts_with('@')
            || word.starts_with('$')
            || (word.starts_with('/') && self.composer.text().starts_with(word));
        if !triggered {
            self.completion = None;
            return;
        }
        let (start, candidates) = completer(self.composer.text(), self.composer.cursor_offset());
        // Nothing to offer, or exactly what is typed: no popup.
        if candidates.is_empty() || (candidates.len() == 1 && candidates[0].1 == word) {
            self.completion = None;
            return;
        }
        let selected = self.completion.as_ref().map_or(0, |c| c.selected);
        self.completion = Some(Completion {
            start,
            selected: selected.min(candidates.len() - 1),
            candidates,
        });
    }

    /// The next older row matching the search, scrolled into view.
    fn find_next(&mut self) {
        let Some(search) = &mut self.search else {
            return;
        };
        if search.query.is_empty() {
            return;
        }
        let width = self.last_width.max(1);
        let rows = self.transcript.text(width, &self.theme);
        let needle = search.query.to_lowercase();
        let from = search
            .at
            .map_or(rows.len(), |up| rows.len().saturating_sub(1 + up));
        let hit = rows[..from.min(rows.len())]
            .iter()
            .rposition(|r| r.to_lowercase().contains(&needle))
            .or_else(|| {
                rows.iter()
                    .rposition(|r| r.to_lowercase().contains(&needle))
            });
        match hit {
            Some(row) => {
                search.at = Some(rows.len() - 1 - row);
                // The match in the middle of the view.
                let bottom = row + self.last_view / 2;
                // Every row is drawn now: the next frame clamps to them.
                self.scroll = rows.len().saturating_sub(bottom + 1);
            }
            None => self.hint = Some(format!("no match for “{}”", search.query)),
        }
    }

    /// Draws the screen.
    pub fn draw(&mut self, frame: &mut Frame) {
        let area = frame.area();
        let width = area.width;
        let composer_rows = self.composer.height(width, COMPOSER_MAX_ROWS);
        let queued_rows = self.queued.len().min(3) as u16;
        let overlay_rows = match &self.overlay {
            Some(Overlay::Approval(a)) => {
                approval_lines(a, &self.transcript, width, &self.theme).len() as u16 + 2
            }
            Some(Overlay::Picker { picker, .. }) => picker.height(area.height / 2),
            None => match &self.completion {
                Some(c) => c.height(COMPLETION_ROWS),
                None => 0,
            },
        };
        let [transcript, queued, overlay, status, composer] = Layout::vertical([
            Constraint::Min(1),
            Constraint::Length(queued_rows),
            Constraint::Length(overlay_rows),
            Constraint::Length(1),
            Constraint::Length(composer_rows),
        ])
        .areas(area);
        self.last_width = transcript.width as usize;
        self.draw_transcript(frame, transcript);
        if queued_rows > 0 {
            let lines: Vec<Line> = self
                .queued
                .iter()
                .take(3)
                .map(|q| {
                    Line::from(vec![
                        Span::styled("queued › ", self.theme.style(Role::Dim)),
                        Span::raw(q.lines().next().unwrap_or_default().to_owned()),
                    ])
                })
                .collect();
            frame.render_widget(Paragraph::new(lines), queued);
        }
        match &self.overlay {
            Some(Overlay::Approval(a)) => {
                let lines = approval_lines(a, &self.transcript, width, &self.theme);
                let block = Block::default()
                    .borders(Borders::TOP | Borders::BOTTOM)
                    .border_style(self.theme.style(Role::Warning));
                frame.render_widget(Clear, overlay);
                frame.render_widget(Paragraph::new(lines).block(block), overlay);
            }
            Some(Overlay::Picker { picker, .. }) => {
                frame.render_widget(Clear, overlay);
                picker.render(overlay, frame.buffer_mut(), &self.theme);
            }
            None => {
                if let Some(c) = &self.completion {
                    frame.render_widget(Clear, overlay);
                    c.render(overlay, frame.buffer_mut(), &self.theme);
                }
            }
        }
        let status_line = match &self.search {
            Some(s) => Line::from(vec![
                Span::styled("search: ", self.theme.style(Role::Accent)),
                Span::raw(s.query.clone()),
                Span::styled(
                    "  (Enter: older match · Esc: done)",
                    self.theme.style(Role::Dim),
                ),
            ]),
            None => {
                let mut line = self
                    .status
                    .line(width as usize, &self.theme, self.hint.as_deref());
                if self.scroll > 0 {
                    line.spans.insert(
                        0,
                        Span::styled(
                            format!("↑ {} rows below · End ", self.scroll),
                            self.theme.style(Role::Accent),
                        ),
                    );
                }
                line
            }
        };
        Paragraph::new(status_line).render(status, frame.buffer_mut());
        let placeholder = if self.running {
            "type ahead: Enter queues the next message · Esc cancels"
        } else {
            "message the agent · / for commands · @ for files · $ for skills"
        };
        self.composer
            .render(composer, frame.buffer_mut(), &self.theme, placeholder);
        if self.overlay.is_none() && self.search.is_none() {
            frame.set_cursor_position(self.composer.cursor(composer));
        }
    }

    fn draw_transcript(&mut self, frame: &mut Frame, area: Rect) {
        let width = area.width as usize;
        let view = area.height as usize;
        let theme = self.theme;
        let last = self.last_tail;
        let wanted = view.saturating_add(self.scroll).saturating_add(1);
        let tail = self.transcript.tail(width, &theme, wanted);
        let total = tail.rows();
        // Scrolled up: keep the same rows in view as output grows below
        // (rows drawn above, on the way up, are not growth).
        if self.scroll > 0
            && let Some((start, rows, w)) = last
            && w == width
        {
            let above: usize = tail
                .cells
                .iter()
                .take(start.saturating_sub(tail.start))
                .map(|(gap, c)| usize::from(*gap) + c.len())
                .sum();
            let grown = total.saturating_sub(rows + above);
            self.scroll += grown;
        }
        let everything = tail.start == 0;
        if everything {
            self.scroll = self.scroll.min(total.saturating_sub(view));
        }
        self.last_tail = Some((tail.start, total, width));
        let bottom = total.saturating_sub(self.scroll);
        let top = bottom.saturating_sub(view);
        let matched = self.search.as_ref().and_then(|s| s.at);
        let mut rows: Vec<Line> = Vec::with_capacity(view);
        let mut row = 0;
        'cells: for (gap, cell) in &tail.cells {
            let blank = usize::from(*gap);
            if row + blank + cell.len() <= top {
                row += blank + cell.len();
                continue;
            }
            if *gap {
                if row >= top && row < bottom {
                    rows.push(Line::default());
                }
                row += 1;
            }
            for line in cell.iter() {
                if row >= bottom {
                    break 'cells;
                }
                if row >= top {
                    let mut line = line.clone();
                    // The search counts rows from the bottom.
                    if matched == Some(total - 1 - row) {
                        line = line.patch_style(theme.style(Role::Match));
                    }
                    rows.push(line);
                }
                row += 1;
            }
        }
        self.last_view = view;
        // Short conversations sit at the bottom, next to the composer.
        let pad = view.saturating_sub(rows.len());
        let area = Rect {
            y: area.y + pad as u16,
            height: area.height - pad as u16,
            ..area
        };
        frame.render_widget(Paragraph::new(rows), area);
    }
}

/// A key while an approval is open: what it decides, and whether the
/// approval closes.
fn approval_key(asking: &mut Asking, key: KeyEvent) -> (Option<Action>, bool) {
    let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
    let call_id = asking.prompt.call_id.clone();
    let decide = |answer| (Some(Action::Decide { call_id, answer }), true);
    if ctrl && key.code == KeyCode::Char('c') {
        return decide(ApprovalAnswer::Cancel);
    }
    if let Some(reason) = &mut asking.reason {
        return match key.code {
            KeyCode::Enter => {
                let reason = std::mem::take(reason);
                decide(ApprovalAnswer::Deny(
                    Some(reason.trim().to_owned()).filter(|r| !r.is_empty()),
                ))
            }
            KeyCode::Esc => decide(ApprovalAnswer::Deny(None)),
            KeyCode::Backspace => {
                reason.pop();
                (None, false)
            }
            KeyCode::Char(c) if !ctrl => {
                reason.push(c);
                (None, false)
            }
            _ => (None, false),
        };
    }
    let remembers = asking.prompt.remembers;
    let answer = match key.code {
        KeyCode::Char('y' | 'Y') => ApprovalAnswer::Once,
        KeyCode::Char('a' | 'A' | 's' | 'S')
            if matches!(
                remembers,
                Remembers::Session | Remembers::SessionOrWorkspace
            ) =>
        {
            ApprovalAnswer::ForSession
        }
        KeyCode::Char('w' | 'W') if remembers == Remembers::SessionOrWorkspace => {
            ApprovalAnswer::ForWorkspace
        }
        KeyCode::Char('n' | 'N') => {
            asking.reason = Some(String::new());
            return (None, false);
        }
        KeyCode::Esc => ApprovalAnswer::Cancel,
        _ => return (None, false),
    };
    decide(answer)
}

/// The approval box's lines: what would run, where, why, and the keys.
fn approval_lines(
    asking: &Asking,
    transcript: &Transcript,
    width: u16,
    theme: &Theme,
) -> Vec<Line<'static>> {
    let p = &asking.prompt;
    let width = width as usize;
    let summary = transcript.summary(&p.tool, &p.arguments);
    let title = match &p.subject {
        ApprovalSubject::Call => "Allow",
        ApprovalSubject::OutsideSandbox { .. } => "Run OUTSIDE the sandbox",
        ApprovalSubject::Control { .. } => "Let the agent change its own control",
        ApprovalSubject::Sampling { .. } => "Let an MCP server ask the model, during",
    };
    let mut lines = vec![Line::from(vec![
        Span::styled(format!("{title}: "), theme.style(Role::Warning)),
        Span::styled(summary, theme.style(Role::Bold)),
    ])];
    if let Some(command) = transcript.command_text(&p.tool, &p.arguments) {
        for l in command.lines().take(8) {
            lines.push(Line::from(vec![
                Span::styled("  $ ", theme.style(Role::Dim)),
                Span::raw(l.to_owned()),
            ]));
        }
    }
    if let Some(dir) = &p.workdir {
        lines.push(Line::from(Span::styled(
            format!("  in {dir}"),
            theme.style(Role::Dim),
        )));
    }
    match &p.subject {
        ApprovalSubject::Call => {}
        ApprovalSubject::OutsideSandbox { justification } => lines.push(Line::from(Span::styled(
            format!("  the agent says: {justification}"),
            theme.style(Role::Dim),
        ))),
        ApprovalSubject::Control { path, control } => lines.push(Line::from(Span::styled(
            format!("  {path}: {control} (takes effect from the next session)"),
            theme.style(Role::Dim),
        ))),
        ApprovalSubject::Sampling {
            server,
            preview,
            max_tokens,
        } => {
            lines.push(Line::from(Span::styled(
                format!("  {server} asks, for at most {max_tokens} tokens:"),
                theme.style(Role::Dim),
            )));
            for l in preview.lines().take(8) {
                lines.push(Line::from(vec![
                    Span::styled("  │ ", theme.style(Role::Dim)),
                    Span::raw(l.to_owned()),
                ]));
            }
        }
    }
    let keys = match (&asking.reason, p.remembers) {
        (Some(reason), _) => vec![
            Span::styled("why not? ", theme.style(Role::Accent)),
            Span::raw(reason.clone()),
            Span::styled(
                "▏ Enter sends · Esc denies without a reason",
                theme.style(Role::Dim),
            ),
        ],
        (None, remembers) => {
            let mut keys = vec!["[y] yes, once"];
            if matches!(
                remembers,
                Remembers::Session | Remembers::SessionOrWorkspace
            ) {
                keys.push("[a] always this session");
            }
            if remembers == Remembers::SessionOrWorkspace {
                keys.push("[w] always in this workspace");
            }
            keys.push("[n] no, and say why");
            keys.push("[Esc] cancel the turn");
            vec![Span::styled(keys.join("  "), theme.style(Role::Accent))]
        }
    };
    lines.push(Line::from(keys));
    lines
        .iter()
        .flat_map(|l| wrap::wrap_line(l, width.max(1), 2))
        .collect()
}

/// What the screen shows as plain text, row by row (tests, benchmarks).
pub fn screen_text(buffer: &ratatui::buffer::Buffer) -> Vec<String> {
    let area = buffer.area;
    (0..area.height)
        .map(|y| {
            let mut row = String::new();
            for x in 0..area.width {
                row.push_str(buffer[(x, y)].symbol());
            }
            row.trim_end().to_owned()
        })
        .collect()
}

/// A drawn line's text (re-exported for the CLI's tests).
pub fn text_of(line: &Line<'_>) -> String {
    line_text(line)
}
