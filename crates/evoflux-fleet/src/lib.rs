//! Fleets. Today this crate holds the fleet command registry
//! (`fleets/commands.yaml`): the repository's registered commands, which
//! the `verify` tool runs for verification workers and which fleet code
//! steps will run. A command never comes from model text: the registry
//! fixes its argv, and a caller can only fill declared argument slots.

pub mod commands;

pub use commands::{
    ArgumentSlot, CommandError, CommandRegistry, FLEET_COMMAND_BASE_ENV, FleetCommand,
    RegistryError,
};
