//! Composition policies: how each kind treats same-layer duplicates and an
//! invalid winner. One closed enum, matched exhaustively by the composer;
//! a new kind picks a policy or adds a variant, never a second composer.

use evoflux_core::slot::SlotKind;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CompositionPolicy {
    /// Tools, channels, connections, schedules, evals, remote agents: a
    /// same-layer duplicate is
    /// a compile error; an invalid winner is a compile error and never
    /// falls back.
    Strict,
    /// Config and sandbox: a same-layer duplicate is a compile error; every
    /// layer's file is folded over the framework default (a repository's
    /// only tightens), and any invalid file is a compile error.
    Layered,
    /// Skills: the first candidate in discovery order wins a same-layer
    /// tie with a collision diagnostic; an invalid winner is kept for
    /// Settings while the runtime uses the next valid candidate.
    Skills,
    /// Team agents: duplicates are errors; every malformed file is reported.
    TeamAgents,
    /// Workers: duplicates are errors; invalid user/project recipes are
    /// quarantined.
    Workers,
    /// Fleets: duplicates are errors; invalid fleets are diagnostics.
    Fleets,
}

impl CompositionPolicy {
    /// The composition policy of a kind (DESIGN.md, per-kind policy).
    pub const fn of(kind: SlotKind) -> CompositionPolicy {
        match kind {
            SlotKind::Config | SlotKind::Sandbox => CompositionPolicy::Layered,
            SlotKind::Tool
            | SlotKind::Channel
            | SlotKind::Connection
            | SlotKind::Schedule
            | SlotKind::Eval
            | SlotKind::RemoteAgent => CompositionPolicy::Strict,
            SlotKind::Skill => CompositionPolicy::Skills,
            SlotKind::WorkAgent | SlotKind::CodingAgent => CompositionPolicy::TeamAgents,
            SlotKind::Worker => CompositionPolicy::Workers,
            SlotKind::Fleet | SlotKind::FleetCommands => CompositionPolicy::Fleets,
        }
    }

    /// Whether two candidates of one slot in the same layer and form are a
    /// compile error (rather than resolved by discovery order).
    pub const fn duplicates_are_errors(self) -> bool {
        match self {
            CompositionPolicy::Strict
            | CompositionPolicy::Layered
            | CompositionPolicy::TeamAgents
            | CompositionPolicy::Workers
            | CompositionPolicy::Fleets => true,
            CompositionPolicy::Skills => false,
        }
    }
}
