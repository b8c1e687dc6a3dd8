//! `evoflux schedule`: the compiled schedules with their next run and
//! history, a run on demand, and turning one on or off (`enabled` in its
//! file). `evoflux serve` runs the scheduler that fires them; these
//! commands read its durable state.

use std::fmt::Write as _;
use std::sync::Arc;

use anyhow::bail;
use clap::Subcommand;
use evoflux_app::CompiledGraph;
use evoflux_app::scheduler::{
    self, EngineRunner, RunStatus, ScheduleEditError, ScheduleRow, ScheduleRun, Scheduler,
    SystemNow,
};
use evoflux_core::{Diagnostic, Diagnostics, Slot, SlotKind};
use evoflux_graph::compose::CompositionEntry;
use serde_json::json;

use crate::cli::SourceArgs;
use crate::output::{Exit, Output};

#[derive(Debug, Subcommand)]
pub enum ScheduleCommand {
    /// Every schedule with its trigger, mode, next run and last run.
    List {
        #[command(flatten)]
        sources: SourceArgs,
    },
    /// One schedule with its recent runs.
    Show {
        name: String,
        #[command(flatten)]
        sources: SourceArgs,
    },
    /// Run a schedule's task now, in a new session, and wait for it; exit
    /// 1 when it fails. A disabled schedule runs too.
    RunNow {
        name: String,
        #[command(flatten)]
        sources: SourceArgs,
    },
    /// Turn a schedule on: `enabled = true` in its file, nothing else in
    /// the file changed.
    Enable {
        name: String,
        #[command(flatten)]
        sources: SourceArgs,
    },
    /// Turn a schedule off: `enabled = false` in its file, nothing else in
    /// the file changed. `run-now` still runs it.
    Disable {
        name: String,
        #[command(flatten)]
        sources: SourceArgs,
    },
    /// A schedule's runs, newest first: fired, skipped, missed, failed.
    History {
        name: String,
        /// How many runs to show.
        #[arg(long, default_value_t = 20)]
        limit: u32,
        #[command(flatten)]
        sources: SourceArgs,
    },
}

pub fn run(out: &Output, command: &ScheduleCommand) -> anyhow::Result<Exit> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    rt.block_on(run_async(out, command))
}

async fn run_async(out: &Output, command: &ScheduleCommand) -> anyhow::Result<Exit> {
    let dirs = match super::resolve_dirs(out) {
        Ok(d) => d,
        Err(exit) => return Ok(exit),
    };
    let app = super::app_context(&dirs)?;
    let sources = match command {
        ScheduleCommand::List { sources }
        | ScheduleCommand::Show { sources, .. }
        | ScheduleCommand::RunNow { sources, .. }
        | ScheduleCommand::Enable { sources, .. }
        | ScheduleCommand::Disable { sources, .. }
        | ScheduleCommand::History { sources, .. } => sources,
    };
    let graph = app.compile(&sources.workspaces)?;
    let store = app.open_store().await?;
    let rows = scheduler::rows(&store, &graph).await?;
    // A name with no row is either unknown or a schedule the graph could
    // not load; the second is reported by its own diagnostics.
    let find = |name: &str| -> anyhow::Result<Result<ScheduleRow, Exit>> {
        if let Some(r) = rows.iter().find(|r| r.name == name) {
            return Ok(Ok(r.clone()));
        }
        match unavailable(&graph, name) {
            Some(diags) => {
                out.diagnostics(&diags);
                Ok(Err(Exit::Invalid))
            }
            None => bail!("no schedule is named `{name}` (see `evoflux schedule list`)"),
        }
    };
    match command {
        ScheduleCommand::List { .. } => {
            out.diagnostics(&graph.diagnostics.errors());
            out.result(&json!({ "schedules": rows }), || render_list(&rows));
            Ok(if graph.has_errors() {
                Exit::Invalid
            } else {
                Exit::Ok
            })
        }
        ScheduleCommand::Show { name, .. } => {
            let row = match find(name)? {
                Ok(r) => r,
                Err(exit) => return Ok(exit),
            };
            let runs = store.schedule_runs(name, 10).await?;
            out.result(&json!({ "schedule": row, "runs": runs }), || {
                let mut s = render_list(std::slice::from_ref(&row));
                if let Some(file) = &row.file {
                    let _ = writeln!(s, "defined in {}", file.display());
                }
                let _ = writeln!(s, "prompt: {}", row.schedule.prompt);
                s.push_str(&render_runs(&runs));
                s
            });
            Ok(Exit::Ok)
        }
        ScheduleCommand::Enable { name, .. } | ScheduleCommand::Disable { name, .. } => {
            if let Err(exit) = find(name)? {
                return Ok(exit);
            }
            let enabled = matches!(command, ScheduleCommand::Enable { .. });
            match scheduler::set_enabled(&graph, name, enabled) {
                Ok(change) => {
                    out.result(&json!({ "change": change }), || {
                        format!(
                            "{} `{name}`{} ({})\n",
                            if enabled { "Enabled" } else { "Disabled" },
                            if change.changed {
                                ""
                            } else {
                                " (it already was)"
                            },
                            change.file.display()
                        )
                    });
                    Ok(Exit::Ok)
                }
                Err(e) => {
                    out.diagnostics(&Diagnostics::from(vec![e.to_diagnostic()]));
                    Ok(match e {
                        ScheduleEditError::Unreadable { .. } | ScheduleEditError::Write(_) => {
                            Exit::Failure
                        }
                        ScheduleEditError::NotFound(_)
                        | ScheduleEditError::Builtin { .. }
                        | ScheduleEditError::NotEditable { .. }
                        | ScheduleEditError::Invalid { .. }
                        | ScheduleEditError::EnabledInvalid { .. }
                        | ScheduleEditError::FormatUnsupported { .. }
                        | ScheduleEditError::Unverified { .. } => Exit::Invalid,
                    })
                }
            }
        }
        ScheduleCommand::History { name, limit, .. } => {
            if let Err(exit) = find(name)? {
                return Ok(exit);
            }
            let runs = store.schedule_runs(name, *limit).await?;
            out.result(&json!({ "name": name, "runs": runs }), || {
                render_runs(&runs)
            });
            Ok(Exit::Ok)
        }
        ScheduleCommand::RunNow { name, .. } => {
            let row = match find(name)? {
                Ok(r) => r,
                Err(exit) => return Ok(exit),
            };
            let runner = EngineRunner {
                app: app.clone(),
                store: store.clone(),
                processes: Some(crate::frontend::session::process_runtime(out)?),
            };
            let s = Scheduler::new(store.clone(), Arc::new(SystemNow), Arc::new(runner));
            let run = s.run_now(name, &row.schedule).await?;
            out.result(&json!({ "run": run }), || {
                render_runs(std::slice::from_ref(&run))
            });
            Ok(if run.status == RunStatus::Done {
                Exit::Ok
            } else {
                Exit::Failure
            })
        }
    }
}

/// Why the schedule `name` has no row although a file defines it: the
/// graph's diagnostics on its slot (an invalid file), or its repository
/// waiting for trust. `None` when no file defines it.
fn unavailable(graph: &CompiledGraph, name: &str) -> Option<Diagnostics> {
    let slot = Slot::new(SlotKind::Schedule, name);
    let diags = graph.slot_diagnostics(&slot);
    if !diags.is_empty() {
        return Some(diags);
    }
    let text = slot.to_string();
    graph.composition.entries.iter().find_map(|e| match e {
        CompositionEntry::AwaitingTrust { source } if source.slot == text => {
            let mut d = Diagnostic::error(
                "schedule/awaiting-trust",
                format!(
                    "schedule `{name}` is in a repository you have not trusted; it runs a \
                     model and tools, so it waits until you run `evoflux trust` there"
                ),
            )
            .with_slot(slot.clone());
            if let Some(file) = source.file() {
                d = d.with_file(file);
            }
            Some(Diagnostics::from(vec![d]))
        }
        CompositionEntry::AwaitingTrust { .. }
        | CompositionEntry::Shadowed { .. }
        | CompositionEntry::Disabled { .. }
        | CompositionEntry::Layered { .. } => None,
    })
}

fn render_list(rows: &[ScheduleRow]) -> String {
    if rows.is_empty() {
        return "No schedules (add schedules/<name>.toml to your config or a repository's \
                .evoflux).\n"
            .to_owned();
    }
    let mut s = String::new();
    for r in rows {
        let _ = writeln!(
            s,
            "{:<20} {:<32} {:<7} {:<9} next {:<26} last {}",
            r.name,
            r.schedule.trigger.to_string(),
            r.schedule.mode,
            if r.schedule.enabled {
                "enabled"
            } else {
                "disabled"
            },
            r.next_run_at.as_deref().unwrap_or("-"),
            r.last_run
                .as_ref()
                .map_or("-".to_owned(), |l| l.status.as_str().to_owned()),
        );
    }
    s
}

fn render_runs(runs: &[ScheduleRun]) -> String {
    let mut s = String::new();
    for r in runs {
        let when = scheduler::rfc3339(r.occurrence_at_ms);
        let _ = writeln!(
            s,
            "  {when}  {:<11} {:<9} {}{}",
            r.status.as_str(),
            r.trigger.as_str(),
            r.session_id.as_deref().unwrap_or(""),
            r.detail
                .as_deref()
                .map(|d| format!("  {d}"))
                .unwrap_or_default()
        );
    }
    s
}
