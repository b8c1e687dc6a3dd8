//! The handlers of the framework API channel, one module per area.

pub mod agents;
pub mod lists;
pub mod mcp;
pub mod plugins;
pub mod sessions;
pub mod skills;
pub mod system;
