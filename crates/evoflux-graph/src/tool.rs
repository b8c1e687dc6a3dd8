//! Tool definitions with their typed behavior.
//!
//! A tool's behavior (when it is available, how the harness handles a call,
//! how it is presented, what class of action it is) is declared on the
//! definition that won its slot and travels with it through the compiled
//! graph. Replacing `tools/web_fetch` with a command tool therefore makes it
//! an ordinary command tool: nothing downstream can rediscover the old
//! behavior from the name.

use evoflux_core::AppMode;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

pub mod limits;

/// A condition under which a tool is offered to the model. All listed
/// conditions must hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Availability {
    /// Only in a root session (not a delegated child).
    RootSession,
    /// Only in a delegated task child.
    DelegatedTaskChild,
    /// Only when the session can ask its user for input.
    RequiresRequestInput,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum InputRequest {
    Question,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DispatchAction {
    SelfAgent,
    TaskUpdate,
    TaskCancel,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ProviderTool {
    WebSearch,
}

impl ProviderTool {
    /// Which providers run the tool, for people reading `info`.
    pub const fn needs(self) -> &'static str {
        match self {
            ProviderTool::WebSearch => {
                "a provider that searches the web: kind anthropic, or kind openai with \
                 wire_api = \"responses\""
            }
        }
    }
}

/// How the harness handles a call. `None` means the tool's executor runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Handling {
    None,
    RequestInput { request: InputRequest },
    Dispatch { action: DispatchAction },
    ProviderTool { provider: ProviderTool },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Presentation {
    None,
    /// Calls are shown as skill activations.
    Skill,
}

/// How a tool's result relates to what it observed, for observation
/// receipts: the harness decides by this declared kind, never by the tool's
/// name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ObservationKind {
    /// Reads one file range (`path`, `offset`, `limit`): the result is a
    /// function of the file's revision, so an unchanged repeat can be
    /// answered by a receipt naming the earlier call.
    Source,
    /// Lists or searches the workspace; counted, never receipted (no single
    /// revision covers it).
    Discovery,
    /// Retrieves from an index (code navigation); counted, never receipted.
    Retrieval,
}

/// The class of action a tool performs; worker capability policy decides on
/// these, never on tool names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ActionClass {
    Read,
    Write,
    Execute,
    Verify,
    Dispatch,
    Ask,
    Network,
    /// Writes only the session's terminal artifacts (`artifact`), never
    /// the workspace's files.
    Artifact,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolBehavior {
    pub availability: Vec<Availability>,
    pub handling: Handling,
    pub presentation: Presentation,
    pub action_class: ActionClass,
    /// The modes the tool exists in.
    pub modes: Vec<AppMode>,
    /// Only a team lead gets it.
    pub lead_only: bool,
    /// In no mode's default tool set: only an agent or recipe that names
    /// it gets it (`artifact`, for artifact-write workers).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub on_request: bool,
    /// What the tool observes, when its results can be reused or counted
    /// as observations.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observation: Option<ObservationKind>,
}

/// Built-in executors, implemented by the tools crate. A typed identity,
/// so the executor is found by this field, not by the tool's name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BuiltinExecutor {
    Shell,
    Process,
    Read,
    Write,
    Edit,
    Ls,
    Glob,
    Grep,
    Todo,
    WebFetch,
    Skill,
    CodeContext,
    /// Runs a command registered in `fleets/commands.yaml`.
    Verify,
    /// Writes a file under the workspace's `.evoflux/artifacts/`.
    Artifact,
    /// Creates, lists and cancels the user's schedules that sessions made.
    ScheduleTask,
    /// Searches the granted MCP tools held back from the model's tool list
    /// and activates the ones the model picks.
    ConnectionSearch,
}

/// Whether a call needs the user's approval; one type with `config.toml`'s
/// `[approval]` table, which sets it for any tool.
pub use evoflux_core::config::Approval;

/// A user-defined tool that runs a command.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CommandTool {
    /// Arguments; an element that is exactly `{{field}}` is replaced by the
    /// input field's value as one whole argument (never split by a shell).
    pub argv: Vec<String>,
    pub timeout_ms: u64,
    /// Names of environment variables passed through.
    pub env: Vec<String>,
    pub approval: Approval,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum ToolExecutor {
    Builtin { executor: BuiltinExecutor },
    Command(CommandTool),
}

/// A selected tool.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolDefinition {
    /// The model-visible name (the slot name).
    pub name: String,
    pub description: String,
    pub input_schema: Value,
    pub behavior: ToolBehavior,
    /// `None` for natively handled tools, which truthfully have no executor.
    pub executor: Option<ToolExecutor>,
}

const BOTH: &[AppMode] = &[AppMode::Work, AppMode::Coding];

fn object(properties: Value, required: &[&str]) -> Value {
    json!({
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": false,
    })
}

struct Spec {
    description: String,
    schema: Value,
    action_class: ActionClass,
    availability: &'static [Availability],
    handling: Handling,
    presentation: Presentation,
    modes: &'static [AppMode],
    lead_only: bool,
    on_request: bool,
    observation: Option<ObservationKind>,
    executor: Option<BuiltinExecutor>,
}

impl Spec {
    fn ordinary(
        executor: BuiltinExecutor,
        action_class: ActionClass,
        description: impl Into<String>,
        schema: Value,
    ) -> Spec {
        Spec {
            description: description.into(),
            schema,
            action_class,
            availability: &[],
            handling: Handling::None,
            presentation: Presentation::None,
            modes: BOTH,
            lead_only: false,
            on_request: false,
            observation: None,
            executor: Some(executor),
        }
    }

    fn native(
        handling: Handling,
        action_class: ActionClass,
        availability: &'static [Availability],
        description: impl Into<String>,
        schema: Value,
    ) -> Spec {
        Spec {
            description: description.into(),
            schema,
            action_class,
            availability,
            handling,
            presentation: Presentation::None,
            modes: BOTH,
            lead_only: false,
            on_request: false,
            observation: None,
            executor: None,
        }
    }

    /// Declares what the tool observes (see [`ObservationKind`]).
    fn observes(mut self, kind: ObservationKind) -> Spec {
        self.observation = Some(kind);
        self
    }

    fn build(self, name: &str) -> ToolDefinition {
        ToolDefinition {
            name: name.to_owned(),
            description: self.description,
            input_schema: self.schema,
            behavior: ToolBehavior {
                availability: self.availability.to_vec(),
                handling: self.handling,
                presentation: self.presentation,
                action_class: self.action_class,
                modes: self.modes.to_vec(),
                lead_only: self.lead_only,
                on_request: self.on_request,
                observation: self.observation,
            },
            executor: self
                .executor
                .map(|executor| ToolExecutor::Builtin { executor }),
        }
    }
}

/// The framework tool identities, in registry order.
pub const FRAMEWORK_TOOLS: &[&str] = &[
    "shell",
    "process",
    "read",
    "write",
    "edit",
    "ls",
    "glob",
    "grep",
    "todo",
    "web_fetch",
    "skill",
    "code_context",
    "verify",
    "artifact",
    "ask_user",
    "agent",
    "task_update",
    "task_cancel",
    "web_search",
    "schedule_task",
    "connection_search",
];

/// Builds the framework definition of one tool. Called only for a
/// framework tool that won its slot.
///
/// Every bound and default a schema states is read from [`limits`], which
/// the executors enforce.
pub fn framework_tool(name: &str) -> Option<ToolDefinition> {
    use ActionClass as A;
    use BuiltinExecutor as X;
    use limits::{glob, grep, process, read, shell, web_fetch};
    let str_ = |d: &str| json!({"type": "string", "description": d});
    let spec = match name {
        "shell" => Spec::ordinary(
            X::Shell,
            A::Execute,
            "Run one non-interactive shell command in the workspace (stdin closed, stderr merged). Long commands keep running after yield_time_ms; continue them with `process`.",
            object(
                json!({
                    "command": str_("The command line."),
                    "description": str_("Why you run it, in a few words."),
                    "workdir": str_("Directory inside the workspace."),
                    "timeout_seconds": {
                        "type": "integer",
                        "minimum": shell::MIN_TIMEOUT_SECONDS,
                        "description": format!("Default {}.", shell::DEFAULT_TIMEOUT_SECONDS),
                    },
                    "yield_time_ms": {
                        "type": "integer",
                        "minimum": shell::MIN_YIELD_MS,
                        "maximum": shell::MAX_YIELD_MS,
                        "description": format!("Default {}.", shell::DEFAULT_YIELD_MS),
                    },
                    "notify_on_exit": {"type": "boolean", "description": "If it outlives the yield, report its end without polling."},
                    "outside_sandbox": {"type": "boolean", "description": "Ask the user to run this one command outside the sandbox, only when the sandbox blocks what the task needs (writing outside the workspace, the network when denied)."},
                    "justification": str_("With outside_sandbox: why, in one sentence the user reads.")
                }),
                &["command"],
            ),
        ),
        "process" => Spec::ordinary(
            X::Process,
            A::Execute,
            "List, poll, wait for or terminate commands started by `shell`.",
            object(
                json!({
                    "action": {"type": "string", "enum": process::ACTIONS},
                    "process_id": {"type": "string"},
                    "wait_seconds": {
                        "type": "integer",
                        "minimum": process::MIN_WAIT_SECONDS,
                        "maximum": process::MAX_WAIT_SECONDS,
                    }
                }),
                &["action"],
            ),
        ),
        "read" => Spec::ordinary(
            X::Read,
            A::Read,
            "Read a file with line numbers. Use offset/limit for large files.",
            object(
                json!({
                    "path": str_("File path, or an artifact a result named (artifact:NAME)."),
                    "offset": {"type": "integer", "minimum": read::MIN_OFFSET},
                    "limit": {"type": "integer", "minimum": read::MIN_LIMIT}
                }),
                &["path"],
            ),
        )
        .observes(ObservationKind::Source),
        "write" => Spec::ordinary(
            X::Write,
            A::Write,
            "Write a whole file.",
            object(
                json!({"path": str_("File path."), "content": {"type": "string"}, "overwrite": {"type": "boolean"}}),
                &["path", "content"],
            ),
        ),
        "edit" => Spec::ordinary(
            X::Edit,
            A::Write,
            "Replace exact text in a file.",
            object(
                json!({
                    "path": str_("File path."),
                    "old_string": {"type": "string"},
                    "new_string": {"type": "string"},
                    "replace_all": {"type": "boolean"}
                }),
                &["path", "old_string", "new_string"],
            ),
        ),
        "ls" => Spec::ordinary(
            X::Ls,
            A::Read,
            "List a directory.",
            object(json!({"path": str_("Directory; default `.`.")}), &[]),
        )
        .observes(ObservationKind::Discovery),
        "glob" => Spec::ordinary(
            X::Glob,
            A::Read,
            "Find files by glob pattern.",
            object(
                json!({
                    "pattern": {"type": "string"},
                    "directory": {"type": "string"},
                    "max_results": {"type": "integer", "minimum": glob::MIN_RESULTS}
                }),
                &["pattern"],
            ),
        )
        .observes(ObservationKind::Discovery),
        "grep" => Spec::ordinary(
            X::Grep,
            A::Read,
            "Search file contents with a regular expression.",
            object(
                json!({
                    "pattern": {"type": "string", "maxLength": grep::MAX_PATTERN_CHARS},
                    "directory": {"type": "string"},
                    "include": {"type": "string"},
                    "case_insensitive": {"type": "boolean"},
                    "context": {
                        "type": "integer",
                        "minimum": grep::MIN_CONTEXT,
                        "maximum": grep::MAX_CONTEXT,
                    },
                    "max_results": {"type": "integer", "minimum": grep::MIN_RESULTS}
                }),
                &["pattern"],
            ),
        )
        .observes(ObservationKind::Discovery),
        "todo" => Spec {
            lead_only: true,
            ..Spec::ordinary(
                X::Todo,
                A::Write,
                "Read or replace the task list. Omit `todos` to read it.",
                object(
                    json!({"todos": {"type": "array", "items": object(json!({
                        "content": {"type": "string"},
                        "status": {"type": "string", "enum": ["pending", "in_progress", "completed", "cancelled"]}
                    }), &["content", "status"])}}),
                    &[],
                ),
            )
        },
        "web_fetch" => Spec::ordinary(
            X::WebFetch,
            A::Network,
            "Fetch a URL and return its content as markdown, text or html.",
            object(
                json!({
                    "url": {"type": "string", "format": "uri"},
                    "format": {"type": "string", "enum": web_fetch::FORMATS},
                    "timeout": {
                        "type": "integer",
                        "minimum": web_fetch::MIN_TIMEOUT_SECONDS,
                        "maximum": web_fetch::MAX_TIMEOUT_SECONDS,
                    }
                }),
                &["url"],
            ),
        ),
        "skill" => Spec {
            presentation: Presentation::Skill,
            ..Spec::ordinary(
                X::Skill,
                A::Read,
                "List skills, load one by name, or read one of its resources.",
                object(
                    json!({
                        "skill_name": {"type": "string"},
                        "action": {"type": "string", "enum": ["list", "load", "read_resource"]},
                        "resource_path": {"type": "string"}
                    }),
                    &[],
                ),
            )
        },
        "code_context" => Spec {
            modes: &[AppMode::Coding],
            observation: Some(ObservationKind::Retrieval),
            ..Spec::ordinary(
                X::CodeContext,
                A::Read,
                "Navigate code by one exact symbol: where it is defined (with its source), its references, callers, callees, implementations, transitive impact or neighborhood; or the outline of one file. Give the name as it appears in code (`load_config`, `Config::new`, `store.Open`), never a description: find the identifier first with grep or read. Results name the repository, path, line range and file revision, ready for `read`; ambiguity is listed, not guessed.",
                object(
                    json!({
                        "operation": {
                            "type": "string",
                            "enum": evoflux_core::code_operation::CodeOperation::ALL.map(|o| o.as_str()),
                            "description": "definition, references, callers, callees, implementations, impact (callers, transitively) and neighborhood (container, siblings, callers, callees) take `symbol`; outline takes `path`."
                        },
                        "symbol": {
                            "type": "string",
                            "pattern": evoflux_core::code_operation::SYMBOL_PATTERN,
                            "maxLength": evoflux_core::code_operation::MAX_SYMBOL_CHARS,
                            "description": "One exact identifier, optionally qualified by its type or module: `name`, `Type::method`, `module.func`."
                        },
                        "path": {
                            "type": "string",
                            "maxLength": 1000,
                            "description": "For outline: the file. Otherwise: a file or folder the symbol must be in."
                        },
                        "repository": {
                            "type": "string",
                            "description": "Only this repository of the session (its folder name, or `.` for the first)."
                        },
                        "depth": {"type": "integer", "minimum": 1, "maximum": 4, "description": "For impact: how many calls away to follow (default 2)."},
                        "limit": {"type": "integer", "minimum": 1, "maximum": 50, "description": "Most entries per section (default 20)."}
                    }),
                    &["operation"],
                ),
            )
        },
        // The command enum is bound per session from the registry
        // (`PreparedTools::bind_commands`); the graph does not know it.
        "verify" => Spec::ordinary(
            X::Verify,
            A::Verify,
            "Run one of the repository's registered check commands (fleets/commands.yaml) by id: argv only, no shell, a closed environment. Returns whether it passed, its exit code and the tail of its output.",
            object(
                json!({
                    "command": str_("The registered command's id."),
                    "args": {"type": "array", "items": {"type": "string"}, "maxItems": 64, "description": "Values for the command's declared argument slots, in order; nothing else."}
                }),
                &["command"],
            ),
        ),
        "artifact" => Spec {
            on_request: true,
            ..Spec::ordinary(
                X::Artifact,
                A::Artifact,
                "Write a terminal artifact (a plan, a report) under the workspace's .evoflux/artifacts/ folder; it cannot write anywhere else.",
                object(
                    json!({
                        "path": str_("Path inside .evoflux/artifacts/, such as PLAN.md."),
                        "content": {"type": "string"}
                    }),
                    &["path", "content"],
                ),
            )
        },
        "schedule_task" => Spec {
            lead_only: true,
            availability: &[Availability::RootSession],
            ..Spec::ordinary(
                X::ScheduleTask,
                A::Execute,
                "Schedule a task for later, once (`at`) or repeatedly (`cron` with a `timezone`, or `every`), as a new session with `prompt`; list the schedules you made; cancel one. The user approves each call; `evoflux schedule list` shows them.",
                object(
                    json!({
                        "action": {"type": "string", "enum": ["create", "list", "cancel"]},
                        "name": str_("The schedule's name: letters, digits, `.`, `_` and `-` (create, cancel)."),
                        "prompt": str_("What the scheduled session should do (create)."),
                        "at": str_("One run at this RFC 3339 time, such as 2026-12-03T09:00:00+01:00."),
                        "cron": str_("Five cron fields, such as `0 9 * * 1-5`."),
                        "timezone": str_("The cron's IANA time zone (default UTC)."),
                        "every": str_("An interval such as `30m`, `2h`, `1d` (at least one minute)."),
                        "mode": {"type": "string", "enum": ["work", "coding"]},
                        "workspace": str_("Coding: the absolute path of the repository to work in.")
                    }),
                    &["action"],
                ),
            )
        },
        // The harness offers it only while granted MCP tools are held back
        // (too many to send up front); the server list is bound per session.
        "connection_search" => Spec::ordinary(
            X::ConnectionSearch,
            A::Read,
            "Find tools of the connected MCP servers that are not in your tool list yet, by keywords (`query`), then turn on the exact ones you need (`activate`, their names); activated tools are callable from your next step.",
            object(
                json!({
                    "query": {"type": "string", "minLength": 1, "maxLength": 500, "description": "Keywords matched against tool names and descriptions."},
                    "server": str_("Search only this server's tools."),
                    "activate": {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": limits::connection_search::MAX_ACTIVATE, "description": "Names of tools from search results to turn on."},
                    "limit": {"type": "integer", "minimum": 1, "maximum": limits::connection_search::MAX_RESULTS, "description": format!("Most results to return (default {}).", limits::connection_search::DEFAULT_RESULTS)}
                }),
                &[],
            ),
        ),
        "ask_user" => Spec {
            lead_only: true,
            ..Spec::native(
                Handling::RequestInput {
                    request: InputRequest::Question,
                },
                A::Ask,
                &[Availability::RequiresRequestInput],
                "Ask the user a question and wait for the answer.",
                object(
                    json!({
                        "question": {"type": "string"},
                        "options": {"type": "array", "items": {"type": "string"}}
                    }),
                    &["question"],
                ),
            )
        },
        "agent" => Spec::native(
            Handling::Dispatch {
                action: DispatchAction::SelfAgent,
            },
            A::Dispatch,
            &[Availability::RootSession],
            "Delegate a task to a member of your team (agent_id), or to a fresh copy of yourself (no agent_id); waits for its final answer, which is returned.",
            object(
                json!({
                    "message": {"type": "string", "minLength": 1, "description": "The whole task: the agent sees nothing else of this conversation."},
                    "agent_id": {"type": "string", "description": "The member to hand the task to."},
                    "background": {"type": "boolean", "description": "Run it as a background task: this call returns its task id at once, you keep working, and its answer arrives when you pause; task_cancel stops it."}
                }),
                &["message"],
            ),
        ),
        "task_update" => Spec::native(
            Handling::Dispatch {
                action: DispatchAction::TaskUpdate,
            },
            A::Dispatch,
            &[Availability::DelegatedTaskChild],
            "Tell the parent what this delegated task is doing.",
            object(
                json!({"message": {"type": "string", "minLength": 1}}),
                &["message"],
            ),
        ),
        "task_cancel" => Spec::native(
            Handling::Dispatch {
                action: DispatchAction::TaskCancel,
            },
            A::Dispatch,
            &[Availability::RootSession],
            "Cancel delegated tasks by id.",
            object(
                json!({"task_ids": {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 50}}),
                &["task_ids"],
            ),
        ),
        "web_search" => Spec::native(
            Handling::ProviderTool {
                provider: ProviderTool::WebSearch,
            },
            A::Network,
            &[],
            "Search the web (run by the model provider).",
            object(json!({"query": {"type": "string"}}), &["query"]),
        ),
        _ => return None,
    };
    Some(spec.build(name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_framework_tool_has_a_valid_schema_and_truthful_executor() {
        for name in FRAMEWORK_TOOLS {
            let def = framework_tool(name).unwrap();
            assert_eq!(def.name, *name);
            assert!(
                jsonschema::meta::is_valid(&def.input_schema),
                "{name}: invalid schema"
            );
            // Natively handled tools have no executor; ordinary ones do.
            match def.behavior.handling {
                Handling::None => assert!(def.executor.is_some(), "{name}"),
                Handling::RequestInput { .. }
                | Handling::Dispatch { .. }
                | Handling::ProviderTool { .. } => assert!(def.executor.is_none(), "{name}"),
            }
        }
        assert!(framework_tool("nope").is_none());
    }

    #[test]
    fn observation_kinds_are_declared_on_the_definition() {
        let kind = |n: &str| framework_tool(n).unwrap().behavior.observation;
        assert_eq!(kind("read"), Some(ObservationKind::Source));
        for n in ["ls", "glob", "grep"] {
            assert_eq!(kind(n), Some(ObservationKind::Discovery), "{n}");
        }
        assert_eq!(kind("code_context"), Some(ObservationKind::Retrieval));
        assert_eq!(kind("shell"), None);
        // Unset kinds stay out of the serialized definition.
        let shell = serde_json::to_value(framework_tool("shell").unwrap()).unwrap();
        assert!(shell["behavior"].get("observation").is_none());
        let read = serde_json::to_value(framework_tool("read").unwrap()).unwrap();
        assert_eq!(read["behavior"]["observation"], "source");
    }

    #[test]
    fn code_context_is_coding_only() {
        assert_eq!(
            framework_tool("code_context").unwrap().behavior.modes,
            [AppMode::Coding]
        );
        assert_eq!(framework_tool("shell").unwrap().behavior.modes, BOTH);
    }
}

/// The file shape of `tools/<name>.toml`.
#[derive(Debug, Deserialize)]
struct ToolFile {
    description: String,
    input_schema: Value,
    argv: Vec<String>,
    #[serde(default)]
    timeout_ms: Option<u64>,
    #[serde(default)]
    env: Vec<String>,
    #[serde(default)]
    approval: Option<Approval>,
    #[serde(default)]
    modes: Option<Vec<AppMode>>,
    #[serde(default)]
    action_class: Option<ActionClass>,
}

/// Default and ceiling for a command tool's timeout.
pub const DEFAULT_TOOL_TIMEOUT_MS: u64 = 60_000;
pub const MAX_TOOL_TIMEOUT_MS: u64 = 3_600_000;

/// Parses a command-backed tool definition.
pub fn parse_file(
    path: &std::path::Path,
    name: &str,
    value: Value,
    diags: &mut evoflux_core::Diagnostics,
) -> Option<ToolDefinition> {
    use evoflux_core::Diagnostic;
    let file: ToolFile = crate::declarative::deserialize_strict(path, value, "tool", diags)?;
    let before = diags.count(evoflux_core::Severity::Error);
    let err = |code: &'static str, field: &str, msg: String| {
        Diagnostic::error(code, msg)
            .with_file(path)
            .with_field(field.to_owned())
    };
    if file.description.trim().is_empty() {
        diags.push(err(
            "compile/tool-invalid",
            "description",
            "description must say what the tool does; the model reads it".into(),
        ));
    }
    let schema_ok = match jsonschema::meta::validate(&file.input_schema) {
        Ok(()) => true,
        Err(e) => {
            diags.push(err(
                "compile/tool-schema-invalid",
                "input_schema",
                format!("input_schema is not a valid JSON Schema: {e}"),
            ));
            false
        }
    };
    if schema_ok && file.input_schema.get("type") != Some(&Value::String("object".into())) {
        diags.push(err(
            "compile/tool-schema-invalid",
            "input_schema",
            "input_schema must describe an object (`type = \"object\"`)".into(),
        ));
    }
    let properties = file
        .input_schema
        .get("properties")
        .and_then(Value::as_object);
    match file.argv.first() {
        None => diags.push(err(
            "compile/tool-invalid",
            "argv",
            "argv must name the program to run, such as [\"./scripts/deploy.sh\", \"{{env}}\"]"
                .into(),
        )),
        Some(program) if program.contains("{{") => diags.push(err(
            "compile/tool-placeholder-invalid",
            "argv",
            "the program (argv[0]) must be fixed, not a placeholder".into(),
        )),
        Some(_) => {}
    }
    for (i, arg) in file.argv.iter().enumerate() {
        if !arg.contains("{{") && !arg.contains("}}") {
            continue;
        }
        let field = arg
            .strip_prefix("{{")
            .and_then(|s| s.strip_suffix("}}"))
            .map(str::trim)
            .filter(|f| !f.is_empty() && !f.contains(['{', '}']));
        match field {
            Some(f) if properties.is_some_and(|p| p.contains_key(f)) => {}
            Some(f) => diags.push(err(
                "compile/tool-placeholder-invalid",
                &format!("argv[{i}]"),
                format!("placeholder `{{{{{f}}}}}` names no property of input_schema"),
            )),
            None => diags.push(err(
                "compile/tool-placeholder-invalid",
                &format!("argv[{i}]"),
                format!(
                    "`{arg}`: a placeholder must be a whole argument such as `{{{{field}}}}`; it \
                     is never spliced into a larger string"
                ),
            )),
        }
    }
    let timeout_ms = file.timeout_ms.unwrap_or(DEFAULT_TOOL_TIMEOUT_MS);
    if timeout_ms == 0 || timeout_ms > MAX_TOOL_TIMEOUT_MS {
        diags.push(err(
            "compile/tool-invalid",
            "timeout_ms",
            format!("timeout_ms must be between 1 and {MAX_TOOL_TIMEOUT_MS}"),
        ));
    }
    for var in file
        .env
        .iter()
        .filter(|v| !crate::connection::is_env_name(v))
    {
        diags.push(err(
            "compile/tool-invalid",
            "env",
            format!("`{var}` in env is not an environment variable name"),
        ));
    }
    if matches!(&file.modes, Some(m) if m.is_empty()) {
        diags.push(err(
            "compile/tool-invalid",
            "modes",
            "modes must list at least one of \"work\", \"coding\" (or be omitted)".into(),
        ));
    }
    if diags.count(evoflux_core::Severity::Error) != before {
        return None;
    }
    Some(ToolDefinition {
        name: name.to_owned(),
        description: file.description,
        input_schema: file.input_schema,
        behavior: ToolBehavior {
            availability: Vec::new(),
            handling: Handling::None,
            presentation: Presentation::None,
            action_class: file.action_class.unwrap_or(ActionClass::Execute),
            modes: file.modes.unwrap_or_else(|| BOTH.to_vec()),
            lead_only: false,
            on_request: false,
            observation: None,
        },
        executor: Some(ToolExecutor::Command(CommandTool {
            argv: file.argv,
            timeout_ms,
            env: file.env,
            approval: file.approval.unwrap_or(Approval::Never),
        })),
    })
}

#[cfg(test)]
mod file_tests {
    use super::*;

    fn check(v: Value) -> (Option<ToolDefinition>, Vec<String>) {
        let mut d = evoflux_core::Diagnostics::new();
        let r = parse_file(
            std::path::Path::new("tools/deploy.toml"),
            "deploy",
            v,
            &mut d,
        );
        (r, d.codes().into_iter().map(str::to_owned).collect())
    }

    fn base() -> Value {
        json!({
            "description": "Deploy a service",
            "input_schema": {"type": "object", "properties": {"service": {"type": "string"}}, "required": ["service"]},
            "argv": ["./deploy.sh", "--service", "{{service}}"],
        })
    }

    #[test]
    fn valid_command_tool() {
        let (t, codes) = check(base());
        assert!(codes.is_empty(), "{codes:?}");
        let t = t.unwrap();
        assert_eq!(t.behavior.handling, Handling::None);
        match t.executor {
            Some(ToolExecutor::Command(c)) => {
                assert_eq!(c.timeout_ms, DEFAULT_TOOL_TIMEOUT_MS);
                assert_eq!(c.approval, Approval::Never);
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn invalid_tools_have_codes() {
        let mut v = base();
        v["input_schema"] = json!({"type": "object", "properties": {"a": {"type": "nope"}}});
        assert!(
            check(v)
                .1
                .contains(&"compile/tool-schema-invalid".to_owned())
        );
        let mut v = base();
        v["input_schema"] = json!({"type": "string"});
        assert!(
            check(v)
                .1
                .contains(&"compile/tool-schema-invalid".to_owned())
        );
        let mut v = base();
        v["argv"] = json!(["./deploy.sh", "--service={{service}}"]);
        assert_eq!(check(v).1, ["compile/tool-placeholder-invalid"]);
        let mut v = base();
        v["argv"] = json!(["./deploy.sh", "{{missing}}"]);
        assert_eq!(check(v).1, ["compile/tool-placeholder-invalid"]);
        let mut v = base();
        v["argv"] = json!(["{{service}}"]);
        assert!(
            check(v)
                .1
                .contains(&"compile/tool-placeholder-invalid".to_owned())
        );
        let mut v = base();
        v["argv"] = json!([]);
        assert_eq!(check(v).1, ["compile/tool-invalid"]);
        let mut v = base();
        v["timeout_ms"] = json!(0);
        assert_eq!(check(v).1, ["compile/tool-invalid"]);
        let mut v = base();
        v["approval"] = json!("sometimes");
        assert_eq!(check(v).1, ["compile/definition-invalid"]);
        let mut v = base();
        v["shell"] = json!(true);
        assert_eq!(check(v).1, ["compile/unknown-key"]);
    }
}
