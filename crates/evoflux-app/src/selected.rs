//! What a compiled graph selects for a session beyond its agents: the
//! layered `config`, the sandbox policy and the registered check
//! commands, each read one way for the session builder, `doctor`, fleet
//! runs and every front end.

use std::sync::Arc;

use evoflux_core::Diagnostics;
use evoflux_core::config::LoadedConfig;
use evoflux_graph::sandbox::SandboxPolicy;
use evoflux_graph::{CompiledGraph, Definition, Slot};

/// The graph's layered `config` (the embedded default, then the admin's,
/// the user's and the repositories' files) and the diagnostics of that
/// slot; `None` when the slot has errors.
pub fn selected_config(graph: &CompiledGraph) -> (Option<LoadedConfig>, Diagnostics) {
    let diags = graph.slot_diagnostics(&Slot::config());
    let loaded = graph
        .node(&Slot::config())
        .and_then(|node| match &node.definition {
            Definition::Config(loaded) => Some(loaded.clone()),
            _ => None,
        });
    let loaded = if diags.has_errors() { None } else { loaded };
    (loaded, diags)
}

/// The graph's layered sandbox policy; the diagnostics of the `sandbox`
/// slot when it has errors (a broken policy never falls back to the
/// default).
pub fn selected_sandbox(graph: &CompiledGraph) -> Result<SandboxPolicy, Diagnostics> {
    let diags = graph.slot_diagnostics(&Slot::sandbox());
    if diags.has_errors() {
        return Err(diags.errors());
    }
    Ok(graph
        .node(&Slot::sandbox())
        .and_then(|node| match &node.definition {
            Definition::Sandbox(policy) => Some(policy.clone()),
            _ => None,
        })
        .unwrap_or_else(SandboxPolicy::framework_default))
}

/// The graph's registered check commands (`fleets/commands.yaml`), which
/// `verify` runs. A registry that does not parse is reported (file and
/// field) and leaves `verify` out; it never stops the session.
pub fn selected_checks(
    graph: &CompiledGraph,
    diags: &mut Diagnostics,
) -> Option<Arc<evoflux_fleet::CommandRegistry>> {
    use evoflux_fleet::RegistryState;
    match evoflux_fleet::catalog::command_registry(graph) {
        RegistryState::Loaded(r) => Some(Arc::new(r)),
        RegistryState::Missing | RegistryState::AwaitingTrust { .. } => None,
        RegistryState::Invalid(d) => {
            diags.push(d);
            None
        }
    }
}
