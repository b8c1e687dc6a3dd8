//! Binding a contract's command ids against the repository's registry
//! (`fleets/commands.yaml`), and its agents against the worker recipes a
//! run can open ([`bind_fleet_agents`]), without running anything.
//!
//! Kept apart from [`crate::parse_fleet_contract`] so contract text can be
//! validated without a registry at hand. A missing registry is a distinct
//! answer from an empty one: a contract with code steps in a repository
//! that declares no registry is *not set up yet* (one diagnostic naming
//! every id it needs), while a registry that lacks an id makes the
//! contract *invalid* (one diagnostic per step). A registry declared in a
//! repository that awaits trust is a third answer
//! ([`bind_awaiting_trust`]): a fleet that needs it is told to trust the
//! repository, before any of its steps runs.

use std::collections::BTreeSet;

use evoflux_core::{Diagnostic, Diagnostics};

use crate::catalog::RegistryState;
use crate::commands::{CommandRegistry, REMEDY, list};
use crate::contract::{FleetContract, FleetStep, LoopCheck, loop_check_position};
use crate::render::whole_token_placeholder;

/// The diagnostic codes of registry binding.
pub mod codes {
    /// Code steps exist and the repository declares no registry.
    pub const REGISTRY_MISSING: &str = "fleet/commands-registry-missing";
    /// A step names a command the registry does not declare.
    pub const COMMAND_UNKNOWN: &str = "fleet/step-command-unknown";
    /// A step's `args` do not fit the command's `argumentSlots`.
    pub const COMMAND_ARGUMENTS: &str = "fleet/step-command-arguments";
    /// A gate's `run` command has no whole-token `{{path}}` to receive the
    /// gate file.
    pub const GATE_COMMAND_PATH: &str = "fleet/gate-command-path";
    /// A step names an agent that is no worker recipe.
    pub const AGENT_UNKNOWN: &str = "fleet/agent-unknown";
    /// The registry is declared in a repository the user has not trusted,
    /// and the fleet needs it (a command, or a worker that requires
    /// `verify`).
    pub const REGISTRY_AWAITING_TRUST: &str = "fleet/commands-awaiting-trust";
}

/// Checks every agent a contract names (agent steps, loop halves, gate
/// authors, plan architects and rosters) against `known`, the worker
/// recipe ids; one diagnostic per unknown name, with its field.
pub fn bind_fleet_agents(contract: &FleetContract, known: &[String]) -> Diagnostics {
    agent_fields(contract)
        .into_iter()
        .filter(|(_, agent)| !known.iter().any(|k| k == agent))
        .map(|(field, agent)| {
            Diagnostic::error(
                codes::AGENT_UNKNOWN,
                format!(
                    "'{agent}' is not a worker recipe (the workers are: {})",
                    list(known)
                ),
            )
            .with_file(&contract.path)
            .with_field(field)
        })
        .collect()
}

/// Every agent a contract names, with the field that names it, in step
/// order.
fn agent_fields(contract: &FleetContract) -> Vec<(String, &str)> {
    let mut named: Vec<(String, &str)> = Vec::new();
    for step in &contract.steps {
        match step {
            FleetStep::Agent(s) => named.push((format!("steps.{}.agent", s.id), &s.work.agent)),
            FleetStep::Code(_) => {}
            FleetStep::Loop(s) => {
                match &s.check {
                    LoopCheck::Agent(a) => {
                        named.push((format!("steps.{}.check.agent", s.id), &a.agent));
                    }
                    LoopCheck::Code(_) | LoopCheck::Gate { .. } => {}
                }
                named.push((format!("steps.{}.repair.agent", s.id), &s.repair.agent));
            }
            FleetStep::Gate(s) => named.push((format!("steps.{}.agent", s.id), &s.agent)),
            FleetStep::Plan(s) => {
                named.push((format!("steps.{}.agent", s.id), &s.work.agent));
                for (i, member) in s.roster.iter().enumerate() {
                    named.push((format!("steps.{}.roster[{i}]", s.id), member));
                }
            }
        }
    }
    named
}

/// One error when `registry` awaits trust and the contract needs it: the
/// first command it runs or, for a contract that runs none, the first
/// agent it names among `checking_agents` (the workers that cannot open
/// without the registry: they require `verify`). Empty otherwise. The
/// catalog passes no agents (it knows no recipes); the harness, which
/// does, passes them, so a fleet whose verifier would be refused after
/// its coder has already edited is refused before anything runs.
pub fn bind_awaiting_trust(
    contract: &FleetContract,
    registry: &RegistryState,
    checking_agents: &[String],
) -> Diagnostics {
    let RegistryState::AwaitingTrust { path, repository } = registry else {
        return Diagnostics::new();
    };
    let commands = uses(contract);
    let (field, needs) = match commands.first() {
        Some(u) => (
            u.field.clone(),
            format!(
                "this fleet runs command '{}' from the check commands of",
                u.command
            ),
        ),
        None => match agent_fields(contract)
            .into_iter()
            .find(|(_, agent)| checking_agents.iter().any(|k| k == agent))
        {
            Some((field, agent)) => (
                field,
                format!("worker '{agent}' requires `verify`, which runs the check commands of"),
            ),
            None => return Diagnostics::new(),
        },
    };
    Diagnostics::from(vec![
        Diagnostic::error(
            codes::REGISTRY_AWAITING_TRUST,
            format!(
                "{needs} {} ({}), and they are not loaded until the repository is trusted: \
                 nothing would check the work; review and trust it with `evoflux trust {}`, \
                 then run the fleet",
                repository.display(),
                path.display(),
                repository.display()
            ),
        )
        .with_file(&contract.path)
        .with_field(field),
    ])
}

/// One use of a registered command: where, which, with what.
struct Use<'a> {
    /// The field naming the command (`steps.test.command`).
    field: String,
    /// The field holding its arguments (`steps.test.args`); a gate passes
    /// none, so its `run`.
    args_field: String,
    /// The step (or `<loop>.check`) that uses it.
    position: String,
    command: &'a str,
    args: &'a [String],
    gate: bool,
}

fn uses(contract: &FleetContract) -> Vec<Use<'_>> {
    let mut out = Vec::new();
    for step in &contract.steps {
        match step {
            FleetStep::Code(s) => out.push(Use {
                field: format!("steps.{}.command", s.id),
                args_field: format!("steps.{}.args", s.id),
                position: s.id.clone(),
                command: &s.work.command,
                args: &s.work.args,
                gate: false,
            }),
            FleetStep::Loop(l) => match &l.check {
                LoopCheck::Code(c) => out.push(Use {
                    field: format!("steps.{}.check.command", l.id),
                    args_field: format!("steps.{}.check.args", l.id),
                    position: loop_check_position(&l.id),
                    command: &c.command,
                    args: &c.args,
                    gate: false,
                }),
                LoopCheck::Agent(_) | LoopCheck::Gate { .. } => {}
            },
            FleetStep::Gate(g) => out.push(Use {
                field: format!("steps.{}.run", g.id),
                args_field: format!("steps.{}.run", g.id),
                position: g.id.clone(),
                command: &g.run,
                args: &[],
                gate: true,
            }),
            FleetStep::Agent(_) | FleetStep::Plan(_) => {}
        }
    }
    out
}

/// The command ids a contract runs, sorted, each once.
pub fn fleet_command_ids(contract: &FleetContract) -> Vec<String> {
    let ids: BTreeSet<&str> = uses(contract).iter().map(|u| u.command).collect();
    ids.into_iter().map(str::to_owned).collect()
}

/// Checks every command a contract runs against `registry` (`None`: the
/// repository declares none). Empty when every command binds.
pub fn bind_fleet_commands(
    contract: &FleetContract,
    registry: Option<&CommandRegistry>,
) -> Diagnostics {
    let mut diags = Diagnostics::new();
    let all = uses(contract);
    if all.is_empty() {
        return diags;
    }
    let err = |code: &'static str, field: &str, message: String| {
        Diagnostic::error(code, message)
            .with_file(&contract.path)
            .with_field(field.to_owned())
    };
    let Some(registry) = registry else {
        diags.push(err(
            codes::REGISTRY_MISSING,
            &all[0].field,
            format!(
                "code steps require a command registry at fleets/commands.yaml declaring {}; {REMEDY}",
                fleet_command_ids(contract).join(", ")
            ),
        ));
        return diags;
    };
    for u in &all {
        let Some(command) = registry.get(u.command) else {
            let registered: Vec<String> = registry.iter().map(|c| c.id.clone()).collect();
            diags.push(err(
                codes::COMMAND_UNKNOWN,
                &u.field,
                format!(
                    "step '{}' names unknown command '{}' (registered: {})",
                    u.position,
                    u.command,
                    list(&registered)
                ),
            ));
            continue;
        };
        // A whole-token `{{var}}` is filled from `--var` when the plan is
        // compiled; the run's `FleetCommand::bind` judges the bound value.
        if let Err(e) = command.check_arguments(u.args, |a| whole_token_placeholder(a).is_some()) {
            diags.push(err(
                codes::COMMAND_ARGUMENTS,
                &u.args_field,
                format!("step '{}': {e}", u.position),
            ));
        }
        if u.gate && !command.placeholders().any(|p| p == "path") {
            diags.push(err(
                codes::GATE_COMMAND_PATH,
                &u.field,
                format!(
                    "gate '{}' runs command '{}', whose argv has no whole-token {{{{path}}}} to \
                     receive the gate file",
                    u.position, u.command
                ),
            ));
        }
    }
    diags
}
