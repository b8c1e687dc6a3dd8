//! The `shell` tool's parameters and how its command is started: the
//! user's POSIX shell with `-c`, in a directory of the workspace, with the
//! allowlisted environment.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;

use crate::args::Args;
use crate::env::{child_env, lookup};
use crate::error::ToolError;
use crate::runtime::RuntimeConfig;
use crate::tracked::SpawnSpec;
use crate::workspace::Workspace;

// The bounds are defined once, with the schema the model sees (see
// `evoflux_graph::tool::builtin`).
pub use evoflux_graph::tool::builtin::shell::{
    DEFAULT_TIMEOUT_SECONDS as SHELL_DEFAULT_TIMEOUT_SECONDS,
    DEFAULT_YIELD_MS as SHELL_DEFAULT_YIELD_MS, MAX_YIELD_MS as SHELL_MAX_YIELD_MS,
    MIN_TIMEOUT_SECONDS as SHELL_MIN_TIMEOUT_SECONDS, MIN_YIELD_MS as SHELL_MIN_YIELD_MS,
};

/// Shells whose `-c` does not speak POSIX sh; commands written by a model
/// assume POSIX syntax, so these are replaced by a POSIX shell.
const NON_POSIX_SHELLS: &[&str] = &[
    "fish",
    "nu",
    "nushell",
    "csh",
    "tcsh",
    "xonsh",
    "elvish",
    "pwsh",
    "powershell",
    "ion",
];

/// POSIX shells tried, in order, when `$SHELL` is unusable. Bash first
/// because model-written commands often use its extensions.
const FALLBACK_SHELLS: &[&str] = &["/bin/bash", "/bin/sh"];

/// One `shell` call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShellRequest {
    pub command: String,
    /// Why the command runs, for the UI; not used to run it.
    pub description: Option<String>,
    /// Directory inside the workspace; the primary root when absent.
    pub workdir: Option<String>,
    /// Capped by [`RuntimeConfig::max_timeout`].
    pub timeout_seconds: Option<u64>,
    pub yield_time_ms: Option<u64>,
    /// Send the final observation to the session's exit channel when the
    /// command ends after the call returned.
    pub notify_on_exit: bool,
    /// The model asks to run this one command outside the sandbox. Only a
    /// request: the command runs outside only through
    /// [`crate::ProcessRuntime::run_shell_outside_sandbox`], which the
    /// harness calls after the user approved.
    pub outside_sandbox: bool,
    /// Why it must run outside, shown to the user.
    pub justification: Option<String>,
}

impl ShellRequest {
    /// The accepted JSON fields.
    pub const FIELDS: &'static [&'static str] = &[
        "command",
        "description",
        "workdir",
        "timeout_seconds",
        "yield_time_ms",
        "notify_on_exit",
        "outside_sandbox",
        "justification",
    ];

    /// A request with every default.
    pub fn new(command: impl Into<String>) -> ShellRequest {
        ShellRequest {
            command: command.into(),
            description: None,
            workdir: None,
            timeout_seconds: None,
            yield_time_ms: None,
            notify_on_exit: false,
            outside_sandbox: false,
            justification: None,
        }
    }

    pub fn parse(input: &Value) -> Result<ShellRequest, ToolError> {
        let args = Args::new(input, Self::FIELDS)?;
        Ok(ShellRequest {
            command: args.string("command")?,
            description: args.opt_string("description")?,
            workdir: args.opt_string("workdir")?,
            timeout_seconds: args
                .opt_uint(
                    "timeout_seconds",
                    SHELL_MIN_TIMEOUT_SECONDS,
                    u64::from(u32::MAX),
                )?
                .map(|n| n as u64),
            yield_time_ms: args
                .opt_uint("yield_time_ms", SHELL_MIN_YIELD_MS, SHELL_MAX_YIELD_MS)?
                .map(|n| n as u64),
            notify_on_exit: args.opt_bool("notify_on_exit")?.unwrap_or(false),
            outside_sandbox: args.opt_bool("outside_sandbox")?.unwrap_or(false),
            justification: args.opt_string("justification")?,
        })
    }

    /// The absolute folder the command runs in: its `workdir` (an
    /// existing directory inside the workspace), else the primary root.
    /// What the runtime runs it in and what its approval shows.
    pub fn working_folder(&self, ws: &Workspace) -> Result<PathBuf, ToolError> {
        working_folder(ws, self.workdir.as_deref())
    }

    pub(crate) fn yield_time(&self) -> Duration {
        let ms = self
            .yield_time_ms
            .unwrap_or(SHELL_DEFAULT_YIELD_MS)
            .clamp(SHELL_MIN_YIELD_MS, SHELL_MAX_YIELD_MS);
        Duration::from_millis(ms)
    }

    pub(crate) fn spawn_spec(
        &self,
        ws: &Workspace,
        shell: &Path,
        config: &RuntimeConfig,
    ) -> Result<SpawnSpec, ToolError> {
        let cwd = self.working_folder(ws)?;
        let asked = Duration::from_secs(
            self.timeout_seconds
                .unwrap_or(SHELL_DEFAULT_TIMEOUT_SECONDS),
        );
        Ok(SpawnSpec {
            program: shell.to_path_buf(),
            args: vec![OsString::from("-c"), OsString::from(&self.command)],
            cwd,
            env: child_env(&config.parent_env, &[]),
            display: self.command.clone(),
            timeout: asked.min(config.max_timeout),
            notify_on_exit: self.notify_on_exit,
            outside_sandbox: false,
            fds: Vec::new(),
            role: crate::tracked::Role::Command,
        })
    }
}

/// The absolute folder a command with this `workdir` argument runs in:
/// that directory (existing, inside the workspace), else the primary root.
pub(crate) fn working_folder(ws: &Workspace, workdir: Option<&str>) -> Result<PathBuf, ToolError> {
    match workdir {
        Some(dir) => directory(ws, dir),
        None => Ok(crate::command_tool::working_folder(ws)),
    }
}

/// A `workdir` argument: an existing directory inside the workspace.
fn directory(ws: &Workspace, dir: &str) -> Result<PathBuf, ToolError> {
    let resolved = ws.resolve(dir)?;
    let meta =
        std::fs::metadata(&resolved.path).map_err(ToolError::io("use", &resolved.display))?;
    match meta.is_dir() {
        true => Ok(resolved.path),
        false => Err(ToolError::WrongKind {
            path: resolved.display,
            expected: "a directory",
            actual: "a file",
        }),
    }
}

/// The shell commands run with: `$SHELL` from `env` when it is an
/// existing POSIX shell, else the first existing fallback.
pub(crate) fn user_shell(env: &[(OsString, OsString)]) -> PathBuf {
    let from_env = lookup(env, "SHELL")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute() && p.is_file() && is_posix(p));
    from_env.unwrap_or_else(|| {
        FALLBACK_SHELLS
            .iter()
            .map(PathBuf::from)
            .find(|p| p.is_file())
            .unwrap_or_else(|| PathBuf::from("/bin/sh"))
    })
}

fn is_posix(shell: &Path) -> bool {
    shell
        .file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|name| !NON_POSIX_SHELLS.contains(&name))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn env(shell: &str) -> Vec<(OsString, OsString)> {
        vec![("SHELL".into(), shell.into())]
    }

    #[test]
    fn non_posix_or_missing_shells_fall_back() {
        let fallback = user_shell(&[]);
        assert!(FALLBACK_SHELLS.contains(&fallback.to_str().unwrap()));
        let dir = tempfile::tempdir().unwrap();
        let fish = dir.path().join("fish");
        std::fs::write(&fish, "").unwrap();
        assert_eq!(user_shell(&env(fish.to_str().unwrap())), fallback);
        let zsh = dir.path().join("zsh");
        std::fs::write(&zsh, "").unwrap();
        assert_eq!(user_shell(&env(zsh.to_str().unwrap())), zsh);
        assert_eq!(user_shell(&env("/nonexistent/zsh")), fallback);
        assert_eq!(user_shell(&env("sh")), fallback);
        assert_eq!(user_shell(&env("/bin/sh")), PathBuf::from("/bin/sh"));
    }

    #[test]
    fn parameters_have_ranges_and_defaults() {
        let r = ShellRequest::parse(&json!({"command": "ls"})).unwrap();
        assert_eq!(r, ShellRequest::new("ls"));
        assert_eq!(r.yield_time(), Duration::from_millis(10_000));
        for bad in [
            json!({"command": "ls", "yield_time_ms": 100}),
            json!({"command": "ls", "yield_time_ms": 30_001}),
            json!({"command": "ls", "timeout_seconds": 0}),
            json!({"command": "ls", "bg": true}),
            json!({}),
        ] {
            assert_eq!(
                ShellRequest::parse(&bad).unwrap_err().code(),
                "tool/input-invalid",
                "{bad}"
            );
        }
    }
}
