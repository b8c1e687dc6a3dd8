//! The evoflux source graph.
//!
//! Every capability is a candidate for a logical slot. Discovery turns
//! roots into candidates; one composer picks a winner per slot by layer
//! before anything is parsed; only winners are normalized; the result is
//! one [`CompiledGraph`] that the runtime, the server, the CLI and `info`
//! all read. Nothing downstream re-merges or re-discovers.

pub mod candidate;
pub mod channel;
pub mod compose;
pub mod connection;
pub mod declarative;
pub mod derive;
pub mod discover;
pub mod eval;
pub mod grants;
pub mod graph;
pub mod info;
pub mod layer;
pub mod mcp_format;
pub mod policy;
pub mod registry;
pub mod route_plan;
pub mod runnable;
pub mod sandbox;
pub mod schedule;
pub mod skill_root;
pub mod slot;
pub mod tool;

use evoflux_core::Diagnostics;

pub use candidate::{Candidate, Owner, SourceId};
pub use compose::{Binding, Definition, Node};
pub use discover::{ListedSkill, PluginRoot, Root, RootOptions};
pub use graph::{CompiledGraph, GraphError};
pub use layer::{Form, Layer};
pub use registry::BuiltinRegistry;
pub use slot::{Slot, SlotKind};

/// Compiles roots into a graph: discover, compose (config first), plan
/// routes, validate. Problems in user files are diagnostics in the graph;
/// an `Err` means the compiler produced an inconsistent graph, which is a
/// bug in evoflux, never a user error.
pub fn compile(
    registries: &[BuiltinRegistry],
    roots: &[Root],
) -> Result<CompiledGraph, GraphError> {
    compile_with_grants(registries, roots, &grants::TrustGrants::default()).map(|(g, _)| g)
}

/// [`compile`], holding the trusted repositories `trust` enforces to what
/// the user granted them, and with the grants of the repository it
/// reviews (for `evoflux trust`).
pub fn compile_with_grants(
    registries: &[BuiltinRegistry],
    roots: &[Root],
    trust: &grants::TrustGrants,
) -> Result<(CompiledGraph, Vec<grants::GrantedSource>), GraphError> {
    let mut diags = Diagnostics::new();
    let candidates = discover::discover(registries, roots, &mut diags);
    let mut phase = compose::ConfigPhase::new(registries, candidates, trust, &mut diags);
    let reviewed = phase.take_reviewed();
    let rest = phase.select_config(&mut diags);
    let composed = rest.compose(&mut diags);
    let channels: Vec<(SourceId, Slot, &channel::ChannelDefinition)> = composed
        .nodes
        .iter()
        .filter_map(|n| match &n.definition {
            Definition::Channel(c) => Some((n.source_id.clone(), n.slot.clone(), c)),
            _ => None,
        })
        .collect();
    let route_plan = route_plan::plan(&channels, &mut diags);
    let graph = CompiledGraph::new(
        composed.nodes,
        composed.bindings,
        composed.report,
        route_plan,
        diags,
        registries,
    )?;
    Ok((graph, reviewed))
}

/// Compiles with the framework registry and the standard roots.
pub fn compile_standard(opts: &RootOptions) -> Result<CompiledGraph, GraphError> {
    compile(
        &[BuiltinRegistry::framework()],
        &discover::standard_roots(opts),
    )
}
