//! Team agents, workers and result contracts.
//!
//! Two kinds of agent share this crate because dispatch and fleets need one
//! notion of "who can be run", but they keep two file dialects:
//!
//! * [`team`]: team agents (`agents/<name>.md`, `agents/coding/<name>.md`),
//!   user-owned and forgiving; code-owned profiles; the byte-preserving
//!   Form serializer; [`team::compile_agent_config`], the only merge.
//! * [`worker`]: worker recipes (`workers/<id>.md`), strict contracts;
//!   the twelve framework workers; [`worker::AgentSpec`], its fingerprint,
//!   the capability policy on declared action classes, tool compatibility,
//!   dispatch admission and the roster rendered into prompts.
//! * [`contract`]: the typed terminal results a worker run must satisfy,
//!   their validation and grounding, and the repair exchange.
//!
//! Files are found and composed by `evoflux-graph`; this crate reads the
//! winners from their bindings and takes tool metadata from the graph's
//! tool nodes ([`tools::ToolCatalog`]).

mod closed;
pub mod contract;
pub mod name;
pub mod team;
pub mod tools;
pub mod worker;

pub use tools::ToolCatalog;
