//! The compiled graph and its one validator.
//!
//! The graph is what the runtime, the server, the CLI and `info` read:
//! nodes (selected, normalized definitions), bindings (exactly one per
//! node), the composition report, the route plan, every diagnostic, a
//! format version and a content hash. [`validate`] runs when a graph is
//! built and whenever one is loaded from disk; any failure rejects it.

use std::collections::{BTreeMap, BTreeSet};

use evoflux_core::hash::{ContentHash, content_hash};
use evoflux_core::{Diagnostic, Diagnostics, Severity};
use serde::{Deserialize, Serialize};

use crate::candidate::{Owner, SourceId};
use crate::compose::{Binding, BoundSource, CompositionEntry, CompositionReport, Definition, Node};
use crate::discover::slot_of_logical_path;
use crate::registry::BuiltinRegistry;
use crate::route_plan::RoutePlan;
use crate::slot::{Slot, SlotKind};

/// Bumped on every change of the serialized shape; loaders accept exactly
/// this version.
pub const FORMAT_VERSION: u32 = 1;
pub const GRAPH_KIND: &str = "evoflux-compiled-graph";

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CompiledGraph {
    pub kind: String,
    pub format_version: u32,
    pub nodes: Vec<Node>,
    pub bindings: BTreeMap<SourceId, BoundSource>,
    pub composition: CompositionReport,
    pub route_plan: RoutePlan,
    pub diagnostics: Diagnostics,
    pub hash: ContentHash,
}

/// The parts of a graph that define its identity. Physical paths and
/// human messages are left out, so relocating identical files keeps the
/// hash while any change of content, logical path or builtin revision
/// changes it.
#[derive(Serialize)]
struct IdentityView<'a> {
    format_version: u32,
    nodes: Vec<std::borrow::Cow<'a, Node>>,
    bindings: BTreeMap<&'a SourceId, BindingIdentity<'a>>,
    composition: Vec<EntryIdentity<'a>>,
    route_plan: &'a RoutePlan,
    diagnostics: Vec<DiagnosticIdentity<'a>>,
}

/// Code, severity, slot (as its canonical text), source id and field: a
/// diagnostic without its prose and physical file.
type DiagnosticIdentity<'a> = (
    &'a str,
    Severity,
    Option<String>,
    Option<&'a str>,
    Option<&'a str>,
);

#[derive(Serialize)]
struct BindingIdentity<'a> {
    logical_path: &'a str,
    layer: crate::layer::Layer,
    owner: OwnerIdentity<'a>,
    module: ModuleIdentity<'a>,
}

#[derive(Serialize)]
enum ModuleIdentity<'a> {
    Builtin {
        registry: &'a str,
        module: &'a str,
        revision: &'a str,
        /// A derived slot's template, anchor and dependencies (source ids,
        /// which are relocation-independent).
        derivation: Option<&'a crate::derive::Derivation>,
    },
    File {
        sha256: &'a str,
        entry: Option<&'a str>,
    },
}

#[derive(Serialize)]
enum OwnerIdentity<'a> {
    Framework(&'a str),
    Plugin(&'a str, &'a str),
    Application(crate::candidate::AppRoot, crate::candidate::AppFolder),
}

#[derive(Serialize)]
struct EntryIdentity<'a> {
    kind: &'static str,
    slot: &'a str,
    logical_path: &'a str,
    source_id: &'a SourceId,
    layer: crate::layer::Layer,
    winner: Option<&'a SourceId>,
}

fn owner_identity(o: &Owner) -> OwnerIdentity<'_> {
    match o {
        Owner::Framework { feature } => OwnerIdentity::Framework(feature),
        Owner::Plugin { installation, name } => OwnerIdentity::Plugin(installation, name),
        Owner::Application { root, folder, .. } => OwnerIdentity::Application(*root, *folder),
    }
}

fn module_identity(b: &Binding) -> ModuleIdentity<'_> {
    match b {
        Binding::Builtin {
            registry,
            module,
            revision,
            semantic_revision,
            derivation,
        } => ModuleIdentity::Builtin {
            registry,
            module,
            revision: semantic_revision.as_deref().unwrap_or(revision),
            derivation: derivation.as_ref(),
        },
        Binding::File { sha256, entry, .. } => ModuleIdentity::File {
            sha256,
            entry: entry.as_deref(),
        },
    }
}

/// A node as the identity sees it: the config's provenance without the
/// physical paths of the files it names (their origins stay; their content
/// is in the merged config and the bindings), so a relocated `config.toml`
/// keeps the identity as any relocated file does.
fn node_identity(node: &Node) -> std::borrow::Cow<'_, Node> {
    let Definition::Config(loaded) = &node.definition else {
        return std::borrow::Cow::Borrowed(node);
    };
    let mut loaded = loaded.clone();
    let sources = loaded
        .files
        .iter_mut()
        .chain(loaded.default_grant_source.as_mut());
    for source in sources {
        source.path = std::path::PathBuf::new();
    }
    std::borrow::Cow::Owned(Node {
        slot: node.slot.clone(),
        source_id: node.source_id.clone(),
        definition: Definition::Config(loaded),
    })
}

/// Computes the identity hash of a graph's content.
pub fn identity_hash(
    nodes: &[Node],
    bindings: &BTreeMap<SourceId, BoundSource>,
    composition: &CompositionReport,
    route_plan: &RoutePlan,
    diagnostics: &Diagnostics,
) -> ContentHash {
    let view = IdentityView {
        format_version: FORMAT_VERSION,
        nodes: nodes.iter().map(node_identity).collect(),
        bindings: bindings
            .iter()
            .map(|(id, b)| {
                (
                    id,
                    BindingIdentity {
                        logical_path: &b.logical_path,
                        layer: b.layer,
                        owner: owner_identity(&b.owner),
                        module: module_identity(&b.binding),
                    },
                )
            })
            .collect(),
        composition: composition
            .entries
            .iter()
            .map(|e| {
                let (kind, source, winner) = e.parts();
                EntryIdentity {
                    kind: kind.as_str(),
                    slot: &source.slot,
                    logical_path: &source.logical_path,
                    source_id: &source.source_id,
                    layer: source.layer,
                    winner,
                }
            })
            .collect(),
        route_plan,
        diagnostics: diagnostics
            .iter()
            .map(|d| {
                (
                    d.code.as_ref(),
                    d.severity,
                    d.locator.slot.as_ref().map(ToString::to_string),
                    d.locator.source_id.as_deref(),
                    d.locator.field.as_deref(),
                )
            })
            .collect(),
    };
    // The view holds only strings, numbers and string-keyed maps, which
    // always serialize; an empty hash would fail validation loudly.
    content_hash(&view).unwrap_or_else(|_| evoflux_core::hash::sha256_hex(b""))
}

fn graph_error(code: &'static str, msg: impl Into<String>) -> Diagnostic {
    Diagnostic::error(code, msg)
}

/// The one validator of compiled graphs: format, structure, bindings,
/// ownership, routes and the content hash.
pub fn validate(graph: &CompiledGraph, registries: &[BuiltinRegistry]) -> Vec<Diagnostic> {
    if let Some(d) = check_format(graph) {
        // Nothing else can be trusted in a graph of another format.
        return vec![d];
    }
    let mut out = validate_structure(graph, registries);
    check_hash(graph, &mut out);
    out
}

fn check_format(graph: &CompiledGraph) -> Option<Diagnostic> {
    (graph.kind != GRAPH_KIND || graph.format_version != FORMAT_VERSION).then(|| {
        graph_error(
            "graph/format-unsupported",
            format!(
                "expected {GRAPH_KIND} version {FORMAT_VERSION}, found {} version {}; compile the \
                 graph again with this evoflux",
                graph.kind, graph.format_version
            ),
        )
    })
}

fn check_hash(graph: &CompiledGraph, out: &mut Vec<Diagnostic>) {
    let expected = identity_hash(
        &graph.nodes,
        &graph.bindings,
        &graph.composition,
        &graph.route_plan,
        &graph.diagnostics,
    );
    if expected != graph.hash {
        out.push(graph_error(
            "graph/hash-mismatch",
            "the graph's content does not match its hash; it was edited or corrupted",
        ));
    }
}

/// A derived slot is of its template's slot, and every one of its
/// dependencies, its anchor among them, is selected.
fn check_derivation(
    graph: &CompiledGraph,
    slot: &Slot,
    d: &crate::derive::Derivation,
    out: &mut Vec<Diagnostic>,
) {
    if d.template.target() != *slot {
        out.push(graph_error(
            "graph/derivation-invalid",
            format!(
                "`{slot}` is bound to the template `{}`, which derives `{}`",
                d.template.as_str(),
                d.template.target()
            ),
        ));
    }
    if !d.dependencies.values().any(|id| *id == d.anchor) {
        out.push(graph_error(
            "graph/derivation-invalid",
            format!(
                "the derivation of `{slot}` is anchored on `{}`, which is not one of its \
                 dependencies",
                d.anchor
            ),
        ));
    }
    for (alias, id) in &d.dependencies {
        if !graph.bindings.contains_key(id) {
            out.push(
                graph_error(
                    "graph/derivation-dependency-unbound",
                    format!(
                        "`{slot}` is derived from `{alias}` (`{id}`), which is not a selected \
                         source"
                    ),
                )
                .with_slot(slot.clone()),
            );
        }
    }
}

/// Everything [`validate`] checks except the hash, which a freshly built
/// graph has just computed from the same content.
fn validate_structure(graph: &CompiledGraph, registries: &[BuiltinRegistry]) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    let mut slots = BTreeSet::new();
    let mut referenced = BTreeSet::new();
    for node in &graph.nodes {
        if !slots.insert(&node.slot) {
            out.push(graph_error(
                "graph/slot-duplicate",
                format!("slot `{}` is selected more than once", node.slot),
            ));
        }
        if !referenced.insert(&node.source_id) {
            out.push(graph_error(
                "graph/source-duplicate",
                format!("source `{}` is selected more than once", node.source_id),
            ));
        }
        let Some(bound) = graph.bindings.get(&node.source_id) else {
            out.push(
                graph_error(
                    "graph/binding-missing",
                    format!("selected source `{}` has no binding", node.source_id),
                )
                .with_slot(node.slot.clone()),
            );
            continue;
        };
        if slot_of_logical_path(&bound.logical_path).as_ref() != Some(&node.slot) {
            out.push(graph_error(
                "graph/logical-path-mismatch",
                format!(
                    "binding of `{}` has logical path `{}`, which does not select `{}`",
                    node.source_id, bound.logical_path, node.slot
                ),
            ));
        }
        if !definition_fits(&node.slot, &node.definition) {
            out.push(graph_error(
                "graph/definition-mismatch",
                format!(
                    "the definition of `{}` is not of its slot's kind",
                    node.slot
                ),
            ));
        }
        if let Binding::Builtin {
            registry,
            module,
            revision,
            derivation,
            ..
        } = &bound.binding
        {
            let known_module = |r: &BuiltinRegistry| match derivation {
                None => r.module(module).is_some(),
                Some(d) => r.registers(d.template) && d.template.module() == *module,
            };
            if let Some(d) = derivation {
                check_derivation(graph, &node.slot, d, &mut out);
            }
            match registries.iter().find(|r| &r.id == registry) {
                None => out.push(graph_error(
                    "graph/registry-missing",
                    format!("binding names unknown registry `{registry}`"),
                )),
                Some(r) if &r.revision != revision => out.push(graph_error(
                    "graph/revision-mismatch",
                    format!(
                        "`{module}` was compiled against `{revision}` but this evoflux has `{}`; \
                         compile the graph again",
                        r.revision
                    ),
                )),
                Some(r) if !known_module(r) => out.push(graph_error(
                    "graph/registry-missing",
                    format!("registry `{registry}` has no module `{module}`"),
                )),
                Some(_) => {}
            }
        }
    }
    for id in graph.bindings.keys() {
        if !referenced.contains(id) {
            out.push(graph_error(
                "graph/binding-unreferenced",
                format!("binding `{id}` belongs to no selected source"),
            ));
        }
    }
    let winners: BTreeMap<String, &SourceId> = graph
        .nodes
        .iter()
        .map(|n| (n.slot.to_string(), &n.source_id))
        .chain(graph.composition.entries.iter().filter_map(|e| match e {
            CompositionEntry::Disabled { source } => Some((source.slot.clone(), &source.source_id)),
            CompositionEntry::Shadowed { .. }
            | CompositionEntry::Layered { .. }
            | CompositionEntry::AwaitingTrust { .. } => None,
        }))
        .collect();
    for entry in &graph.composition.entries {
        let (_, source, winner) = entry.parts();
        if graph.bindings.contains_key(&source.source_id) {
            out.push(graph_error(
                "graph/binding-for-loser",
                format!(
                    "shadowed or disabled source `{}` has a binding",
                    source.source_id
                ),
            ));
        }
        if slot_of_logical_path(&source.logical_path)
            .map(|s| s.to_string())
            .as_deref()
            != Some(source.slot.as_str())
        {
            out.push(graph_error(
                "graph/logical-path-mismatch",
                format!(
                    "composition entry `{}` has logical path `{}` outside its slot `{}`",
                    source.source_id, source.logical_path, source.slot
                ),
            ));
        }
        if let Some(winner_source_id) = winner {
            // A slot whose invalid winner failed compilation has no node;
            // such a graph carries the error that explains it.
            let known = winners.get(&source.slot) == Some(&winner_source_id);
            if !known && !graph.diagnostics.has_errors() {
                out.push(graph_error(
                    "graph/shadowed-winner-mismatch",
                    format!(
                        "`{}` is recorded as shadowed by `{winner_source_id}`, which is not the \
                         winner of `{}`",
                        source.source_id, source.slot
                    ),
                ));
            }
        }
    }
    let channel_sources: BTreeSet<&SourceId> = graph
        .nodes
        .iter()
        .filter(|n| n.slot.kind == SlotKind::Channel)
        .map(|n| &n.source_id)
        .collect();
    let plan = &graph.route_plan;
    let route_sources = plan
        .effective
        .iter()
        .map(|r| &r.source_id)
        .chain(plan.shadowed.iter().map(|r| &r.source_id))
        .chain(plan.preflights.iter().flat_map(|p| p.source_ids.iter()));
    for id in route_sources {
        if !channel_sources.contains(id) {
            out.push(graph_error(
                "graph/route-source-unbound",
                format!("route of `{id}` does not belong to a selected channel"),
            ));
        }
    }
    let mut identities = BTreeSet::new();
    for r in &plan.effective {
        match crate::route_plan::RoutePattern::parse(&r.path) {
            Ok(p) if p.path == r.path && p.identity == r.identity => {}
            _ => out.push(graph_error(
                "graph/route-invalid",
                format!("effective route `{}` is not canonical", r.path),
            )),
        }
        if !identities.insert((r.method, &r.identity)) {
            out.push(graph_error(
                "graph/route-invalid",
                format!(
                    "route `{} {}` is effective twice",
                    r.method.as_str(),
                    r.identity
                ),
            ));
        }
    }
    out
}

fn definition_fits(slot: &Slot, def: &Definition) -> bool {
    match (slot.kind, def) {
        (SlotKind::Config, Definition::Config(_))
        | (SlotKind::Sandbox, Definition::Sandbox(_))
        | (SlotKind::Channel, Definition::Channel(_))
        | (SlotKind::Connection, Definition::Connection(_))
        | (SlotKind::Schedule, Definition::Schedule(_))
        | (SlotKind::Eval, Definition::Eval(_))
        | (SlotKind::RemoteAgent, Definition::RemoteAgent(_)) => true,
        (
            SlotKind::Skill
            | SlotKind::WorkAgent
            | SlotKind::CodingAgent
            | SlotKind::Worker
            | SlotKind::Fleet
            | SlotKind::FleetCommands,
            Definition::Document { .. },
        ) => true,
        (SlotKind::Tool, Definition::Tool(t)) => t.name == slot.name,
        _ => false,
    }
}

/// Why a graph could not be built or loaded.
#[derive(Debug, thiserror::Error)]
pub enum GraphError {
    #[error("the compiled graph is not valid JSON for this evoflux: {0}")]
    Parse(#[from] serde_json::Error),
    #[error("the compiled graph is invalid: {}", .0.iter().map(|d| d.code.as_ref()).collect::<Vec<_>>().join(", "))]
    Invalid(Vec<Diagnostic>),
}

impl GraphError {
    pub fn diagnostics(&self) -> Vec<Diagnostic> {
        match self {
            GraphError::Parse(e) => vec![graph_error("graph/parse-invalid", e.to_string())],
            GraphError::Invalid(d) => d.clone(),
        }
    }
}

impl CompiledGraph {
    /// Builds and validates a graph.
    pub fn new(
        nodes: Vec<Node>,
        bindings: BTreeMap<SourceId, BoundSource>,
        composition: CompositionReport,
        route_plan: RoutePlan,
        diagnostics: Diagnostics,
        registries: &[BuiltinRegistry],
    ) -> Result<CompiledGraph, GraphError> {
        let hash = identity_hash(&nodes, &bindings, &composition, &route_plan, &diagnostics);
        let graph = CompiledGraph {
            kind: GRAPH_KIND.to_owned(),
            format_version: FORMAT_VERSION,
            nodes,
            bindings,
            composition,
            route_plan,
            diagnostics,
            hash,
        };
        let problems = validate_structure(&graph, registries);
        if problems.is_empty() {
            Ok(graph)
        } else {
            Err(GraphError::Invalid(problems))
        }
    }

    /// Loads a graph from JSON and validates it.
    pub fn load(json: &str, registries: &[BuiltinRegistry]) -> Result<CompiledGraph, GraphError> {
        let graph: CompiledGraph = serde_json::from_str(json)?;
        let problems = validate(&graph, registries);
        if problems.is_empty() {
            Ok(graph)
        } else {
            Err(GraphError::Invalid(problems))
        }
    }

    pub fn to_json(&self) -> Result<String, serde_json::Error> {
        serde_json::to_string_pretty(self)
    }

    pub fn has_errors(&self) -> bool {
        self.diagnostics.has_errors()
    }

    pub fn node(&self, slot: &Slot) -> Option<&Node> {
        self.nodes.iter().find(|n| &n.slot == slot)
    }

    /// The diagnostics located on `slot`. A file the composer could not
    /// select (broken front matter, an invalid schedule) has no node, so
    /// these are all a command asked for that name has to show instead of
    /// "not found".
    pub fn slot_diagnostics(&self, slot: &Slot) -> Diagnostics {
        self.diagnostics
            .iter()
            .filter(|d| d.locator.slot.as_ref() == Some(slot))
            .cloned()
            .collect()
    }

    pub fn binding(&self, id: &SourceId) -> Option<&BoundSource> {
        self.bindings.get(id)
    }
}
