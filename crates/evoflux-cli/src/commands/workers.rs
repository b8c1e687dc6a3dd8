//! `evoflux workers`: the worker catalog, and checking a terminal result
//! against a contract.

use std::path::PathBuf;

use clap::Subcommand;
use evoflux_agents::ToolCatalog;
use evoflux_agents::contract::{
    Conformance, DiskFilesystem, ResultContractKind, RunEvidence, ValidationContext,
    parse_worker_result_contract, validate_result_contract,
};
use evoflux_agents::worker::{AgentSpec, WorkerCatalog, agent_spec_fingerprint, load_workers};
use evoflux_core::{Diagnostic, Diagnostics};
use evoflux_harness::remote::RemoteAgent;
use serde_json::Value;

use crate::cli::SourceArgs;
use crate::output::{Exit, Output};

fn parse_kind(s: &str) -> Result<ResultContractKind, String> {
    ResultContractKind::parse(s).ok_or_else(|| {
        format!(
            "unknown result contract `{s}`; one of: {}",
            ResultContractKind::ALL
                .map(ResultContractKind::as_str)
                .join(", ")
        )
    })
}

#[derive(Debug, Subcommand)]
pub enum WorkersCommand {
    /// List operator-facing workers (`--all`: shadow and internal ones too).
    List {
        #[arg(long)]
        all: bool,
        #[command(flatten)]
        sources: SourceArgs,
    },
    /// Show one worker's spec, fingerprint and persona.
    Show {
        id: String,
        #[command(flatten)]
        sources: SourceArgs,
    },
    /// Check every worker recipe; exit 3 when any is quarantined.
    Validate {
        #[command(flatten)]
        sources: SourceArgs,
    },
    /// Validate a terminal output against a result contract; exit 3 when it
    /// does not conform.
    CheckResult {
        /// The contract kind, such as `verifier-report`.
        #[arg(value_parser = parse_kind)]
        kind: ResultContractKind,
        /// The file holding the worker's final text (`-` for stdin).
        file: PathBuf,
        /// The plan artifact path, for `architect-plan`.
        #[arg(long, value_name = "PATH")]
        path: Option<String>,
        /// The workspace citations and artifacts resolve against (default:
        /// the current directory).
        #[arg(long, value_name = "DIR")]
        cwd: Option<PathBuf>,
        /// Allow external research results.
        #[arg(long)]
        network: bool,
    },
}

pub fn run(out: &Output, command: &WorkersCommand) -> anyhow::Result<Exit> {
    match command {
        WorkersCommand::List { all, sources } => list(out, *all, sources),
        WorkersCommand::Show { id, sources } => show(out, id, sources),
        WorkersCommand::Validate { sources } => validate(out, sources),
        WorkersCommand::CheckResult {
            kind,
            file,
            path,
            cwd,
            network,
        } => check_result(out, *kind, file, path.as_deref(), cwd.as_deref(), *network),
    }
}

/// The worker recipes, and the remote agents a lead dispatches like them
/// (`[agents.external.*]`, the compiled graph's winners, as dispatch
/// binds them).
struct Catalog {
    workers: WorkerCatalog,
    remote: Vec<RemoteAgent>,
}

/// Whether a command reads the remote agents too (finding them loads
/// each mode's team: `validate` checks recipes only).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Remote {
    Read,
    Skip,
}

fn catalog(
    out: &Output,
    sources: &SourceArgs,
    diags: &mut Diagnostics,
    remote: Remote,
) -> anyhow::Result<Result<Catalog, Exit>> {
    let dirs = match super::resolve_dirs(out) {
        Ok(d) => d,
        Err(exit) => return Ok(Err(exit)),
    };
    let app = super::app_context(&dirs)?;
    let graph = app.compile(&sources.workspaces)?;
    let tools = ToolCatalog::from_graph(&graph);
    let workers = load_workers(&graph, &tools, diags)?;
    let remote = match remote {
        Remote::Read => app.remote_agents(&graph),
        Remote::Skip => Vec::new(),
    };
    Ok(Ok(Catalog { workers, remote }))
}

/// A remote agent as listed: its spec, and how it is reached.
fn listed_remote(agent: &RemoteAgent) -> Value {
    let mut v = listed(&agent.spec);
    if let Value::Object(m) = &mut v {
        m.insert(
            "remote".into(),
            serde_json::json!({"protocol": "acp", "command": agent.launch.command}),
        );
    }
    v
}

/// A spec as listed: everything but the persona body, plus the fingerprint.
fn listed(spec: &AgentSpec) -> Value {
    let mut v = serde_json::to_value(spec).unwrap_or(Value::Null);
    if let Value::Object(m) = &mut v {
        m.remove("body");
        m.insert(
            "fingerprint".into(),
            Value::String(agent_spec_fingerprint(spec).to_string()),
        );
    }
    v
}

fn budget_label(s: &AgentSpec) -> String {
    format!(
        "budget={}/{}/{}",
        s.budget.tool_calls,
        s.budget.read_reserve,
        if s.budget.synthesis {
            "synthesize"
        } else {
            "stop"
        }
    )
}

fn list(out: &Output, all: bool, sources: &SourceArgs) -> anyhow::Result<Exit> {
    let mut diags = Diagnostics::new();
    let cat = match catalog(out, sources, &mut diags, Remote::Read)? {
        Ok(c) => c,
        Err(exit) => return Ok(exit),
    };
    let specs: Vec<&AgentSpec> = cat
        .workers
        .specs
        .iter()
        .filter(|s| all || s.audience.is_user_visible())
        .collect();
    let json: Vec<Value> = specs
        .iter()
        .map(|s| listed(s))
        .chain(cat.remote.iter().map(listed_remote))
        .collect();
    out.result(&json, || {
        let line = |s: &AgentSpec, reached: String| {
            let class = format!(
                "{}/{}/{}/{}",
                s.audience, s.category, s.capability_class, s.latency_class
            );
            let skills = if s.skills.is_empty() {
                String::new()
            } else {
                format!(" skills={}", s.skills.join(","))
            };
            format!(
                "{:<20} {:<48} {}{} {}\n",
                s.id, class, s.description, skills, reached
            )
        };
        specs
            .iter()
            .map(|s| line(s, budget_label(s)))
            .chain(cat.remote.iter().map(|r| {
                line(
                    &r.spec,
                    format!("remote=acp:{}", r.launch.command.join(" ")),
                )
            }))
            .collect()
    });
    out.diagnostics(&diags);
    Ok(Exit::Ok)
}

fn show(out: &Output, id: &str, sources: &SourceArgs) -> anyhow::Result<Exit> {
    let mut diags = Diagnostics::new();
    let cat = match catalog(out, sources, &mut diags, Remote::Read)? {
        Ok(c) => c,
        Err(exit) => return Ok(exit),
    };
    // A recipe, else a remote agent of that name.
    let found = match cat.workers.get(id) {
        Some(spec) => Some((spec, listed(spec))),
        None => cat
            .remote
            .iter()
            .find(|r| r.spec.id == id)
            .map(|r| (&r.spec, listed_remote(r))),
    };
    let Some((spec, mut v)) = found else {
        let d = match cat.workers.quarantined.iter().find(|q| q.id == id) {
            Some(q) => q.diagnostics.clone(),
            None => Diagnostics::from(vec![Diagnostic::error(
                "worker/not-found",
                format!("no worker `{id}`"),
            )]),
        };
        out.diagnostics(&d);
        return Ok(if d.has_code("worker/not-found") {
            Exit::Failure
        } else {
            Exit::Invalid
        });
    };
    if let Value::Object(m) = &mut v {
        m.insert("body".into(), Value::String(spec.body.clone()));
    }
    out.result(&v, || {
        format!(
            "{} ({})\n{}\naudience: {}  category: {}  capability: {}  latency: {}\ntools: {}\nresult contract: {}\n{}\nfingerprint: {}\n\n{}\n",
            spec.id,
            spec.source.as_str(),
            spec.description,
            spec.audience,
            spec.category,
            spec.capability_class,
            spec.latency_class,
            spec.tool_requirements
                .required
                .iter()
                .map(|r| r.render())
                .chain(spec.tool_requirements.optional.iter().map(|o| format!("{o}?")))
                .collect::<Vec<_>>()
                .join(", "),
            spec.result_contract.kind,
            budget_label(spec),
            agent_spec_fingerprint(spec),
            spec.body
        )
    });
    Ok(Exit::Ok)
}

fn validate(out: &Output, sources: &SourceArgs) -> anyhow::Result<Exit> {
    let mut diags = Diagnostics::new();
    let cat = match catalog(out, sources, &mut diags, Remote::Skip)? {
        Ok(c) => c.workers,
        Err(exit) => return Ok(exit),
    };
    // Each quarantined recipe's problems, at their own severity; the
    // catalog also reported them as warnings (a listing still works), and
    // those copies are left out so each problem is counted once.
    let mut report = Diagnostics::new();
    for q in &cat.quarantined {
        let slot = evoflux_core::Slot::new(evoflux_core::SlotKind::Worker, q.id.as_str());
        report.extend(
            q.diagnostics
                .iter()
                .cloned()
                .map(|d| d.with_slot(slot.clone())),
        );
    }
    let key = |d: &Diagnostic| {
        (
            d.code.to_string(),
            d.message.clone(),
            d.locator.file.clone(),
            d.locator.field.clone(),
        )
    };
    let quarantined: std::collections::HashSet<_> = cat
        .quarantined
        .iter()
        .flat_map(|q| q.diagnostics.iter().map(key))
        .collect();
    report.extend(diags.into_iter().filter(|d| !quarantined.contains(&key(d))));
    let value = serde_json::json!({
        "valid": cat.quarantined.is_empty(),
        "workers": cat.specs.len(),
        "quarantined": cat.quarantined.iter().map(|q| q.id.clone()).collect::<Vec<_>>(),
        "ignored": cat.ignored,
    });
    out.result(&value, || {
        if cat.quarantined.is_empty() {
            format!("{} workers are valid\n", cat.specs.len())
        } else {
            format!(
                "{} workers are valid; quarantined: {}\n",
                cat.specs.len(),
                cat.quarantined
                    .iter()
                    .map(|q| q.id.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        }
    });
    out.diagnostics(&report);
    Ok(if cat.quarantined.is_empty() {
        Exit::Ok
    } else {
        Exit::Invalid
    })
}

fn check_result(
    out: &Output,
    kind: ResultContractKind,
    file: &std::path::Path,
    path: Option<&str>,
    cwd: Option<&std::path::Path>,
    network: bool,
) -> anyhow::Result<Exit> {
    let mut spec = serde_json::json!({ "kind": kind.as_str() });
    if let Some(p) = path {
        spec["path"] = Value::String(p.to_owned());
    }
    let contract = match parse_worker_result_contract(&spec) {
        Ok(c) => c,
        Err(msg) => {
            out.diagnostics(&Diagnostics::from(vec![Diagnostic::error(
                "contract/invalid",
                msg,
            )]));
            return Ok(Exit::Failure);
        }
    };
    let text = if file == std::path::Path::new("-") {
        std::io::read_to_string(std::io::stdin())?
    } else {
        std::fs::read_to_string(file)
            .map_err(|e| anyhow::anyhow!("cannot read `{}`: {e}", file.display()))?
    };
    let cwd = match cwd {
        Some(c) => c.to_path_buf(),
        None => std::env::current_dir()?,
    };
    let evidence = RunEvidence::default();
    let ctx = ValidationContext {
        cwd: &cwd,
        network_allowed: network,
        filesystem: &DiskFilesystem,
        evidence: &evidence,
    };
    let v = validate_result_contract(&contract, Some(&text), &ctx);
    out.result(&v, || {
        let mut s = format!(
            "conformance: {}\nquality: {}\n",
            match v.conformance {
                Conformance::Pass => "pass",
                Conformance::Fail => "fail",
            },
            v.quality.as_str()
        );
        if let Some(r) = &v.reason {
            s.push_str(&format!("reason: {r}\n"));
        }
        s
    });
    Ok(match v.conformance {
        Conformance::Pass => Exit::Ok,
        Conformance::Fail => Exit::Invalid,
    })
}
