//! `schedule_task`: the lead schedules work for later. A created task is
//! an ordinary schedule of the user's (`<config>/schedules/<name>.toml`),
//! checked by the one schedule parser before it is written, so the
//! scheduler fires it like any other and `evoflux schedule list` shows it.
//! The user approves every call (the tool asks by default). A session can
//! cancel only the schedules a session made: those files carry a marker
//! line; a schedule the user wrote is never touched.
//!
//! This module is the tool's rules and its handler; its definition is
//! [`evoflux_graph::tool::builtin::schedule_task`].

use std::path::Path;

use evoflux_core::{AppMode, Diagnostics};
use evoflux_graph::tool::Approval;
use evoflux_model::ToolCall;
use serde_json::{Map, Value};

use super::{BuiltinTool, Handled};
use crate::events::ToolResult;
use crate::prepared::SessionCapabilities;
use crate::session::Harness;

#[derive(Debug)]
pub(super) struct ScheduleTask;

impl BuiltinTool for ScheduleTask {
    fn gap(&self, caps: &SessionCapabilities) -> Option<&'static str> {
        (!caps.schedules).then_some("this session has no user schedules folder to write")
    }

    /// Work that runs later, unattended, is the user's to allow.
    fn approval(&self) -> Approval {
        Approval::Always
    }

    fn execute<'a>(
        &'a self,
        session: &'a mut Harness,
        call: &'a ToolCall,
    ) -> Handled<'a, ToolResult> {
        Box::pin(async move {
            Ok(match session.schedules_dir() {
                Some(dir) => apply(
                    dir,
                    &session.session().id.to_string(),
                    match session.session().mode() {
                        AppMode::Coding => session
                            .workspace()
                            .roots()
                            .first()
                            .map(std::path::PathBuf::as_path),
                        AppMode::Work => None,
                    },
                    &call.arguments,
                ),
                None => ToolResult::error("this session cannot schedule tasks"),
            })
        })
    }
}

/// The first line of every schedule this tool writes.
pub const MARKER: &str = "# Made by schedule_task";

/// Applies one call in the user's schedules folder `dir`; `session` names
/// the session that asked, for the marker, and `repository` is its
/// repository, where a Coding task works unless it names another.
pub fn apply(dir: &Path, session: &str, repository: Option<&Path>, args: &Value) -> ToolResult {
    let text = |k: &str| args.get(k).and_then(Value::as_str);
    match text("action") {
        Some("create") => create(dir, session, repository, args),
        Some("list") => list(dir),
        Some("cancel") => match text("name") {
            Some(name) => cancel(dir, name),
            None => ToolResult::error("`cancel` needs the schedule's `name`"),
        },
        _ => ToolResult::error("`action` is create, list or cancel"),
    }
}

fn create(dir: &Path, session: &str, repository: Option<&Path>, args: &Value) -> ToolResult {
    let Some(name) = args.get("name").and_then(Value::as_str) else {
        return ToolResult::error("`create` needs a `name` for the schedule");
    };
    if !evoflux_graph::slot::is_valid_document_name(name) {
        return ToolResult::error(format!(
            "`{name}` cannot name a schedule: use letters, digits, `.`, `_` and `-`"
        ));
    }
    let path = dir.join(format!("{name}.toml"));
    if path.exists() {
        return ToolResult::error(format!(
            "a schedule `{name}` exists; pick another name, or cancel it first"
        ));
    }
    let mut fields = Map::new();
    for key in [
        "prompt",
        "at",
        "cron",
        "timezone",
        "every",
        "mode",
        "workspace",
    ] {
        if let Some(v) = args.get(key).filter(|v| !v.is_null()) {
            fields.insert(key.to_owned(), v.clone());
        }
    }
    if fields.get("mode").and_then(Value::as_str) == Some("coding")
        && !fields.contains_key("workspace")
        && let Some(repo) = repository
    {
        fields.insert("workspace".into(), Value::from(repo.display().to_string()));
    }
    // The one parser decides, with the words the user's files get.
    let mut diags = Diagnostics::new();
    if evoflux_graph::schedule::parse(&path, None, Value::Object(fields.clone()), &mut diags)
        .is_none()
    {
        let why: Vec<String> = diags
            .iter()
            .map(|d| format!("{} ({})", d.message, d.code))
            .collect();
        return ToolResult::error(format!("the schedule is not valid: {}", why.join("; ")));
    }
    let body = match toml::to_string(&fields) {
        Ok(b) => b,
        Err(e) => return ToolResult::error(format!("cannot write the schedule: {e}")),
    };
    let text = format!("{MARKER} in session {session}.\n{body}");
    if let Err(e) = std::fs::create_dir_all(dir) {
        return ToolResult::error(format!("cannot create {}: {e}", dir.display()));
    }
    match evoflux_core::atomic::write_atomic(
        &path,
        text.as_bytes(),
        evoflux_core::atomic::AtomicOptions::default(),
    ) {
        Ok(_) => ToolResult::ok(format!(
            "Scheduled `{name}` ({}). `evoflux serve` runs it; `evoflux schedule list` shows it.",
            path.display()
        )),
        Err(e) => ToolResult::error(format!("cannot write {}: {e}", path.display())),
    }
}

fn list(dir: &Path) -> ToolResult {
    let Ok(read) = std::fs::read_dir(dir) else {
        return ToolResult::ok("No schedules.");
    };
    let mut lines: Vec<String> = read
        .filter_map(Result::ok)
        .filter_map(|e| {
            let path = e.path();
            let name = path.file_stem()?.to_str()?.to_owned();
            (path.extension()? == "toml").then_some(())?;
            let text = std::fs::read_to_string(&path).ok()?;
            let made = text.starts_with(MARKER);
            let summary: Vec<&str> = text
                .lines()
                .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
                .collect();
            Some(format!(
                "{name}{}: {}",
                if made { "" } else { " (the user's own)" },
                summary.join("; ")
            ))
        })
        .collect();
    lines.sort();
    if lines.is_empty() {
        return ToolResult::ok("No schedules.");
    }
    ToolResult::ok(lines.join("\n"))
}

fn cancel(dir: &Path, name: &str) -> ToolResult {
    if !evoflux_graph::slot::is_valid_document_name(name) {
        return ToolResult::error(format!("`{name}` is not a schedule name"));
    }
    let path = dir.join(format!("{name}.toml"));
    match std::fs::read_to_string(&path) {
        Ok(text) if text.starts_with(MARKER) => match std::fs::remove_file(&path) {
            Ok(()) => ToolResult::ok(format!("Cancelled `{name}`.")),
            Err(e) => ToolResult::error(format!("cannot remove {}: {e}", path.display())),
        },
        Ok(_) => ToolResult::error(format!(
            "`{name}` is the user's own schedule; only the user removes it"
        )),
        Err(_) => ToolResult::error(format!("no schedule `{name}`")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn create_list_and_cancel_only_what_a_session_made() {
        let t = tempfile::tempdir().unwrap();
        let dir = t.path().join("schedules");
        let made = apply(
            &dir,
            "s1",
            None,
            &json!({"action": "create", "name": "standup", "every": "1d", "prompt": "Post the standup"}),
        );
        assert!(!made.is_error, "{}", made.content);
        let text = std::fs::read_to_string(dir.join("standup.toml")).unwrap();
        assert!(text.starts_with(MARKER));
        let mut d = Diagnostics::new();
        let value = evoflux_graph::declarative::parse_value(
            &dir.join("standup.toml"),
            evoflux_graph::slot::FileFormat::Toml,
            &text,
        )
        .unwrap();
        assert!(evoflux_graph::schedule::parse(&dir.join("x"), None, value, &mut d).is_some());
        // Invalid input is refused with the parser's code; nothing is written.
        let bad = apply(
            &dir,
            "s1",
            None,
            &json!({"action": "create", "name": "bad", "cron": "nope", "prompt": "p"}),
        );
        assert!(
            bad.is_error && bad.content.contains("schedule/cron-invalid"),
            "{}",
            bad.content
        );
        assert!(!dir.join("bad.toml").exists());
        std::fs::write(dir.join("mine.toml"), "every = \"1h\"\nprompt = \"p\"\n").unwrap();
        let listed = apply(&dir, "s1", None, &json!({"action": "list"}));
        assert!(
            listed.content.contains("mine (the user's own)"),
            "{}",
            listed.content
        );
        assert!(
            listed.content.contains("standup: ") && listed.content.contains("every = \"1d\""),
            "{}",
            listed.content
        );
        let refused = apply(
            &dir,
            "s1",
            None,
            &json!({"action": "cancel", "name": "mine"}),
        );
        assert!(refused.is_error);
        assert!(
            dir.join("mine.toml").exists(),
            "the user's schedule is kept"
        );
        let cancelled = apply(
            &dir,
            "s1",
            None,
            &json!({"action": "cancel", "name": "standup"}),
        );
        assert!(!cancelled.is_error);
        assert!(!dir.join("standup.toml").exists());
        let again = apply(
            &dir,
            "s1",
            None,
            &json!({"action": "create", "name": "mine", "every": "1h", "prompt": "p"}),
        );
        assert!(again.is_error, "an existing name is not overwritten");
        // A Coding task works in the session's repository unless it names one.
        let coding = apply(
            &dir,
            "s1",
            Some(Path::new("/work/repo")),
            &json!({"action": "create", "name": "tests", "every": "1h", "prompt": "p", "mode": "coding"}),
        );
        assert!(!coding.is_error, "{}", coding.content);
        let text = std::fs::read_to_string(dir.join("tests.toml")).unwrap();
        assert!(text.contains("workspace = \"/work/repo\""), "{text}");
    }
}
