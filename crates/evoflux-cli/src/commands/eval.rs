//! `evoflux eval`: thin over the harness's eval runner.

use std::path::PathBuf;

use evoflux_app::evals::{self, Change, EvalError, EvalReport, RunOptions, Trend};
use serde::Serialize;

use crate::output::{Exit, Output};

#[derive(Debug, clap::Args)]
pub struct EvalArgs {
    /// Evals to run (default: every `evals/<name>.yaml`): their names, or `activation/<skill>`.
    pub names: Vec<String>,
    /// Run every eval on this `provider:model` instead of its own.
    #[arg(long, value_name = "PROVIDER:MODEL")]
    pub model: Option<String>,
    /// Runs of each task eval; the table shows pass rates.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=100))]
    pub repeat: u32,
    /// Runs at once.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..=64))]
    pub jobs: u32,
    /// Where to write the JSON report (default: `<data>/eval-reports/eval-<unix ms>.json`).
    #[arg(long, value_name = "FILE")]
    pub report: Option<PathBuf>,
    /// Also run every bundled skill's activation eval (its trigger cases through the catalog's
    /// ranking; misses are reported as rates and do not fail the run).
    #[arg(long)]
    pub activation: bool,
    /// Show what got better or worse against an earlier report.
    #[arg(long, value_name = "REPORT")]
    pub compare: Option<PathBuf>,
}

#[derive(Serialize)]
struct Printed<'a> {
    #[serde(flatten)]
    report: &'a EvalReport,
    report_file: &'a std::path::Path,
    #[serde(skip_serializing_if = "Option::is_none")]
    compare: Option<&'a [Change]>,
}

pub fn run(out: &Output, args: &EvalArgs) -> anyhow::Result<Exit> {
    let rt = crate::frontend::runtime()?;
    rt.block_on(async {
        let dirs = match super::resolve_dirs(out) {
            Ok(d) => d,
            Err(exit) => return Ok(exit),
        };
        let app = super::app_context(&dirs)?;
        let graph = app.compile(&[])?;
        // Mistakes in eval files stop the run, each with its code: what
        // the graph found, and a `lead` or `worker` that names nothing.
        let problems = evals::problems(&app, &graph);
        if problems.has_errors() {
            out.diagnostics(&problems);
            return Ok(Exit::Invalid);
        }
        let earlier = match &args.compare {
            Some(path) => match evals::read_report(path) {
                Ok(r) => Some(r),
                Err(e) => return Ok(refused(out, &e)),
            },
            None => None,
        };
        let options = RunOptions {
            model: args.model.clone(),
            repeat: args.repeat as usize,
            jobs: args.jobs as usize,
            activation: args.activation,
        };
        let report = match evals::run(&app, &graph, &args.names, &options).await {
            Ok(r) => r,
            Err(e) => return Ok(refused(out, &e)),
        };
        let file = match &args.report {
            Some(f) => f.clone(),
            None => dirs.data_dir().join("eval-reports").join(format!(
                "eval-{}.json",
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.as_millis())
            )),
        };
        if let Some(parent) = file.parent() {
            std::fs::create_dir_all(parent)?;
        }
        evoflux_core::atomic::write_atomic(
            &file,
            (serde_json::to_string_pretty(&report)? + "\n").as_bytes(),
            Default::default(),
        )
        .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", file.display()))?;
        let changes = earlier.as_ref().map(|e| evals::compare(e, &report));
        out.result(
            &Printed {
                report: &report,
                report_file: &file,
                compare: changes.as_deref(),
            },
            || human(&report, &file, changes.as_deref()),
        );
        Ok(if report.all_passed() {
            Exit::Ok
        } else {
            Exit::Failure
        })
    })
}

fn refused(out: &Output, e: &EvalError) -> Exit {
    out.failure(&anyhow::anyhow!("{e} [{}]", e.code()));
    Exit::Invalid
}

fn percent(rate: f64) -> String {
    format!("{:.0}%", rate * 100.0)
}

fn human(report: &EvalReport, file: &std::path::Path, changes: Option<&[Change]>) -> String {
    let width = report
        .results
        .iter()
        .map(|r| r.name.chars().count())
        .max()
        .unwrap_or(4)
        .max(4);
    let mut s = format!(
        "{:<width$}  {:>5}  {:>6}  {:>5}  {:>11}  {:>8}\n",
        "eval", "runs", "passed", "rate", "model calls", "time"
    );
    for r in &report.results {
        let calls = match r.kind {
            evals::EvalKind::Task => format!("{:.1}", r.model_calls as f64 / r.runs.max(1) as f64),
            evals::EvalKind::Activation => "-".to_owned(),
        };
        s.push_str(&format!(
            "{:<width$}  {:>5}  {:>6}  {:>5}  {:>11}  {:>6}ms\n",
            r.name,
            r.runs,
            r.passed,
            percent(r.pass_rate()),
            calls,
            r.elapsed_ms
        ));
    }
    for r in &report.results {
        for f in &r.failures {
            s.push_str(&format!(
                "{} run {}: [{}] {}\n",
                r.name, f.run, f.code, f.message
            ));
        }
    }
    if let Some(changes) = changes {
        for c in changes {
            let rate = |r: Option<f64>| r.map_or_else(|| "-".to_owned(), percent);
            let what = match c.trend {
                Trend::Better => "better",
                Trend::Worse => "worse",
                Trend::Same => continue,
                Trend::New => "new",
                Trend::Gone => "gone",
            };
            s.push_str(&format!(
                "{what}: {} {} → {}\n",
                c.name,
                rate(c.before),
                rate(c.after)
            ));
        }
    }
    if report.results.is_empty() {
        s.push_str(
            "no evals here: add `.evoflux/evals/<name>.yaml`, or run `evoflux eval --activation`\n",
        );
    }
    s.push_str(&format!("report: {}\n", file.display()));
    s
}
