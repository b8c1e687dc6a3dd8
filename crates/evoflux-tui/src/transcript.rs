//! The conversation as cells: what the user said, the agent's Markdown,
//! each tool call as one line a person would write (with its diff, its
//! output when expanded, and a delegated child's own calls nested under
//! it), and notices. Built from the session's events as they stream, or
//! from a stored conversation when a session is resumed.
//!
//! Each cell keeps its drawn lines for the width they were drawn at, so a
//! frame redraws only what changed (the streaming answer, a running
//! call's clock); a resumed session of thousands of messages is drawn
//! once.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use evoflux_protocol::events::{
    DecidedBy, DecisionKind, ElicitationAction, McpServerState, ServerLogLevel, ToolStatus,
    TurnStatus,
};
use evoflux_protocol::message::text_with_media_notes;
use evoflux_protocol::metadata::ResultMetadata;
use evoflux_protocol::{Event, Message};
use ratatui::text::{Line, Span};

use crate::theme::{Role, Theme};
use crate::tools::{self, ToolShapes};
use crate::{diff, lineage, markdown, wrap};

/// Rows of a collapsed call's output preview.
const PREVIEW_LINES: usize = 3;
/// Rows of a diff shown under an `edit` or `write` (more when expanded).
const DIFF_LINES: usize = 24;
/// Rows of an expanded call's output or diff.
const EXPANDED_LINES: usize = 400;
/// The last rows of a delegated child's answer shown under its call.
const CHILD_ANSWER_LINES: usize = 3;

/// How a notice reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoticeKind {
    Info,
    Warning,
    Error,
}

/// Where a tool call stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CallState {
    Running,
    /// Waiting for the user's approval.
    Asking,
    /// An `ask_user` question waiting for the user's answer (the next
    /// message).
    Question,
    Done,
    Failed,
    Cancelled,
    /// The user (or the policy) denied it; the reason the model read.
    Denied(Option<String>),
}

/// A delegated child session under the call that opened it.
#[derive(Debug)]
pub struct Child {
    pub agent: String,
    pub session_id: String,
    /// `None` while it runs.
    pub ended: Option<ChildEnd>,
    pub transcript: Transcript,
}

/// How a child's turn ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChildEnd {
    Completed(TurnStatus),
    Failed,
    Cancelled,
}

/// One tool call.
#[derive(Debug)]
pub struct ToolCell {
    /// What `/show N` names it by.
    pub number: usize,
    pub call_id: String,
    pub tool: String,
    pub summary: String,
    pub state: CallState,
    /// How the call's approval was decided, when it was asked.
    pub decided: Option<(DecisionKind, DecidedBy)>,
    pub content: Option<String>,
    /// Boxed: most calls have none, and a cell stays small.
    pub metadata: Option<Box<ResultMetadata>>,
    pub started: Option<Instant>,
    pub elapsed: Option<Duration>,
    pub expanded: bool,
    pub child: Option<Box<Child>>,
    /// The running call's last progress (`tool_progress`), worded.
    pub progress: Option<String>,
    /// The notes naming the images or audio its result carries
    /// ([`evoflux_protocol::message::media_notes_inline`]), shown on the
    /// call's line. Boxed: most calls have none, and a cell stays small.
    pub media_notes: Option<Box<str>>,
}

/// One entry of the conversation.
#[derive(Debug)]
pub enum Cell {
    User(String),
    Assistant { text: String, streaming: bool },
    Tool(ToolCell),
    Notice { kind: NoticeKind, text: String },
}

/// A cell with the lines it was last drawn as.
#[derive(Debug)]
struct Drawn {
    cell: Cell,
    /// `(width, lines)`; `None` when the cell changed since.
    lines: Option<(usize, Vec<Line<'static>>)>,
}

/// The conversation.
#[derive(Debug, Default)]
pub struct Transcript {
    cells: Vec<Drawn>,
    /// A call's cell by its id.
    calls: HashMap<String, usize>,
    shapes: ToolShapes,
    calls_made: usize,
    /// Every call's output shown whole (Ctrl-O).
    expand_all: bool,
    /// The agents from the session the user started down to this
    /// transcript's: its lead once the session started, and for a child's
    /// transcript its parent's lineage with the child's agent.
    lineage: Vec<String>,
    /// A delegated child's transcript, whose lineage its dispatch set
    /// (and nothing changes after; the child's header reads it).
    nested: bool,
    /// The streaming answer's finished blocks as last drawn: `(width,
    /// bytes, lines)`. A frame draws only the block still being written,
    /// so a long answer costs each frame its last paragraph, not itself.
    streamed: Option<Streamed>,
}

impl Transcript {
    pub fn new(shapes: ToolShapes) -> Transcript {
        Transcript {
            shapes,
            ..Transcript::default()
        }
    }

    /// The one-line summary of a call of `tool`.
    pub fn summary(&self, tool: &str, arguments: &serde_json::Value) -> String {
        self.shapes.summary(tool, arguments)
    }

    /// The whole command a call would run, when `tool` runs commands.
    pub fn command_text(&self, tool: &str, arguments: &serde_json::Value) -> Option<String> {
        self.shapes.command(tool, arguments)
    }

    /// The session's tools changed (its sources were applied again).
    pub fn set_shapes(&mut self, shapes: ToolShapes) {
        self.shapes = shapes;
    }

    pub fn len(&self) -> usize {
        self.cells.len()
    }

    pub fn is_empty(&self) -> bool {
        self.cells.is_empty()
    }

    /// The cells, oldest first.
    pub fn cells(&self) -> impl Iterator<Item = &Cell> {
        self.cells.iter().map(|d| &d.cell)
    }

    /// Empties it (another session was opened).
    pub fn clear(&mut self) {
        self.cells.clear();
        self.calls.clear();
        self.calls_made = 0;
        self.streamed = None;
        if !self.nested {
            self.lineage.clear();
        }
    }

    fn push(&mut self, cell: Cell) {
        if let Cell::Tool(t) = &cell {
            self.calls.insert(t.call_id.clone(), self.cells.len());
        }
        self.cells.push(Drawn { cell, lines: None });
    }

    /// A notice at the end of the conversation.
    pub fn notice(&mut self, kind: NoticeKind, text: impl Into<String>) {
        self.finish_answer();
        self.push(Cell::Notice {
            kind,
            text: text.into(),
        });
    }

    /// A stored conversation, as it was said: the user's messages, the
    /// agent's answers, each call with its result.
    pub fn load(&mut self, messages: &[Message]) {
        self.load_with(messages, &HashMap::new());
    }

    /// [`Transcript::load`], with the metadata stored beside results (by
    /// call id): a resumed `edit` shows its diff, a command its exit.
    pub fn load_with(&mut self, messages: &[Message], metadata: &HashMap<String, ResultMetadata>) {
        for m in messages {
            match m {
                Message::System { .. } => {}
                Message::User { content, media } => {
                    self.push(Cell::User(text_with_media_notes(content, media)));
                }
                Message::Assistant {
                    content,
                    tool_calls,
                    ..
                } => {
                    if !content.trim().is_empty() {
                        self.push(Cell::Assistant {
                            text: content.clone(),
                            streaming: false,
                        });
                    }
                    for call in tool_calls {
                        self.start_call(&call.id, &call.name, &call.arguments, None);
                    }
                }
                Message::Tool {
                    tool_call_id,
                    content,
                    is_error,
                    media,
                } => {
                    let status = ToolStatus::of(*is_error);
                    let content = text_with_media_notes(content, media);
                    self.end_call(tool_call_id, status, &content, metadata.get(tool_call_id));
                    let described: Vec<String> = media.iter().map(|m| m.describe()).collect();
                    self.set_media_notes(tool_call_id, described.iter().map(String::as_str));
                }
            }
        }
    }

    /// Applies one of the session's events.
    pub fn apply(&mut self, event: &Event) {
        match event {
            Event::TurnStarted { input, .. } => {
                self.finish_answer();
                if let Some(input) = input {
                    self.push(Cell::User(input.clone()));
                }
            }
            Event::MessageDelta { text } => self.delta(text),
            Event::WebSearch { search } => self.notice(
                NoticeKind::Info,
                match &search.query {
                    Some(q) => format!("searched the web: {q}"),
                    None => "searched the web".to_owned(),
                },
            ),
            Event::Citation { citation } => self.notice(
                NoticeKind::Info,
                match &citation.title {
                    Some(title) => format!("source: {title} ({})", citation.url),
                    None => format!("source: {}", citation.url),
                },
            ),
            Event::TurnCancelled { .. } => {
                self.finish_answer();
                self.end_open_calls(CallState::Cancelled);
                self.notice(NoticeKind::Warning, "cancelled");
            }
            Event::ToolStarted {
                call_id,
                tool,
                arguments,
            } => {
                self.finish_answer();
                self.start_call(call_id, tool, arguments, Some(Instant::now()));
            }
            Event::ApprovalRequested { call_id, .. } => {
                self.update_call(call_id, |t| t.state = CallState::Asking);
            }
            Event::ToolProgress {
                call_id,
                progress,
                total,
                message,
            } => self.update_call(call_id, |t| {
                t.progress = Some(evoflux_protocol::events::progress_label(
                    *progress,
                    *total,
                    message.as_deref(),
                ));
            }),
            // Warnings and worse are worth the user's eye; the rest is in
            // the web UI's call card and the event stream.
            Event::ToolLog {
                server,
                level,
                logger,
                message,
                ..
            } => {
                if *level >= ServerLogLevel::Warning {
                    let from = match logger {
                        Some(l) => format!("{server}/{l}"),
                        None => server.clone(),
                    };
                    self.notice(
                        NoticeKind::Warning,
                        format!("MCP server {from} ({}): {message}", level.as_str()),
                    );
                }
            }
            // The form itself is the app's (a prompt over the composer).
            Event::ElicitationRequested { .. } => {}
            Event::ElicitationAnswered { action, .. } => self.notice(
                NoticeKind::Info,
                match action {
                    ElicitationAction::Accept => "form sent",
                    ElicitationAction::Decline => "form declined",
                    ElicitationAction::Cancel => "form cancelled",
                },
            ),
            Event::ApprovalDecided {
                call_id,
                decision,
                reason,
                by,
            } => self.update_call(call_id, |t| {
                t.decided = Some((*decision, *by));
                t.state = match decision {
                    DecisionKind::Denied => CallState::Denied(reason.clone()),
                    DecisionKind::Approved
                    | DecisionKind::ApprovedForSession
                    | DecisionKind::ApprovedForWorkspace => {
                        // The call's clock counts its run, not the wait.
                        if t.started.is_some() {
                            t.started = Some(Instant::now());
                        }
                        CallState::Running
                    }
                };
            }),
            Event::ToolEnded {
                call_id,
                status,
                content,
                metadata,
                media,
                ..
            } => {
                self.end_call(call_id, *status, content, metadata.as_ref());
                self.set_media_notes(call_id, media.iter().map(|m| m.description.as_str()));
            }
            Event::CommandEnded {
                command, is_error, ..
            } => self.notice(
                if *is_error {
                    NoticeKind::Warning
                } else {
                    NoticeKind::Info
                },
                format!(
                    "background command ended{}: {command}",
                    if *is_error { " (failed)" } else { "" }
                ),
            ),
            Event::ModelSwitched { from, to } => self.notice(
                NoticeKind::Info,
                format!("model switched from {from} to {to}"),
            ),
            Event::PreviewStarted {
                preview_id, url, ..
            } => self.notice(
                NoticeKind::Info,
                format!("preview {preview_id} serving at {url}"),
            ),
            Event::PreviewStopped { preview_id } => {
                self.notice(NoticeKind::Info, format!("preview {preview_id} stopped"))
            }
            Event::McpServer {
                server,
                state,
                error,
                ..
            } => match state {
                McpServerState::Failed => self.notice(
                    NoticeKind::Warning,
                    format!(
                        "MCP server {server} failed: {}",
                        error.as_deref().unwrap_or("no reason given")
                    ),
                ),
                McpServerState::NeedsLogin => self.notice(
                    NoticeKind::Warning,
                    format!("MCP server {server} needs a login: evoflux mcp login {server}"),
                ),
                McpServerState::NeedsCredentials => self.notice(
                    NoticeKind::Warning,
                    format!("MCP server {server} waits for its plugin's credentials"),
                ),
                McpServerState::Missing => self.notice(
                    NoticeKind::Warning,
                    format!("the agent names MCP server {server}, which no source defines"),
                ),
                McpServerState::Starting
                | McpServerState::Ready
                | McpServerState::Stopped
                | McpServerState::Skipped => {}
            },
            Event::ContextCompacted {
                covered_messages, ..
            } => self.notice(
                NoticeKind::Info,
                format!(
                    "the {covered_messages} oldest messages were summarized to fit the context"
                ),
            ),
            Event::InputRequested {
                call_id,
                question,
                options,
            } => {
                self.update_call(call_id, |t| t.state = CallState::Question);
                let mut text = format!("The agent asks: {question}");
                for (i, o) in options.iter().enumerate() {
                    text.push_str(&format!("\n  {}. {o}", i + 1));
                }
                self.notice(NoticeKind::Info, text);
            }
            Event::TurnCompleted { status, .. } => {
                self.finish_answer();
                match status {
                    TurnStatus::Completed | TurnStatus::WaitingForInput => {}
                    TurnStatus::LimitReached => self.notice(
                        NoticeKind::Warning,
                        "the turn reached its limit of model calls",
                    ),
                    TurnStatus::CostLimitReached => self.notice(
                        NoticeKind::Warning,
                        "the session reached its cost limit ([limits] max_cost_usd)",
                    ),
                    TurnStatus::OutputMissing => self.notice(
                        NoticeKind::Warning,
                        "the turn ended without the structured result it needed",
                    ),
                }
            }
            Event::Error { code, message } => {
                self.notice(NoticeKind::Error, format!("{message} [{code}]"))
            }
            Event::TurnFailed { .. } => {
                self.finish_answer();
                self.end_open_calls(CallState::Failed);
            }
            Event::SourcesApplied { .. } => self.notice(
                NoticeKind::Info,
                "changed agents, skills, plugins or config apply from this message",
            ),
            Event::GraphInvalid {
                code,
                message,
                diagnostics,
            } => {
                let mut text = format!("changed sources were not applied: {message} [{code}]");
                for d in diagnostics.iter().take(5) {
                    text.push_str(&format!("\n  {d}"));
                }
                self.notice(NoticeKind::Error, text);
            }
            Event::DispatchStarted {
                call_id,
                agent,
                child_session_id,
                ..
            } => {
                let mut lineage = self.lineage.clone();
                lineage.push(agent.clone());
                let transcript = Transcript {
                    lineage,
                    nested: true,
                    ..Transcript::new(self.shapes.clone())
                };
                self.update_call(call_id, |t| {
                    t.child = Some(Box::new(Child {
                        agent: agent.clone(),
                        session_id: child_session_id.clone(),
                        ended: None,
                        transcript,
                    }))
                });
            }
            Event::DispatchEnded {
                call_id,
                status,
                is_error,
                ..
            } => self.update_call(call_id, |t| {
                if let Some(child) = t.child.as_mut() {
                    child.ended = Some(if *is_error {
                        ChildEnd::Failed
                    } else {
                        ChildEnd::Completed(*status)
                    });
                    child.transcript.finish_answer();
                }
            }),
            Event::TaskCancelled { call_id, .. } => self.update_call(call_id, |t| {
                if let Some(child) = t.child.as_mut() {
                    child.ended = Some(ChildEnd::Cancelled);
                }
            }),
            Event::TaskUpdate { message } => self.notice(NoticeKind::Info, message.clone()),
            Event::ToolsActivated { tools } => self.notice(
                NoticeKind::Info,
                format!("tools turned on: {}", tools.join(", ")),
            ),
            Event::Child { call_id, event } => {
                let inner = event.as_ref();
                self.update_call(call_id, |t| {
                    if let Some(child) = t.child.as_mut() {
                        child.transcript.apply(inner);
                    }
                });
            }
            Event::Warning { code, message } => {
                self.notice(NoticeKind::Warning, format!("{message} [{code}]"))
            }
            // Shown by the status line, not the conversation; the lead
            // heads the chain of every dispatch line.
            Event::SessionStarted { lead, .. } => {
                if !self.nested {
                    self.lineage = vec![lead.clone()];
                }
            }
            Event::ModelCallCompleted { .. } | Event::SessionTitled { .. } => {}
        }
    }

    /// Streamed words of the agent, added to its answer.
    fn delta(&mut self, text: &str) {
        if let Some(Drawn {
            cell:
                Cell::Assistant {
                    text: t,
                    streaming: true,
                },
            lines,
        }) = self.cells.last_mut()
        {
            t.push_str(text);
            *lines = None;
            return;
        }
        self.push(Cell::Assistant {
            text: text.to_owned(),
            streaming: true,
        });
    }

    /// The streaming answer is whole: it is drawn highlighted from now on.
    fn finish_answer(&mut self) {
        if let Some(Drawn {
            cell: Cell::Assistant { streaming, .. },
            lines,
        }) = self.cells.last_mut()
            && *streaming
        {
            *streaming = false;
            *lines = None;
        }
    }

    fn start_call(
        &mut self,
        call_id: &str,
        tool: &str,
        arguments: &serde_json::Value,
        started: Option<Instant>,
    ) {
        self.calls_made += 1;
        let summary = self.shapes.summary(tool, arguments);
        self.push(Cell::Tool(ToolCell {
            number: self.calls_made,
            call_id: call_id.to_owned(),
            tool: tool.to_owned(),
            summary,
            state: CallState::Running,
            decided: None,
            content: None,
            metadata: None,
            started,
            elapsed: None,
            expanded: false,
            child: None,
            progress: None,
            media_notes: None,
        }));
    }

    fn end_call(
        &mut self,
        call_id: &str,
        status: ToolStatus,
        content: &str,
        metadata: Option<&ResultMetadata>,
    ) {
        self.update_call(call_id, |t| {
            t.state = match (&t.state, status) {
                (CallState::Denied(r), _) => CallState::Denied(r.clone()),
                (_, ToolStatus::Completed) => CallState::Done,
                (_, ToolStatus::Failed) => CallState::Failed,
                (_, ToolStatus::Cancelled) => CallState::Cancelled,
            };
            t.content = Some(content.to_owned());
            t.metadata = metadata.cloned().map(Box::new);
            t.elapsed = t.started.map(|s| s.elapsed());
        });
    }

    /// Names the images or audio a call's result carries on its line.
    fn set_media_notes<'a>(&mut self, call_id: &str, described: impl IntoIterator<Item = &'a str>) {
        let notes = evoflux_protocol::message::media_notes_inline(described);
        if !notes.is_empty() {
            self.update_call(call_id, |t| t.media_notes = Some(notes.into_boxed_str()));
        }
    }

    /// Calls still open when a turn ended without closing them.
    fn end_open_calls(&mut self, state: CallState) {
        for d in &mut self.cells {
            if let Cell::Tool(t) = &mut d.cell
                && matches!(t.state, CallState::Running | CallState::Asking)
            {
                t.state = state.clone();
                t.elapsed = t.started.map(|s| s.elapsed());
                d.lines = None;
            }
        }
    }

    fn update_call(&mut self, call_id: &str, f: impl FnOnce(&mut ToolCell)) {
        let Some(&i) = self.calls.get(call_id) else {
            return;
        };
        if let Some(Drawn {
            cell: Cell::Tool(t),
            lines,
        }) = self.cells.get_mut(i)
        {
            f(t);
            *lines = None;
        }
    }

    /// Shows call `number`'s whole output (the last call's without one);
    /// `false` when there is no such call.
    pub fn expand(&mut self, number: Option<usize>) -> bool {
        let found = self.cells.iter_mut().rev().find(|d| match &d.cell {
            Cell::Tool(t) => number.is_none_or(|n| t.number == n),
            _ => false,
        });
        match found {
            Some(d) => {
                if let Cell::Tool(t) = &mut d.cell {
                    t.expanded = !t.expanded;
                }
                d.lines = None;
                true
            }
            None => false,
        }
    }

    /// Ctrl-O: every call's output shown whole, or none.
    pub fn toggle_expand_all(&mut self) -> bool {
        self.expand_all = !self.expand_all;
        for d in &mut self.cells {
            if matches!(d.cell, Cell::Tool(_)) {
                d.lines = None;
            }
        }
        self.expand_all
    }

    /// A call still runs (its clock ticks).
    pub fn has_running_call(&self) -> bool {
        self.cells.iter().any(|d| match &d.cell {
            Cell::Tool(t) => t.is_running(),
            _ => false,
        })
    }

    /// The last cells' lines at `width`, oldest first: at least `rows`
    /// rows of them (gaps included) when the conversation has that many,
    /// so a frame draws only what it can show. A cell is drawn when it
    /// changed since it was last drawn at this width, and a call that
    /// still runs every time (its clock moves). Each comes with whether a
    /// blank row goes before it: between cells, except between calls made
    /// one after another, which read as one list.
    pub fn tail(&mut self, width: usize, theme: &Theme, rows: usize) -> Tail<'_> {
        let expand_all = self.expand_all;
        let mut got = 0;
        let mut start = self.cells.len();
        while start > 0 {
            let i = start - 1;
            let d = &mut self.cells[i];
            let running = matches!(&d.cell, Cell::Tool(t) if t.is_running());
            let stale = !matches!(&d.lines, Some((w, _)) if *w == width);
            if got >= rows && (stale || running) {
                break;
            }
            if stale || running {
                let lines = match &d.cell {
                    Cell::Assistant {
                        text,
                        streaming: true,
                    } => draw_streaming(i, text, width, theme, &mut self.streamed),
                    cell => draw_cell(cell, &self.shapes, width, theme, expand_all),
                };
                d.lines = Some((width, lines));
            }
            got += d.lines.as_ref().map_or(0, |(_, l)| l.len()) + 1;
            start = i;
        }
        let cells = self.cells[start..]
            .iter()
            .enumerate()
            .filter_map(|(k, d)| {
                let i = start + k;
                let call = matches!(d.cell, Cell::Tool(_));
                let gap = i > 0 && !(call && matches!(self.cells[i - 1].cell, Cell::Tool(_)));
                d.lines.as_ref().map(|(_, l)| (gap, l.as_slice()))
            })
            .collect();
        Tail { start, cells }
    }

    /// Every cell's lines at `width` (see [`Transcript::tail`]).
    pub fn lines(&mut self, width: usize, theme: &Theme) -> Vec<(bool, &[Line<'static>])> {
        self.tail(width, theme, usize::MAX).cells
    }

    /// The drawn lines of the whole conversation at `width`, each as
    /// plain text (search, tests).
    pub fn text(&mut self, width: usize, theme: &Theme) -> Vec<String> {
        let mut out = Vec::new();
        for (gap, cell) in self.lines(width, theme) {
            if gap {
                out.push(String::new());
            }
            out.extend(cell.iter().map(line_text));
        }
        out
    }
}

impl ToolCell {
    /// The call runs now (it was seen starting in this chat, not loaded
    /// from a stored conversation where it never ended).
    fn is_running(&self) -> bool {
        (self.started.is_some() && matches!(self.state, CallState::Running | CallState::Asking))
            || self
                .child
                .as_ref()
                .is_some_and(|c| c.ended.is_none() || c.transcript.has_running_call())
    }
}

/// The last cells of the conversation, as a frame draws them.
#[derive(Debug)]
pub struct Tail<'a> {
    /// The index of the first cell here; the cells before it were not
    /// drawn.
    pub start: usize,
    /// Each cell with whether a blank row goes before it.
    pub cells: Vec<(bool, &'a [Line<'static>])>,
}

impl Tail<'_> {
    /// Its rows, gaps included.
    pub fn rows(&self) -> usize {
        self.cells
            .iter()
            .map(|(gap, c)| usize::from(*gap) + c.len())
            .sum()
    }
}

/// A line's text without its styles.
pub fn line_text(line: &Line<'_>) -> String {
    line.spans.iter().map(|s| s.content.as_ref()).collect()
}

fn draw_cell(
    cell: &Cell,
    shapes: &ToolShapes,
    width: usize,
    theme: &Theme,
    expand_all: bool,
) -> Vec<Line<'static>> {
    match cell {
        Cell::User(text) => {
            let mut out = Vec::new();
            for (i, line) in text.lines().enumerate() {
                let prefix = if i == 0 { "› " } else { "  " };
                let line = Line::from(vec![
                    Span::styled(prefix, theme.style(Role::Accent)),
                    Span::styled(line.to_owned(), theme.style(Role::User)),
                ]);
                out.extend(wrap::wrap_line(&line, width, 2));
            }
            if out.is_empty() {
                out.push(Line::from(Span::styled("›", theme.style(Role::Accent))));
            }
            out
        }
        Cell::Assistant { text, streaming } => markdown::render(text, width, !streaming, theme),
        Cell::Tool(t) => draw_call(t, shapes, width, theme, expand_all, 0),
        Cell::Notice { kind, text } => {
            let role = match kind {
                NoticeKind::Info => Role::Dim,
                NoticeKind::Warning => Role::Warning,
                NoticeKind::Error => Role::Error,
            };
            let mark = match kind {
                NoticeKind::Info => "· ",
                NoticeKind::Warning => "! ",
                NoticeKind::Error => "✗ ",
            };
            let mut out = Vec::new();
            for (i, line) in text.lines().enumerate() {
                let line = Line::from(Span::styled(
                    format!("{}{line}", if i == 0 { mark } else { "  " }),
                    theme.style(role),
                ));
                out.extend(wrap::wrap_line(&line, width, 2));
            }
            out
        }
    }
}

/// The answer being streamed: its finished blocks (up to the last blank
/// line outside a code fence) drawn once and kept in `kept`, then the
/// block still being written, drawn each time.
fn draw_streaming(
    cell: usize,
    text: &str,
    width: usize,
    theme: &Theme,
    kept: &mut Option<Streamed>,
) -> Vec<Line<'static>> {
    let done = finished_blocks(text);
    let reuse = matches!(kept, Some(k) if k.cell == cell && k.width == width && k.bytes == done);
    if !reuse {
        // Another answer, another width, or more finished blocks.
        *kept = Some(Streamed {
            cell,
            width,
            bytes: done,
            lines: markdown::render(&text[..done], width, false, theme),
        });
    }
    let mut out = kept.as_ref().map(|k| k.lines.clone()).unwrap_or_default();
    let rest = markdown::render(&text[done..], width, false, theme);
    if !out.is_empty() && !rest.is_empty() {
        out.push(Line::default());
    }
    out.extend(rest);
    out
}

/// The finished blocks of the answer being streamed, as last drawn.
#[derive(Debug)]
struct Streamed {
    /// The answer's cell.
    cell: usize,
    width: usize,
    /// The length of the finished blocks.
    bytes: usize,
    lines: Vec<Line<'static>>,
}

/// The length of `text`'s finished Markdown blocks: up to the end of its
/// last line that ends a block whatever follows (a blank line, a heading,
/// a closing code fence), never inside a fenced code block; 0 when there
/// is none.
fn finished_blocks(text: &str) -> usize {
    let mut fenced = false;
    let mut end = 0;
    let mut at = 0;
    for line in text.split_inclusive('\n') {
        at += line.len();
        if !line.ends_with('\n') {
            break;
        }
        let trimmed = line.trim_start();
        let fence = trimmed.starts_with("```") || trimmed.starts_with("~~~");
        if fence {
            fenced = !fenced;
            if !fenced {
                end = at;
            }
        } else if !fenced && (line.trim().is_empty() || is_heading(trimmed)) {
            end = at;
        }
    }
    end
}

/// An ATX heading line (`# Title` … `###### Title`).
fn is_heading(line: &str) -> bool {
    let hashes = line.bytes().take_while(|b| *b == b'#').count();
    (1..=6).contains(&hashes) && matches!(line.as_bytes().get(hashes), Some(b' ' | b'\t' | b'\n'))
}

/// The spinner frames of running calls and the status line.
pub const SPINNER: [&str; 10] = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];

/// The spinner frame for now: ten frames a second, from the clock, so
/// every part of the screen spins in step.
pub fn spinner_frame(since: Instant) -> &'static str {
    let tenths = since.elapsed().as_millis() / 100;
    SPINNER[(tenths % SPINNER.len() as u128) as usize]
}

fn draw_call(
    t: &ToolCell,
    shapes: &ToolShapes,
    width: usize,
    theme: &Theme,
    expand_all: bool,
    depth: usize,
) -> Vec<Line<'static>> {
    let indent = lineage::indent(depth);
    let (mark, mark_role) = match &t.state {
        CallState::Running => (
            t.started.map_or("•", spinner_frame).to_owned(),
            Role::Accent,
        ),
        CallState::Asking | CallState::Question => ("?".to_owned(), Role::Warning),
        CallState::Done => ("✓".to_owned(), Role::Success),
        CallState::Failed => ("✗".to_owned(), Role::Error),
        CallState::Cancelled => ("■".to_owned(), Role::Warning),
        CallState::Denied(_) => ("⊘".to_owned(), Role::Error),
    };
    let mut head = vec![
        Span::raw(indent.clone()),
        Span::styled(format!("{mark} "), theme.style(mark_role)),
        Span::styled(t.summary.clone(), theme.style(Role::Bold)),
    ];
    let detail = match &t.state {
        CallState::Running => {
            let clock = t
                .started
                .map(|s| format!("{:.0} s", s.elapsed().as_secs_f64().floor()));
            match (clock, &t.progress) {
                (Some(c), Some(p)) => Some(format!("{c}, {p}")),
                (clock, progress) => clock.or_else(|| progress.clone()),
            }
        }
        CallState::Asking => Some("waiting for approval".to_owned()),
        CallState::Question => Some("waiting for your answer".to_owned()),
        CallState::Done | CallState::Failed => Some(tools::outcome(
            matches!(t.state, CallState::Failed),
            t.content.as_deref().unwrap_or_default(),
            t.metadata.as_deref(),
            t.elapsed,
        )),
        CallState::Cancelled => Some("cancelled".to_owned()),
        CallState::Denied(reason) => Some(match reason {
            Some(r) if !r.is_empty() => format!("denied: {r}"),
            _ => "denied".to_owned(),
        }),
    };
    let remembered = match t.decided {
        Some((DecisionKind::ApprovedForSession, _)) => Some("approved for this session"),
        Some((DecisionKind::ApprovedForWorkspace, _)) => Some("approved in this workspace"),
        _ => None,
    };
    let mut details: Vec<String> = detail.into_iter().collect();
    details.extend(remembered.map(str::to_owned));
    // A terminal cannot show the result's images: the line says they exist.
    details.extend(t.media_notes.as_deref().map(str::to_owned));
    if !details.is_empty() {
        head.push(Span::styled(
            format!(" ({})", details.join(", ")),
            theme.style(Role::Dim),
        ));
    }
    head.push(Span::styled(
        format!("  #{}", t.number),
        theme.style(Role::Dim),
    ));
    let body_indent = depth * 2 + 2;
    let mut out = wrap::wrap_line(&Line::from(head), width, body_indent);
    let expanded = t.expanded || expand_all;
    let inner = width.saturating_sub(body_indent).max(1);
    let pad = |lines: Vec<Line<'static>>| -> Vec<Line<'static>> {
        lines
            .into_iter()
            .map(|mut l| {
                l.spans.insert(0, Span::raw(" ".repeat(body_indent)));
                l
            })
            .collect()
    };
    // What the call changed in a file, as a diff.
    if let Some(change) = file_change(t) {
        let rows = if expanded { EXPANDED_LINES } else { DIFF_LINES };
        out.extend(pad(diff::render(change, inner, rows, theme)));
    } else if let Some(content) = &t.content {
        let show = expanded
            || matches!(t.state, CallState::Failed)
            || t.metadata.as_ref().is_some_and(|m| m.command.is_some());
        if show {
            let rows = if expanded {
                EXPANDED_LINES
            } else {
                PREVIEW_LINES
            };
            let (lines, left) = shapes.output_preview(&t.tool, content, rows);
            let mut drawn = Vec::new();
            for l in lines {
                drawn.extend(wrap::wrap_line(
                    &Line::from(Span::styled(l, theme.style(Role::Dim))),
                    inner,
                    0,
                ));
            }
            if left > 0 {
                drawn.push(Line::from(Span::styled(
                    format!(
                        "… {left} more line{} (Ctrl-O shows all, /show {})",
                        if left == 1 { "" } else { "s" },
                        t.number
                    ),
                    theme.style(Role::Dim),
                )));
            }
            out.extend(pad(drawn));
        }
    }
    if let Some(child) = &t.child {
        out.extend(draw_child(
            child,
            shapes,
            width,
            theme,
            expand_all,
            depth + 1,
        ));
    }
    out
}

/// The diff of what the call changed in a file.
fn file_change(t: &ToolCell) -> Option<&str> {
    t.metadata
        .as_ref()
        .and_then(|m| m.change.as_deref())
        .map(|c| c.diff.as_str())
        .filter(|d| !d.is_empty())
}

fn draw_child(
    child: &Child,
    shapes: &ToolShapes,
    width: usize,
    theme: &Theme,
    expand_all: bool,
    depth: usize,
) -> Vec<Line<'static>> {
    // `depth` is the step of the call's own lines plus one: for a child
    // `d` dispatches down, [`lineage::dispatch_step`] of `d`.
    let indent = lineage::indent(depth);
    let status = match child.ended {
        None => "working".to_owned(),
        Some(ChildEnd::Completed(TurnStatus::Completed)) => "done".to_owned(),
        Some(ChildEnd::Completed(TurnStatus::WaitingForInput)) => "asks a question".to_owned(),
        Some(ChildEnd::Completed(s)) => format!("ended: {}", s.as_str()),
        Some(ChildEnd::Failed) => "failed".to_owned(),
        Some(ChildEnd::Cancelled) => "cancelled".to_owned(),
    };
    // The chain from the session the user started, the child's own agent
    // stressed: `↳ evoflux → planner → coder (working)`.
    let chain = &child.transcript.lineage;
    let above = chain.len().saturating_sub(1);
    let mut header = vec![
        Span::raw(indent.clone()),
        Span::styled("↳ ", theme.style(Role::Dim)),
    ];
    if above > 0 {
        header.push(Span::styled(
            format!("{}{}", lineage::chain(&chain[..above]), lineage::ARROW),
            theme.style(Role::Dim),
        ));
    }
    header.push(Span::styled(child.agent.clone(), theme.style(Role::Accent)));
    header.push(Span::styled(format!(" ({status})"), theme.style(Role::Dim)));
    let mut out = vec![Line::from(header)];
    let mut answer: Option<&str> = None;
    for cell in child.transcript.cells() {
        match cell {
            Cell::Tool(t) => out.extend(draw_call(t, shapes, width, theme, expand_all, depth + 1)),
            Cell::Assistant { text, .. } => answer = Some(text),
            Cell::Notice { kind, text } if *kind != NoticeKind::Info => {
                out.push(Line::from(vec![
                    Span::raw(format!("{indent}  ")),
                    Span::styled(
                        text.lines().next().unwrap_or_default().to_owned(),
                        theme.style(Role::Warning),
                    ),
                ]));
            }
            Cell::Notice { .. } | Cell::User(_) => {}
        }
    }
    if let Some(answer) = answer {
        let body = depth * 2 + 2;
        let lines = markdown::render(answer, width.saturating_sub(body).max(1), false, theme);
        let skip = if expand_all {
            0
        } else {
            lines.len().saturating_sub(CHILD_ANSWER_LINES)
        };
        for mut l in lines.into_iter().skip(skip) {
            l.spans.insert(0, Span::raw(" ".repeat(body)));
            for s in &mut l.spans[1..] {
                s.style = s.style.patch(theme.style(Role::Dim));
            }
            out.push(l);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn transcript() -> Transcript {
        Transcript::new(ToolShapes::default())
    }

    #[test]
    fn streamed_words_join_one_answer_until_a_call_starts() {
        let mut t = transcript();
        t.apply(&Event::TurnStarted {
            session_id: "s".into(),
            input: Some("hi".into()),
            after_entry: None,
        });
        t.apply(&Event::MessageDelta { text: "Hel".into() });
        t.apply(&Event::MessageDelta { text: "lo".into() });
        t.apply(&Event::ToolStarted {
            call_id: "c1".into(),
            tool: "read".into(),
            arguments: json!({"path": "a"}),
        });
        t.apply(&Event::MessageDelta {
            text: "after".into(),
        });
        let cells: Vec<&Cell> = t.cells().collect();
        assert!(matches!(cells[0], Cell::User(u) if u == "hi"));
        assert!(matches!(cells[1], Cell::Assistant { text, streaming: false } if text == "Hello"));
        assert!(matches!(cells[2], Cell::Tool(c) if c.state == CallState::Running));
        assert!(matches!(cells[3], Cell::Assistant { text, streaming: true } if text == "after"));
    }

    #[test]
    fn a_streaming_answer_draws_as_the_whole_answer_does() {
        let answer = "# Plan\n\nFirst **step**.\n\n```rust\nfn a() {}\n\nfn b() {}\n```\n\n- one\n- two\n\nLast words\n## Next\n- item with `code`\n```\nfn c() {}\n```\nProse after the fence.\n## End\nDone";
        assert_eq!(finished_blocks("no blank"), 0);
        assert_eq!(finished_blocks("a\n\nb"), 3);
        // A blank line inside a fence finishes nothing; its closing does.
        assert_eq!(finished_blocks("a\n\n```\nx\n\ny"), 3);
        assert_eq!(finished_blocks("```\nx\n```\nmore"), 10);
        assert_eq!(finished_blocks("## H\n- item"), 5);
        assert_eq!(finished_blocks("#hashtag\ntext"), 0);
        let theme = Theme::plain();
        let whole: Vec<String> = markdown::render(answer, 40, false, &theme)
            .iter()
            .map(line_text)
            .collect();
        let mut kept = None;
        // Streamed in pieces, the last draw is what the whole draws.
        for end in [10, 30, 60, 90, 120, 140, answer.len()] {
            draw_streaming(3, &answer[..end], 40, &theme, &mut kept);
        }
        let streamed: Vec<String> = draw_streaming(3, answer, 40, &theme, &mut kept)
            .iter()
            .map(line_text)
            .collect();
        assert_eq!(streamed, whole);
    }

    #[test]
    fn a_denied_call_keeps_its_reason_after_it_ends() {
        let mut t = transcript();
        t.apply(&Event::ToolStarted {
            call_id: "c".into(),
            tool: "shell".into(),
            arguments: json!({"command": "rm -rf /"}),
        });
        t.apply(&Event::ApprovalRequested {
            call_id: "c".into(),
            tool: "shell".into(),
            outside_sandbox: None,
            control: None,
            workdir: None,
            sampling: None,
        });
        t.apply(&Event::ApprovalDecided {
            call_id: "c".into(),
            decision: DecisionKind::Denied,
            reason: Some("not that".into()),
            by: DecidedBy::User,
        });
        t.apply(&Event::ToolEnded {
            call_id: "c".into(),
            tool: "shell".into(),
            status: ToolStatus::Failed,
            is_error: true,
            content: "The user denied it: not that".into(),
            metadata: None,
            media: Vec::new(),
        });
        let text = t.text(80, &Theme::plain()).join("\n");
        assert!(text.contains("⊘"), "{text}");
        assert!(text.contains("denied: not that"), "{text}");
    }

    #[test]
    fn a_result_s_image_is_named_on_its_call_s_line() {
        let mut t = transcript();
        t.apply(&Event::ToolStarted {
            call_id: "c".into(),
            tool: "browser".into(),
            arguments: json!({"action": "screenshot"}),
        });
        let mut shot = evoflux_protocol::Media::new(
            evoflux_protocol::MediaKind::Image,
            "image/png",
            "iVBORw0KGgo=",
        );
        shot.name = Some("screenshot-1.png".into());
        t.apply(&Event::ToolEnded {
            call_id: "c".into(),
            tool: "browser".into(),
            status: ToolStatus::Completed,
            is_error: false,
            content: text_with_media_notes("Screenshot of the page", std::slice::from_ref(&shot)),
            metadata: None,
            media: evoflux_protocol::MediaRef::of_entry(4, &[shot]),
        });
        let text = t.text(120, &Theme::plain()).join("\n");
        let line = text.lines().find(|l| l.contains('✓')).unwrap_or_default();
        assert!(
            line.contains("[image: screenshot-1.png, image/png, 8 B]"),
            "{text}"
        );
    }

    #[test]
    fn a_child_s_calls_are_nested_under_the_dispatch() {
        let mut t = transcript();
        t.apply(&Event::ToolStarted {
            call_id: "d".into(),
            tool: "delegate".into(),
            arguments: json!({"agent": "reviewer"}),
        });
        t.apply(&Event::DispatchStarted {
            call_id: "d".into(),
            agent: "reviewer".into(),
            child_session_id: "child".into(),
            parent_session_id: "lead".into(),
            depth: 1,
        });
        t.apply(&Event::Child {
            call_id: "d".into(),
            event: Box::new(Event::ToolStarted {
                call_id: "x".into(),
                tool: "ls".into(),
                arguments: json!({}),
            }),
        });
        let text = t.text(80, &Theme::plain());
        let child = text.iter().position(|l| l.contains("↳ reviewer")).unwrap();
        assert!(text[child].contains("working"));
        assert!(text[child + 1].starts_with("    "), "{text:?}");
    }

    /// `Event::Child` wrapped `levels` deep, each level under call `d<n>`.
    fn nested(levels: usize, event: Event) -> Event {
        (1..=levels).rev().fold(event, |inner, level| Event::Child {
            call_id: format!("d{level}"),
            event: Box::new(inner),
        })
    }

    fn dispatch(level: usize, agent: &str) -> [Event; 2] {
        let call_id = format!("d{}", level + 1);
        [
            nested(
                level,
                Event::ToolStarted {
                    call_id: call_id.clone(),
                    tool: "agent".into(),
                    arguments: json!({"agent_id": agent, "message": "go"}),
                },
            ),
            nested(
                level,
                Event::DispatchStarted {
                    call_id,
                    agent: agent.into(),
                    child_session_id: format!("s{}", level + 1),
                    parent_session_id: format!("s{level}"),
                    depth: level as u32 + 1,
                },
            ),
        ]
    }

    #[test]
    fn a_depth_two_dispatch_is_nested_under_its_parent_with_its_chain() {
        let mut t = transcript();
        t.apply(&Event::SessionStarted {
            session_id: "s0".into(),
            mode: evoflux_core::AppMode::Work,
            workspace: Vec::new(),
            lead: "evoflux".into(),
            model: "scripted:lead".into(),
            resumed: false,
            tools: Vec::new(),
            unavailable_tools: Vec::new(),
        });
        // lead → planner (depth 1) → coder (depth 2), whose own session
        // starts as the child's does: it names no new chain.
        for e in dispatch(0, "planner")
            .into_iter()
            .chain(dispatch(1, "coder"))
        {
            t.apply(&e);
        }
        t.apply(&nested(
            2,
            Event::SessionStarted {
                session_id: "s2".into(),
                mode: evoflux_core::AppMode::Work,
                workspace: Vec::new(),
                lead: "coder".into(),
                model: "scripted:coder".into(),
                resumed: false,
                tools: Vec::new(),
                unavailable_tools: Vec::new(),
            },
        ));
        t.apply(&nested(
            2,
            Event::ToolStarted {
                call_id: "x".into(),
                tool: "ls".into(),
                arguments: json!({}),
            },
        ));
        let text = t.text(80, &Theme::plain());
        let at = |needle: &str| {
            text.iter()
                .position(|l| l.contains(needle))
                .unwrap_or_else(|| panic!("no {needle:?} in {text:#?}"))
        };
        let indent = |row: usize| text[row].len() - text[row].trim_start().len();
        let planner = at("↳ evoflux → planner (working)");
        let coder = at("↳ evoflux → planner → coder (working)");
        let ls = at("ls");
        // In order, each level further in than the one that dispatched it.
        assert!(planner < coder && coder < ls, "{text:#?}");
        assert!(indent(planner) < indent(coder), "{text:#?}");
        assert!(indent(coder) < indent(ls), "{text:#?}");
        // The coder's header sits under the planner's call of it.
        let call = (planner..coder)
            .rev()
            .find(|&r| text[r].contains("coder") && !text[r].contains('↳'))
            .unwrap_or_else(|| panic!("no call of the coder in {text:#?}"));
        assert!(indent(planner) < indent(call) && indent(call) <= indent(coder));
        // At the steps every front end puts them (two columns a step).
        let cols = |step: usize| lineage::indent(step).len();
        assert_eq!(indent(planner), cols(lineage::dispatch_step(1)));
        assert_eq!(indent(call), cols(lineage::session_step(1)));
        assert_eq!(indent(coder), cols(lineage::dispatch_step(2)));
        assert_eq!(indent(ls), cols(lineage::session_step(2)));
        // Ending the depth-2 child marks its header, not its parent's.
        t.apply(&nested(
            1,
            Event::DispatchEnded {
                call_id: "d2".into(),
                agent: "coder".into(),
                child_session_id: "s2".into(),
                parent_session_id: "s1".into(),
                depth: 2,
                status: TurnStatus::Completed,
                is_error: false,
                contract: None,
                repairs: 0,
            },
        ));
        let text = t.text(80, &Theme::plain()).join("\n");
        assert!(
            text.contains("↳ evoflux → planner → coder (done)"),
            "{text}"
        );
        assert!(text.contains("↳ evoflux → planner (working)"), "{text}");
    }

    #[test]
    fn a_cancelled_turn_ends_its_open_calls() {
        let mut t = transcript();
        t.apply(&Event::ToolStarted {
            call_id: "c".into(),
            tool: "shell".into(),
            arguments: json!({"command": "sleep 100"}),
        });
        assert!(t.has_running_call());
        t.apply(&Event::TurnCancelled {
            session_id: "s".into(),
        });
        assert!(!t.has_running_call());
    }

    #[test]
    fn a_stored_conversation_loads_calls_with_their_results() {
        let mut t = transcript();
        t.load(&[
            Message::user("list it"),
            Message::Assistant {
                content: String::new(),
                tool_calls: vec![evoflux_protocol::message::ToolCall {
                    id: "1".into(),
                    name: "ls".into(),
                    arguments: json!({}),
                }],
                provider_items: Vec::new(),
            },
            Message::Tool {
                tool_call_id: "1".into(),
                content: "a\nb".into(),
                is_error: false,
                media: Vec::new(),
            },
            Message::Assistant {
                content: "Two files.".into(),
                tool_calls: Vec::new(),
                provider_items: Vec::new(),
            },
        ]);
        let cells: Vec<&Cell> = t.cells().collect();
        assert_eq!(cells.len(), 3);
        assert!(matches!(cells[1], Cell::Tool(c) if c.state == CallState::Done));
        assert!(!t.has_running_call(), "a stored call does not tick");
        assert!(t.expand(Some(1)));
        assert!(!t.expand(Some(7)));
    }

    #[test]
    fn stored_images_are_named_where_a_terminal_cannot_show_them() {
        use evoflux_protocol::{Media, MediaKind};
        let mut t = transcript();
        t.load(&[Message::user_with_media(
            "what is this?",
            vec![Media::new(MediaKind::Image, "image/png", "AAAA")],
        )]);
        let cells: Vec<&Cell> = t.cells().collect();
        assert!(
            matches!(cells[0], Cell::User(u) if u == "what is this?\n[image: image/png, 3 B]"),
            "{cells:?}"
        );
    }
}
