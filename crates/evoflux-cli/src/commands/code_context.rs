//! `evoflux code-context`: the `code_context` tool for people and scripts,
//! thin over evoflux-code. The request goes through the same checks as a
//! model's call; the index is the one sessions use (`<cache>/code-index/`).

use std::io::IsTerminal;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use evoflux_code::{CodeContext, CodeOperation, RefreshReport};
use serde::Serialize;
use serde_json::{Map, Value};

use crate::output::{Exit, Output};

#[derive(Debug, clap::Args)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct CodeContextArgs {
    /// The exact symbol (`load_config`, `Config::new`, `store.Open`); for `--op outline`, the file.
    pub symbol: Option<String>,
    /// The operation.
    #[arg(long = "op", value_name = "OP", required = true, value_parser = parse_op)]
    pub op: Option<CodeOperation>,
    /// A file or folder the symbol must be in (for `outline`: the file).
    #[arg(long, value_name = "PATH")]
    pub path: Option<String>,
    /// Only this repository (its folder name, or `.` for the first).
    #[arg(long, value_name = "NAME")]
    pub repository: Option<String>,
    /// For `impact`: how many calls away to follow (1 to 4, default 2).
    #[arg(long)]
    pub depth: Option<u8>,
    /// Most entries per section (1 to 50, default 20).
    #[arg(long)]
    pub limit: Option<u8>,
    /// A repository to navigate (repeatable; default: the current directory).
    #[arg(long = "workspace", value_name = "DIR", global = true)]
    pub workspaces: Vec<PathBuf>,
    #[command(subcommand)]
    pub command: Option<CodeContextCommand>,
}

#[derive(Debug, clap::Subcommand)]
pub enum CodeContextCommand {
    /// Build the index, or bring it up to date (only changed files are parsed again).
    Index,
}

fn parse_op(s: &str) -> Result<CodeOperation, String> {
    CodeOperation::parse(s).ok_or_else(|| {
        format!(
            "`{s}` is not an operation: use one of {}",
            CodeOperation::ALL.map(CodeOperation::as_str).join(", ")
        )
    })
}

pub fn run(out: &Output, args: &CodeContextArgs) -> anyhow::Result<Exit> {
    let dirs = match super::resolve_dirs(out) {
        Ok(d) => d,
        Err(exit) => return Ok(exit),
    };
    let mut roots = Vec::new();
    let given = if args.workspaces.is_empty() {
        vec![std::env::current_dir()?]
    } else {
        args.workspaces.clone()
    };
    for dir in given {
        match dir.canonicalize() {
            Ok(real) if real.is_dir() => roots.push(real),
            Ok(_) | Err(_) => {
                out.failure(&anyhow::anyhow!(
                    "`{}` is not a directory: give an existing repository with --workspace",
                    dir.display()
                ));
                return Ok(Exit::Invalid);
            }
        }
    }
    let mut cc = CodeContext::new(&roots, Some(dirs.cache_dir()));
    match (&args.command, args.op) {
        (Some(CodeContextCommand::Index), _) => Ok(index(out, &mut cc, dirs.cache_dir(), &roots)),
        (None, Some(op)) => Ok(answer(out, &mut cc, op, args)),
        (None, None) => {
            out.failure(&anyhow::anyhow!("give --op, or use `code-context index`"));
            Ok(Exit::Invalid)
        }
    }
}

fn answer(out: &Output, cc: &mut CodeContext, op: CodeOperation, args: &CodeContextArgs) -> Exit {
    let mut req = Map::new();
    req.insert("operation".into(), Value::String(op.as_str().into()));
    // For an outline the positional argument is the file.
    let (symbol, path) = match (op.takes_file(), &args.path) {
        (true, None) => (None, args.symbol.clone()),
        _ => (args.symbol.clone(), args.path.clone()),
    };
    for (key, value) in [
        ("symbol", symbol),
        ("path", path),
        ("repository", args.repository.clone()),
    ] {
        if let Some(v) = value {
            req.insert(key.into(), Value::String(v));
        }
    }
    for (key, value) in [("depth", args.depth), ("limit", args.limit)] {
        if let Some(v) = value {
            req.insert(key.into(), Value::from(v));
        }
    }
    match cc.answer(&Value::Object(req)) {
        Ok(a) => {
            out.result(&a, || a.render());
            Exit::Ok
        }
        Err(e) => {
            out.failure(&anyhow::anyhow!("{e} [{}]", e.code()));
            Exit::Invalid
        }
    }
}

#[derive(Serialize)]
struct Indexed {
    repository: String,
    root: String,
    index_file: String,
    files: usize,
    parsed: usize,
    reused: usize,
    removed: usize,
}

#[derive(Serialize)]
struct IndexReport {
    repositories: Vec<Indexed>,
    definitions: usize,
    milliseconds: u128,
}

fn index(out: &Output, cc: &mut CodeContext, cache: &std::path::Path, roots: &[PathBuf]) -> Exit {
    let bar = (!out.json && std::io::stderr().is_terminal()).then(|| {
        let bar = indicatif::ProgressBar::new(0);
        bar.set_style(
            indicatif::ProgressStyle::with_template("{prefix} [{bar:30}] {pos}/{len} files")
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar())
                .progress_chars("=> "),
        );
        bar.enable_steady_tick(Duration::from_millis(100));
        bar
    });
    let started = Instant::now();
    let reports: Vec<(String, RefreshReport)> = cc.refresh(&|repo, done, total| {
        if let Some(bar) = &bar {
            bar.set_prefix(repo.to_owned());
            bar.set_length(total as u64);
            bar.set_position(done as u64);
        }
    });
    let elapsed = started.elapsed().as_millis();
    if let Some(bar) = &bar {
        bar.finish_and_clear();
    }
    let summaries = cc.repositories();
    let rows: Vec<Indexed> = reports
        .iter()
        .zip(summaries)
        .zip(roots)
        .map(|(((name, r), s), root)| Indexed {
            repository: name.clone(),
            root: s.root,
            index_file: evoflux_code::index_file(cache, root).display().to_string(),
            files: s.files,
            parsed: r.parsed.len(),
            reused: r.reused,
            removed: r.removed.len(),
        })
        .collect();
    let report = IndexReport {
        repositories: rows,
        definitions: cc.definition_count(),
        milliseconds: elapsed,
    };
    out.result(&report, || {
        let mut s = String::new();
        for r in &report.repositories {
            s.push_str(&format!(
                "{}: {} files indexed ({} parsed, {} unchanged, {} removed)\n  index: {}\n",
                r.repository, r.files, r.parsed, r.reused, r.removed, r.index_file
            ));
        }
        s.push_str(&format!(
            "{} definitions in {} ms\n",
            report.definitions, report.milliseconds
        ));
        s
    });
    Exit::Ok
}
