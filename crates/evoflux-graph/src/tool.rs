//! Tool definitions with their typed behavior.
//!
//! A tool's behavior (when it is available, how the harness handles a call,
//! how it is presented, what class of action it is) is declared on the
//! definition that won its slot and travels with it through the compiled
//! graph. Replacing `tools/web_fetch` with a command tool therefore makes it
//! an ordinary command tool: nothing downstream can rediscover the old
//! behavior from the name.
//!
//! The framework tools' definitions are one module each in [`builtin`];
//! a command tool's comes from its `tools/<name>.toml` ([`parse_file`]).

use evoflux_core::AppMode;
use serde::{Deserialize, Serialize};
use serde_json::Value;

pub mod builtin;

pub use builtin::{FRAMEWORK_TOOLS, framework_tool};

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
    /// Modes in which the tool exists but is in no default tool set: only
    /// an agent that names it gets it there (`browser` in Coding).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub requested_in: Vec<AppMode>,
    /// What the tool observes, when its results can be reused or counted
    /// as observations.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observation: Option<ObservationKind>,
}

/// Built-in executors: the typed identity of a framework tool the harness
/// runs, so its handler is found by this field, not by the tool's name.
/// Each variant's definition is the [`builtin`] module of the same name;
/// its handler is the harness's `tools/<name>.rs`, which the harness's one
/// exhaustive match on this enum finds.
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
    /// Starts, follows and stops the session's dev-server previews.
    Preview,
    /// Drives a headless Chromium (`browser`).
    Browser,
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

/// The modes a tool exists in unless it names them.
const BOTH: &[AppMode] = &[AppMode::Work, AppMode::Coding];

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
            requested_in: Vec::new(),
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
    use serde_json::json;

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
