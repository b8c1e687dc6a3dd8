//! The `preview` tool: a dev server on the session's process runtime, with
//! a lifecycle of its own.
//!
//! A preview is spawned, journalled and sandboxed exactly like a `shell`
//! command ([`crate::tracked`]), but registered apart from the session's
//! commands: `process` neither lists nor stops it, a cancelled turn leaves
//! it running, it has no timeout, and it ends on `preview stop`, when its
//! session closes ([`crate::ProcessRuntime::close_session`]) or when the
//! application shuts down — and, after evoflux is killed, when the next
//! runtime reaps its lineage, like any command. Its port is found from the
//! running server ([`crate::listening`]).
//!
//! `snapshot` shows the running preview to the model: the session's
//! browser opens its URL and takes a screenshot, which goes back as the
//! call's image and stays in the browser's screenshots folder, exactly as
//! `browser(action='screenshot')` does. It is an action of its own rather
//! than a picture attached to every `start`: a server listens long before
//! the app it serves is worth looking at (a bundler still compiling, the
//! files the agent is about to edit), `start` must stay quick and work
//! where no Chromium is installed, and the model takes a snapshot again
//! after each change it wants to see. The browser reaches the session's
//! own running previews by their exact loopback address whatever
//! `browser_loopback` says ([`crate::browser::PreviewOrigins`]); without a
//! browser, `snapshot` fails with `tool/preview-snapshot-unavailable`
//! saying why.

use std::ffi::OsString;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use tokio::time::Instant;

use crate::args::Args;
use crate::browser::{Browser, Screenshot};
use crate::env::child_env;
use crate::error::ToolError;
use crate::observation::CommandStatus;
use crate::output::ToolOutput;
use crate::sync::lock;
use crate::tracked::{Role, SpawnSpec, Tracked};
use crate::workspace::Workspace;

// The bounds are defined once, with the schema the model sees (see
// `evoflux_graph::tool::builtin`).
pub use evoflux_graph::tool::builtin::preview::{
    DEFAULT_WAIT_SECONDS as PREVIEW_DEFAULT_WAIT_SECONDS, MAX_SESSION_PREVIEWS,
    MAX_WAIT_SECONDS as PREVIEW_MAX_WAIT_SECONDS, MIN_WAIT_SECONDS as PREVIEW_MIN_WAIT_SECONDS,
};

/// How long a preview may run: until it is stopped, in practice (a
/// deadline is still needed by the supervisor).
const PREVIEW_LIFETIME: Duration = Duration::from_secs(365 * 24 * 3600);
/// How often `start` looks for the port.
const DETECT_EVERY: Duration = Duration::from_millis(100);

/// What `preview` does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PreviewAction {
    /// Runs the server and waits for its port.
    Start,
    /// One preview's URL and state, or every preview of the session.
    Status,
    /// The server's output since the previous look.
    Logs,
    /// SIGTERM to the server's group, a grace period, SIGKILL.
    Stop,
    /// A screenshot of the running preview, taken by the session's
    /// browser.
    Snapshot,
}

/// The browser a `preview` call takes its snapshot with.
#[derive(Debug, Clone, Copy)]
pub enum PreviewBrowser<'a> {
    /// The session's browser; it is told the session's running previews
    /// after every call.
    Session(&'a Browser),
    /// The session has none, for this reason (Chromium is not installed,
    /// network tools are off, …).
    Unavailable(&'a str),
}

/// One `preview` call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PreviewRequest {
    pub action: PreviewAction,
    pub command: Option<String>,
    pub workdir: Option<String>,
    pub preview_id: Option<String>,
    pub wait_seconds: Option<u64>,
}

impl PreviewRequest {
    /// The accepted JSON fields.
    pub const FIELDS: &'static [&'static str] =
        &["action", "command", "workdir", "preview_id", "wait_seconds"];

    pub fn parse(input: &Value) -> Result<PreviewRequest, ToolError> {
        let args = Args::new(input, Self::FIELDS)?;
        let action = match args.string("action")?.as_str() {
            "start" => PreviewAction::Start,
            "status" => PreviewAction::Status,
            "logs" => PreviewAction::Logs,
            "stop" => PreviewAction::Stop,
            "snapshot" => PreviewAction::Snapshot,
            other => {
                return Err(ToolError::input(
                    "action",
                    format!("`{other}` is not one of start, status, logs, stop, snapshot"),
                ));
            }
        };
        Ok(PreviewRequest {
            action,
            command: args.opt_string("command")?,
            workdir: args.opt_string("workdir")?,
            preview_id: args.opt_string("preview_id")?,
            wait_seconds: args
                .opt_uint(
                    "wait_seconds",
                    PREVIEW_MIN_WAIT_SECONDS,
                    PREVIEW_MAX_WAIT_SECONDS,
                )?
                .map(|n| n as u64),
        })
    }

    /// The server's command line, which `start` needs.
    pub(crate) fn command(&self) -> Result<&str, ToolError> {
        self.command
            .as_deref()
            .filter(|c| !c.trim().is_empty())
            .ok_or_else(|| {
                ToolError::input(
                    "command",
                    "start needs the server's command line, e.g. `python3 -m http.server 8000`",
                )
            })
    }

    pub(crate) fn id(&self) -> Result<&str, ToolError> {
        self.preview_id.as_deref().ok_or_else(|| {
            ToolError::input(
                "preview_id",
                "required for logs and stop; use preview(action='status') to list the previews",
            )
        })
    }

    pub(crate) fn wait_time(&self) -> Duration {
        Duration::from_secs(
            self.wait_seconds
                .unwrap_or(PREVIEW_DEFAULT_WAIT_SECONDS)
                .min(PREVIEW_MAX_WAIT_SECONDS),
        )
    }

    /// The absolute folder `start` runs its command in: its `workdir` (an
    /// existing directory inside the workspace), else the primary root.
    /// What the runtime runs it in and what its approval shows.
    pub fn working_folder(&self, ws: &Workspace) -> Result<PathBuf, ToolError> {
        crate::shell::working_folder(ws, self.workdir.as_deref())
    }

    /// The spawn of `start`: the user's shell with `-c`, in `workdir` (or
    /// the primary root), with the allowlisted environment, as a preview.
    pub(crate) fn spawn_spec(
        &self,
        ws: &Workspace,
        shell: &std::path::Path,
        parent_env: &[(OsString, OsString)],
    ) -> Result<SpawnSpec, ToolError> {
        let command = self.command()?;
        let cwd = self.working_folder(ws)?;
        Ok(SpawnSpec {
            program: shell.to_path_buf(),
            args: vec![OsString::from("-c"), OsString::from(command)],
            cwd,
            env: child_env(parent_env, &[]),
            display: command.to_owned(),
            timeout: PREVIEW_LIFETIME,
            notify_on_exit: false,
            outside_sandbox: false,
            fds: Vec::new(),
            role: Role::Preview,
        })
    }
}

/// One preview as the runtime keeps it: its server and, once found, the
/// address it answers on.
#[derive(Debug)]
pub(crate) struct Preview {
    pub(crate) tracked: Arc<Tracked>,
    started: Instant,
    found: Mutex<Option<Found>>,
}

#[derive(Debug, Clone, Copy)]
struct Found {
    address: SocketAddr,
    after: Duration,
}

impl Preview {
    pub(crate) fn new(tracked: Arc<Tracked>) -> Preview {
        Preview {
            tracked,
            started: Instant::now(),
            found: Mutex::new(None),
        }
    }

    /// The address, looking for it while the server runs and none was
    /// found yet. Returns it and whether this call found it.
    pub(crate) async fn detect(&self) -> (Option<SocketAddr>, bool) {
        if let Some(found) = *lock(&self.found) {
            return (Some(found.address), false);
        }
        if self.tracked.status() != CommandStatus::Running {
            return (None, false);
        }
        match crate::listening::detect(self.tracked.pid, self.tracked.artifact()).await {
            Some(address) => {
                let found = Found {
                    address,
                    after: self.started.elapsed(),
                };
                *lock(&self.found) = Some(found);
                (Some(address), true)
            }
            None => (None, false),
        }
    }

    /// Waits up to `limit` for the address (or the server's end).
    pub(crate) async fn wait_for_address(&self, limit: Duration) -> Option<SocketAddr> {
        let deadline = Instant::now() + limit;
        loop {
            let (address, _) = self.detect().await;
            if address.is_some() || self.tracked.status() != CommandStatus::Running {
                return address;
            }
            if Instant::now() >= deadline {
                return None;
            }
            tokio::select! {
                () = tokio::time::sleep(DETECT_EVERY) => {}
                () = self.tracked.finished() => {}
            }
        }
    }

    /// What the user and the server's proxy know of it.
    pub(crate) fn info(&self) -> PreviewInfo {
        let found = *lock(&self.found);
        PreviewInfo {
            preview_id: self.tracked.id.clone(),
            command: self.tracked.display.clone(),
            status: self.tracked.status(),
            address: found.map(|f| f.address),
            startup_ms: found.map(|f| u64::try_from(f.after.as_millis()).unwrap_or(u64::MAX)),
        }
    }
}

/// A preview as front ends and the server see it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PreviewInfo {
    pub preview_id: String,
    /// The server's command line.
    pub command: String,
    pub status: CommandStatus,
    /// The loopback address it answers on, once found.
    pub address: Option<SocketAddr>,
    /// How long after its start the address was found.
    pub startup_ms: Option<u64>,
}

impl PreviewInfo {
    /// `http://127.0.0.1:<port>/` (or `[::1]`), once the address is known.
    pub fn url(&self) -> Option<String> {
        self.address.map(|a| format!("http://{a}/"))
    }

    /// One line of `status`.
    pub(crate) fn line(&self) -> String {
        format!(
            "{}  {}  {}  {}",
            self.preview_id,
            self.status.as_str(),
            self.url().unwrap_or_else(|| "(no port yet)".to_owned()),
            self.command.chars().take(100).collect::<String>()
        )
    }
}

/// What a `preview` call changed that the user should see.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PreviewChange {
    /// A preview's address was found (by `start`, or a later `status`).
    Serving(PreviewInfo),
    /// A preview was stopped.
    Stopped(PreviewInfo),
}

/// A `preview` call's result: what the model reads, and what changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PreviewOutcome {
    pub output: ToolOutput,
    pub change: Option<PreviewChange>,
    /// `snapshot`'s screenshot, for the model (an image on the tool
    /// message) and the user (the tool card).
    pub screenshot: Option<Screenshot>,
}

impl PreviewOutcome {
    pub(crate) fn quiet(output: ToolOutput) -> PreviewOutcome {
        PreviewOutcome {
            output,
            change: None,
            screenshot: None,
        }
    }
}

/// The text `start` answers with once the server listens.
pub(crate) fn serving_text(info: &PreviewInfo, observation: &str) -> String {
    format!(
        "Preview {id} is serving at {url} (the user sees it beside the chat).\n\
         Use preview(action='logs', preview_id='{id}') for its output and \
         preview(action='stop', preview_id='{id}') to stop it.\n\n{observation}",
        id = info.preview_id,
        url = info.url().unwrap_or_default(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn parses_actions_and_bounds() {
        let r =
            PreviewRequest::parse(&json!({"action": "start", "command": "npm run dev"})).unwrap();
        assert_eq!(r.action, PreviewAction::Start);
        assert_eq!(r.command().unwrap(), "npm run dev");
        assert_eq!(r.wait_time(), Duration::from_secs(30));
        for bad in [
            json!({"action": "restart"}),
            json!({"action": "start", "wait_seconds": 0}),
            json!({"action": "start", "wait_seconds": 121}),
            json!({"action": "start", "nope": 1}),
            json!({"command": "x"}),
        ] {
            assert_eq!(
                PreviewRequest::parse(&bad).unwrap_err().code(),
                "tool/input-invalid",
                "{bad}"
            );
        }
        let blank = PreviewRequest::parse(&json!({"action": "start", "command": " "})).unwrap();
        assert_eq!(blank.command().unwrap_err().code(), "tool/input-invalid");
        let stop = PreviewRequest::parse(&json!({"action": "stop"})).unwrap();
        assert_eq!(stop.id().unwrap_err().code(), "tool/input-invalid");
        let snapshot = PreviewRequest::parse(&json!({"action": "snapshot"})).unwrap();
        assert_eq!(snapshot.action, PreviewAction::Snapshot);
        assert_eq!(snapshot.preview_id, None, "the newest preview then");
    }

    #[test]
    fn a_url_is_the_loopback_address() {
        let info = PreviewInfo {
            preview_id: "preview_1".into(),
            command: "python3 -m http.server".into(),
            status: CommandStatus::Running,
            address: Some("127.0.0.1:8000".parse().unwrap()),
            startup_ms: Some(12),
        };
        assert_eq!(info.url().as_deref(), Some("http://127.0.0.1:8000/"));
        let v6 = PreviewInfo {
            address: Some("[::1]:8000".parse().unwrap()),
            ..info.clone()
        };
        assert_eq!(v6.url().as_deref(), Some("http://[::1]:8000/"));
        assert!(info.line().contains("running"));
    }
}
