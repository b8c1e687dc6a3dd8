//! Tool calls as a person would write them: `read src/main.rs (1–120)`,
//! `shell cargo test`, decided by the tool's typed definition (its
//! executor, handling and action class), never by its name.
//!
//! Why typed: a workspace can replace `tools/read` with a command tool, and
//! MCP servers bring tools of any name; the name says nothing reliable about
//! what a call does. The definition that won the slot does: a builtin
//! executor has a known input schema (its module in
//! `evoflux-graph/src/tool/builtin/`), a natively handled tool has a known
//! [`Handling`], and everything else (command tools, MCP tools, tools the
//! session does not know) is shown as its name and compact arguments.
//!
//! Arguments come from the model and may have any shape: every reader here
//! tolerates missing fields, wrong types and non-objects, and every
//! summary is one line with control characters removed (a model's escape
//! sequence must never reach the terminal).

use std::collections::HashMap;
use std::time::Duration;

use evoflux_graph::tool::{
    BuiltinExecutor, DispatchAction, Handling, InputRequest, ProviderTool, ToolDefinition,
    ToolExecutor,
};
use evoflux_protocol::command::{CommandMeta, CommandStatus};
use evoflux_protocol::metadata::ResultMetadata;
use serde_json::{Map, Value};

use crate::text::{clip, one_line};

/// Cells a shell command or a delegated task may take in a summary.
const COMMAND_CELLS: usize = 80;
/// Cells one value (a path, a pattern, a question) may take.
const VALUE_CELLS: usize = 60;
/// Cells one argument of the generic `key=value` form may take.
const ARG_CELLS: usize = 40;
/// Cells the whole generic argument list may take.
const ARGS_CELLS: usize = 120;
/// Cells of an error's first line in an outcome.
const ERROR_CELLS: usize = 60;

/// The tools of a session, by the name calls use.
#[derive(Debug, Clone, Default)]
pub struct ToolShapes {
    tools: HashMap<String, ToolDefinition>,
}

/// Which end of a result the collapsed view shows: the first lines of what
/// was read or listed, the last lines of what a command printed (where its
/// errors and summary are).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PreviewEnd {
    Head,
    Tail,
}

/// What a call is, for its summary: found from the definition alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shape {
    Builtin(BuiltinExecutor),
    Dispatch(DispatchAction),
    Ask(InputRequest),
    Provider(ProviderTool),
    /// A command tool: its name and arguments, its output read from the end.
    Command,
    /// An MCP tool, or a tool the session does not know.
    Other,
}

impl ToolShapes {
    pub fn new<'a>(tools: impl IntoIterator<Item = &'a ToolDefinition>) -> ToolShapes {
        ToolShapes {
            tools: tools
                .into_iter()
                .map(|t| (t.name.clone(), t.clone()))
                .collect(),
        }
    }

    fn shape(&self, tool: &str) -> Shape {
        let Some(def) = self.tools.get(tool) else {
            return Shape::Other;
        };
        match def.behavior.handling {
            Handling::Dispatch { action } => Shape::Dispatch(action),
            Handling::RequestInput { request } => Shape::Ask(request),
            Handling::ProviderTool { provider } => Shape::Provider(provider),
            Handling::None => match &def.executor {
                Some(ToolExecutor::Builtin { executor }) => Shape::Builtin(*executor),
                Some(ToolExecutor::Command(_)) => Shape::Command,
                None => Shape::Other,
            },
        }
    }

    /// The one-line summary of a call, without its outcome.
    pub fn summary(&self, tool: &str, arguments: &Value) -> String {
        let args = Args(arguments);
        let line = match self.shape(tool) {
            Shape::Builtin(executor) => builtin_summary(executor, &args),
            Shape::Dispatch(action) => dispatch_summary(action, &args),
            Shape::Ask(InputRequest::Question) => match args.text("question") {
                Some(q) => format!("ask: {}", clip_line(q, COMMAND_CELLS)),
                None => "ask".to_owned(),
            },
            Shape::Provider(ProviderTool::WebSearch) => match args.text("query") {
                Some(q) => format!("search the web: {}", clip_line(q, VALUE_CELLS)),
                None => "search the web".to_owned(),
            },
            Shape::Command | Shape::Other => generic_summary(tool, arguments, self.tools.get(tool)),
        };
        // A last guard: every piece is cleaned already, and no control
        // character may reach the screen.
        one_line(&line)
    }

    /// The whole command a call of `tool` runs, as the model wrote it (an
    /// approval shows it exactly, not clipped): `shell`'s `command`.
    pub fn command(&self, tool: &str, arguments: &Value) -> Option<String> {
        match self.shape(tool) {
            Shape::Builtin(BuiltinExecutor::Shell) => {
                Args(arguments).text("command").map(str::to_owned)
            }
            Shape::Builtin(_)
            | Shape::Dispatch(_)
            | Shape::Ask(_)
            | Shape::Provider(_)
            | Shape::Command
            | Shape::Other => None,
        }
    }

    /// Which end of `tool`'s results the collapsed view shows: the tail of
    /// what commands print (shell, process, verify, command tools), the
    /// head of everything else.
    pub fn preview_end(&self, tool: &str) -> PreviewEnd {
        match self.shape(tool) {
            Shape::Builtin(executor) => match executor {
                BuiltinExecutor::Shell | BuiltinExecutor::Process | BuiltinExecutor::Verify => {
                    PreviewEnd::Tail
                }
                BuiltinExecutor::Read
                | BuiltinExecutor::Write
                | BuiltinExecutor::Edit
                | BuiltinExecutor::Ls
                | BuiltinExecutor::Glob
                | BuiltinExecutor::Grep
                | BuiltinExecutor::Todo
                | BuiltinExecutor::WebFetch
                | BuiltinExecutor::Browser
                | BuiltinExecutor::Skill
                | BuiltinExecutor::CodeContext
                | BuiltinExecutor::Artifact
                | BuiltinExecutor::ScheduleTask
                | BuiltinExecutor::ConnectionSearch
                // Its URL comes first.
                | BuiltinExecutor::Preview => PreviewEnd::Head,
            },
            Shape::Command => PreviewEnd::Tail,
            // An MCP tool's result is a document (often JSON), read from
            // its start, whatever its action class.
            Shape::Dispatch(_) | Shape::Ask(_) | Shape::Provider(_) | Shape::Other => {
                PreviewEnd::Head
            }
        }
    }

    /// [`preview_lines`] from the end [`ToolShapes::preview_end`] picks for
    /// `tool`.
    pub fn output_preview(
        &self,
        tool: &str,
        content: &str,
        max_lines: usize,
    ) -> (Vec<String>, usize) {
        preview_lines(content, max_lines, self.preview_end(tool))
    }
}

/// Reads arguments of any shape: a field that is missing or of another
/// type counts as absent.
struct Args<'a>(&'a Value);

impl<'a> Args<'a> {
    fn get(&self, key: &str) -> Option<&'a Value> {
        self.0.as_object().and_then(|o| o.get(key))
    }

    /// A non-blank string field.
    fn text(&self, key: &str) -> Option<&'a str> {
        self.get(key)
            .and_then(Value::as_str)
            .filter(|s| !s.trim().is_empty())
    }

    /// An integer field, also when the model sent it as a string.
    fn int(&self, key: &str) -> Option<u64> {
        match self.get(key)? {
            Value::Number(n) => n.as_u64(),
            Value::String(s) => s.trim().parse().ok(),
            _ => None,
        }
    }

    fn flag(&self, key: &str) -> bool {
        self.get(key).and_then(Value::as_bool).unwrap_or(false)
    }

    /// The non-blank strings of an array field.
    fn strings(&self, key: &str) -> Vec<&'a str> {
        self.get(key)
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .filter(|s| !s.trim().is_empty())
                    .collect()
            })
            .unwrap_or_default()
    }
}

/// `verb value` or `verb` alone when the value is missing.
fn verb_with(verb: &str, value: Option<&str>) -> String {
    match value {
        Some(v) => format!("{verb} {}", clip_line(v, VALUE_CELLS)),
        None => verb.to_owned(),
    }
}

fn builtin_summary(executor: BuiltinExecutor, args: &Args<'_>) -> String {
    match executor {
        BuiltinExecutor::Read => {
            let mut out = verb_with("read", args.text("path"));
            let range = match (args.int("offset"), args.int("limit")) {
                (Some(from), Some(n)) if n > 0 => {
                    Some(format!("{from}–{}", from.saturating_add(n - 1)))
                }
                (Some(from), _) => Some(format!("from {from}")),
                (None, Some(n)) if n > 0 => Some(format!("1–{n}")),
                (None, _) => None,
            };
            if let Some(range) = range {
                out.push_str(&format!(" ({range})"));
            }
            out
        }
        BuiltinExecutor::Write => verb_with("write", args.text("path")),
        BuiltinExecutor::Edit => {
            let mut out = verb_with("edit", args.text("path"));
            if args.flag("replace_all") {
                out.push_str(" (all)");
            }
            out
        }
        BuiltinExecutor::Artifact => verb_with("artifact", args.text("path")),
        BuiltinExecutor::Shell => {
            let mut out = verb_with_command("shell", args.text("command"));
            if let Some(dir) = args.text("workdir") {
                out.push_str(&format!(" in {}", clip_line(dir, VALUE_CELLS)));
            }
            if args.flag("outside_sandbox") {
                out.push_str(" (outside the sandbox)");
            }
            out
        }
        BuiltinExecutor::Process => {
            let mut out = verb_with("process", args.text("action"));
            if let Some(id) = args.text("process_id") {
                out.push_str(&format!(" {}", clip_line(id, VALUE_CELLS)));
            }
            out
        }
        BuiltinExecutor::Preview => {
            let mut out = verb_with("preview", args.text("action"));
            match (args.text("command"), args.text("preview_id")) {
                (Some(command), _) => {
                    out.push_str(&format!(" {}", clip_line(command, VALUE_CELLS)));
                }
                (None, Some(id)) => out.push_str(&format!(" {}", clip_line(id, VALUE_CELLS))),
                (None, None) => {}
            }
            out
        }
        BuiltinExecutor::Ls => format!(
            "ls {}",
            clip_line(args.text("path").unwrap_or("."), VALUE_CELLS)
        ),
        BuiltinExecutor::Glob => {
            let mut out = verb_with("glob", args.text("pattern"));
            if let Some(dir) = args.text("directory") {
                out.push_str(&format!(" in {}", clip_line(dir, VALUE_CELLS)));
            }
            out
        }
        BuiltinExecutor::Grep => {
            let mut out = match args.text("pattern") {
                Some(p) => format!("grep \"{}\"", clip_line(p, VALUE_CELLS)),
                None => "grep".to_owned(),
            };
            if let Some(dir) = args.text("directory") {
                out.push_str(&format!(" in {}", clip_line(dir, VALUE_CELLS)));
            }
            if let Some(include) = args.text("include") {
                out.push_str(&format!(" ({})", clip_line(include, VALUE_CELLS)));
            }
            out
        }
        BuiltinExecutor::Todo => match args.get("todos").and_then(Value::as_array) {
            Some(items) => format!("todo ({})", count(items.len(), "item", "items")),
            None => "todo (read)".to_owned(),
        },
        BuiltinExecutor::WebFetch => verb_with("fetch", args.text("url")),
        BuiltinExecutor::Browser => {
            let verb = format!("browser {}", args.text("action").unwrap_or("read"));
            match args.get("element").and_then(Value::as_u64) {
                Some(n) => format!("{verb} [{n}]"),
                None => verb_with(&verb, args.text("url")),
            }
        }
        BuiltinExecutor::Skill => {
            let name = args.text("skill_name");
            match (args.text("action"), name) {
                (Some("list"), _) | (None, None) => "skill list".to_owned(),
                (Some("read_resource"), _) => {
                    let mut out = verb_with("skill", name);
                    if let Some(path) = args.text("resource_path") {
                        out.push_str(&format!(" {}", clip_line(path, VALUE_CELLS)));
                    }
                    out
                }
                (_, Some(name)) => verb_with("skill", Some(name)),
                (Some(action), None) => verb_with("skill", Some(action)),
            }
        }
        BuiltinExecutor::CodeContext => {
            let mut out = verb_with("code_context", args.text("operation"));
            if let Some(target) = args.text("symbol").or_else(|| args.text("path")) {
                out.push_str(&format!(" {}", clip_line(target, VALUE_CELLS)));
            }
            out
        }
        BuiltinExecutor::Verify => {
            let mut out = verb_with("verify", args.text("command"));
            let slots = args.strings("args");
            if !slots.is_empty() {
                out.push(' ');
                out.push_str(&clip_line(&slots.join(" "), VALUE_CELLS));
            }
            out
        }
        BuiltinExecutor::ScheduleTask => {
            let mut out = verb_with("schedule", args.text("action"));
            if let Some(name) = args.text("name") {
                out.push_str(&format!(" {}", clip_line(name, VALUE_CELLS)));
            }
            let when = [("at", "at"), ("cron", "cron"), ("every", "every")]
                .into_iter()
                .find_map(|(key, word)| args.text(key).map(|v| (word, v)));
            if let Some((word, value)) = when {
                out.push_str(&format!(" ({word} {})", clip_line(value, VALUE_CELLS)));
            }
            out
        }
        BuiltinExecutor::ConnectionSearch => {
            let activate = args.strings("activate");
            if !activate.is_empty() {
                format!(
                    "connections activate {}",
                    clip_line(&activate.join(", "), VALUE_CELLS)
                )
            } else {
                let mut out = match args.text("query") {
                    Some(q) => format!("connections \"{}\"", clip_line(q, VALUE_CELLS)),
                    None => "connections".to_owned(),
                };
                if let Some(server) = args.text("server") {
                    out.push_str(&format!(" in {}", clip_line(server, VALUE_CELLS)));
                }
                out
            }
        }
    }
}

/// `verb <first line of command>`, `…` marking a cut or further lines.
fn verb_with_command(verb: &str, command: Option<&str>) -> String {
    match command {
        Some(c) => format!("{verb} {}", clip_line(c.trim(), COMMAND_CELLS)),
        None => verb.to_owned(),
    }
}

fn dispatch_summary(action: DispatchAction, args: &Args<'_>) -> String {
    match action {
        DispatchAction::SelfAgent => {
            let agent = args.text("agent_id").unwrap_or("self");
            let mut out = format!("delegate to {}", clip_line(agent, VALUE_CELLS));
            if let Some(task) = args.text("message") {
                out.push_str(&format!(": {}", clip_line(task.trim(), COMMAND_CELLS)));
            }
            if args.flag("background") {
                out.push_str(" (background)");
            }
            out
        }
        DispatchAction::TaskUpdate => match args.text("message") {
            Some(m) => format!("update: {}", clip_line(m.trim(), COMMAND_CELLS)),
            None => "update".to_owned(),
        },
        DispatchAction::TaskCancel => {
            let ids = args.strings("task_ids");
            if ids.is_empty() {
                "cancel tasks".to_owned()
            } else {
                format!("cancel {}", clip_line(&ids.join(", "), VALUE_CELLS))
            }
        }
    }
}

/// `name key=value, key=value`: strings quoted only when they hold spaces
/// (or nothing), other values as compact JSON, each clipped. The fields the
/// tool's schema requires come first, in its order; the rest by name (the
/// arguments' own order is not kept by the time they arrive here).
fn generic_summary(tool: &str, arguments: &Value, def: Option<&ToolDefinition>) -> String {
    let name = clip_line(tool, VALUE_CELLS);
    let args = match arguments {
        Value::Null => return name,
        Value::Object(map) => object_args(map, def),
        other => compact_value(other),
    };
    if args.is_empty() {
        name
    } else {
        format!("{name} {}", clip_line(&args, ARGS_CELLS))
    }
}

fn object_args(map: &Map<String, Value>, def: Option<&ToolDefinition>) -> String {
    let required: Vec<&str> = def
        .and_then(|d| d.input_schema.get("required"))
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let first = required.iter().filter_map(|key| map.get_key_value(*key));
    // Sorted, so the line is the same whatever order the map keeps.
    let mut rest: Vec<(&String, &Value)> = map
        .iter()
        .filter(|(key, _)| !required.contains(&key.as_str()))
        .collect();
    rest.sort_by_key(|(key, _)| *key);
    first
        .chain(rest)
        .map(|(key, value)| {
            let key = clip_line(key, ARG_CELLS);
            format!("{key}={}", compact_value(value))
        })
        .collect::<Vec<_>>()
        .join(", ")
}

fn compact_value(value: &Value) -> String {
    match value {
        Value::String(s) => {
            let s = one_line(s);
            if s.is_empty() || s.contains(' ') {
                format!("\"{}\"", clip(&s, ARG_CELLS))
            } else {
                clip(&s, ARG_CELLS)
            }
        }
        other => clip(&one_line(&other.to_string()), ARG_CELLS),
    }
}

fn count(n: usize, one: &str, many: &str) -> String {
    if n == 1 {
        format!("1 {one}")
    } else {
        format!("{n} {many}")
    }
}

/// The first line of `s`, cleaned, clipped to `cells`; `…` when anything
/// was left out (the cut or the further lines).
fn clip_line(s: &str, cells: usize) -> String {
    let mut lines = s.trim().lines();
    let first = one_line(lines.next().unwrap_or(""));
    if !lines.any(|l| !l.trim().is_empty()) {
        return clip(&first, cells);
    }
    let clipped = clip(&first, cells.saturating_sub(2));
    if clipped.ends_with('…') {
        clipped
    } else {
        format!("{clipped} …")
    }
}

/// How a call ended, for the end of its summary line: `exit 0, 2.1 s`,
/// `+12 −3`, `failed: no such file`; `elapsed` when it was timed.
///
/// A command's observation decides first (its exit, timeout or that it
/// keeps running), then `is_error`, then a file change's counts (`+12 −3`,
/// `created +40`) or a reused read. A failure
/// carries the first line of `content` (its error), clipped.
pub fn outcome(
    is_error: bool,
    content: &str,
    metadata: Option<&ResultMetadata>,
    elapsed: Option<Duration>,
) -> String {
    let command = metadata.and_then(|m| m.command.as_deref());
    let mut out = match command {
        Some(c) => command_outcome(c),
        None if is_error => match first_line(content) {
            Some(line) => format!("failed: {}", clip(&line, ERROR_CELLS)),
            None => "failed".to_owned(),
        },
        None => plain_outcome(metadata),
    };
    let time = elapsed.or_else(|| command.map(|c| Duration::from_millis(c.duration_ms)));
    if let Some(time) = time.filter(|t| t.as_millis() >= 100) {
        out.push_str(", ");
        out.push_str(&seconds(time));
    }
    out
}

fn command_outcome(c: &CommandMeta) -> String {
    match c.status {
        CommandStatus::Running => "running in background".to_owned(),
        CommandStatus::TimedOut => "timed out".to_owned(),
        CommandStatus::Terminated => "terminated".to_owned(),
        CommandStatus::Succeeded | CommandStatus::Failed => match c.exit_code {
            Some(code) => format!("exit {code}"),
            // Ended by a signal it was not sent by us.
            None => "killed".to_owned(),
        },
    }
}

/// A successful call without a command: what its metadata tells.
fn plain_outcome(metadata: Option<&ResultMetadata>) -> String {
    let Some(m) = metadata else {
        return "done".to_owned();
    };
    if let Some(change) = m.change.as_deref() {
        return match (change.created, change.added, change.removed) {
            (true, added, _) => format!("created +{added}"),
            (false, 0, 0) => "unchanged".to_owned(),
            (false, added, removed) => format!("+{added} −{removed}"),
        };
    }
    if m.observation.as_deref().is_some_and(|o| o.reused) {
        return "unchanged since it was read".to_owned();
    }
    "done".to_owned()
}

fn first_line(content: &str) -> Option<String> {
    content
        .lines()
        .map(one_line)
        .map(|l| l.trim().to_owned())
        .find(|l| !l.is_empty())
}

/// `2.1 s`, `3 m 05 s`, `1 h 02 m`.
fn seconds(d: Duration) -> String {
    let secs = d.as_secs();
    if secs < 60 {
        format!("{:.1} s", d.as_secs_f64())
    } else if secs < 3600 {
        format!("{} m {:02} s", secs / 60, secs % 60)
    } else {
        format!("{} h {:02} m", secs / 3600, (secs % 3600) / 60)
    }
}

/// The first `max_lines` lines of a result, for the collapsed view, and how
/// many were left out. Reads and listings are read from the top; use
/// [`ToolShapes::output_preview`] to read command output from its end.
pub fn output_preview(content: &str, max_lines: usize) -> (Vec<String>, usize) {
    preview_lines(content, max_lines, PreviewEnd::Head)
}

/// At most `max_lines` lines of `content` from `end`, and how many were
/// left out. Blank lines at both ends do not count; tabs become four
/// spaces, other control characters are dropped, trailing spaces trimmed.
pub fn preview_lines(content: &str, max_lines: usize, end: PreviewEnd) -> (Vec<String>, usize) {
    // Only the kept lines are cleaned: a result can be megabytes.
    let blank = |l: &&str| l.chars().all(|c| c.is_whitespace() || c.is_control());
    let lines: Vec<&str> = content.lines().collect();
    let start = lines.iter().position(|l| !blank(l)).unwrap_or(lines.len());
    let stop = lines
        .iter()
        .rposition(|l| !blank(l))
        .map_or(start, |i| i + 1);
    let lines = &lines[start..stop.max(start)];
    let shown = lines.len().min(max_lines);
    let left = lines.len() - shown;
    let kept = match end {
        PreviewEnd::Head => &lines[..shown],
        PreviewEnd::Tail => &lines[left..],
    };
    (kept.iter().map(|l| preview_line(l)).collect(), left)
}

/// One line for the screen: tabs as four spaces, control characters
/// dropped, trailing spaces trimmed.
fn preview_line(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    for c in line.chars() {
        match c {
            '\t' => out.push_str("    "),
            c if c.is_control() => {}
            c => out.push(c),
        }
    }
    out.truncate(out.trim_end().len());
    out
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use unicode_width::UnicodeWidthStr as _;

    use evoflux_graph::tool::{Approval, CommandTool, FRAMEWORK_TOOLS, framework_tool};
    use evoflux_protocol::metadata::{FileChange, ObservationReuse};
    use serde_json::json;

    use super::*;

    fn builtins() -> Vec<ToolDefinition> {
        FRAMEWORK_TOOLS
            .iter()
            .filter_map(|name| framework_tool(name))
            .collect()
    }

    fn shapes() -> ToolShapes {
        ToolShapes::new(&builtins())
    }

    fn sum(tool: &str, args: Value) -> String {
        shapes().summary(tool, &args)
    }

    #[test]
    fn an_approval_gets_the_whole_command_of_a_shell_call_only() {
        let long = format!("cargo test {}", "--features x ".repeat(20));
        assert_eq!(
            shapes().command("shell", &json!({"command": long})),
            Some(long.clone())
        );
        assert_eq!(shapes().command("read", &json!({"command": long})), None);
        assert_eq!(shapes().command("unknown", &json!({"command": long})), None);
    }

    #[test]
    fn file_tools_name_the_path_and_range() {
        assert_eq!(
            sum(
                "read",
                json!({"path": "src/main.rs", "offset": 1, "limit": 120})
            ),
            "read src/main.rs (1–120)"
        );
        assert_eq!(
            sum("read", json!({"path": "src/main.rs"})),
            "read src/main.rs"
        );
        assert_eq!(
            sum("read", json!({"path": "a.rs", "offset": 40})),
            "read a.rs (from 40)"
        );
        assert_eq!(
            sum("read", json!({"path": "a.rs", "limit": 5})),
            "read a.rs (1–5)"
        );
        assert_eq!(
            sum("write", json!({"path": "notes.md", "content": "x"})),
            "write notes.md"
        );
        assert_eq!(
            sum(
                "edit",
                json!({"path": "src/lib.rs", "old_string": "a", "new_string": "b"})
            ),
            "edit src/lib.rs"
        );
        assert_eq!(
            sum("edit", json!({"path": "src/lib.rs", "replace_all": true})),
            "edit src/lib.rs (all)"
        );
        assert_eq!(
            sum("artifact", json!({"path": "PLAN.md", "content": "x"})),
            "artifact PLAN.md"
        );
        // Paths are shown as given, not normalised.
        assert_eq!(sum("ls", json!({"path": "./src//x/"})), "ls ./src//x/");
        assert_eq!(sum("ls", json!({})), "ls .");
    }

    #[test]
    fn shell_and_process_show_the_command() {
        assert_eq!(
            sum("shell", json!({"command": "cargo test"})),
            "shell cargo test"
        );
        assert_eq!(
            sum("shell", json!({"command": "make", "workdir": "crates/x"})),
            "shell make in crates/x"
        );
        assert_eq!(
            sum("shell", json!({"command": "cargo build\ncargo test"})),
            "shell cargo build …"
        );
        let long = format!("echo {}", "a".repeat(200));
        let s = sum("shell", json!({"command": long}));
        assert!(s.ends_with('…'), "{s}");
        assert_eq!(s.width(), "shell ".len() + COMMAND_CELLS);
        assert_eq!(
            sum("process", json!({"action": "poll", "process_id": "proc_3"})),
            "process poll proc_3"
        );
        assert_eq!(sum("process", json!({"action": "list"})), "process list");
        assert_eq!(
            sum(
                "verify",
                json!({"command": "tests", "args": ["crate-a", "fast"]})
            ),
            "verify tests crate-a fast"
        );
    }

    #[test]
    fn search_tools_show_pattern_and_place() {
        assert_eq!(sum("glob", json!({"pattern": "**/*.rs"})), "glob **/*.rs");
        assert_eq!(
            sum("glob", json!({"pattern": "*.md", "directory": "docs"})),
            "glob *.md in docs"
        );
        assert_eq!(
            sum("grep", json!({"pattern": "fn main", "directory": "src/"})),
            "grep \"fn main\" in src/"
        );
        assert_eq!(
            sum("grep", json!({"pattern": "x", "include": "*.rs"})),
            "grep \"x\" (*.rs)"
        );
        assert_eq!(
            sum("web_fetch", json!({"url": "https://example.com/a"})),
            "fetch https://example.com/a"
        );
        assert_eq!(
            sum("web_search", json!({"query": "ratatui wrap"})),
            "search the web: ratatui wrap"
        );
        assert_eq!(
            sum(
                "code_context",
                json!({"operation": "callers", "symbol": "load_config"})
            ),
            "code_context callers load_config"
        );
        assert_eq!(
            sum(
                "code_context",
                json!({"operation": "outline", "path": "src/lib.rs"})
            ),
            "code_context outline src/lib.rs"
        );
        assert_eq!(
            sum("connection_search", json!({"query": "jira issue"})),
            "connections \"jira issue\""
        );
        assert_eq!(
            sum(
                "connection_search",
                json!({"activate": ["jira__create", "jira__get"]})
            ),
            "connections activate jira__create, jira__get"
        );
    }

    #[test]
    fn session_tools_say_what_they_do() {
        assert_eq!(
            sum("skill", json!({"action": "load", "skill_name": "pdf"})),
            "skill pdf"
        );
        assert_eq!(sum("skill", json!({"skill_name": "pdf"})), "skill pdf");
        assert_eq!(sum("skill", json!({"action": "list"})), "skill list");
        assert_eq!(
            sum(
                "skill",
                json!({"action": "read_resource", "skill_name": "pdf", "resource_path": "forms.md"})
            ),
            "skill pdf forms.md"
        );
        let todos = json!({"todos": [
            {"content": "a", "status": "pending"},
            {"content": "b", "status": "completed"},
            {"content": "c", "status": "in_progress"},
        ]});
        assert_eq!(sum("todo", todos), "todo (3 items)");
        assert_eq!(sum("todo", json!({"todos": [{}]})), "todo (1 item)");
        assert_eq!(sum("todo", json!({})), "todo (read)");
        assert_eq!(
            sum(
                "schedule_task",
                json!({"action": "create", "name": "nightly", "cron": "0 2 * * *", "prompt": "x"})
            ),
            "schedule create nightly (cron 0 2 * * *)"
        );
        assert_eq!(
            sum("schedule_task", json!({"action": "list"})),
            "schedule list"
        );
    }

    #[test]
    fn native_tools_follow_their_handling() {
        assert_eq!(
            sum(
                "agent",
                json!({"agent_id": "reviewer", "message": "Review the diff\nin detail"})
            ),
            "delegate to reviewer: Review the diff …"
        );
        assert_eq!(
            sum(
                "agent",
                json!({"message": "Count lines", "background": true})
            ),
            "delegate to self: Count lines (background)"
        );
        assert_eq!(
            sum(
                "ask_user",
                json!({"question": "Which branch?", "options": ["a", "b"]})
            ),
            "ask: Which branch?"
        );
        assert_eq!(
            sum("task_update", json!({"message": "half done"})),
            "update: half done"
        );
        assert_eq!(
            sum("task_cancel", json!({"task_ids": ["t1", "t2"]})),
            "cancel t1, t2"
        );
    }

    /// The definition decides, not the name: a builtin in another slot
    /// keeps its shape, a command tool in a builtin's slot loses it.
    #[test]
    fn the_definition_decides_not_the_name() {
        let mut cat = framework_tool("read").unwrap();
        cat.name = "cat".to_owned();
        let mut read = framework_tool("shell").unwrap();
        read.name = "read".to_owned();
        read.executor = Some(ToolExecutor::Command(CommandTool {
            argv: vec!["./read.sh".into(), "{{path}}".into()],
            timeout_ms: 1000,
            env: Vec::new(),
            approval: Approval::Never,
        }));
        let shapes = ToolShapes::new([&cat, &read]);
        assert_eq!(shapes.summary("cat", &json!({"path": "a.rs"})), "read a.rs");
        assert_eq!(
            shapes.summary("read", &json!({"path": "a.rs", "offset": 3})),
            "read offset=3, path=a.rs"
        );
        assert_eq!(shapes.preview_end("read"), PreviewEnd::Tail);
        assert_eq!(shapes.preview_end("cat"), PreviewEnd::Head);
    }

    #[test]
    fn command_mcp_and_unknown_tools_show_compact_arguments() {
        let mut deploy = framework_tool("shell").unwrap();
        deploy.name = "deploy".to_owned();
        deploy.executor = Some(ToolExecutor::Command(CommandTool {
            argv: vec!["./deploy.sh".into()],
            timeout_ms: 1000,
            env: Vec::new(),
            approval: Approval::Never,
        }));
        let mut mcp = framework_tool("shell").unwrap();
        mcp.name = "jira__create_issue".to_owned();
        mcp.executor = None;
        let shapes = ToolShapes::new([&deploy, &mcp]);
        assert_eq!(
            shapes.summary(
                "deploy",
                &json!({"service": "api", "env": "prod east", "dry": true})
            ),
            "deploy dry=true, env=\"prod east\", service=api"
        );
        assert_eq!(
            shapes.summary(
                "jira__create_issue",
                &json!({"title": "", "labels": ["a", "b"], "command": "x"})
            ),
            // The schema's required fields first (this one is shell's,
            // which requires `command`), then the rest by name.
            "jira__create_issue command=x, labels=[\"a\",\"b\"], title=\"\""
        );
        assert_eq!(
            shapes.summary("nobody_knows", &json!({"n": 1, "o": {"k": null}})),
            "nobody_knows n=1, o={\"k\":null}"
        );
        assert_eq!(shapes.summary("nobody_knows", &json!(null)), "nobody_knows");
        assert_eq!(shapes.summary("nobody_knows", &json!({})), "nobody_knows");
        assert_eq!(
            shapes.summary("nobody_knows", &json!([1, 2])),
            "nobody_knows [1,2]"
        );
        // Long values are clipped, each and all together.
        let s = shapes.summary("deploy", &json!({"note": "x".repeat(500)}));
        assert_eq!(s, format!("deploy note={}…", "x".repeat(ARG_CELLS - 1)));
        let many: Map<String, Value> = (0..50).map(|i| (format!("k{i}"), json!(i))).collect();
        let s = shapes.summary("deploy", &Value::Object(many));
        assert!(
            s.width() <= "deploy ".len() + ARGS_CELLS && s.ends_with('…'),
            "{s}"
        );
        assert_eq!(shapes.preview_end("deploy"), PreviewEnd::Tail);
        assert_eq!(shapes.preview_end("jira__create_issue"), PreviewEnd::Head);
        assert_eq!(shapes.preview_end("nobody_knows"), PreviewEnd::Head);
    }

    #[test]
    fn odd_arguments_never_panic_and_stay_on_one_line() {
        let odd = [
            json!(null),
            json!("a string"),
            json!(42),
            json!([1, "x"]),
            json!({}),
            json!({"path": 5, "offset": "ten", "limit": -1, "command": ["ls"], "todos": "x",
                   "pattern": null, "args": "x", "task_ids": [1, null], "activate": {},
                   "message": {"a": 1}, "question": 3, "url": true, "operation": []}),
            json!({"command": "\n\n", "path": "   ", "message": "\u{1b}[2J\r\nrm"}),
        ];
        let shapes = shapes();
        for name in FRAMEWORK_TOOLS {
            for args in &odd {
                let s = shapes.summary(name, args);
                assert!(!s.is_empty(), "{name} {args}");
                assert!(!s.chars().any(char::is_control), "{name} {args}: {s:?}");
            }
        }
        assert_eq!(sum("read", json!({"path": 5})), "read");
        assert_eq!(
            sum("read", json!({"path": "a", "offset": "7", "limit": 0})),
            "read a (from 7)"
        );
        assert_eq!(sum("shell", json!({"command": "\n\n"})), "shell");
        assert_eq!(
            sum("shell", json!({"command": "echo \u{1b}[31mred\u{7}"})),
            "shell echo [31mred"
        );
    }

    fn command(status: CommandStatus, exit_code: Option<i32>, duration_ms: u64) -> ResultMetadata {
        ResultMetadata {
            command: Some(Box::new(CommandMeta {
                process_id: "proc_1".into(),
                pid: 7,
                status,
                exit_code,
                duration_ms,
                artifact: PathBuf::from("/x/proc_1.txt"),
                output_offset: 0,
                output_bytes: 0,
                shown_bytes: 0,
                omitted_bytes: 0,
                journal_dropped_bytes: 0,
            })),
            ..ResultMetadata::default()
        }
    }

    #[test]
    fn commands_end_with_their_exit() {
        let secs = |ms| Some(Duration::from_millis(ms));
        let ok = command(CommandStatus::Succeeded, Some(0), 2100);
        assert_eq!(outcome(false, "", Some(&ok), secs(2100)), "exit 0, 2.1 s");
        // Without a live time, the command's own duration.
        assert_eq!(outcome(false, "", Some(&ok), None), "exit 0, 2.1 s");
        let failed = command(CommandStatus::Failed, Some(1), 50);
        assert_eq!(outcome(true, "error: x", Some(&failed), None), "exit 1");
        let killed = command(CommandStatus::Failed, None, 50);
        assert_eq!(outcome(true, "", Some(&killed), None), "killed");
        let timed_out = command(CommandStatus::TimedOut, None, 120_000);
        assert_eq!(
            outcome(true, "", Some(&timed_out), None),
            "timed out, 2 m 00 s"
        );
        let running = command(CommandStatus::Running, None, 10_000);
        assert_eq!(
            outcome(false, "", Some(&running), None),
            "running in background, 10.0 s"
        );
        let stopped = command(CommandStatus::Terminated, None, 0);
        assert_eq!(outcome(false, "", Some(&stopped), None), "terminated");
    }

    #[test]
    fn other_results_end_with_what_their_metadata_says() {
        assert_eq!(outcome(false, "text", None, None), "done");
        assert_eq!(
            outcome(false, "text", None, Some(Duration::from_millis(40))),
            "done"
        );
        assert_eq!(
            outcome(false, "", None, Some(Duration::from_secs(3700))),
            "done, 1 h 01 m"
        );
        assert_eq!(
            outcome(true, "\n  no such file: a.rs\nmore", None, None),
            "failed: no such file: a.rs"
        );
        assert_eq!(
            outcome(true, "", None, Some(Duration::from_millis(300))),
            "failed, 0.3 s"
        );
        let change = |created, added, removed| ResultMetadata {
            change: Some(Box::new(FileChange {
                path: "src/lib.rs".into(),
                created,
                diff: String::new(),
                added,
                removed,
                truncated: false,
            })),
            ..ResultMetadata::default()
        };
        assert_eq!(
            outcome(false, "", Some(&change(false, 12, 3)), None),
            "+12 −3"
        );
        assert_eq!(
            outcome(
                false,
                "",
                Some(&change(true, 40, 0)),
                Some(Duration::from_millis(200))
            ),
            "created +40, 0.2 s"
        );
        assert_eq!(
            outcome(false, "", Some(&change(false, 0, 0)), None),
            "unchanged"
        );
        let reused = ResultMetadata {
            observation: Some(Box::new(ObservationReuse {
                kind: "source".into(),
                reused: true,
                original_call_id: "c1".into(),
                result_sha256: "ab".into(),
                covered_range: None,
                requested_range: None,
            })),
            ..ResultMetadata::default()
        };
        assert_eq!(
            outcome(false, "", Some(&reused), None),
            "unchanged since it was read"
        );
    }

    #[test]
    fn previews_keep_the_right_end() {
        let content = "\n\nl1\n\tl2  \nl3\nl4\n\n";
        assert_eq!(
            output_preview(content, 2),
            (vec!["l1".to_owned(), "    l2".to_owned()], 2)
        );
        assert_eq!(
            preview_lines(content, 2, PreviewEnd::Tail),
            (vec!["l3".to_owned(), "l4".to_owned()], 2)
        );
        assert_eq!(output_preview(content, 10).1, 0);
        assert_eq!(output_preview(content, 10).0.len(), 4);
        assert_eq!(output_preview("", 3), (Vec::new(), 0));
        assert_eq!(output_preview("a\nb", 0), (Vec::new(), 2));
        assert_eq!(output_preview("a\u{1b}[1mb", 1).0, ["a[1mb"]);
        let shapes = shapes();
        assert_eq!(
            shapes.output_preview("shell", "a\nb\nc", 1),
            (vec!["c".to_owned()], 2)
        );
        assert_eq!(
            shapes.output_preview("read", "a\nb\nc", 1),
            (vec!["a".to_owned()], 2)
        );
    }
}
