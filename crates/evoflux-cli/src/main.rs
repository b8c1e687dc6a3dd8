//! The `evoflux` binary: a thin shell over the library crates.
//!
//! Each subcommand parses its arguments, calls into a typed core and renders
//! the result for humans or, with `--json`, for machines. Exit codes are part
//! of the interface: 0 ok, 1 failure, 2 usage error, 3 validation found
//! errors, 4 a session waits for the user's answer.

mod cli;
mod commands;
mod frontend;
mod output;

use std::process::ExitCode;

use clap::Parser;
use tracing_subscriber::EnvFilter;

use crate::cli::{Cli, Command, ConfigCommand, GraphCommand};
use crate::output::{Exit, Output};

/// The log filter variables, first set wins.
const LOG_VARS: [&str; 2] = ["EVOFLUX_LOG", "RUST_LOG"];
/// What is shown when neither variable is set.
const DEFAULT_LOG: &str = "warn";

/// Installs the process's one `tracing` subscriber: `tracing::warn!` and
/// friends from every library crate go to stderr as plain text (no ANSI
/// colours, so a pipe or a log file gets clean lines), filtered by
/// `EVOFLUX_LOG`, else `RUST_LOG` (`tracing-subscriber` directives such as
/// `info` or `evoflux_mcp=debug`), else at `warn`. Results stay on stdout.
fn init_logging() {
    let asked = LOG_VARS
        .iter()
        .find_map(|v| std::env::var(v).ok().filter(|s| !s.trim().is_empty()));
    let filter = match asked {
        Some(directives) => match EnvFilter::try_new(&directives) {
            Ok(f) => f,
            Err(e) => {
                eprintln!(
                    "warning: ignoring the log filter `{directives}` ({e}); logging at {DEFAULT_LOG}"
                );
                EnvFilter::new(DEFAULT_LOG)
            }
        },
        None => EnvFilter::new(DEFAULT_LOG),
    };
    // Only fails when a subscriber is already installed, which nothing
    // else in this binary does.
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        // stderr, or the full-screen chat while it owns the terminal.
        .with_writer(frontend::logs::LogWriter::default)
        .with_ansi(false)
        .try_init();
}

fn main() -> ExitCode {
    // clap exits with 2 on usage errors and 0 for --help / --version.
    let cli = Cli::parse();
    init_logging();
    let out = Output::new(cli.json);
    let result = match &cli.command {
        Command::Paths => commands::paths::run(&out),
        Command::Config { command } => match command {
            ConfigCommand::Show { sources } => commands::config::show(&out, sources),
            ConfigCommand::Check { sources } => commands::config::check(&out, sources),
        },
        Command::Info(args) => commands::info::run(&out, args),
        Command::Doctor(args) => commands::doctor::run(&out, args),
        Command::Trust(args) => commands::trust::run(&out, args),
        Command::Model { command } => commands::model::run(&out, command),
        Command::Skills { command } => commands::skills::run(&out, command),
        Command::Graph { command } => match command {
            GraphCommand::Compile { out: file, sources } => {
                commands::graph::compile(&out, file, sources)
            }
            GraphCommand::Check { file } => commands::graph::check(&out, file),
            GraphCommand::Bench { candidates, runs } => {
                commands::graph::bench(&out, *candidates, *runs)
            }
        },
        Command::Plugin { command } => commands::plugin::run(&out, command),
        Command::Mcp { command } => commands::mcp::run(&out, command),
        Command::Agents { command } => commands::agents::run(&out, command),
        Command::Workers { command } => commands::workers::run(&out, command),
        Command::Fleet { command } => commands::fleet::run(&out, command),
        Command::Run(args) => commands::run::run(&out, args),
        Command::Chat(args) => commands::chat::chat(&out, args),
        Command::Sessions { command } => commands::sessions::sessions(&out, command),
        Command::Schedule { command } => commands::schedule::run(&out, command),
        Command::Store { command } => commands::store::run(&out, command),
        Command::Eval(args) => commands::eval::run(&out, args),
        Command::CodeContext(args) => commands::code_context::run(&out, args),
        Command::Serve(args) => commands::serve::run(&out, args),
        Command::Acp(args) => commands::acp::run(&out, args),
    };
    match result {
        Ok(exit) => exit.into(),
        Err(e) => {
            out.failure(&e);
            Exit::Failure.into()
        }
    }
}
