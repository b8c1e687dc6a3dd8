//! `evoflux-bench`: runs a harness binary against the fake model server on
//! each scenario and wire, and prints what it cost: wall time, time per
//! model call, bytes sent, the cache-hit ratio the provider would report,
//! peak memory and, with the skill resolver off, on or speculative, how
//! long the first main call waits, and what granting the lead one stdio
//! MCP server adds before it.
//!
//! Every run gets its own scratch HOME, admin dir and workspace (the
//! environment is cleared, so nothing reads or writes the real home) and
//! a fresh fake server, so no cache carries over from one run to the next.

mod mcp;
mod run;

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, Result};
use clap::{Parser, ValueEnum};
use evoflux_bench::Wire;

use run::{Harness, McpMode, ResolverMode, Scenario};

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum ScenarioArg {
    All,
    ThreeStep,
    ThirtyStep,
    SixtyStep,
    Resolver,
    /// `mcp-none` and `mcp-one`, and the MCP server alone.
    Mcp,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum WireArg {
    All,
    Chat,
    Responses,
    Anthropic,
}

/// Measures an agent harness against a fake, instant, prefix-caching model
/// server.
#[derive(Debug, Parser)]
#[command(name = "evoflux-bench", version)]
struct Args {
    /// The evoflux binary (default: `evoflux` next to this binary, else on
    /// PATH).
    #[arg(long)]
    evoflux: Option<PathBuf>,
    #[arg(long, value_enum, default_value = "all")]
    scenario: ScenarioArg,
    #[arg(long, value_enum, default_value = "all")]
    wire: WireArg,
    /// Runs per scenario and wire; figures are medians.
    #[arg(long, default_value_t = 5)]
    runs: usize,
    /// Print the results as JSON instead of Markdown tables.
    #[arg(long)]
    json: bool,
    /// How long the fake server takes to answer the skill resolver.
    #[arg(long, default_value_t = 300)]
    resolver_delay_ms: u64,
    /// How long the fake server takes to answer every other call; 0 is
    /// an instant model.
    #[arg(long, default_value_t = 0)]
    main_delay_ms: u64,
    /// Give up on one run after this long.
    #[arg(long, default_value_t = 300)]
    timeout_secs: u64,
    /// An npm prefix whose `bin/` is searched for codex, claude and
    /// opencode besides PATH.
    #[arg(long)]
    npm_prefix: Option<PathBuf>,
    /// Write every request body the fake server receives under this
    /// directory (one folder per harness, scenario and wire; the last
    /// run's bodies overwrite earlier ones).
    #[arg(long)]
    dump: Option<PathBuf>,
    /// The model evoflux asks for on the OpenAI wires: a name in the
    /// built-in price table (its cache discount is what evoflux's context
    /// cost model decides with).
    #[arg(long, default_value = "gpt-4o")]
    openai_model: String,
    /// The stdio MCP server `mcp-one` grants (default:
    /// `evoflux-mcp-testserver` next to the evoflux binary; without one,
    /// `mcp-one` is skipped with a note). It must list a tool `echo`.
    #[arg(long)]
    mcp_server: Option<PathBuf>,
}

fn default_evoflux() -> PathBuf {
    std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent().map(|d| d.join("evoflux")))
        .filter(|p| p.is_file())
        .unwrap_or_else(|| PathBuf::from("evoflux"))
}

/// `mcp-none` and `mcp-one` on every wire and the server alone, one run of
/// each per round: on a shared machine, load that comes and goes then
/// falls on both scenarios and the server alike, and the differences stay
/// meaningful. Pushes the two scenarios' results onto `results`.
async fn measure_mcp(
    harness: &Harness,
    wires: &[Wire],
    server: Option<&std::path::Path>,
    settings: &run::Settings,
    results: &mut Vec<run::ScenarioResult>,
) -> Result<mcp::McpStartup> {
    let once = run::Settings {
        runs: 1,
        ..settings.clone()
    };
    let first = results.len();
    let mut alone = Vec::new();
    let mut notes = Vec::new();
    if server.is_none() {
        notes.push(format!(
            "no {} next to the evoflux binary (--mcp-server PATH): the server alone not measured",
            mcp::TEST_SERVER
        ));
    }
    for round in 0..settings.runs {
        let mut slot = first;
        for &wire in wires {
            for mode in [McpMode::None, McpMode::One] {
                let r = run::measure(harness, Scenario::Mcp(mode), wire, &once).await?;
                if round == 0 {
                    results.push(r);
                } else {
                    results[slot].absorb(r);
                }
                slot += 1;
            }
        }
        if let Some(server) = server {
            // After the round's `mcp-one` runs, so never a cold start.
            match mcp::handshake(server, settings.timeout).await {
                Ok(d) => alone.push(d.as_secs_f64() * 1000.0),
                Err(e) => notes.push(format!(
                    "the handshake with {} failed: {e:#}",
                    server.display()
                )),
            }
        }
    }
    notes.dedup();
    Ok(mcp::McpStartup::of(&results[first..], server, alone, notes))
}

#[tokio::main]
async fn main() -> Result<()> {
    let args = Args::parse();
    let evoflux = args.evoflux.clone().unwrap_or_else(default_evoflux);
    let evoflux = if evoflux.components().count() > 1 {
        evoflux
            .canonicalize()
            .with_context(|| format!("no evoflux binary at {}", evoflux.display()))?
    } else {
        evoflux
    };
    let wires: Vec<Wire> = match args.wire {
        WireArg::All => Wire::ALL.to_vec(),
        WireArg::Chat => vec![Wire::Chat],
        WireArg::Responses => vec![Wire::Responses],
        WireArg::Anthropic => vec![Wire::Anthropic],
    };
    let mut scenarios = Vec::new();
    if matches!(args.scenario, ScenarioArg::All | ScenarioArg::ThreeStep) {
        scenarios.push(Scenario::ThreeStep);
    }
    if matches!(args.scenario, ScenarioArg::All | ScenarioArg::ThirtyStep) {
        scenarios.push(Scenario::ThirtyStep);
    }
    if matches!(args.scenario, ScenarioArg::All | ScenarioArg::SixtyStep) {
        scenarios.push(Scenario::SixtyStep);
    }
    if matches!(args.scenario, ScenarioArg::All | ScenarioArg::Resolver) {
        for mode in [
            ResolverMode::Off,
            ResolverMode::On,
            ResolverMode::Speculative,
        ] {
            scenarios.push(Scenario::Resolver(mode));
        }
    }
    if matches!(args.scenario, ScenarioArg::All | ScenarioArg::Mcp) {
        scenarios.push(Scenario::Mcp(McpMode::None));
        scenarios.push(Scenario::Mcp(McpMode::One));
    }
    // The server's path goes into mcp.json, read from another directory.
    let mcp_server = match &args.mcp_server {
        Some(p) => Some(
            p.canonicalize()
                .with_context(|| format!("no MCP server at {}", p.display()))?,
        ),
        None => mcp::server_next_to(&evoflux),
    };
    let settings = run::Settings {
        runs: args.runs.max(1),
        resolver_delay: Duration::from_millis(args.resolver_delay_ms),
        main_delay: Duration::from_millis(args.main_delay_ms),
        timeout: Duration::from_secs(args.timeout_secs),
        dump_dir: args.dump.clone(),
        mcp_server: mcp_server.clone(),
        openai_model: args.openai_model.clone(),
    };
    let harness = Harness::Evoflux(evoflux.clone());
    let mut results = Vec::new();
    for scenario in scenarios.iter().filter(|s| !matches!(s, Scenario::Mcp(_))) {
        for &wire in &wires {
            if !args.json {
                eprintln!("{} {} on {wire} ...", harness.name(), scenario.name());
            }
            results.push(run::measure(&harness, *scenario, wire, &settings).await?);
        }
    }
    let mcp_startup = if scenarios.iter().any(|s| matches!(s, Scenario::Mcp(_))) {
        if !args.json {
            eprintln!(
                "{} mcp-none and mcp-one, alternating, and {} alone ...",
                harness.name(),
                mcp::TEST_SERVER
            );
        }
        Some(
            measure_mcp(
                &harness,
                &wires,
                mcp_server.as_deref(),
                &settings,
                &mut results,
            )
            .await?,
        )
    } else {
        None
    };
    let mut others = run::other_harnesses(args.npm_prefix.as_deref());
    for other in &mut others {
        let Some(path) = &other.path else { continue };
        let harness = match other.name.as_str() {
            "codex" => Harness::Codex(PathBuf::from(path)),
            "claude" => Harness::Claude(PathBuf::from(path)),
            "opencode" => Harness::Opencode(PathBuf::from(path)),
            _ => continue,
        };
        // The resolver and MCP scenarios measure evoflux's own pre-model
        // stages.
        for scenario in scenarios.iter().filter(|s| !s.evoflux_only()) {
            for &wire in wires.iter().filter(|&&w| harness.speaks(w)) {
                if !args.json {
                    eprintln!("{} {} on {wire} ...", harness.name(), scenario.name());
                }
                results.push(run::measure(&harness, *scenario, wire, &settings).await?);
                other.measured = true;
            }
        }
    }
    let report = run::Report {
        harness: harness.name().to_owned(),
        binary: evoflux.display().to_string(),
        runs: settings.runs,
        resolver_delay_ms: args.resolver_delay_ms,
        main_delay_ms: args.main_delay_ms,
        results,
        mcp_startup,
        other_harnesses: others,
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{}", report.markdown());
    }
    Ok(())
}
