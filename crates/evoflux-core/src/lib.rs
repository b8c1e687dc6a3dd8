//! The shared vocabulary every evoflux crate speaks.
//!
//! Nothing here knows about skills, agents, plugins or models: this crate
//! holds the small, stable pieces that every domain needs to agree on, so
//! that a diagnostic, a content hash or a directory means the same thing in
//! the graph, the runtime, the server and the CLI.

#[cfg(feature = "archive")]
pub mod archive;
pub mod atomic;
pub mod child_env;
pub mod code_operation;
pub mod config;
pub mod diagnostic;
pub mod dirs;
pub mod external_agent;
pub mod frontmatter;
pub mod git;
pub mod hash;
pub mod ids;
pub mod lock;
pub mod mode;
pub mod nesting;
pub mod placeholder;
pub mod prerequisite;
pub mod price;
pub mod private;
pub mod secret_name;
pub mod slot;
pub mod source;
#[cfg(feature = "tls")]
pub mod tls;
pub mod trust;
#[cfg(feature = "test-support")]
pub mod unprivileged;
pub mod walk;

pub use diagnostic::{Diagnostic, Diagnostics, Locator, Severity};
pub use mode::AppMode;
pub use slot::{Slot, SlotKind};
