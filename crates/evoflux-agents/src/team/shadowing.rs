//! A member named like a worker hides that worker: the lead's `agent` tool
//! takes one `agent_id` per name, and a member wins it (the harness drops
//! the worker from the lead's reach). Nothing breaks, so nothing would
//! say so; this module names it as a warning.
//!
//! Only what an agent file changes is reported. The built-in team already
//! names members like some framework workers (`coder`, `architect`); a
//! file that overrides such a member leaves the worker exactly as hidden
//! as it was, so it is not reported again.

use evoflux_core::{Diagnostic, Diagnostics};

use super::{AgentDirectory, AgentSource, Role, profiles};
use crate::worker::{RecipeSource, WorkerCatalog};

/// The stable code of the warning.
pub const MEMBER_SHADOWS_WORKER: &str = "agent/member-shadows-worker";

/// One warning per member file of `dir` whose name is the id of a worker
/// a lead of that mode could otherwise dispatch.
pub fn members_shadowing_workers(dir: &AgentDirectory, workers: &WorkerCatalog) -> Diagnostics {
    let builtin_names: Vec<&str> = profiles(dir.mode).map(|p| p.name).collect();
    let mut out = Diagnostics::new();
    for entry in &dir.agents {
        let AgentSource::File { path, .. } = &entry.source else {
            continue;
        };
        if entry.role() != Some(Role::Member) || builtin_names.contains(&entry.name.as_str()) {
            continue;
        }
        let Some(worker) = workers.dispatchable(dir.mode).find(|w| w.id == entry.name) else {
            continue;
        };
        let whose = match worker.source {
            RecipeSource::Framework => "built-in".to_owned(),
            RecipeSource::Plugin
            | RecipeSource::Admin
            | RecipeSource::User
            | RecipeSource::Project => format!("{} layer's", worker.source.as_str()),
        };
        out.push(
            Diagnostic::warning(
                MEMBER_SHADOWS_WORKER,
                format!(
                    "member `{name}` shadows the {whose} worker `{name}` ({description}): the \
                     lead's `agent` tool reaches the member under that name, never the worker; \
                     rename the member's file to keep both",
                    name = entry.name,
                    description = worker.description.trim_end_matches('.'),
                ),
            )
            .with_file(path)
            .with_slot(evoflux_graph::Slot::new(
                super::agent_slot_kind(dir.mode),
                &entry.name,
            )),
        );
    }
    out
}
