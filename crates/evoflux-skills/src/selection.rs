//! Skills from the compiled source graph.
//!
//! The graph picks one winner per `skills/<name>` slot by layer and records
//! every lower candidate, in precedence order, in its composition report.
//! The skills policy needs that whole ordered list: the runtime serves the
//! first candidate that is valid and available in the session's mode, while
//! Settings shows the true winner even when it is invalid. This module
//! turns each slot's winner and its shadowed candidates into loaded
//! [`SkillRecord`]s with the user's overlay applied; the projections then
//! choose among them. Nothing here walks a directory or ranks layers again.

use std::path::{Path, PathBuf};

use evoflux_core::{AppMode, Diagnostic};
use evoflux_graph::candidate::{AppFolder, AppRoot, Backing, Owner};
use evoflux_graph::compose::{Binding, CompositionEntry};
use evoflux_graph::{CompiledGraph, SlotKind};

use crate::bundle::{LoadOptions, SkillRecord, load_bundle, load_embedded};
use crate::bundled;
use crate::name::BundleName;
use crate::origin::{CompatDir, SkillOrigin, SkillSource};
use crate::overlay::{OverlaySnapshot, apply_overlay};
use crate::scan::BundleDir;

/// The candidates of one skill slot, highest precedence first.
#[derive(Debug, Clone)]
pub struct SkillSlot {
    /// The slot name (the bundle folder name).
    pub name: String,
    pub candidates: Vec<SkillRecord>,
}

/// How many of a slot's candidates to load.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Depth {
    /// Stop once the loaded candidates settle both modes (each has a valid,
    /// available candidate) — all the runtime and Settings projections
    /// need. Lower candidates are then never read.
    Settled,
    /// Every candidate, for views that list shadowed variants.
    All,
}

fn settled(candidates: &[SkillRecord]) -> bool {
    [AppMode::Work, AppMode::Coding]
        .into_iter()
        .all(|m| candidates.iter().any(|r| r.is_runnable_in(m)))
}

/// Where one candidate's files are, and who owns it.
enum Located<'a> {
    File {
        skill_md: &'a Path,
        owner: &'a Owner,
    },
    Builtin {
        module: &'a str,
    },
}

/// The skill folder of an application owner; `None` for the folders
/// that only ever hold MCP servers (codex, VS Code, Cursor).
fn compat(folder: AppFolder) -> Option<CompatDir> {
    match folder {
        AppFolder::Evoflux => Some(CompatDir::Evoflux),
        AppFolder::Agents => Some(CompatDir::Agents),
        AppFolder::Claude => Some(CompatDir::Claude),
        AppFolder::Opencode => Some(CompatDir::Opencode),
        AppFolder::Codex | AppFolder::Vscode | AppFolder::Cursor => None,
    }
}

fn source_of(owner: &Owner) -> SkillSource {
    match owner {
        Owner::Application { root, folder, .. } => match (root, compat(*folder)) {
            (AppRoot::Project, Some(dir)) => SkillSource::Project(dir),
            (AppRoot::User, Some(dir)) => SkillSource::User(dir),
            (AppRoot::Admin, _) => SkillSource::Admin,
            // Discovery never finds a skill in these folders; loaded like
            // a custom root if a graph said so.
            (AppRoot::Project | AppRoot::User, None) => SkillSource::Custom,
        },
        Owner::Plugin { installation, .. } => SkillSource::Plugin {
            installation_id: installation.clone(),
        },
        // Framework skills are builtin-bound; a file-backed framework owner
        // would be a graph defect, loaded like a custom root.
        Owner::Framework { .. } => SkillSource::Custom,
    }
}

fn load(slot: &str, located: Located<'_>, options: &LoadOptions) -> Option<SkillRecord> {
    let name = BundleName::from_segments(slot.split('/').map(str::to_owned).collect())?;
    match located {
        Located::File { skill_md, owner } => {
            let dir = skill_md.parent()?.to_path_buf();
            let root = dir.parent().map_or_else(PathBuf::new, Path::to_path_buf);
            let mut origin = SkillOrigin::new(source_of(owner), root.clone());
            if let Owner::Plugin { .. } = owner {
                origin.plugin_root = root.parent().map(Path::to_path_buf);
            }
            // A linked bundle folder is readable but never editable.
            let symlinked =
                std::fs::symlink_metadata(&dir).is_ok_and(|m| m.file_type().is_symlink());
            let found = BundleDir {
                dir,
                name,
                symlinked,
            };
            Some(load_bundle(&found, &origin, options))
        }
        Located::Builtin { module } => {
            let entry = bundled::by_module(module)?;
            let dir = PathBuf::from(bundled::VIRTUAL_ROOT).join(entry.name);
            let origin = SkillOrigin::new(
                SkillSource::Bundled { modes: entry.modes },
                PathBuf::from(bundled::VIRTUAL_ROOT),
            );
            let found = BundleDir {
                dir,
                name,
                symlinked: false,
            };
            Some(load_embedded(&found, &origin, options, entry.skill_md))
        }
    }
}

/// Loads every skill slot of `graph` with its ordered candidates and the
/// overlay applied. Problems that concern a slot as a whole are returned
/// as diagnostics; per-bundle problems stay on their records.
pub fn skill_slots(
    graph: &CompiledGraph,
    options: &LoadOptions,
    overlay: &OverlaySnapshot,
    depth: Depth,
) -> (Vec<SkillSlot>, Vec<Diagnostic>) {
    let mut slots = Vec::new();
    let mut problems = Vec::new();
    for node in graph
        .nodes
        .iter()
        .filter(|n| n.slot.kind == SlotKind::Skill)
    {
        let Some(bound) = graph.binding(&node.source_id) else {
            continue;
        };
        let winner = match &bound.binding {
            Binding::File { path, .. } => Located::File {
                skill_md: path,
                owner: &bound.owner,
            },
            Binding::Builtin { module, .. } => Located::Builtin { module },
        };
        let slot_key = node.slot.to_string();
        let losers = graph.composition.entries.iter().filter_map(|e| match e {
            CompositionEntry::Shadowed { source, .. } if source.slot == slot_key => {
                Some(match &source.backing {
                    Backing::File { path, .. } | Backing::FileEntry { path, .. } => Located::File {
                        skill_md: path,
                        owner: &source.owner,
                    },
                    Backing::Builtin { module, .. } => Located::Builtin { module },
                    // Templates derive tools, never skills.
                    Backing::Derived { .. } => return None,
                })
            }
            CompositionEntry::Shadowed { .. }
            | CompositionEntry::Disabled { .. }
            | CompositionEntry::Layered { .. }
            | CompositionEntry::AwaitingTrust { .. } => None,
        });
        let mut candidates = Vec::new();
        for located in std::iter::once(winner).chain(losers) {
            match load(&node.slot.name, located, options) {
                Some(mut record) => {
                    apply_overlay(&mut record, overlay);
                    candidates.push(record);
                    if depth == Depth::Settled && settled(&candidates) {
                        break;
                    }
                }
                None => problems.push(
                    Diagnostic::error(
                        "skill/candidate-unloadable",
                        "a skill candidate names no bundle folder or bundled skill",
                    )
                    .with_slot(node.slot.clone()),
                ),
            }
        }
        slots.push(SkillSlot {
            name: node.slot.name.clone(),
            candidates,
        });
    }
    (slots, problems)
}
