//! What the chat shows of a session's events: the agent's words as
//! streaming Markdown on stdout; tool activity on stderr as one numbered
//! line each, whose full output `/show N` prints; a spinner while the model
//! thinks or a tool runs. Events the chat does not treat specially are
//! worded by the same renderer `evoflux run` uses.

use std::io::Write as _;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use evoflux_harness::{Event, EventSink};
use evoflux_protocol::Message;
use evoflux_protocol::message::text_with_media_notes;

use super::markdown::{MarkdownStream, Style};
use crate::commands::sessions::with_media_notes;
use crate::frontend::printer::{HumanEvents, clip};

/// One tool call's output, kept for `/show`.
#[derive(Debug, Clone)]
pub struct Observation {
    pub tool: String,
    pub content: String,
    pub is_error: bool,
    /// The descriptions of the images or audio the result carries
    /// ([`evoflux_protocol::Media::describe`]), named on the call's line.
    pub media: Vec<String>,
}

#[derive(Debug)]
struct State {
    md: MarkdownStream,
    /// The agent's text ended without a newline.
    mid_line: bool,
    observations: Vec<Observation>,
}

/// The chat's event sink.
#[derive(Debug)]
pub struct ChatView {
    style: Style,
    state: Mutex<State>,
    plain: HumanEvents,
    spinner: Spinner,
}

impl ChatView {
    pub fn new(style: Style) -> ChatView {
        ChatView {
            style,
            state: Mutex::new(State {
                md: MarkdownStream::new(style),
                mid_line: false,
                observations: Vec::new(),
            }),
            plain: HumanEvents::default(),
            spinner: Spinner::new(style == Style::Ansi && stderr_is_terminal()),
        }
    }

    pub fn style(&self) -> Style {
        self.style
    }

    /// Tool call `n` (1-based), or the last one.
    pub fn observation(&self, n: Option<usize>) -> Option<(usize, Observation)> {
        let state = self.state.lock().ok()?;
        let index = match n {
            Some(n) => n.checked_sub(1)?,
            None => state.observations.len().checked_sub(1)?,
        };
        state
            .observations
            .get(index)
            .cloned()
            .map(|o| (index + 1, o))
    }

    /// Forgets the previous session's tool outputs and numbers those of
    /// `messages` (a resumed conversation) from 1.
    pub fn load(&self, messages: &[Message]) {
        let Ok(mut state) = self.state.lock() else {
            return;
        };
        state.observations = conversation(messages)
            .into_iter()
            .filter_map(|e| match e {
                Entry::Tool(o) => Some(o),
                Entry::User(_) | Entry::Assistant(_) | Entry::Call(..) => None,
            })
            .collect();
    }

    /// Prints `messages`: the last `limit` entries (all without a limit),
    /// saying how many earlier ones `/history` would show.
    pub fn replay(&self, messages: &[Message], limit: Option<usize>) {
        let entries = conversation(messages);
        let skip = limit.map_or(0, |l| entries.len().saturating_sub(l));
        if skip > 0 {
            eprintln!(
                "{}",
                self.style.paint(
                    "2",
                    &format!("… {skip} earlier entries (/history shows them all)")
                )
            );
        }
        let mut tool_number = 0;
        for (i, entry) in entries.iter().enumerate() {
            if let Entry::Tool(_) = entry {
                tool_number += 1;
            }
            if i < skip {
                continue;
            }
            match entry {
                Entry::User(text) => {
                    println!("{} {text}", self.style.paint("1;32", "you:"));
                }
                Entry::Assistant(text) => {
                    let mut md = MarkdownStream::new(self.style);
                    let mut out = md.push(text);
                    out.push_str(&md.finish());
                    if !out.ends_with('\n') {
                        out.push('\n');
                    }
                    print!("{out}");
                }
                Entry::Call(tool, arguments) => eprintln!(
                    "{}",
                    self.style
                        .paint("2", &format!("→ {tool} {}", clip(arguments, 160)))
                ),
                Entry::Tool(o) => eprintln!("{}", self.tool_line(tool_number, o)),
            }
        }
        let _ = std::io::stdout().flush();
    }

    fn tool_line(&self, n: usize, o: &Observation) -> String {
        let first = o.content.lines().next().unwrap_or_default();
        let lines = o.content.lines().count();
        let more = format!("/show {n}");
        if o.is_error {
            format!(
                "  {} {}: {} · {}",
                self.style.paint("31", "✗"),
                o.tool,
                clip(first, 160),
                self.style.paint("2", &more)
            )
        } else {
            // The media notes are the content's last lines; the line
            // names them whatever comes first.
            let lines = lines.saturating_sub(o.media.len());
            let summary = if lines == 0 && o.media.is_empty() {
                "no output".to_owned()
            } else {
                let text = match lines {
                    0 => String::new(),
                    1 => clip(first, 100),
                    n => format!("{} (+{} lines)", clip(first, 100), n - 1),
                };
                with_media_notes(text, o.media.iter().map(String::as_str))
            };
            format!(
                "  {} {} · {} · {}",
                self.style.paint("32", "✓"),
                o.tool,
                summary,
                self.style.paint("2", &more)
            )
        }
    }

    /// Ends the agent's text: held Markdown is written, the line closed.
    fn end_text(&self, state: &mut State) {
        let rest = state.md.finish();
        let mut stdout = std::io::stdout().lock();
        let _ = stdout.write_all(rest.as_bytes());
        if state.mid_line || rest.ends_with(|c| c != '\n') {
            let _ = stdout.write_all(b"\n");
        }
        state.mid_line = false;
        let _ = stdout.flush();
    }
}

fn stderr_is_terminal() -> bool {
    use std::io::IsTerminal as _;
    std::io::stderr().is_terminal()
}

impl EventSink for ChatView {
    fn emit(&self, event: &Event) {
        self.spinner.stop();
        let Ok(mut state) = self.state.lock() else {
            return;
        };
        match event {
            Event::TurnStarted { .. } => self.spinner.start("thinking"),
            Event::MessageDelta { text } => {
                let out = state.md.push(text);
                let mut stdout = std::io::stdout().lock();
                let _ = stdout.write_all(out.as_bytes());
                let _ = stdout.flush();
                if !text.is_empty() {
                    state.mid_line = !text.ends_with('\n');
                }
            }
            Event::ToolStarted {
                tool, arguments, ..
            } => {
                self.end_text(&mut state);
                eprintln!(
                    "{}",
                    self.style.paint(
                        "2",
                        &format!("→ {tool} {}", clip(&arguments.to_string(), 160))
                    )
                );
                self.spinner.start(&format!("running {tool}"));
            }
            Event::ToolEnded {
                tool,
                is_error,
                content,
                media,
                ..
            } => {
                let o = Observation {
                    tool: tool.clone(),
                    content: content.clone(),
                    is_error: *is_error,
                    media: media.iter().map(|m| m.description.clone()).collect(),
                };
                state.observations.push(o.clone());
                let n = state.observations.len();
                eprintln!("{}", self.tool_line(n, &o));
                self.spinner.start("thinking");
            }
            Event::TurnCompleted { .. } => {
                self.end_text(&mut state);
                // The plain view lists the pages the answer cited.
                self.plain.emit(event);
            }
            // A running MCP call's progress, on the spinner's line.
            Event::ToolProgress {
                progress,
                total,
                message,
                ..
            } => self.spinner.start(&format!(
                "running: {}",
                evoflux_protocol::events::progress_label(*progress, *total, message.as_deref())
            )),
            // The status line after the turn shows tokens and cost; a
            // title is for `/sessions`.
            Event::ModelCallCompleted { .. } | Event::SessionTitled { .. } => {}
            Event::TurnCancelled { .. } => {
                self.end_text(&mut state);
                self.plain.emit(event);
            }
            Event::SessionStarted { .. }
            | Event::WebSearch { .. }
            | Event::Citation { .. }
            | Event::ApprovalRequested { .. }
            | Event::ApprovalDecided { .. }
            | Event::TurnFailed { .. }
            | Event::SourcesApplied { .. }
            | Event::GraphInvalid { .. }
            | Event::CommandEnded { .. }
            | Event::ContextCompacted { .. }
            | Event::ModelSwitched { .. }
            | Event::PreviewStarted { .. }
            | Event::PreviewStopped { .. }
            | Event::McpServer { .. }
            | Event::InputRequested { .. }
            | Event::Error { .. }
            | Event::Warning { .. }
            | Event::DispatchStarted { .. }
            | Event::DispatchEnded { .. }
            | Event::TaskCancelled { .. }
            | Event::ToolsActivated { .. }
            | Event::TaskUpdate { .. }
            | Event::ToolLog { .. }
            | Event::ElicitationRequested { .. }
            | Event::ElicitationAnswered { .. }
            | Event::Child { .. } => {
                if state.mid_line {
                    self.end_text(&mut state);
                }
                self.plain.emit(event);
            }
        }
    }
}

/// One entry of a conversation as the chat shows it.
#[derive(Debug)]
enum Entry {
    User(String),
    Assistant(String),
    /// A tool call: its name and arguments.
    Call(String, String),
    Tool(Observation),
}

fn conversation(messages: &[Message]) -> Vec<Entry> {
    let mut names = std::collections::HashMap::new();
    let mut out = Vec::new();
    for m in messages {
        match m {
            Message::System { .. } => {}
            Message::User { content, media } => {
                out.push(Entry::User(text_with_media_notes(content, media)));
            }
            Message::Assistant {
                provider_items: _,
                content,
                tool_calls,
            } => {
                if !content.is_empty() {
                    out.push(Entry::Assistant(content.clone()));
                }
                for c in tool_calls {
                    names.insert(c.id.clone(), c.name.clone());
                    out.push(Entry::Call(c.name.clone(), c.arguments.to_string()));
                }
            }
            Message::Tool {
                tool_call_id,
                content,
                is_error,
                media,
            } => out.push(Entry::Tool(Observation {
                tool: names
                    .get(tool_call_id)
                    .cloned()
                    .unwrap_or_else(|| "tool".to_owned()),
                content: text_with_media_notes(content, media),
                is_error: *is_error,
                media: media.iter().map(|m| m.describe()).collect(),
            })),
        }
    }
    out
}

/// A one-line spinner on stderr while nothing else is printed.
#[derive(Debug)]
struct Spinner {
    enabled: bool,
    running: Arc<AtomicBool>,
    thread: Mutex<Option<std::thread::JoinHandle<()>>>,
}

impl Spinner {
    fn new(enabled: bool) -> Spinner {
        Spinner {
            enabled,
            running: Arc::new(AtomicBool::new(false)),
            thread: Mutex::new(None),
        }
    }

    fn start(&self, label: &str) {
        if !self.enabled {
            return;
        }
        self.stop();
        self.running.store(true, Ordering::SeqCst);
        let running = Arc::clone(&self.running);
        let label = label.to_owned();
        let handle = std::thread::spawn(move || {
            const FRAMES: [char; 10] = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];
            // Nothing is drawn for a quick step; the first frame comes later.
            let started = std::time::Instant::now();
            let mut frame = 0;
            while running.load(Ordering::SeqCst) {
                std::thread::park_timeout(Duration::from_millis(100));
                if !running.load(Ordering::SeqCst) {
                    break;
                }
                if started.elapsed() >= Duration::from_millis(200) {
                    let mut err = std::io::stderr().lock();
                    let _ = write!(err, "\r\x1b[2m{} {label}\x1b[0m\x1b[K", FRAMES[frame % 10]);
                    let _ = err.flush();
                    frame += 1;
                }
            }
            if frame > 0 {
                let mut err = std::io::stderr().lock();
                let _ = write!(err, "\r\x1b[K");
                let _ = err.flush();
            }
        });
        if let Ok(mut t) = self.thread.lock() {
            *t = Some(handle);
        }
    }

    fn stop(&self) {
        self.running.store(false, Ordering::SeqCst);
        let handle = self.thread.lock().ok().and_then(|mut t| t.take());
        if let Some(h) = handle {
            h.thread().unpark();
            let _ = h.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use evoflux_protocol::ToolCall;

    #[test]
    fn a_tool_line_names_the_result_s_images() {
        let view = ChatView::new(Style::Plain);
        let shot = Observation {
            tool: "browser".into(),
            content: "Screenshot of the page\n[image: screenshot-1.png, image/png, 9 KB]".into(),
            is_error: false,
            media: vec!["image: screenshot-1.png, image/png, 9 KB".into()],
        };
        assert_eq!(
            view.tool_line(2, &shot),
            "  ✓ browser · Screenshot of the page [image: screenshot-1.png, image/png, 9 KB] · /show 2"
        );
        let plain = Observation {
            media: Vec::new(),
            content: "a\nb".into(),
            ..shot
        };
        assert_eq!(
            view.tool_line(3, &plain),
            "  ✓ browser · a (+1 lines) · /show 3"
        );
    }

    #[test]
    fn a_conversation_numbers_tool_outputs_by_their_call() {
        let messages = vec![
            Message::System {
                content: "sys".into(),
            },
            Message::User {
                content: "list".into(),
                media: Vec::new(),
            },
            Message::Assistant {
                provider_items: Vec::new(),
                content: String::new(),
                tool_calls: vec![ToolCall {
                    id: "c1".into(),
                    name: "shell".into(),
                    arguments: serde_json::json!({"command": "ls"}),
                }],
            },
            Message::Tool {
                tool_call_id: "c1".into(),
                content: "a\nb".into(),
                is_error: false,
                media: Vec::new(),
            },
            Message::Assistant {
                provider_items: Vec::new(),
                content: "Two files.".into(),
                tool_calls: vec![],
            },
        ];
        let view = ChatView::new(Style::Plain);
        view.load(&messages);
        let (n, o) = view.observation(None).unwrap();
        assert_eq!(
            (n, o.tool.as_str(), o.content.as_str()),
            (1, "shell", "a\nb")
        );
        assert!(view.observation(Some(2)).is_none());
        assert!(view.observation(Some(0)).is_none());
        let entries = conversation(&messages);
        assert_eq!(entries.len(), 4);
        let line = view.tool_line(1, &o);
        assert_eq!(line, "  ✓ shell · a (+1 lines) · /show 1");
    }
}
