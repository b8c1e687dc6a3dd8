//! `evoflux fleet`: the fleets of the source graph and the builtin ones,
//! checked, shown and compiled into plans. Running a plan is not built yet,
//! so there is no `run` here.

use std::collections::BTreeMap;

use clap::Subcommand;
use evoflux_core::{Diagnostic, Diagnostics};
use evoflux_fleet::{
    CatalogFleet, FleetCatalog, FleetStep, LoopCheck, PlanError, compile_fleet_plan,
};
use serde_json::{Value, json};

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
    /// Check every fleet, or one; exit 3 when any is invalid.
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
    let sources = match command {
        FleetCommand::List { sources }
        | FleetCommand::Show { sources, .. }
        | FleetCommand::Validate { sources, .. }
        | FleetCommand::Plan { sources, .. } => sources,
    };
    let dirs = match super::resolve_dirs(out) {
        Ok(d) => d,
        Err(exit) => return Ok(exit),
    };
    let graph = super::compile_graph(&dirs, sources)?;
    let catalog = evoflux_fleet::load_fleets(&graph);
    Ok(match command {
        FleetCommand::List { .. } => list(out, &catalog),
        FleetCommand::Show { name, .. } => show(out, &catalog, name),
        FleetCommand::Validate { name, .. } => validate(out, &catalog, name.as_deref()),
        FleetCommand::Plan { name, vars, .. } => plan(out, &catalog, name, vars),
    })
}

/// A fleet as listed.
fn listed(f: &CatalogFleet) -> Value {
    json!({
        "name": f.name,
        "origin": f.origin,
        "valid": f.is_valid(),
        "version": f.contract.as_ref().map(|c| c.version),
        "description": f.contract.as_ref().map(|c| c.description.as_str()),
        "steps": f.contract.as_ref().map(|c| c.steps.len()),
    })
}

fn list(out: &Output, catalog: &FleetCatalog) -> Exit {
    let rows: Vec<Value> = catalog.fleets.iter().map(listed).collect();
    out.result(&rows, || {
        catalog
            .fleets
            .iter()
            .map(|f| {
                let about = match (&f.contract, f.is_valid()) {
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
                        f.diagnostics.summary(),
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

fn validate(out: &Output, catalog: &FleetCatalog, name: Option<&str>) -> Exit {
    let fleets: Vec<&CatalogFleet> = match name {
        Some(n) => match find(out, catalog, n) {
            Some(f) => vec![f],
            None => return Exit::Failure,
        },
        None => catalog.fleets.iter().collect(),
    };
    let mut all = Diagnostics::new();
    for f in &fleets {
        all.extend(f.diagnostics.iter().cloned());
    }
    let invalid: Vec<&str> = fleets
        .iter()
        .filter(|f| !f.is_valid())
        .map(|f| f.name.as_str())
        .collect();
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

fn plan(out: &Output, catalog: &FleetCatalog, name: &str, vars: &[(String, String)]) -> Exit {
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
