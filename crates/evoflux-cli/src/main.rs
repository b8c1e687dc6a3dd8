//! The `evoflux` binary: a thin shell over the library crates.
//!
//! Each subcommand parses its arguments, calls into a typed core and renders
//! the result for humans or, with `--json`, for machines. Exit codes are part
//! of the interface: 0 ok, 1 failure, 2 usage error, 3 validation found
//! errors, 4 a session waits for the user's answer.

mod cli;
mod commands;
mod output;

use std::process::ExitCode;

use clap::Parser;

use crate::cli::{Cli, Command, ConfigCommand, GraphCommand};
use crate::output::{Exit, Output};

fn main() -> ExitCode {
    // clap exits with 2 on usage errors and 0 for --help / --version.
    let cli = Cli::parse();
    let out = Output::new(cli.json);
    let result = match &cli.command {
        Command::Paths => commands::paths::run(&out),
        Command::Config { command } => match command {
            ConfigCommand::Show { sources } => commands::config::show(&out, sources),
            ConfigCommand::Check { sources } => commands::config::check(&out, sources),
        },
        Command::Info(args) => commands::info::run(&out, args),
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
        Command::Run(args) => commands::run::run(&out, args),
        Command::Chat(args) => commands::run::chat(&out, args),
        Command::Sessions { command } => commands::run::sessions(&out, command),
    };
    match result {
        Ok(exit) => exit.into(),
        Err(e) => {
            out.failure(&e);
            Exit::Failure.into()
        }
    }
}
