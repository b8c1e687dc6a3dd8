//! Command-backed project tools (`tools/<name>.toml`): a fixed argv whose
//! whole-argument placeholders `{{field}}` take the model's input values,
//! run without a shell so no value is ever split or interpreted, in a
//! closed environment, from the primary workspace root.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use evoflux_graph::tool::CommandTool;
use serde_json::Value;

use crate::env::child_env;
use crate::error::ToolError;
use crate::runtime::RuntimeConfig;
use crate::tracked::SpawnSpec;
use crate::workspace::Workspace;

/// One argv element, as the graph validated it.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Arg<'a> {
    Literal(&'a str),
    /// `{{field}}`: the input field's value as one argument.
    Placeholder(&'a str),
}

fn classify(index: usize, arg: &str) -> Result<Arg<'_>, ToolError> {
    if !arg.contains("{{") && !arg.contains("}}") {
        return Ok(Arg::Literal(arg));
    }
    arg.strip_prefix("{{")
        .and_then(|s| s.strip_suffix("}}"))
        .map(str::trim)
        .filter(|f| !f.is_empty() && !f.contains(['{', '}']))
        .map(Arg::Placeholder)
        .ok_or_else(|| ToolError::CommandToolInvalid {
            field: format!("argv[{index}]"),
            message: format!("`{arg}` splices a placeholder into a larger argument"),
        })
}

/// The argument a placeholder becomes.
fn value_of(input: &Value, field: &str) -> Result<OsString, ToolError> {
    match input.get(field) {
        Some(Value::String(s)) => Ok(s.into()),
        Some(Value::Number(n)) => Ok(n.to_string().into()),
        Some(Value::Bool(b)) => Ok(b.to_string().into()),
        None | Some(Value::Null) => Err(ToolError::input(
            field,
            "required: the command's arguments use this field",
        )),
        Some(Value::Array(_) | Value::Object(_)) => Err(ToolError::input(
            field,
            "must be a string, number or boolean to become one command argument",
        )),
    }
}

/// The substituted argv: program first.
fn argv(tool: &CommandTool, input: &Value) -> Result<Vec<OsString>, ToolError> {
    if !input.is_object() {
        return Err(ToolError::input(
            "(input)",
            "the input must be a JSON object",
        ));
    }
    let mut out = Vec::with_capacity(tool.argv.len());
    for (index, arg) in tool.argv.iter().enumerate() {
        match (index, classify(index, arg)?) {
            (0, Arg::Placeholder(_)) => {
                return Err(ToolError::CommandToolInvalid {
                    field: "argv[0]".into(),
                    message: "the program must be fixed, not a placeholder".into(),
                });
            }
            (_, Arg::Literal(text)) => out.push(text.into()),
            (_, Arg::Placeholder(field)) => out.push(value_of(input, field)?),
        }
    }
    if out.is_empty() {
        return Err(ToolError::CommandToolInvalid {
            field: "argv".into(),
            message: "argv names no program".into(),
        });
    }
    Ok(out)
}

/// A relative program path with a slash (`./scripts/x.sh`) is relative to
/// the primary root; a bare name is looked up on the command's `PATH`.
pub(crate) fn program(root: &Path, name: &OsString) -> PathBuf {
    let path = PathBuf::from(name);
    match path.is_relative() && path.components().count() > 1 {
        true => root.join(path),
        false => path,
    }
}

/// The folder a command tool runs in (and a `shell` call without a
/// `workdir`): the workspace's primary root.
pub fn working_folder(ws: &Workspace) -> PathBuf {
    ws.roots()[0].clone()
}

pub(crate) fn spawn_spec(
    tool: &CommandTool,
    ws: &Workspace,
    input: &Value,
    config: &RuntimeConfig,
) -> Result<SpawnSpec, ToolError> {
    let mut argv = argv(tool, input)?;
    let root = working_folder(ws);
    let display = argv
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join(" ");
    let program = program(&root, &argv.remove(0));
    Ok(SpawnSpec {
        program,
        args: argv,
        cwd: root,
        env: child_env(&config.parent_env, &tool.env),
        display,
        timeout: Duration::from_millis(tool.timeout_ms),
        notify_on_exit: false,
        outside_sandbox: false,
        fds: Vec::new(),
        role: crate::tracked::Role::Command,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use evoflux_graph::tool::Approval;
    use serde_json::json;

    fn tool(argv: &[&str]) -> CommandTool {
        CommandTool {
            argv: argv.iter().map(|s| (*s).to_owned()).collect(),
            timeout_ms: 1000,
            env: vec![],
            approval: Approval::Never,
        }
    }

    #[test]
    fn whole_placeholders_become_one_argument_each() {
        let t = tool(&["deploy", "--service", "{{service}}", "{{ count }}"]);
        let got = argv(&t, &json!({"service": "a b; rm -rf /", "count": 3})).unwrap();
        assert_eq!(got, ["deploy", "--service", "a b; rm -rf /", "3"]);
    }

    #[test]
    fn missing_or_structured_values_are_input_errors() {
        let t = tool(&["deploy", "{{service}}"]);
        let e = argv(&t, &json!({})).unwrap_err();
        assert_eq!(e.code(), "tool/input-invalid");
        assert!(e.to_string().contains("`service`"));
        let e = argv(&t, &json!({"service": ["a"]})).unwrap_err();
        assert_eq!(e.code(), "tool/input-invalid");
    }

    #[test]
    fn spliced_or_leading_placeholders_are_definition_errors() {
        for bad in [
            &["deploy", "--service={{service}}"][..],
            &["{{service}}"][..],
        ] {
            let e = argv(&tool(bad), &json!({"service": "x"})).unwrap_err();
            assert_eq!(e.code(), "tool/command-tool-invalid");
        }
    }

    #[test]
    fn relative_programs_are_rooted_at_the_workspace() {
        let root = Path::new("/ws");
        assert_eq!(
            program(root, &"./scripts/x.sh".into()),
            PathBuf::from("/ws/./scripts/x.sh")
        );
        assert_eq!(program(root, &"git".into()), PathBuf::from("git"));
        assert_eq!(program(root, &"/bin/ls".into()), PathBuf::from("/bin/ls"));
    }
}
