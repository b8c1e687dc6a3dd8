//! Command-line grammar. Later subcommands (`run`, `chat`, `info`, `skills`,
//! `plugin`, …) plug into [`Command`].

use clap::{Parser, Subcommand};

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
}

#[derive(Debug, Subcommand)]
pub enum ConfigCommand {
    /// Print the effective configuration and where each part came from.
    Show,
    /// Check config.toml and report every problem; exit 3 when there are errors.
    Check,
}
