//! `preview`: starts a dev server (a web app the agent is building) on the
//! session's process runtime, finds the port it listens on, and shows it to
//! the user; `status`, `logs` and `stop` follow it.
//!
//! A preview is journalled and sandboxed like a `shell` command but has a
//! lifecycle of its own: `process` does not list it, it lives until it is
//! stopped or its session closes (no command timeout), and the user sees it
//! (a URL in `evoflux chat`, a pane beside the chat in the web UI).
//!
//! Its handler (when the session can run it, how a call is approved, run
//! and shown) is `evoflux-harness/src/tools/preview.rs`, of the same name.

use serde_json::json;

use super::{Framework, Spec, object, string};
use crate::tool::{ActionClass, BuiltinExecutor};

/// `wait_seconds` of `start` when the call gives none: how long the call
/// waits for the server to listen.
pub const DEFAULT_WAIT_SECONDS: u64 = 30;
pub const MIN_WAIT_SECONDS: u64 = 1;
/// A `start` blocks the turn at most this long; a slower server is
/// followed with `status`.
pub const MAX_WAIT_SECONDS: u64 = 120;
/// Previews one session may run at once.
pub const MAX_SESSION_PREVIEWS: usize = 4;
/// Why `preview` cannot run where the sandbox denies commands the network:
/// its server would listen in a network namespace of its own, which
/// nothing outside reaches. The one wording for `info` and the session's
/// unavailable tools.
pub const NEEDS_HOST_NETWORK: &str = "the sandbox denies commands the network (sandbox.toml \
    `network = \"deny\"`), so a preview's server could not be reached; allow the network to \
    use previews";
/// The stable code of [`NEEDS_HOST_NETWORK`].
pub const NEEDS_HOST_NETWORK_CODE: &str = "tool/preview-network-denied";
/// The actions, in the order the schema lists them.
pub const ACTIONS: &[&str] = &["start", "status", "logs", "stop", "snapshot"];

pub(super) const TOOL: Framework = Framework {
    name: "preview",
    spec,
};

fn spec() -> Spec {
    Spec::ordinary(
        BuiltinExecutor::Preview,
        ActionClass::Execute,
        "Start a dev server (a web app you build) so the user can see it: `start` runs `command` \
         in the workspace, waits until it listens on a port and returns its URL and preview_id. \
         Any free port works; the port is found from the running server. \
         `status` shows the URL and state, `logs` its output since the last look, `stop` ends it. \
         `snapshot` opens the running preview in the session's browser and returns a screenshot \
         (needs Chromium; without preview_id, the newest preview). \
         Previews are not `process` commands and live until stopped or the session closes.",
        object(
            json!({
                "action": {"type": "string", "enum": ACTIONS},
                "command": string("For start: the server's command line, e.g. `npm run dev`."),
                "workdir": string("For start: directory inside the workspace."),
                "preview_id": string("For status, logs, stop, snapshot: the preview's id (status without it lists them)."),
                "wait_seconds": {
                    "type": "integer",
                    "minimum": MIN_WAIT_SECONDS,
                    "maximum": MAX_WAIT_SECONDS,
                    "description": format!("For start: how long to wait for the port; for snapshot: for the page. Default {DEFAULT_WAIT_SECONDS}."),
                }
            }),
            &["action"],
        ),
    )
}
