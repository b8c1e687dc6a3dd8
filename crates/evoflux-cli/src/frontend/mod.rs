//! What the command line's session front ends (`run`, `chat`, `sessions
//! resume`, and the long-running `serve`, `acp`, `fleet` and `eval`)
//! share, apart from the commands themselves: opening a session
//! ([`session`]), printing its events ([`printer`]), asking the person at
//! the terminal ([`prompts`]) and stopping on a signal ([`signals`]). The
//! session logic is the harness's; these modules only read and draw.

pub(crate) mod logs;
pub(crate) mod printer;
pub(crate) mod prompts;
pub(crate) mod session;
pub(crate) mod signals;

use anyhow::Context as _;

/// The async runtime an async command runs on.
pub(crate) fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")
}
