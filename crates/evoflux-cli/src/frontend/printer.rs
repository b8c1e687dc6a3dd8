//! The event printers: how a session's [`Event`] stream reaches the
//! terminal — JSON lines with `--json`, else the agent's words on stdout
//! and its activity on stderr — and the one-line renderings (web searches,
//! citations, clipped text) that `chat`'s view and `sessions show` reuse.

use std::io::Write as _;
use std::sync::Arc;

use evoflux_harness::{DecidedBy, DecisionKind, Event, EventSink, ToolStatus};
use evoflux_tui::lineage;

use crate::output::Output;

/// Where a session's events go: JSON lines with `--json`, text otherwise.
pub(crate) fn event_sink(out: &Output) -> Arc<dyn EventSink> {
    if out.json {
        Arc::new(JsonLines)
    } else {
        Arc::new(HumanEvents::default())
    }
}

/// `--json`: every event as one JSON line on stdout.
#[derive(Debug)]
struct JsonLines;

impl EventSink for JsonLines {
    fn emit(&self, event: &Event) {
        if let Ok(line) = serde_json::to_string(event) {
            let mut stdout = std::io::stdout().lock();
            let _ = writeln!(stdout, "{line}");
            let _ = stdout.flush();
        }
    }
}

/// One line for a web search the provider ran.
pub(crate) fn web_search_line(search: &evoflux_protocol::WebSearch) -> String {
    let query = search
        .query
        .as_deref()
        .map_or_else(String::new, |q| format!(" \"{}\"", clip(q, 120)));
    match &search.error {
        Some(e) => format!("⌕ web search{query} failed: {e}"),
        None => format!("⌕ web search{query}: {} results", search.sources.len()),
    }
}

/// Adds a cited page to the list under an answer, once: an answer cites
/// the same page in many places.
pub(crate) fn cite_once(
    list: &mut Vec<evoflux_protocol::Citation>,
    c: &evoflux_protocol::Citation,
) {
    if !list.iter().any(|d| d.url == c.url) {
        list.push(c.clone());
    }
}

/// One cited page: its title, when known, and its address.
pub(crate) fn citation_line(c: &evoflux_protocol::Citation) -> String {
    match &c.title {
        Some(t) => format!("{} <{}>", clip(t, 120), c.url),
        None => format!("<{}>", c.url),
    }
}

/// Text for people: the agent's words on stdout as they stream, activity
/// on stderr.
#[derive(Debug, Default)]
pub(crate) struct HumanEvents {
    mid_line: std::sync::atomic::AtomicBool,
    /// Pages the answer being streamed cites, listed once it is complete
    /// (citations arrive in the middle of the text).
    citations: std::sync::Mutex<Vec<evoflux_protocol::Citation>>,
    /// Each session's chain of agents, for its dispatch lines: a child's
    /// events arrive here flattened, one level after another.
    chains: std::sync::Mutex<lineage::Chains>,
}

impl HumanEvents {
    /// A dispatch's line, one step in from the call that opened it and
    /// naming its chain from the lead (by the events' parent session):
    /// `      ⇢ evoflux → planner → coder (session …)`. `depth` is how many
    /// `child` events wrapped it, plus one: its place in what this printer
    /// shows, which is the event's `depth` when the run's session is the
    /// one the user started.
    fn dispatch_line(&self, parent: &str, child: &str, agent: &str, depth: u32) {
        let chain = match self.chains.lock() {
            Ok(mut chains) => chains.dispatched(parent, child, agent),
            Err(_) => vec![agent.to_owned()],
        };
        eprintln!(
            "{}⇢ {} (session {child})",
            lineage::indent(lineage::dispatch_step(depth)),
            lineage::chain(&chain)
        );
    }

    /// What a child `level` dispatches down does (its events wrapped
    /// `level` times), one step in from its dispatch line; its words go to
    /// stderr so stdout stays the lead's answer.
    fn child_event(&self, event: &Event, level: u32) {
        let pad = lineage::indent(lineage::session_step(level));
        match event {
            Event::Child { event, .. } => self.child_event(event, level.saturating_add(1)),
            Event::ToolStarted {
                tool, arguments, ..
            } => eprintln!("{pad}→ {tool} {}", clip(&arguments.to_string(), 140)),
            Event::ToolEnded {
                tool,
                is_error,
                content,
                ..
            } => {
                let first = content.lines().next().unwrap_or_default();
                match is_error {
                    true => eprintln!("{pad}  ✗ {tool}: {}", clip(first, 160)),
                    false => eprintln!("{pad}  ✓ {tool}"),
                }
            }
            Event::DispatchStarted {
                agent,
                child_session_id,
                parent_session_id,
                ..
            } => self.dispatch_line(
                parent_session_id,
                child_session_id,
                agent,
                level.saturating_add(1),
            ),
            Event::DispatchEnded {
                agent, is_error, ..
            } => dispatch_ended(agent, *is_error, level.saturating_add(1)),
            Event::Error { code, message } => eprintln!("{pad}error[{code}]: {message}"),
            Event::Warning { code, message } => {
                eprintln!("{pad}warning[{code}]: {message}");
            }
            Event::TaskUpdate { message } => eprintln!("{pad}⋯ {}", clip(message, 200)),
            _ => {}
        }
    }

    fn end_text(&self) {
        if self
            .mid_line
            .swap(false, std::sync::atomic::Ordering::Relaxed)
        {
            println!();
        }
    }
}

impl EventSink for HumanEvents {
    fn emit(&self, event: &Event) {
        match event {
            Event::SessionStarted {
                session_id,
                mode,
                lead,
                model,
                resumed,
                ..
            } => {
                if let Ok(mut chains) = self.chains.lock() {
                    chains.started(session_id, lead);
                }
                eprintln!(
                    "{} session {session_id} · {mode} · lead {lead} · {model}",
                    if *resumed { "resuming" } else { "new" }
                );
            }
            Event::TurnStarted { .. } => {}
            Event::TurnCancelled { .. } => {
                self.end_text();
                eprintln!("  turn cancelled; the commands it started were stopped");
            }
            Event::MessageDelta { text } => {
                let mut stdout = std::io::stdout().lock();
                let _ = stdout.write_all(text.as_bytes());
                let _ = stdout.flush();
                self.mid_line
                    .store(!text.ends_with('\n'), std::sync::atomic::Ordering::Relaxed);
            }
            Event::ToolStarted {
                tool, arguments, ..
            } => {
                self.end_text();
                eprintln!("→ {tool} {}", clip(&arguments.to_string(), 160));
            }
            Event::ApprovalRequested { tool, .. } => eprintln!("  {tool} needs approval"),
            Event::ApprovalDecided { decision, by, .. } => match (decision, by) {
                (DecisionKind::Denied, DecidedBy::Policy | DecidedBy::Cancellation) => {}
                (DecisionKind::Denied, DecidedBy::User) => eprintln!("  denied"),
                (
                    DecisionKind::Approved
                    | DecisionKind::ApprovedForSession
                    | DecisionKind::ApprovedForWorkspace,
                    _,
                ) => {}
            },
            Event::ToolEnded {
                tool,
                status: ToolStatus::Cancelled,
                ..
            } => eprintln!("  ✗ {tool}: cancelled"),
            Event::ToolEnded {
                tool,
                is_error,
                content,
                ..
            } => {
                let first = content.lines().next().unwrap_or_default();
                let lines = content.lines().count();
                if *is_error {
                    eprintln!("  ✗ {tool}: {}", clip(first, 200));
                } else {
                    eprintln!("  ✓ {tool} ({lines} lines)");
                }
            }
            Event::CommandEnded {
                process_id,
                command,
                is_error,
                ..
            } => {
                self.end_text();
                let mark = if *is_error { "✗" } else { "✓" };
                eprintln!(
                    "  {mark} background {process_id} `{}` ended",
                    clip(command, 80)
                );
            }
            Event::ContextCompacted {
                covered_messages, ..
            } => {
                self.end_text();
                eprintln!(
                    "  context compacted: a summary stands for the first {covered_messages} messages"
                );
            }
            Event::ModelSwitched { from, to } => {
                self.end_text();
                eprintln!("  model switched from {from} to {to} for this session");
            }
            Event::PreviewStarted {
                preview_id, url, ..
            } => {
                self.end_text();
                eprintln!("  preview {preview_id} serving at {url}");
            }
            Event::PreviewStopped { preview_id } => {
                self.end_text();
                eprintln!("  preview {preview_id} stopped");
            }
            Event::McpServer {
                server,
                owner,
                state,
                error,
            } => match error {
                Some(e) => eprintln!("  mcp {server} ({owner}): {state}: {e}"),
                None => eprintln!("  mcp {server} ({owner}): {state}"),
            },
            Event::InputRequested {
                question, options, ..
            } => {
                self.end_text();
                if options.is_empty() {
                    println!("? {question}");
                } else {
                    println!("? {question} [{}]", options.join(" / "));
                }
            }
            Event::WebSearch { search } => {
                self.end_text();
                eprintln!("  {}", web_search_line(search));
            }
            Event::Citation { citation } => {
                if let Ok(mut list) = self.citations.lock() {
                    cite_once(&mut list, citation);
                }
            }
            Event::TurnCompleted { .. } => {
                self.end_text();
                let cited = self
                    .citations
                    .lock()
                    .map(|mut l| std::mem::take(&mut *l))
                    .unwrap_or_default();
                for (i, c) in cited.iter().enumerate() {
                    eprintln!("  [{}] {}", i + 1, citation_line(c));
                }
            }
            // Usage is for `--json` readers and `sessions show`; a title
            // for the session list.
            Event::ModelCallCompleted { .. } | Event::SessionTitled { .. } => {}
            Event::Error { code, message } => {
                self.end_text();
                eprintln!("error[{code}]: {message}");
            }
            // The error before it said what failed.
            Event::TurnFailed { .. } => {}
            Event::SourcesApplied { .. } => {
                self.end_text();
                eprintln!("  changed agents, skills, plugins or config apply from this turn");
            }
            Event::GraphInvalid { code, message, .. } => {
                self.end_text();
                eprintln!("error[{code}]: {message}");
            }
            Event::Warning { code, message } => eprintln!("warning[{code}]: {message}"),
            Event::DispatchStarted {
                agent,
                child_session_id,
                parent_session_id,
                ..
            } => {
                self.end_text();
                self.dispatch_line(parent_session_id, child_session_id, agent, 1);
            }
            Event::DispatchEnded {
                agent, is_error, ..
            } => dispatch_ended(agent, *is_error, 1),
            Event::TaskCancelled { agent, .. } => eprintln!("  ✗ {agent} cancelled"),
            Event::ToolsActivated { tools } => {
                self.end_text();
                eprintln!("  + tools turned on: {}", tools.join(", "));
            }
            Event::TaskUpdate { message } => eprintln!("  ⋯ {}", clip(message, 200)),
            Event::ToolProgress {
                progress,
                total,
                message,
                ..
            } => eprintln!(
                "  ⋯ {}",
                evoflux_protocol::events::progress_label(*progress, *total, message.as_deref())
            ),
            // Debug messages are for the event stream (`--json`).
            Event::ToolLog {
                server,
                level,
                logger,
                message,
                ..
            } => {
                if *level > evoflux_protocol::events::ServerLogLevel::Debug {
                    self.end_text();
                    let from = match logger {
                        Some(l) => format!("{server}/{l}"),
                        None => server.clone(),
                    };
                    eprintln!("  mcp {from} {}: {}", level.as_str(), clip(message, 400));
                }
            }
            // The front end's asker shows the form itself.
            Event::ElicitationRequested { .. } => {}
            Event::ElicitationAnswered { action, by, .. } => {
                use evoflux_protocol::events::ElicitationAction;
                let what = match action {
                    ElicitationAction::Accept => "sent",
                    ElicitationAction::Decline => "declined",
                    ElicitationAction::Cancel => "cancelled",
                };
                let why = match by {
                    DecidedBy::User => "",
                    DecidedBy::Policy => " (nobody can answer in this run)",
                    DecidedBy::Cancellation => " (the turn ended)",
                };
                eprintln!("  form {what}{why}");
            }
            // A child's activity, at any depth, indented under the call
            // that opened it.
            Event::Child { event, .. } => self.child_event(event, 1),
        }
    }
}

/// A dispatch's end, at its dispatch line's indent (`depth` as
/// [`HumanEvents::dispatch_line`]'s).
fn dispatch_ended(agent: &str, is_error: bool, depth: u32) {
    let mark = if is_error { "✗" } else { "✓" };
    eprintln!(
        "{}{mark} {agent} answered",
        lineage::indent(lineage::dispatch_step(depth))
    );
}

/// `s` cut to `max` characters, with `…` where it was cut.
pub(crate) fn clip(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_owned();
    }
    let head: String = s.chars().take(max).collect();
    format!("{head}…")
}
