//! The fleets a user can run: the builtin ones compiled into this crate
//! and those the source graph selected from framework, plugin, user and
//! project roots. A fleet of the graph shadows a builtin of its name, as a
//! project fleet shadows a framework one in the composer; the graph's
//! composer has already decided between its own layers.
//!
//! Every fleet is parsed and checked here, once: the contract, its graph,
//! its write boundaries and its commands against the repository's command
//! registry (which may be declared and still wait for `evoflux trust`:
//! [`RegistryState::AwaitingTrust`]). An invalid fleet stays listed with its diagnostics (so
//! `evoflux fleet validate` can show them) and is never planned or run.

use std::path::{Path, PathBuf};

use evoflux_core::{Diagnostic, Diagnostics};
use evoflux_graph::candidate::AppRoot;
use evoflux_graph::compose::CompositionEntry;
use evoflux_graph::slot::{PathClass, classify};
use evoflux_graph::{Binding, CompiledGraph, Layer, Owner, SlotKind};
use serde::Serialize;

use crate::bind::{bind_awaiting_trust, bind_fleet_commands};
use crate::commands::{CommandRegistry, RegistryError};
use crate::contract::{FleetContract, parse_fleet_contract};

/// The fleets that ship with evoflux, by name. Their workers are the
/// builtin worker recipes.
const BUILTIN_FLEETS: &[(&str, &str)] = &[(
    "investigate-fix",
    include_str!("../builtins/fleets/investigate-fix.md"),
)];

/// Where a fleet comes from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum FleetOrigin {
    /// Compiled into evoflux.
    Builtin,
    /// A file the source graph selected.
    File { path: PathBuf, layer: Layer },
}

impl FleetOrigin {
    /// The layer's name, for listings: `builtin`, `project`, `user`, ….
    pub fn label(&self) -> &'static str {
        match self {
            FleetOrigin::Builtin => "builtin",
            FleetOrigin::File { layer, .. } => layer.as_str(),
        }
    }
}

/// One fleet: its contract when it is valid, and every problem found.
#[derive(Debug, Clone)]
pub struct CatalogFleet {
    pub name: String,
    pub origin: FleetOrigin,
    pub contract: Option<FleetContract>,
    pub diagnostics: Diagnostics,
}

impl CatalogFleet {
    /// Valid: parsed, and nothing an error.
    pub fn is_valid(&self) -> bool {
        self.contract.is_some() && !self.diagnostics.has_errors()
    }
}

/// The repository's command registry, as far as it could be read.
#[derive(Debug, Clone)]
pub enum RegistryState {
    /// No `fleets/commands.yaml`: code steps cannot run. Distinct from an
    /// empty registry, which declares that there are no commands.
    Missing,
    Loaded(CommandRegistry),
    /// It exists and does not parse; its diagnostic names file and field.
    Invalid(Diagnostic),
    /// It exists in a repository the user has not trusted (or it changed
    /// since): declared, but nothing runs it until `evoflux trust`. Kept
    /// apart from [`Missing`](Self::Missing) so a fleet that needs it is
    /// told to trust the repository, not to declare what is declared.
    AwaitingTrust {
        /// The withheld `fleets/commands.yaml`.
        path: PathBuf,
        /// The repository that holds it, which `evoflux trust` names.
        repository: PathBuf,
    },
}

impl RegistryState {
    pub fn registry(&self) -> Option<&CommandRegistry> {
        match self {
            RegistryState::Loaded(r) => Some(r),
            RegistryState::Missing
            | RegistryState::Invalid(_)
            | RegistryState::AwaitingTrust { .. } => None,
        }
    }
}

/// Every fleet, by name, and the registry their code steps bind to.
#[derive(Debug, Clone)]
pub struct FleetCatalog {
    pub fleets: Vec<CatalogFleet>,
    pub registry: RegistryState,
}

impl FleetCatalog {
    pub fn get(&self, name: &str) -> Option<&CatalogFleet> {
        self.fleets.iter().find(|f| f.name == name)
    }
}

/// The graph's command registry (`fleets/commands.yaml`).
pub fn command_registry(graph: &CompiledGraph) -> RegistryState {
    let Some(node) = graph
        .nodes
        .iter()
        .find(|n| n.slot.kind == SlotKind::FleetCommands)
    else {
        return withheld_registry(graph).unwrap_or(RegistryState::Missing);
    };
    let path = match graph.binding(&node.source_id).map(|b| &b.binding) {
        Some(Binding::File { path, .. }) => path.clone(),
        // No framework registry exists: commands are the repository's own.
        Some(Binding::Builtin { .. }) | None => return RegistryState::Missing,
    };
    let parsed = std::fs::read_to_string(&path)
        .map_err(|e| RegistryError::Yaml {
            path: path.clone(),
            reason: format!("cannot read: {e}"),
        })
        .and_then(|text| CommandRegistry::parse(&path, &text));
    match parsed {
        Ok(r) => RegistryState::Loaded(r),
        Err(e) => RegistryState::Invalid(e.to_diagnostic()),
    }
}

/// The registry the compile withheld because its repository awaits trust
/// (the composition lists it `awaiting-trust`), if any.
fn withheld_registry(graph: &CompiledGraph) -> Option<RegistryState> {
    graph.composition.entries.iter().find_map(|e| match e {
        CompositionEntry::AwaitingTrust { source } => {
            let PathClass::Slot { slot, .. } = classify(&source.logical_path) else {
                return None;
            };
            if slot.kind != SlotKind::FleetCommands {
                return None;
            }
            let path = source.file()?.to_path_buf();
            let repository = match &source.owner {
                // A project root is `<repository>/.evoflux`.
                Owner::Application {
                    root: AppRoot::Project,
                    path: root,
                    ..
                } => root.parent().map(Path::to_path_buf),
                Owner::Application { .. } | Owner::Framework { .. } | Owner::Plugin { .. } => None,
            }
            .unwrap_or_else(|| {
                evoflux_core::trust::repository_root(path.parent().unwrap_or(&path))
            });
            Some(RegistryState::AwaitingTrust { path, repository })
        }
        CompositionEntry::Shadowed { .. }
        | CompositionEntry::Disabled { .. }
        | CompositionEntry::Layered { .. } => None,
    })
}

/// Loads every fleet of `graph` and the builtin ones it does not shadow.
pub fn load_fleets(graph: &CompiledGraph) -> FleetCatalog {
    let registry = command_registry(graph);
    let mut fleets = Vec::new();
    for node in graph
        .nodes
        .iter()
        .filter(|n| n.slot.kind == SlotKind::Fleet)
    {
        let Some(bound) = graph.binding(&node.source_id) else {
            continue;
        };
        let path = match &bound.binding {
            Binding::File { path, .. } => path.clone(),
            // Builtin fleets are compiled into this crate, not the graph.
            Binding::Builtin { .. } => continue,
        };
        let origin = FleetOrigin::File {
            path: path.clone(),
            layer: bound.layer,
        };
        let fleet = match std::fs::read_to_string(&path) {
            Ok(text) => check(&node.slot.name, origin, &path, &text, &registry),
            Err(e) => CatalogFleet {
                name: node.slot.name.clone(),
                origin,
                contract: None,
                diagnostics: Diagnostics::from(vec![
                    Diagnostic::error("fleet/file-unreadable", format!("cannot read: {e}"))
                        .with_file(&path),
                ]),
            },
        };
        fleets.push(fleet);
    }
    for (name, text) in BUILTIN_FLEETS {
        if fleets.iter().any(|f| f.name == *name) {
            continue;
        }
        let path = PathBuf::from(format!("<builtin>/fleets/{name}.md"));
        fleets.push(check(name, FleetOrigin::Builtin, &path, text, &registry));
    }
    fleets.sort_by(|a, b| a.name.cmp(&b.name));
    FleetCatalog { fleets, registry }
}

/// Parses one fleet file and checks what parsing cannot: that its name is
/// its file's and that its commands bind.
fn check(
    slot_name: &str,
    origin: FleetOrigin,
    path: &Path,
    text: &str,
    registry: &RegistryState,
) -> CatalogFleet {
    let mut diagnostics = Diagnostics::new();
    let contract = parse_fleet_contract(path, text, &mut diagnostics);
    if let Some(c) = &contract {
        if c.name != slot_name {
            diagnostics.push(
                Diagnostic::error(
                    "fleet/name-mismatch",
                    format!(
                        "the contract is named `{}` but its file is `{slot_name}.md`: a fleet is \
                         run by its file's name, so make them the same",
                        c.name
                    ),
                )
                .with_file(path)
                .with_field("name"),
            );
        }
        match registry {
            RegistryState::Invalid(d) if !crate::bind::fleet_command_ids(c).is_empty() => {
                diagnostics.push(d.clone());
            }
            // Its agents are the harness's to judge (it knows which
            // workers need `verify`); its commands are judged here.
            RegistryState::AwaitingTrust { .. } => {
                diagnostics.extend(bind_awaiting_trust(c, registry, &[]));
            }
            RegistryState::Invalid(_) | RegistryState::Missing | RegistryState::Loaded(_) => {
                diagnostics.extend(bind_fleet_commands(c, registry.registry()));
            }
        }
    }
    CatalogFleet {
        name: slot_name.to_owned(),
        origin,
        contract,
        diagnostics,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_builtin_fleet_is_valid_without_a_registry() {
        for (name, text) in BUILTIN_FLEETS {
            let path = PathBuf::from(format!("<builtin>/fleets/{name}.md"));
            let f = check(
                name,
                FleetOrigin::Builtin,
                &path,
                text,
                &RegistryState::Missing,
            );
            assert!(f.is_valid(), "{name}: {}", f.diagnostics.render_human());
        }
    }
}
