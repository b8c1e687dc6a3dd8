//! `evoflux doctor`: the harness's checks of this setup, rendered. Exit 0
//! when nothing needs fixing (warnings included), 3 when something does.

use std::fmt::Write as _;
use std::time::Duration;

use anyhow::Context;
use clap::Args;
use evoflux_app::doctor::{DoctorOptions, DoctorReport, Status, doctor};

use crate::cli::SourceArgs;
use crate::output::{Exit, Output};

#[derive(Debug, Args)]
pub struct DoctorArgs {
    /// Check this `provider:model` instead of the configured default.
    #[arg(long)]
    pub model: Option<String>,
    /// Seconds MCP servers may take to start.
    #[arg(long, default_value_t = 30)]
    pub mcp_wait: u64,
    /// Seconds the minimal model request may take.
    #[arg(long, default_value_t = 60)]
    pub model_timeout: u64,
    #[command(flatten)]
    pub sources: SourceArgs,
}

pub fn run(out: &Output, args: &DoctorArgs) -> anyhow::Result<Exit> {
    let dirs = match super::resolve_dirs(out) {
        Ok(d) => d,
        Err(exit) => return Ok(exit),
    };
    let app = super::app_context(&dirs)?;
    let options = DoctorOptions {
        workspaces: args.sources.workspaces.clone(),
        model: args.model.clone(),
        env: std::env::vars_os().collect(),
        mcp_wait: Duration::from_secs(args.mcp_wait),
        model_timeout: Duration::from_secs(args.model_timeout),
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let report = runtime.block_on(doctor(&app, &options));
    out.result(&report, || render(&report));
    Ok(if report.healthy {
        Exit::Ok
    } else {
        Exit::Invalid
    })
}

fn render(report: &DoctorReport) -> String {
    let mut s = String::new();
    for c in &report.checks {
        let mark = match c.status {
            Status::Ok => "ok  ",
            Status::Skipped => "skip",
            Status::Warning => "warn",
            Status::Problem => "FIX ",
        };
        let _ = writeln!(s, "{mark} {:<16} {}", c.check.as_str(), c.summary);
        for d in &c.details {
            let _ = writeln!(s, "       {d}");
        }
        for f in &c.findings {
            let _ = writeln!(
                s,
                "       {} [{}] {}",
                f.severity.as_str(),
                f.code,
                f.message
            );
            if let Some(file) = &f.locator.file {
                let _ = writeln!(s, "         at {}", file.display());
            }
        }
    }
    let problems = report
        .checks
        .iter()
        .filter(|c| c.status == Status::Problem)
        .count();
    if problems == 0 {
        s.push_str("Nothing to fix.\n");
    } else {
        let _ = writeln!(
            s,
            "{problems} check{} need{} fixing (FIX above).",
            if problems == 1 { "" } else { "s" },
            if problems == 1 { "s" } else { "" }
        );
    }
    s
}
