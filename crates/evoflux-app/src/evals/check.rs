//! What stops the runner before any run: the graph's diagnostics of eval
//! files, and an eval whose `lead` or `worker` names nothing the graph
//! has. A name that resolves to nothing is a broken eval file, said once
//! with its file and field, not a failed run repeated `--repeat` times.

use evoflux_core::{AppMode, Diagnostic, Diagnostics};
use evoflux_graph::CompiledGraph;
use evoflux_graph::eval::EvalTarget;

use super::task_evals;
use crate::AppContext;

/// Every problem of the graph's evals, each with its `eval/…` code (or
/// the code discovery gave the file).
pub fn problems(app: &AppContext, graph: &CompiledGraph) -> Diagnostics {
    let mut out: Diagnostics = graph
        .diagnostics
        .iter()
        .filter(|d| {
            d.code.starts_with("eval/")
                || d.locator
                    .slot
                    .as_ref()
                    .is_some_and(|s| s.kind == evoflux_core::SlotKind::Eval)
        })
        .cloned()
        .collect();
    out.extend(targets(app, graph));
    out
}

/// Each eval's `lead` against its mode's leads and `worker` against the
/// worker recipes a session reaches (any layer's: the catalog decides,
/// as it does for a session).
fn targets(app: &AppContext, graph: &CompiledGraph) -> Diagnostics {
    let mut out = Diagnostics::new();
    let workers = app.worker_ids(graph, AppMode::Coding);
    for task in task_evals(graph) {
        let at = |code: &'static str, field: &str, message: String| {
            let d = Diagnostic::error(code, message)
                .with_slot(evoflux_core::Slot::new(
                    evoflux_core::SlotKind::Eval,
                    task.name.as_str(),
                ))
                .with_field(field);
            match &task.file {
                Some(file) => d.with_file(file),
                None => d,
            }
        };
        let def = &task.definition;
        match def.target() {
            EvalTarget::Lead(None) => {}
            EvalTarget::Lead(Some(lead)) => {
                let mode = AppMode::from(def.mode);
                let directory =
                    evoflux_agents::team::load_agents(graph, mode, &mut Diagnostics::new());
                if let Err(e) = directory.team(Some(lead)) {
                    let hint = if workers.iter().any(|w| w == lead) {
                        format!("; `{lead}` is a worker recipe: write `worker: {lead}` to run it")
                    } else {
                        String::new()
                    };
                    out.push(at(
                        "eval/lead-unknown",
                        "lead",
                        format!(
                            "eval `{}`: `lead: {lead}` runs nothing: {e}{hint}",
                            task.name
                        ),
                    ));
                }
            }
            EvalTarget::Worker(id) => {
                if !workers.iter().any(|w| w == id) {
                    out.push(at(
                        "eval/worker-unknown",
                        "worker",
                        format!(
                            "eval `{}`: `worker: {id}` names no worker recipe; the recipes are: {} \
                             (`evoflux workers list`; a quarantined recipe is named by \
                             `evoflux workers validate`)",
                            task.name,
                            if workers.is_empty() {
                                "none".to_owned()
                            } else {
                                workers.join(", ")
                            }
                        ),
                    ));
                }
            }
        }
    }
    out
}
