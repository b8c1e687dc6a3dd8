//! The `process` tool's parameters: continue a command `shell` left
//! running. The runtime carries out the actions.

use std::time::Duration;

use serde_json::Value;

use crate::args::Args;
use crate::error::ToolError;

// The bounds are defined once, with the schema the model sees (see
// `evoflux_graph::tool::builtin`).
pub use evoflux_graph::tool::builtin::process::{
    DEFAULT_WAIT_SECONDS as PROCESS_DEFAULT_WAIT_SECONDS,
    MAX_WAIT_SECONDS as PROCESS_MAX_WAIT_SECONDS, MIN_WAIT_SECONDS as PROCESS_MIN_WAIT_SECONDS,
};

/// What `process` does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProcessAction {
    /// The session's tracked commands, one line each.
    List,
    /// Output produced since the previous observation, at once.
    Poll,
    /// Blocks until the command ends or `wait_seconds` pass, then polls.
    Wait,
    /// SIGTERM to the group, a grace period, SIGKILL; then the final poll.
    Terminate,
}

/// One `process` call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcessRequest {
    pub action: ProcessAction,
    pub process_id: Option<String>,
    pub wait_seconds: Option<u64>,
}

impl ProcessRequest {
    /// The accepted JSON fields.
    pub const FIELDS: &'static [&'static str] = &["action", "process_id", "wait_seconds"];

    pub fn parse(input: &Value) -> Result<ProcessRequest, ToolError> {
        let args = Args::new(input, Self::FIELDS)?;
        let action = match args.string("action")?.as_str() {
            "list" => ProcessAction::List,
            "poll" => ProcessAction::Poll,
            "wait" => ProcessAction::Wait,
            "terminate" => ProcessAction::Terminate,
            other => {
                return Err(ToolError::input(
                    "action",
                    format!("`{other}` is not one of list, poll, wait, terminate"),
                ));
            }
        };
        Ok(ProcessRequest {
            action,
            process_id: args.opt_string("process_id")?,
            wait_seconds: args
                .opt_uint(
                    "wait_seconds",
                    PROCESS_MIN_WAIT_SECONDS,
                    PROCESS_MAX_WAIT_SECONDS,
                )?
                .map(|n| n as u64),
        })
    }

    pub(crate) fn id(&self) -> Result<&str, ToolError> {
        self.process_id.as_deref().ok_or_else(|| {
            ToolError::input(
                "process_id",
                "required for poll, wait and terminate; use process(action='list') to find it",
            )
        })
    }

    pub(crate) fn wait_time(&self) -> Duration {
        Duration::from_secs(
            self.wait_seconds
                .unwrap_or(PROCESS_DEFAULT_WAIT_SECONDS)
                .min(PROCESS_MAX_WAIT_SECONDS),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn parses_actions_and_bounds() {
        let r = ProcessRequest::parse(&json!({"action": "wait", "process_id": "proc_1"})).unwrap();
        assert_eq!(r.action, ProcessAction::Wait);
        assert_eq!(r.wait_time(), Duration::from_secs(10));
        assert_eq!(r.id().unwrap(), "proc_1");
        for bad in [
            json!({"action": "kill"}),
            json!({"action": "wait", "wait_seconds": 61}),
            json!({"action": "wait", "wait_seconds": 0}),
            json!({"process_id": "proc_1"}),
        ] {
            assert_eq!(
                ProcessRequest::parse(&bad).unwrap_err().code(),
                "tool/input-invalid",
                "{bad}"
            );
        }
        let list = ProcessRequest::parse(&json!({"action": "list"})).unwrap();
        assert_eq!(list.id().unwrap_err().code(), "tool/input-invalid");
    }
}
