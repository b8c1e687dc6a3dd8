//! `evoflux model list`: the local GGUF models in the data directory.

use std::fmt::Write as _;

use clap::Subcommand;
use evoflux_model::MODEL_SETUP_HINT;
use evoflux_model::local_models::installed_models;
use serde::Serialize;

use crate::output::{Exit, Output};

#[derive(Debug, Subcommand)]
pub enum ModelCommand {
    /// List the local GGUF models in `<data>/models` (use them as `local:<name>`).
    List,
}

#[derive(Serialize)]
struct Listed {
    models_dir: std::path::PathBuf,
    models: Vec<Row>,
}

#[derive(Serialize)]
struct Row {
    name: String,
    model: String,
    path: std::path::PathBuf,
    size_bytes: u64,
}

pub fn run(out: &Output, command: &ModelCommand) -> anyhow::Result<Exit> {
    match command {
        ModelCommand::List => list(out),
    }
}

fn list(out: &Output) -> anyhow::Result<Exit> {
    let dirs = match super::resolve_dirs(out) {
        Ok(d) => d,
        Err(exit) => return Ok(exit),
    };
    let models_dir = dirs.data_dir().join("models");
    let listed = Listed {
        models: installed_models(&models_dir)
            .into_iter()
            .map(|m| Row {
                model: format!("local:{}", m.name),
                name: m.name,
                path: m.path,
                size_bytes: m.size_bytes,
            })
            .collect(),
        models_dir,
    };
    out.result(&listed, || {
        let mut text = String::new();
        if listed.models.is_empty() {
            let _ = writeln!(
                text,
                "no local models in {}\n{MODEL_SETUP_HINT}",
                listed.models_dir.display()
            );
        }
        for m in &listed.models {
            let _ = writeln!(
                text,
                "{:<40} {:>8.1} MB  {}",
                m.model,
                m.size_bytes as f64 / 1_048_576.0,
                m.path.display()
            );
        }
        text
    });
    Ok(Exit::Ok)
}
