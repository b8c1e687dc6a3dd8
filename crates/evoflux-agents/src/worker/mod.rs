//! Workers: contract-bound agents that dispatch and fleets run.
//!
//! A worker is a strict recipe (`workers/<id>.md`, [`recipe`]) normalized
//! into an [`AgentSpec`] ([`spec`]) that passes the capability policy
//! ([`policy`]). The [`catalog`] merges the framework workers with the
//! graph's winners; [`compat`] and [`admission`] decide at dispatch time
//! whether a worker can run and whether it fits the task; [`roster`]
//! renders the catalog for a lead's prompt.

pub mod admission;
pub mod catalog;
pub mod compat;
pub mod external;
pub mod policy;
pub mod recipe;
pub mod roster;
pub mod spec;

pub use admission::{
    CapabilityMismatch, MismatchDecision, TaskClassification, TaskType, assess_capability_mismatch,
    classify_task,
};
pub use catalog::{
    FRAMEWORK_WORKERS, WorkerCatalog, WorkerCatalogError, build_catalog, framework_specs,
    load_workers,
};
pub use compat::{ToolCompatibility, resolve_tool_compatibility};
pub use policy::{PolicyViolation, agent_spec_policy_errors, assert_agent_spec_policy};
pub use recipe::{
    Audience, Budget, CapabilityClass, Category, LatencyClass, ProjectContextTier, RecipeSource,
    ToolRequirement, ToolRequirements, WorkerRecipe, parse_recipe,
};
pub use roster::render_roster;
pub use spec::{AgentSpec, agent_spec_fingerprint, normalize_agent_spec};
