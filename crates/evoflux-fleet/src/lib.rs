//! Fleets: versioned, write-bounded workflow contracts.
//!
//! The contract side is pure (no processes, no git, no I/O beyond the
//! text it is handed); [`run`] is where processes and git come in:
//!
//! * [`commands`]: the command registry (`fleets/commands.yaml`) that the
//!   `verify` tool runs and fleet code steps will run: argv only, argument
//!   slots, a closed environment.
//! * [`contract`]: `fleets/<name>.md` parsed strictly for versions 1 to 5
//!   ([`parse_fleet_contract`]), newer keys refused by name, a closed set
//!   of step kinds.
//! * [`graph`]: [`validate_fleet_graph`], one diagnostic per problem,
//!   loop bounds included; [`validate_fleet_contract`] runs it with the
//!   boundary rules, for the parser and for plan compilation alike.
//! * [`bind`]: a contract's command ids checked against the registry
//!   (missing registry, unknown command, argument slots, gate `{{path}}`).
//! * [`boundary`] and [`writes`]: the write-boundary grammar
//!   (normalization, [`write_boundary_covers`]) and the v4 rules per
//!   position.
//! * [`render`]: strict `{{var}}` prompt rendering.
//! * [`delegation`]: (v5) a plan step's delegation plan held to its step
//!   (roster, task bound, ids, dependencies, boundary) and turned into
//!   the nodes the executor splices in.
//! * [`plan`]: [`compile_fleet_plan`], loops unrolled into a deterministic,
//!   content-hashed DAG.
//! * [`catalog`]: the fleets of a compiled source graph and the builtin
//!   ones, each checked once ([`load_fleets`]).
//! * [`run`]: the executor: nodes scheduled under `maxWorkers`, agent
//!   nodes through [`run::AgentRunner`] (the harness's dispatch path),
//!   code nodes through [`run::CommandRunner`] in the closed environment,
//!   write boundaries enforced against git (snapshot before, diff after,
//!   rollback of changes outside the boundary), a worktree per parallel
//!   node merged back in plan order, receipts per node in a
//!   [`run::RunJournal`] so a killed run resumes, and the `budgetUsd` stop.
//!
//! Not here: the agent runner (each agent node a worker session) and the
//! run records, in `evoflux_app::fleet_run`, which `evoflux fleet run`
//! drives.

pub mod bind;
pub mod boundary;
pub mod catalog;
pub mod commands;
pub mod contract;
pub mod delegation;
pub mod graph;
pub mod plan;
pub mod render;
pub mod run;
pub mod writes;

pub use bind::{bind_awaiting_trust, bind_fleet_agents, bind_fleet_commands, fleet_command_ids};
pub use boundary::{
    BoundaryEntryError, BoundaryError, WRITE_BOUNDARY_MAX_ENTRIES, WriteBoundary,
    describe_write_boundary, normalize_write_boundary, normalize_write_boundary_entry,
    write_boundary_covers,
};
pub use catalog::{CatalogFleet, FleetCatalog, FleetOrigin, RegistryState, load_fleets};
pub use commands::{
    ArgumentSlot, CommandError, CommandRegistry, FLEET_COMMAND_BASE_ENV, FleetCommand,
    RegistryError,
};
pub use contract::{
    FLEET_DYNAMIC_STEP_VERSION, FLEET_LOOP_MAX_ATTEMPTS, FLEET_WRITE_BOUNDARY_VERSION,
    FleetContract, FleetStep, FleetVersion, LoopCheck, LoopCheckKind, OnFailure, Route, Scope,
    StepKind, parse_fleet_contract, validate_fleet_contract,
};
pub use graph::validate_fleet_graph;
pub use plan::{
    ExecutionPlan, NodeRole, NodeWork, PlanError, PlanLoop, PlanNode, compile_fleet_plan,
};
pub use render::{RenderError, render_fleet_prompt, template_variables};
pub use writes::{StepBoundary, fleet_step_boundaries, validate_write_boundaries};
