//! `evoflux graph compile|check|bench`.

use std::path::Path;
use std::time::Instant;

use evoflux_core::Diagnostics;
use evoflux_core::atomic::{AtomicOptions, write_atomic};
use evoflux_graph::{CompiledGraph, RootOptions, compile_standard};
use serde::Serialize;

use crate::cli::SourceArgs;
use crate::output::{Exit, Output};

pub fn compile(out: &Output, file: &Path, sources: &SourceArgs) -> anyhow::Result<Exit> {
    let dirs = match super::resolve_dirs(out) {
        Ok(d) => d,
        Err(exit) => return Ok(exit),
    };
    let graph = super::compile_graph(&dirs, sources)?;
    out.diagnostics(&graph.diagnostics);
    if graph.has_errors() {
        return Ok(Exit::Invalid);
    }
    write_atomic(file, graph.to_json()?.as_bytes(), AtomicOptions::default())?;
    #[derive(Serialize)]
    struct Written<'a> {
        file: &'a Path,
        hash: &'a str,
        nodes: usize,
    }
    out.result(
        &Written {
            file,
            hash: graph.hash.as_str(),
            nodes: graph.nodes.len(),
        },
        || format!("wrote {} (graph {})\n", file.display(), graph.hash),
    );
    Ok(Exit::Ok)
}

pub fn check(out: &Output, file: &Path) -> anyhow::Result<Exit> {
    let text = std::fs::read_to_string(file)
        .map_err(|e| anyhow::anyhow!("cannot read {}: {e}", file.display()))?;
    match CompiledGraph::load(&text, &super::registries()) {
        Ok(graph) => {
            out.result(
                &serde_json::json!({"ok": true, "hash": graph.hash, "nodes": graph.nodes.len()}),
                || format!("ok: {} (graph {})\n", file.display(), graph.hash),
            );
            Ok(Exit::Ok)
        }
        Err(e) => {
            let diags: Diagnostics = e
                .diagnostics()
                .into_iter()
                .map(|d| d.with_file(file))
                .collect();
            out.diagnostics(&diags);
            Ok(Exit::Invalid)
        }
    }
}

#[derive(Debug, Serialize)]
struct BenchReport {
    candidates: usize,
    runs: usize,
    nodes: usize,
    shadowed: usize,
    median_ms: f64,
    min_ms: f64,
    max_ms: f64,
}

/// Writes a synthetic tree: tools, agents, skills and channels spread over
/// the admin, user and project roots, a third of them shadowing another.
fn synthetic_tree(base: &Path, candidates: usize) -> anyhow::Result<RootOptions> {
    let admin = base.join("admin");
    let user = base.join("user");
    let repo = base.join("repo");
    std::fs::create_dir_all(repo.join(".git"))?;
    let roots = [&admin, &user, &repo.join(".evoflux")];
    let tool = "description = \"Synthetic tool\"\nargv = [\"echo\", \"{{text}}\"]\n\
                [input_schema]\ntype = \"object\"\n[input_schema.properties.text]\ntype = \"string\"\n";
    for i in 0..candidates {
        // Triples of one kind: the admin and user files share a name (the
        // user one shadows), the project file has its own.
        let (group, layer) = (i / 3, i % 3);
        let root = roots[layer];
        let n = if layer == 2 {
            format!("p{group}")
        } else {
            group.to_string()
        };
        let (rel, text) = match group % 4 {
            0 => (format!("tools/t{n}.toml"), tool.to_owned()),
            1 => (
                format!("agents/a{n}.md"),
                format!("---\nname: a{n}\n---\nAgent {n}.\n"),
            ),
            2 => (
                format!("skills/s{n}/SKILL.md"),
                format!("---\nname: s{n}\ndescription: Skill {n}\n---\nDo {n}.\n"),
            ),
            _ => (
                format!("channels/c{n}.toml"),
                format!(
                    "[[route]]\nmethod = \"POST\"\npath = \"/hooks/c{n}\"\nagent = \"a\"\nprompt = \"p\"\n"
                ),
            ),
        };
        let path = root.join(rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(path, text)?;
    }
    Ok(RootOptions {
        admin_dir: Some(admin),
        user_config_dir: Some(user),
        home: None,
        trusted: vec![repo.clone()],
        workspaces: vec![repo],
        plugins: Vec::new(),
        foreign_mcp: Vec::new(),
    })
}

pub fn bench(out: &Output, candidates: usize, runs: usize) -> anyhow::Result<Exit> {
    let runs = runs.max(1);
    let dir = tempfile::tempdir()?;
    let opts = synthetic_tree(dir.path(), candidates)?;
    // One warm-up compile fills the page cache like a second `info` would.
    let graph = compile_standard(&opts)?;
    let mut times = Vec::with_capacity(runs);
    for _ in 0..runs {
        let started = Instant::now();
        let g = compile_standard(&opts)?;
        times.push(started.elapsed().as_secs_f64() * 1000.0);
        std::hint::black_box(g);
    }
    times.sort_by(f64::total_cmp);
    let report = BenchReport {
        candidates,
        runs,
        nodes: graph.nodes.len(),
        shadowed: graph.composition.entries.len(),
        median_ms: times[times.len() / 2],
        min_ms: times[0],
        max_ms: times[times.len() - 1],
    };
    out.result(&report, || {
        format!(
            "compiled {} candidates ({} nodes, {} shadowed) {} times: median {:.1} ms (min {:.1}, max {:.1})\n",
            report.candidates,
            report.nodes,
            report.shadowed,
            report.runs,
            report.median_ms,
            report.min_ms,
            report.max_ms
        )
    });
    Ok(Exit::Ok)
}
