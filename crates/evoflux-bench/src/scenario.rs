//! What the fake model answers at each step of a conversation.
//!
//! The step is read from the request itself (how many model turns its
//! conversation already holds), never from the order requests arrive in:
//! a retried call, a speculative call made twice or two sessions served by
//! one server each get the answer that belongs to their conversation.

use serde::Serialize;
use serde_json::{Value, json};

use crate::prompt::Prompt;

/// One tool call the model makes.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolCall {
    pub name: String,
    pub arguments: Value,
}

/// The model's answer at one step.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub enum Reply {
    Text(String),
    /// One or more calls, made in parallel in one turn.
    ToolCalls(Vec<ToolCall>),
}

impl Reply {
    /// A turn with one call.
    pub fn call(name: &str, arguments: Value) -> Reply {
        Reply::ToolCalls(vec![ToolCall {
            name: name.to_owned(),
            arguments,
        }])
    }
}

/// The tool names and arguments a harness offers for the two actions the
/// scenarios need, so each harness is asked for the same work in its own
/// tools.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Dialect {
    /// evoflux's `shell` and `read` (crates/evoflux-graph's framework
    /// tools).
    Evoflux,
    /// codex's `exec_command`; it has no read tool, so reading is `cat`.
    Codex,
    /// Claude Code's `Bash` and `Read` (which takes an absolute path).
    Claude,
    /// opencode's `bash` and `read` (`filePath`, absolute).
    Opencode,
}

impl Dialect {
    pub fn shell(self, command: &str, why: &str) -> Reply {
        match self {
            Dialect::Evoflux => {
                Reply::call("shell", json!({"command": command, "description": why}))
            }
            Dialect::Codex => Reply::call("exec_command", json!({ "cmd": command })),
            Dialect::Claude => Reply::call("Bash", json!({"command": command, "description": why})),
            Dialect::Opencode => {
                Reply::call("bash", json!({"command": command, "description": why}))
            }
        }
    }

    pub fn read(self, path: &str) -> Reply {
        match self {
            Dialect::Evoflux => Reply::call("read", json!({ "path": path })),
            Dialect::Codex => Reply::call("exec_command", json!({ "cmd": format!("cat {path}") })),
            Dialect::Claude => Reply::call("Read", json!({ "file_path": path })),
            Dialect::Opencode => Reply::call("read", json!({ "filePath": path })),
        }
    }
}

/// A scripted conversation: the reply at step 0 (no model turn yet), 1, …
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Script {
    pub steps: Vec<Reply>,
}

/// What a request beyond the script's end gets: the conversation is over.
pub const BEYOND_SCRIPT: &str = "Done.";

impl Script {
    /// The step `prompt` is at.
    pub fn step_of(prompt: &Prompt) -> usize {
        prompt.assistant_turns
    }

    /// The reply for `prompt`'s step; past the end, a plain text answer.
    pub fn reply(&self, prompt: &Prompt) -> Reply {
        self.steps
            .get(Self::step_of(prompt))
            .cloned()
            .unwrap_or_else(|| Reply::Text(BEYOND_SCRIPT.to_owned()))
    }

    /// Shell, read, answer.
    pub fn three_step(dialect: Dialect, file: &str) -> Script {
        Script {
            steps: vec![
                dialect.shell("ls -la", "list the workspace"),
                dialect.read(file),
                Reply::Text(format!("{file} holds the project notes.")),
            ],
        }
    }

    /// One read per file, then an answer.
    pub fn reads(dialect: Dialect, files: &[String]) -> Script {
        let mut steps: Vec<Reply> = files.iter().map(|f| dialect.read(f)).collect();
        steps.push(Reply::Text(format!("Read {} files.", files.len())));
        Script { steps }
    }

    /// One text answer.
    pub fn answer(text: &str) -> Script {
        Script {
            steps: vec![Reply::Text(text.to_owned())],
        }
    }
}

/// The resolver's "no skill" answer, in the JSON object evoflux's resolver
/// expects (`skill_name`, `confidence`, `reason`, nothing else).
pub fn resolver_no_skill() -> String {
    json!({"skill_name": null, "confidence": 0.05, "reason": "no listed skill matches the request"})
        .to_string()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::Wire;

    fn chat_at(assistant_turns: usize) -> Prompt {
        let mut messages = vec![json!({"role": "user", "content": "go"})];
        for i in 0..assistant_turns {
            messages.push(json!({"role": "assistant", "content": null, "tool_calls": [
                {"id": format!("c{i}"), "type": "function", "function": {"name": "read", "arguments": "{}"}}]}));
            messages.push(json!({"role": "tool", "tool_call_id": format!("c{i}"), "content": "x"}));
        }
        Prompt::parse(
            Wire::Chat,
            &json!({"messages": messages, "tools": [{"type": "function"}]}),
        )
        .unwrap()
    }

    #[test]
    fn the_step_comes_from_the_conversation_not_from_arrival_order() {
        let script = Script::three_step(Dialect::Evoflux, "notes.txt");
        // Ask for step 2 first, then step 0 twice (a retry): each gets its
        // own reply.
        assert_eq!(
            script.reply(&chat_at(2)),
            Reply::Text("notes.txt holds the project notes.".into())
        );
        for _ in 0..2 {
            let Reply::ToolCalls(calls) = script.reply(&chat_at(0)) else {
                panic!("step 0 is a tool call");
            };
            assert_eq!(calls[0].name, "shell");
            assert_eq!(calls[0].arguments["command"], "ls -la");
        }
        let Reply::ToolCalls(calls) = script.reply(&chat_at(1)) else {
            panic!("step 1 is a tool call");
        };
        assert_eq!(calls[0].name, "read");
        assert_eq!(calls[0].arguments["path"], "notes.txt");
        assert_eq!(script.reply(&chat_at(7)), Reply::Text(BEYOND_SCRIPT.into()));
        let codex = Script::three_step(Dialect::Codex, "notes.txt");
        assert_eq!(
            codex.reply(&chat_at(1)),
            Reply::call("exec_command", json!({"cmd": "cat notes.txt"}))
        );
    }

    #[test]
    fn the_no_skill_answer_is_the_resolver_schema() {
        let v: Value = serde_json::from_str(&resolver_no_skill()).unwrap();
        let mut keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
        keys.sort_unstable();
        assert_eq!(keys, ["confidence", "reason", "skill_name"]);
        assert!(v["skill_name"].is_null());
        assert!((0.0..=1.0).contains(&v["confidence"].as_f64().unwrap()));
    }
}
