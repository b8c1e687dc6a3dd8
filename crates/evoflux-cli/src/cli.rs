//! Command-line grammar. Later subcommands (`run`, `chat`, `skills`,
//! `plugin`, …) plug into [`Command`].

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};
use evoflux_core::AppMode;

/// Every exit code of `evoflux run`, for its `--help`.
const RUN_EXIT_CODES: &str = "Exit codes:
  0    the turn completed
  1    the turn failed or stopped at a limit, a worker's result missed its contract, or evoflux could not do its job (I/O, the model's server)
  2    the command line is wrong (an unknown flag, a missing value)
  3    an input to fix: the sources, config.toml, an agent, the output schema, a workspace for a Work session
  4    the session waits for an answer (give it with --session ID \"answer\")
  5    another process runs a turn on the session
  130  stopped by Ctrl-C or SIGTERM";

#[derive(Debug, Parser)]
#[command(
    name = "evoflux",
    version,
    about = "Run LLM agents on real work: teams, skills, plugins, workers and fleets.",
    propagate_version = true
)]
pub struct Cli {
    /// Print machine-readable JSON instead of text.
    #[arg(long, global = true)]
    pub json: bool,

    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Show the config, data, cache and admin directories and where each came from.
    Paths,
    /// Inspect and check config.toml.
    Config {
        #[command(subcommand)]
        command: ConfigCommand,
    },
    /// Trust a repository: lists what it would run (command tools, MCP servers, channels,
    /// schedules, check commands, evals, providers) and asks; what changes later waits for
    /// trust again. Untrusted repositories are only read.
    Trust(crate::commands::trust::TrustArgs),
    /// Show what evoflux would run: every active capability with its source and owner,
    /// tool handling, routes, shadowed and disabled sources, diagnostics. Exit 3 on errors.
    Info(InfoArgs),
    /// Check this setup and say what to fix: data dir, sources, keys (by name), the model
    /// (a minimal request), MCP servers, skills, agents, the sandbox, other tools' files.
    /// Exit 3 when something needs fixing.
    Doctor(crate::commands::doctor::DoctorArgs),
    /// Agent Skills: list, show, validate, catalog, preferences.
    Skills {
        #[command(subcommand)]
        command: crate::commands::skills::SkillsCommand,
    },
    /// Local GGUF models for the `local` provider.
    Model {
        #[command(subcommand)]
        command: crate::commands::model::ModelCommand,
    },
    /// Compile the source graph to a file, check a compiled graph, or benchmark the compiler.
    Graph {
        #[command(subcommand)]
        command: GraphCommand,
    },
    /// Team agents: list, show, validate, compile effective configs, bootstrap seeds.
    Agents {
        #[command(subcommand)]
        command: crate::commands::agents::AgentsCommand,
    },
    /// Worker recipes: list, show, validate; check a terminal result against a contract.
    Workers {
        #[command(subcommand)]
        command: crate::commands::workers::WorkersCommand,
    },
    /// Fleet contracts: list, show, validate, compile a plan, run it, and see its runs.
    Fleet {
        #[command(subcommand)]
        command: crate::commands::fleet::FleetCommand,
    },
    /// Run one task non-interactively and exit: 0 done, 1 failed (or a worker result missed its contract), 4 waiting for an answer.
    #[command(after_help = RUN_EXIT_CODES)]
    Run(crate::commands::run::RunArgs),
    /// Chat with the lead interactively: streaming text, tool activity, questions, approvals.
    Chat(crate::commands::chat::ChatArgs),
    /// Serve the web UI at / and the HTTP API (sessions over SSE, info, agents, skills,
    /// plugins, MCP, /openapi.json) on a loopback port; every API route but health needs the
    /// bearer token.
    Serve(crate::commands::serve::ServeArgs),
    /// Be an Agent Client Protocol agent on stdin and stdout, for editors (Zed's
    /// `agent_servers`, JetBrains IDEs, Neovim plugins): Coding sessions on the editor's
    /// project, streamed tool calls, permission requests, cancel, and loading earlier sessions.
    Acp(crate::commands::acp::AcpArgs),
    /// Schedules: list them with their next and last run, show one, run one now, its history.
    /// `evoflux serve` fires them.
    Schedule {
        #[command(subcommand)]
        command: crate::commands::schedule::ScheduleCommand,
    },
    /// The session database: migrate it; export it to a file and import it into another
    /// (move a data directory's SQLite sessions to PostgreSQL and back).
    Store {
        #[command(subcommand)]
        command: crate::commands::store::StoreCommand,
    },
    /// List, show, resume and delete sessions; export one as a script and replay it.
    Sessions {
        #[command(subcommand)]
        command: crate::commands::sessions::SessionsCommand,
    },
    /// Navigate code by one exact symbol: definition, references, callers, callees,
    /// implementations, impact, neighborhood, or a file's outline — the `code_context` tool,
    /// for people and scripts. `code-context index` builds or refreshes the index.
    CodeContext(crate::commands::code_context::CodeContextArgs),
    /// Run evals: `evals/<name>.yaml` tasks as real sessions in scratch workspaces, and the
    /// bundled skills' activation evals; a pass-rate table and a JSON report (exit 1 when a run failed).
    Eval(crate::commands::eval::EvalArgs),
    /// MCP servers: list them with their state, list a server's tools, call a tool,
    /// add or remove one in mcp.json, log in to one over HTTP.
    Mcp {
        #[command(subcommand)]
        command: crate::commands::mcp::McpCommand,
    },
    /// Agent Plugins: create, inspect, pack, install, link, update, list, show,
    /// enable, disable, uninstall, credentials.
    Plugin {
        #[command(subcommand)]
        command: crate::commands::plugin::PluginCommand,
    },
}

#[derive(Debug, Subcommand)]
pub enum ConfigCommand {
    /// Print the effective configuration and where each part came from.
    Show {
        #[command(flatten)]
        sources: SourceArgs,
    },
    /// Check the selected config.toml and report every problem; exit 3 when there are errors.
    Check {
        #[command(flatten)]
        sources: SourceArgs,
    },
}

/// Which roots to compile.
#[derive(Debug, Clone, Args)]
pub struct SourceArgs {
    /// An authorized repository or workspace directory (repeatable; default: the
    /// current directory). Project roots are read from it up to its git root.
    #[arg(long = "workspace", value_name = "DIR")]
    pub workspaces: Vec<PathBuf>,
}

#[derive(Debug, Args)]
pub struct InfoArgs {
    /// Project for one mode (tools and agents that exist in it).
    #[arg(long, value_parser = parse_mode)]
    pub mode: Option<AppMode>,
    #[command(flatten)]
    pub sources: SourceArgs,
}

#[derive(Debug, Subcommand)]
pub enum GraphCommand {
    /// Compile and write the graph as JSON; exit 3 (and write nothing) on errors.
    Compile {
        #[arg(long, value_name = "FILE")]
        out: PathBuf,
        #[command(flatten)]
        sources: SourceArgs,
    },
    /// Load a compiled graph and validate it; exit 3 when it is rejected.
    Check {
        /// The compiled graph JSON.
        file: PathBuf,
    },
    /// Compile a synthetic tree of candidates across all layers repeatedly and
    /// report the median compile time.
    Bench {
        /// Candidates in the synthetic tree (files across admin, user and project).
        #[arg(long, default_value_t = 5000)]
        candidates: usize,
        /// Timed compilations.
        #[arg(long, default_value_t = 11)]
        runs: usize,
    },
}

pub(crate) fn parse_mode(s: &str) -> Result<AppMode, String> {
    s.parse()
        .map_err(|e: evoflux_core::mode::ParseModeError| e.to_string())
}
