//! The application services above the session engine.
//!
//! The engine (`evoflux-harness`) runs a session: its turns, tools, hooks,
//! context, approvals and the session host. This crate is what an
//! application does with it, for every front end alike (the CLI, the
//! server, ACP): the [`AppContext`] a front end builds once (its
//! directories, trust, the compile of the sources, the store), the
//! [`SessionBuilder`] that opens a session from what a front end knows,
//! and the services around sessions — `doctor`, evals, replay, fleet runs,
//! the scheduler, agent-file editing, the agents and skills views, the
//! application's MCP servers ([`mcp_servers`]), the trust review and the
//! data directory's maintenance ([`maintenance`]). Front ends take these
//! from here and the session itself from the engine; the types of the
//! crates below that these services return are named here too, where they
//! are returned, so a front end does not depend on a crate only to name
//! what the application hands it.

pub mod agent_files;
pub mod agents_view;
pub mod attachments;
pub mod claude_settings;
mod context;
pub mod doctor;
pub mod evals;
pub mod fleet_run;
pub mod hosting;
pub mod maintenance;
pub mod mcp_config;
pub mod mcp_grant;
pub mod mcp_servers;
pub mod models;
pub mod prompt_files;
pub mod replay;
pub mod scheduler;
pub mod scratch;
mod selected;
pub mod session;
pub mod skills_view;
pub mod sources;
mod teams;
#[cfg(feature = "testing")]
pub mod testing;
pub mod tree_copy;
mod trust;
pub mod trust_review;

pub use context::{AppContext, TrustedCheckout};
/// The compiled graph [`AppContext::compile`] returns.
pub use evoflux_graph::CompiledGraph;
pub use hosting::{ReopenBuilder, WireBuilder};
pub use selected::{selected_checks, selected_config, selected_sandbox};
pub use session::{ModelOrigin, OpenedSession, SessionBuilder, SessionError, SessionOptions};
pub use trust::TrustQuestion;
