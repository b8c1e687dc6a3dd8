//! The write-boundary rules of a contract: which boundary each position
//! declares, and the v4 rules every position must satisfy.
//!
//! A position is where a boundary is declared: a step id, or a loop half
//! `<loop>.check` / `<loop>.repair` (every unrolled attempt inherits its
//! half's boundary). Below v4 there is no claim at all (`None`): a v3
//! `workspace` step means the whole checkout, as it did when it was
//! written, and turning that into "the run fails if anything else changes"
//! would break working pipelines on an upgrade.

use evoflux_core::{Diagnostic, Diagnostics};
use serde::Serialize;

use crate::boundary::{WriteBoundary, normalize_write_boundary};
use crate::contract::{
    FLEET_WRITE_BOUNDARY_VERSION, FleetContract, FleetStep, FleetVersion, LoopCheck, Scope,
    loop_check_position, loop_repair_position,
};

/// The diagnostic codes of the boundary rules.
pub mod codes {
    /// A v4+ `workspace` position without a non-empty `writes`.
    pub const WRITES_MISSING: &str = "fleet/writes-missing";
    /// A `readonly` position that declares `writes` (even `[]`).
    pub const WRITES_READONLY: &str = "fleet/writes-readonly";
}

/// One declared position and the boundary it runs under.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StepBoundary {
    /// A step id, or `<loop>.check` / `<loop>.repair`.
    pub position: String,
    pub scope: Scope,
    /// `None` below v4 (no claim); `[]` for `readonly`; the declared list
    /// otherwise. A gate's boundary is its `path`.
    pub writes: Option<WriteBoundary>,
}

/// The boundary of one position: `None` below v4, the empty allowlist for
/// `readonly` (a checkable claim, not an absence), the declaration
/// otherwise.
pub fn fleet_step_write_boundary(
    version: FleetVersion,
    scope: Scope,
    writes: Option<&WriteBoundary>,
) -> Option<WriteBoundary> {
    if version < FLEET_WRITE_BOUNDARY_VERSION {
        return None;
    }
    match scope {
        Scope::Readonly => Some(WriteBoundary::readonly()),
        Scope::Workspace => Some(writes.cloned().unwrap_or_default()),
    }
}

/// A gate's boundary: exactly its file (`None` below v4, as for every
/// position). The parser only admits a gate path that is one normalized
/// entry; a hand-built one that is not fails closed, to the empty
/// allowlist, rather than to no claim at all.
pub(crate) fn gate_write_boundary(version: FleetVersion, path: &str) -> Option<WriteBoundary> {
    if version < FLEET_WRITE_BOUNDARY_VERSION {
        return None;
    }
    Some(normalize_write_boundary(&[path]).unwrap_or_default())
}

/// Where a position's boundary comes from.
enum Source<'a> {
    /// What the author wrote: a scope and, maybe, `writes`.
    Declared {
        scope: Scope,
        writes: Option<&'a WriteBoundary>,
    },
    /// A gate's `path` (a gate step, or a loop check that re-runs one).
    Gate { path: &'a str },
}

/// Every position a contract runs, in declaration order, both halves of
/// every loop included: the one walk that [`fleet_step_boundaries`] and
/// [`validate_write_boundaries`] share. A gate-checked loop whose gate is
/// not declared has no check position (the graph reports the gate).
fn positions(contract: &FleetContract) -> Vec<(String, Source<'_>)> {
    fn declared(scope: Scope, writes: Option<&WriteBoundary>) -> Source<'_> {
        Source::Declared { scope, writes }
    }
    let mut out = Vec::new();
    for step in &contract.steps {
        match step {
            FleetStep::Agent(s) => {
                out.push((s.id.clone(), declared(s.work.scope, s.work.writes.as_ref())));
            }
            FleetStep::Plan(s) => {
                out.push((s.id.clone(), declared(s.work.scope, s.work.writes.as_ref())));
            }
            FleetStep::Code(s) => {
                out.push((s.id.clone(), declared(s.work.scope, s.work.writes.as_ref())));
            }
            FleetStep::Gate(s) => out.push((s.id.clone(), Source::Gate { path: &s.path })),
            FleetStep::Loop(l) => {
                let check = loop_check_position(&l.id);
                match &l.check {
                    LoopCheck::Code(c) => out.push((check, declared(c.scope, c.writes.as_ref()))),
                    LoopCheck::Agent(a) => out.push((check, declared(a.scope, a.writes.as_ref()))),
                    LoopCheck::Gate { gate } => {
                        let path = contract.steps.iter().find_map(|s| match s {
                            FleetStep::Gate(g) if g.id == *gate => Some(g.path.as_str()),
                            FleetStep::Gate(_)
                            | FleetStep::Agent(_)
                            | FleetStep::Code(_)
                            | FleetStep::Loop(_)
                            | FleetStep::Plan(_) => None,
                        });
                        if let Some(path) = path {
                            out.push((check, Source::Gate { path }));
                        }
                    }
                }
                out.push((
                    loop_repair_position(&l.id),
                    declared(l.repair.scope, l.repair.writes.as_ref()),
                ));
            }
        }
    }
    out
}

/// Every position a contract runs, in declaration order, both halves of
/// every loop included, with the boundary it runs under. A gate, and a
/// loop check that re-runs one, are `workspace` positions bounded by the
/// gate's file.
pub fn fleet_step_boundaries(contract: &FleetContract) -> Vec<StepBoundary> {
    let v = contract.version;
    positions(contract)
        .into_iter()
        .map(|(position, source)| match source {
            Source::Declared { scope, writes } => StepBoundary {
                position,
                scope,
                writes: fleet_step_write_boundary(v, scope, writes),
            },
            Source::Gate { path } => StepBoundary {
                position,
                scope: Scope::Workspace,
                writes: gate_write_boundary(v, path),
            },
        })
        .collect()
}

/// The field of a position's `writes`: `steps.<id>.writes`, or
/// `steps.<loop>.check.writes` for a loop half.
fn writes_field(position: &str) -> String {
    format!("steps.{position}.writes")
}

/// The v4 rules: every `workspace` position declares a non-empty `writes`;
/// a `readonly` position declares none. Empty below v4.
pub fn validate_write_boundaries(contract: &FleetContract) -> Diagnostics {
    let mut diags = Diagnostics::new();
    if !contract.version.enforces_write_boundaries() {
        return diags;
    }
    for (position, source) in positions(contract) {
        // A gate's boundary is derived from its path, never declared.
        let Source::Declared { scope, writes } = source else {
            continue;
        };
        match (scope, writes) {
            (Scope::Workspace, Some(w)) if !w.is_empty() => {}
            (Scope::Workspace, _) => diags.push(
                Diagnostic::error(
                    codes::WRITES_MISSING,
                    format!(
                        "step '{position}' has scope 'workspace' and must declare a non-empty \
                         'writes' allowlist at version {FLEET_WRITE_BOUNDARY_VERSION}"
                    ),
                )
                .with_file(&contract.path)
                .with_field(writes_field(&position)),
            ),
            (Scope::Readonly, None) => {}
            (Scope::Readonly, Some(_)) => diags.push(
                Diagnostic::error(
                    codes::WRITES_READONLY,
                    format!(
                        "step '{position}' is 'readonly', which is the empty allowlist; remove \
                         its 'writes' or give it scope 'workspace'"
                    ),
                )
                .with_file(&contract.path)
                .with_field(writes_field(&position)),
            ),
        }
    }
    diags
}
