//! `verify`'s handler: runs one of the repository's registered check
//! commands (`fleets/commands.yaml`) by id, with values for its declared
//! argument slots only. The registry fixed the argv; the environment is
//! the registry's closed one; the session's sandbox applies. The schema's
//! `command` names exactly the session's registered commands
//! ([`bind_commands`]), and a check that ran is a run effect. Its
//! definition is [`evoflux_graph::tool::builtin::verify`].

use std::path::Path;

use evoflux_model::ToolCall;
use serde_json::Value;

use super::{BuiltinTool, Effect, Handled, command_result};
use crate::events::ToolResult;
use crate::prepared::SessionCapabilities;
use crate::session::Harness;

#[derive(Debug)]
pub(super) struct Verify;

impl BuiltinTool for Verify {
    fn gap(&self, caps: &SessionCapabilities) -> Option<&'static str> {
        caps.process_gap().or_else(|| {
            (!caps.checks)
                .then_some("no check commands are registered; declare them in fleets/commands.yaml")
        })
    }

    fn runs_checks(&self) -> bool {
        true
    }

    fn execute<'a>(
        &'a self,
        session: &'a mut Harness,
        call: &'a ToolCall,
    ) -> Handled<'a, ToolResult> {
        Box::pin(async move { Ok(run_check(session, call).await) })
    }

    fn effect(&self, call: &ToolCall, _is_error: bool, _root: &Path) -> Option<Effect> {
        let id = call.arguments.get("command").and_then(Value::as_str)?;
        Some(Effect::Check(format!("verify {id}")))
    }
}

/// Runs the check; the first line of the result says whether it passed.
async fn run_check(session: &Harness, call: &ToolCall) -> ToolResult {
    let (Some(rt), Some(checks)) = (session.processes(), session.checks()) else {
        return ToolResult::error(format!(
            "`{}` needs registered check commands and a process runtime; this session has \
             neither",
            call.name
        ));
    };
    let id = call
        .arguments
        .get("command")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let args: Vec<String> = match call.arguments.get("args") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) => match items
            .iter()
            .map(|v| v.as_str().map(str::to_owned))
            .collect::<Option<Vec<_>>>()
        {
            Some(a) => a,
            None => return ToolResult::error("`args` must be a list of strings"),
        },
        Some(_) => return ToolResult::error("`args` must be a list of strings"),
    };
    let bound = checks
        .require(id)
        .and_then(|c| Ok((c, c.bind(&Default::default(), &args)?)));
    let (command, argv) = match bound {
        Ok(b) => b,
        Err(e) => return ToolResult::error(format!("{e} [{}]", e.code())),
    };
    let workspace = session.workspace();
    let run = evoflux_tools::ArgvCommand {
        argv,
        cwd: workspace.roots()[0].join(&command.cwd),
        env: command.environment(rt.parent_env()),
        timeout: std::time::Duration::from_millis(command.timeout_ms),
    };
    let out = match rt.run_argv(session.session().id, workspace, run).await {
        Ok(o) => o,
        Err(e) => return ToolResult::error(format!("check `{id}` could not start: {e}")),
    };
    let verdict = match out.meta.as_ref().map(|m| (m.status, m.exit_code)) {
        Some((_, Some(0))) => "passed (exit 0)".to_owned(),
        Some((_, Some(code))) => format!("failed (exit {code})"),
        Some((status, None)) => format!("failed ({status:?})").to_lowercase(),
        None => "failed".to_owned(),
    };
    let mut result = command_result(out);
    result.content = format!("check `{id}` {verdict}\n{}", result.content);
    result
}

/// Names the registered check commands (`id`, what it runs) in the
/// `schema` of a tool that runs them ([`BuiltinTool::runs_checks`]), so the model can only ask for a command that exists;
/// `false` when the schema has no `command` to bind.
pub(crate) fn bind_commands(schema: &mut Value, commands: &[(String, String)]) -> bool {
    let Some(command) = schema
        .pointer_mut("/properties/command")
        .and_then(Value::as_object_mut)
    else {
        return false;
    };
    command.insert(
        "enum".into(),
        commands
            .iter()
            .map(|(id, _)| Value::from(id.as_str()))
            .collect(),
    );
    let listed: Vec<String> = commands
        .iter()
        .map(|(id, what)| format!("`{id}` ({what})"))
        .collect();
    command.insert(
        "description".into(),
        Value::from(format!("The command to run: {}.", listed.join(", "))),
    );
    true
}
