//! `evoflux fleet`: the fleets of the source graph and the builtin ones,
//! checked, shown, compiled into plans, and run through the harness's
//! fleet runner (`evoflux_app::fleet_run`), which holds every rule of
//! a run; this module parses, prints and picks the exit code.

use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use clap::Subcommand;
use evoflux_app::CompiledGraph;
use evoflux_core::dirs::Dirs;
use evoflux_core::{Diagnostic, Diagnostics};
use evoflux_fleet::{
    CatalogFleet, FleetCatalog, FleetStep, LoopCheck, PlanError, compile_fleet_plan,
};
use serde_json::{Value, json};

use evoflux_app::fleet_run::{
    self, FleetProgress, FleetReadiness, FleetRunError, FleetRunOptions, RunRecord, RunState,
};
use evoflux_fleet::run::{NodeOutcome, NodeReceipt, RunReport, RunStatus};

use crate::cli::SourceArgs;
use crate::output::{Exit, Output};

#[derive(Debug, Subcommand)]
pub enum FleetCommand {
    /// List the fleets: builtin, plugin, user and project ones (a fleet of
    /// the source graph shadows a builtin of its name).
    List {
        #[command(flatten)]
        sources: SourceArgs,
    },
    /// Show one fleet's contract: version, limits, steps and prompt.
    Show {
        name: String,
        #[command(flatten)]
        sources: SourceArgs,
    },
    /// Check every fleet, or one, as a run would before its first step;
    /// exit 3 when any is invalid or could not run here.
    Validate {
        name: Option<String>,
        #[command(flatten)]
        sources: SourceArgs,
    },
    /// Compile a fleet's plan for the given variables: loops unrolled, one
    /// node per attempt, a content hash; exit 3 when the fleet is invalid
    /// or a variable is missing.
    Plan {
        name: String,
        /// A prompt variable, `name=value` (repeatable).
        #[arg(long = "var", value_name = "NAME=VALUE", value_parser = parse_var)]
        vars: Vec<(String, String)>,
        #[command(flatten)]
        sources: SourceArgs,
    },
    /// Run a fleet in the repository: agent steps as worker sessions, code
    /// steps as registered commands, write boundaries enforced against git.
    /// Exit 0 when it succeeds, 1 when a step failed, 3 for a bad fleet or
    /// variable. A killed run goes on with `--resume ID`.
    Run {
        /// The fleet (optional with --resume).
        name: Option<String>,
        /// A prompt variable, `name=value` (repeatable).
        #[arg(long = "var", value_name = "NAME=VALUE", value_parser = parse_var)]
        vars: Vec<(String, String)>,
        /// Every agent step on this `provider:model`.
        #[arg(long, value_name = "PROVIDER:MODEL")]
        model: Option<String>,
        /// Carry on run ID: steps that settled are not run again.
        #[arg(long, value_name = "ID")]
        resume: Option<String>,
        /// The repository to run in (default: the one around the current directory).
        #[arg(long = "workspace", value_name = "DIR")]
        workspace: Option<PathBuf>,
    },
    /// List fleet runs, newest first, with where each stands.
    Runs,
    /// Show one fleet run: its variables and each step's receipt.
    ShowRun { id: String },
}

fn parse_var(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((name, value)) if !name.trim().is_empty() => {
            Ok((name.trim().to_owned(), value.to_owned()))
        }
        _ => Err(format!("`{s}` is not NAME=VALUE")),
    }
}

pub fn run(out: &Output, command: &FleetCommand) -> anyhow::Result<Exit> {
    match command {
        FleetCommand::List { sources } => with_catalog(out, sources, |dirs, graph, catalog| {
            let ready = FleetReadiness::new(&super::app_context(dirs)?, graph);
            Ok(list(out, catalog, &ready))
        }),
        FleetCommand::Show { name, sources } => {
            with_catalog(out, sources, |_, _, catalog| Ok(show(out, catalog, name)))
        }
        FleetCommand::Validate { name, sources } => {
            with_catalog(out, sources, |dirs, graph, catalog| {
                let ready = FleetReadiness::new(&super::app_context(dirs)?, graph);
                Ok(validate(out, catalog, name.as_deref(), &ready))
            })
        }
        FleetCommand::Plan {
            name,
            vars,
            sources,
        } => with_catalog(out, sources, |dirs, graph, catalog| {
            let ready = FleetReadiness::new(&super::app_context(dirs)?, graph);
            Ok(plan(out, catalog, name, vars, &ready))
        }),
        FleetCommand::Run {
            name,
            vars,
            model,
            resume,
            workspace,
        } => run_fleet(
            out,
            FleetRunOptions {
                fleet: name.clone(),
                vars: vars.iter().cloned().collect(),
                model: model.clone(),
                resume: resume.clone(),
                workspace: workspace.clone(),
            },
        ),
        FleetCommand::Runs => runs(out),
        FleetCommand::ShowRun { id } => show_run(out, id),
    }
}

/// Runs `f` over the fleets of the graph `sources` compile to.
fn with_catalog(
    out: &Output,
    sources: &SourceArgs,
    f: impl FnOnce(&Dirs, &CompiledGraph, &FleetCatalog) -> anyhow::Result<Exit>,
) -> anyhow::Result<Exit> {
    let dirs = match super::resolve_dirs(out) {
        Ok(d) => d,
        Err(exit) => return Ok(exit),
    };
    let graph = super::compile_graph(&dirs, sources)?;
    let catalog = evoflux_fleet::load_fleets(&graph);
    f(&dirs, &graph, &catalog)
}

/// A fleet as listed; `valid` as `validate` judges it.
fn listed(f: &CatalogFleet, valid: bool) -> Value {
    json!({
        "name": f.name,
        "origin": f.origin,
        "valid": valid,
        "version": f.contract.as_ref().map(|c| c.version),
        "description": f.contract.as_ref().map(|c| c.description.as_str()),
        "steps": f.contract.as_ref().map(|c| c.steps.len()),
    })
}

fn list(out: &Output, catalog: &FleetCatalog, ready: &FleetReadiness) -> Exit {
    // Each fleet with every problem `validate` would name.
    let judged: Vec<(&CatalogFleet, Diagnostics)> = catalog
        .fleets
        .iter()
        .map(|f| {
            let mut problems = f.diagnostics.clone();
            problems.extend(ready.check(f, &catalog.registry).all().iter().cloned());
            (f, problems)
        })
        .collect();
    let valid =
        |f: &CatalogFleet, problems: &Diagnostics| f.contract.is_some() && !problems.has_errors();
    let rows: Vec<Value> = judged
        .iter()
        .map(|(f, problems)| listed(f, valid(f, problems)))
        .collect();
    out.result(&rows, || {
        judged
            .iter()
            .map(|(f, problems)| {
                let about = match (&f.contract, valid(f, problems)) {
                    (Some(c), true) => {
                        format!(
                            "v{} · {} steps · {}",
                            c.version.number(),
                            c.steps.len(),
                            c.description
                        )
                    }
                    (Some(_) | None, _) => format!(
                        "invalid: {} (evoflux fleet validate {})",
                        problems.summary(),
                        f.name
                    ),
                };
                format!("{:<24} {:<9} {about}\n", f.name, f.origin.label())
            })
            .collect()
    });
    Exit::Ok
}

/// The fleet named `name`, or `fleet/not-found` listing the names there are.
fn find<'a>(out: &Output, catalog: &'a FleetCatalog, name: &str) -> Option<&'a CatalogFleet> {
    let found = catalog.get(name);
    if found.is_none() {
        let names: Vec<&str> = catalog.fleets.iter().map(|f| f.name.as_str()).collect();
        out.diagnostics(&Diagnostics::from(vec![Diagnostic::error(
            "fleet/not-found",
            format!("no fleet `{name}`; the fleets are: {}", names.join(", ")),
        )]));
    }
    found
}

fn show(out: &Output, catalog: &FleetCatalog, name: &str) -> Exit {
    let Some(f) = find(out, catalog, name) else {
        return Exit::Failure;
    };
    let Some(c) = &f.contract else {
        out.diagnostics(&f.diagnostics);
        return Exit::Invalid;
    };
    let value = json!({
        "name": f.name,
        "origin": f.origin,
        "valid": f.is_valid(),
        "contract": c,
    });
    out.result(&value, || {
        let mut text = format!(
            "{} (v{}, {})\n{}\nmaxWorkers: {}  onFailure: {}{}\n\nsteps:\n",
            f.name,
            c.version.number(),
            f.origin.label(),
            c.description,
            c.max_workers,
            c.on_failure.as_str(),
            c.budget_usd
                .map(|b| format!("  budgetUsd: {b}"))
                .unwrap_or_default(),
        );
        for step in &c.steps {
            text.push_str(&format!("  {}\n", step_line(step)));
        }
        text.push_str(&format!("\n{}\n", c.body));
        text
    });
    out.diagnostics(&f.diagnostics);
    if f.is_valid() {
        Exit::Ok
    } else {
        Exit::Invalid
    }
}

/// One step as `show` prints it: id, kind, who or what runs, what it waits for.
fn step_line(step: &FleetStep) -> String {
    let what = match step {
        FleetStep::Agent(s) => format!("agent {} ({})", s.work.agent, s.work.scope.as_str()),
        FleetStep::Code(s) => format!("code {} ({})", s.work.command, s.work.scope.as_str()),
        FleetStep::Loop(s) => {
            let check = match &s.check {
                LoopCheck::Code(c) => format!("code {}", c.command),
                LoopCheck::Agent(a) => format!("agent {}", a.agent),
                LoopCheck::Gate { gate } => format!("gate {gate}"),
            };
            format!(
                "loop: check by {check}, repair by agent {}, at most {} attempts",
                s.repair.agent, s.max_attempts
            )
        }
        FleetStep::Gate(s) => format!("gate by {}: {} must fail first", s.agent, s.run),
        FleetStep::Plan(s) => format!("plan over {}", s.roster.join(", ")),
    };
    let deps = step.dependencies();
    if deps.is_empty() {
        format!("{:<20} {what}", step.id())
    } else {
        format!("{:<20} {what} after {}", step.id(), deps.join(", "))
    }
}

/// Every fleet, or one, checked as a run would check it before its first
/// step: its agents against the worker recipes a run can open, and the
/// check commands it needs against the repository's trust.
fn validate(
    out: &Output,
    catalog: &FleetCatalog,
    name: Option<&str>,
    ready: &FleetReadiness,
) -> Exit {
    let fleets: Vec<&CatalogFleet> = match name {
        Some(n) => match find(out, catalog, n) {
            Some(f) => vec![f],
            None => return Exit::Failure,
        },
        None => catalog.fleets.iter().collect(),
    };
    let mut all = Diagnostics::new();
    let mut invalid: Vec<&str> = Vec::new();
    for f in &fleets {
        all.extend(f.diagnostics.iter().cloned());
        let more = ready.check(f, &catalog.registry).all();
        if !f.is_valid() || more.has_errors() {
            invalid.push(f.name.as_str());
        }
        all.extend(more.iter().cloned());
    }
    let value = json!({
        "valid": invalid.is_empty(),
        "fleets": fleets.len(),
        "invalid": invalid,
        "diagnostics": all,
    });
    out.result(&value, || {
        if invalid.is_empty() {
            format!("{} fleets are valid\n", fleets.len())
        } else {
            format!(
                "{} of {} fleets are invalid: {}\n",
                invalid.len(),
                fleets.len(),
                invalid.join(", ")
            )
        }
    });
    out.diagnostics(&all);
    if invalid.is_empty() {
        Exit::Ok
    } else {
        Exit::Invalid
    }
}

/// The plan `run` would run, or what `run` would refuse it for (exit 3).
fn plan(
    out: &Output,
    catalog: &FleetCatalog,
    name: &str,
    vars: &[(String, String)],
    ready: &FleetReadiness,
) -> Exit {
    let Some(f) = find(out, catalog, name) else {
        return Exit::Failure;
    };
    let (Some(c), true) = (&f.contract, f.is_valid()) else {
        out.diagnostics(&f.diagnostics);
        return Exit::Invalid;
    };
    let vars: BTreeMap<String, String> = vars.iter().cloned().collect();
    let plan = match compile_fleet_plan(c, &vars) {
        Ok(p) => p,
        Err(e) => return plan_error(out, &c.path, &e),
    };
    let refused = ready.check(f, &catalog.registry).all();
    if refused.has_errors() {
        out.diagnostics(&refused);
        return Exit::Invalid;
    }
    out.result(&plan, || {
        let mut text = format!(
            "{} · {} nodes · at most {} at once · plan {}\n",
            plan.contract,
            plan.nodes.len(),
            plan.max_workers,
            plan.hash
        );
        for node in &plan.nodes {
            let after = if node.dependencies.is_empty() {
                String::new()
            } else {
                format!(" after {}", node.dependencies.join(", "))
            };
            text.push_str(&format!(
                "  {:<24} {:<7} {}{after}\n",
                node.id,
                node.role.as_str(),
                node.scope.as_str()
            ));
        }
        text
    });
    Exit::Ok
}

/// Why a plan could not be compiled, as diagnostics (exit 3), or a failure.
fn plan_error(out: &Output, path: &std::path::Path, e: &PlanError) -> Exit {
    let d = match e {
        PlanError::Invalid { diagnostics, .. } => {
            out.diagnostics(diagnostics);
            return Exit::Invalid;
        }
        PlanError::Unresolved(r) => {
            let mut d = r.to_diagnostic(path);
            let flags: Vec<String> = r.names.iter().map(|n| format!("--var {n}=…")).collect();
            d.message = format!("{}: pass {}", d.message, flags.join(" "));
            d
        }
        PlanError::Argument {
            position, index, ..
        } => Diagnostic::error(PlanError::ARGUMENT_CODE, e.to_string())
            .with_file(path)
            .with_field(format!("steps.{position}.args[{index}]")),
        PlanError::Hash(_) => {
            out.failure(&anyhow::anyhow!("{e}"));
            return Exit::Failure;
        }
    };
    out.diagnostics(&Diagnostics::from(vec![d]));
    Exit::Invalid
}

/// Progress on a terminal: a line per node as it starts and settles.
#[derive(Debug, Default)]
struct Lines {
    /// Shown at all (stderr is a terminal, and no `--json`).
    shown: bool,
    /// The run's id, once it has one: a Ctrl-C names it for `--resume`.
    run_id: Mutex<Option<String>>,
}

impl FleetProgress for Lines {
    fn started(&self, run_id: &str, node: &str) {
        if let Ok(mut id) = self.run_id.lock() {
            *id = Some(run_id.to_owned());
        }
        if self.shown {
            eprintln!("  … {node}");
        }
    }

    fn settled(&self, run_id: &str, receipt: &NodeReceipt) {
        if let Ok(mut id) = self.run_id.lock() {
            *id = Some(run_id.to_owned());
        }
        if self.shown {
            eprintln!("{}", receipt_line(receipt));
        }
    }
}

fn run_fleet(out: &Output, options: FleetRunOptions) -> anyhow::Result<Exit> {
    let rt = crate::frontend::runtime()?;
    rt.block_on(async {
        let dirs = match super::resolve_dirs(out) {
            Ok(d) => d,
            Err(exit) => return Ok(exit),
        };
        let app = super::app_context(&dirs)?;
        let processes = crate::frontend::session::process_runtime(out)?;
        let lines = Arc::new(Lines {
            shown: !out.json && std::io::stderr().is_terminal(),
            run_id: Mutex::new(options.resume.clone()),
        });
        let progress: Arc<dyn FleetProgress> = lines.clone();
        let ran = tokio::select! {
            r = fleet_run::run_fleet(&app, processes.clone(), options, progress) => Some(r),
            () = crate::frontend::signals::shutdown_signal() => None,
        };
        processes.shutdown().await;
        let Some(ran) = ran else {
            let id = lines.run_id.lock().ok().and_then(|id| id.clone());
            out.failure(&anyhow::anyhow!(
                "interrupted; {}",
                match id {
                    Some(id) => format!("carry on with `evoflux fleet run --resume {id}`"),
                    None => "the run had not started".to_owned(),
                }
            ));
            return Ok(Exit::Interrupted);
        };
        match ran {
            Ok(report) => {
                out.result(&report, || report_text(&report));
                Ok(match report.status {
                    RunStatus::Succeeded => Exit::Ok,
                    RunStatus::Failed | RunStatus::Stopped | RunStatus::BudgetExhausted => {
                        Exit::Failure
                    }
                })
            }
            Err(e) => Ok(run_error(out, &e)),
        }
    })
}

/// A run that could not be carried out: diagnostics for a bad fleet or
/// variable (exit 3), else the error with its code.
fn run_error(out: &Output, e: &FleetRunError) -> Exit {
    match e {
        FleetRunError::Invalid { diagnostics, .. }
        | FleetRunError::UnknownAgents { diagnostics, .. }
        | FleetRunError::ChecksAwaitingTrust { diagnostics, .. } => {
            out.diagnostics(diagnostics);
            Exit::Invalid
        }
        FleetRunError::Plan { path, source, .. } => plan_error(out, path, source),
        FleetRunError::NotFound { .. }
        | FleetRunError::RunNotFound { .. }
        | FleetRunError::ResumeMismatch { .. }
        | FleetRunError::NothingToRun
        | FleetRunError::Io { .. }
        | FleetRunError::Corrupt { .. }
        | FleetRunError::Session(_)
        | FleetRunError::Journal(_)
        | FleetRunError::Executor(_) => {
            out.failure(&anyhow::anyhow!("{e} [{}]", e.code()));
            if e.is_invalid_input() {
                Exit::Invalid
            } else {
                Exit::Failure
            }
        }
    }
}

fn runs(out: &Output) -> anyhow::Result<Exit> {
    let rt = crate::frontend::runtime()?;
    rt.block_on(async {
        let dirs = match super::resolve_dirs(out) {
            Ok(d) => d,
            Err(exit) => return Ok(exit),
        };
        match fleet_run::list_runs(dirs.data_dir()).await {
            Ok(runs) => {
                out.result(&runs, || {
                    if runs.is_empty() {
                        return "no fleet runs yet; start one with `evoflux fleet run NAME`\n"
                            .to_owned();
                    }
                    runs.iter().map(run_row).collect()
                });
                Ok(Exit::Ok)
            }
            Err(e) => Ok(run_error(out, &e)),
        }
    })
}

fn show_run(out: &Output, id: &str) -> anyhow::Result<Exit> {
    let rt = crate::frontend::runtime()?;
    rt.block_on(async {
        let dirs = match super::resolve_dirs(out) {
            Ok(d) => d,
            Err(exit) => return Ok(exit),
        };
        match fleet_run::show_run(dirs.data_dir(), id).await {
            Ok(record) => {
                out.result(&record, || {
                    let mut text = run_row(&record);
                    text.push_str(&format!("  in {}\n", record.manifest.workspace.display()));
                    for (k, v) in &record.manifest.vars {
                        text.push_str(&format!("  {k} = {v}\n"));
                    }
                    for r in &record.receipts {
                        text.push_str(&receipt_line(r));
                        text.push('\n');
                    }
                    for n in &record.unsettled {
                        text.push_str(&format!("  ! {n:<24} started, never settled\n"));
                    }
                    if record.state == RunState::Incomplete {
                        text.push_str(&format!(
                            "carry on with `evoflux fleet run --resume {}`\n",
                            record.manifest.run_id
                        ));
                    }
                    text
                });
                Ok(Exit::Ok)
            }
            Err(e) => Ok(run_error(out, &e)),
        }
    })
}

/// One run as `runs` lists it.
fn run_row(r: &RunRecord) -> String {
    format!(
        "{:<36} {:<16} {:<16} {} steps settled · spent {}\n",
        r.manifest.run_id,
        r.manifest.fleet,
        r.state.as_str(),
        r.receipts.len(),
        r.spent
    )
}

/// One node's receipt as a line: state, time, cost, what it changed, why
/// it failed.
fn receipt_line(r: &NodeReceipt) -> String {
    let (mark, state) = match &r.outcome {
        NodeOutcome::Succeeded => ("✓", "succeeded".to_owned()),
        NodeOutcome::CheckFailed => ("✗", "check failed".to_owned()),
        NodeOutcome::Failed { reason, message } => {
            ("✗", format!("failed [{}]: {message}", reason.code()))
        }
        NodeOutcome::Skipped { reason } => ("-", format!("skipped [{}]", reason.code())),
    };
    let mut line = format!(
        "  {mark} {:<24} {state} · {:.1}s · {}",
        r.node,
        r.duration_ms as f64 / 1000.0,
        r.cost
    );
    if !r.files_changed.is_empty() {
        line.push_str(&format!(" · changed {}", r.files_changed.join(", ")));
    }
    // Boundary violations and merge conflicts are named by the failure.
    line
}

fn report_text(report: &RunReport) -> String {
    let mut text = String::new();
    for r in &report.receipts {
        text.push_str(&receipt_line(r));
        text.push('\n');
    }
    if !report.revalidated.is_empty() {
        text.push_str(&format!(
            "re-ran {} because a later step changed the workspace after it passed\n",
            report.revalidated.join(", ")
        ));
    }
    let state = RunState::from(report.status);
    text.push_str(&format!(
        "fleet run {}: {} · spent {}{}\n",
        report.run_id,
        state.as_str(),
        report.spent,
        if report.resumed.is_empty() {
            String::new()
        } else {
            format!(" · {} steps kept from before", report.resumed.len())
        }
    ));
    if state != RunState::Succeeded {
        text.push_str(&format!(
            "see `evoflux fleet show-run {}`; after a fix, `evoflux fleet run --resume {}` runs \
             the steps that did not succeed\n",
            report.run_id, report.run_id
        ));
    }
    text
}
