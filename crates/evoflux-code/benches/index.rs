//! Index and query figures on a large real repository: cold index time and
//! peak memory, loading a persisted index, refresh with no change and after
//! one edit, and query latency per operation. Prints figures; asserts
//! nothing about time.
//!
//! `cargo bench -p evoflux-code --bench index` indexes a copy of tokio's
//! source from the cargo registry cache (or `EVOFLUX_BENCH_REPO`).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use evoflux_code::{CodeContext, DefKind, RepoIndex, index_file};
use serde_json::json;

fn source_repo() -> PathBuf {
    if let Ok(p) = std::env::var("EVOFLUX_BENCH_REPO") {
        return PathBuf::from(p);
    }
    let cargo_home = std::env::var("CARGO_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|_| PathBuf::from(std::env::var("HOME").unwrap()).join(".cargo"));
    let mut found: Vec<PathBuf> = std::fs::read_dir(cargo_home.join("registry/src"))
        .into_iter()
        .flatten()
        .flatten()
        .flat_map(|index| {
            std::fs::read_dir(index.path())
                .into_iter()
                .flatten()
                .flatten()
        })
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("tokio-1."))
        })
        .collect();
    found.sort();
    found
        .pop()
        .expect("no tokio in the cargo registry cache: set EVOFLUX_BENCH_REPO")
}

fn copy_tree(from: &Path, to: &Path) -> (usize, usize) {
    let (mut files, mut lines) = (0, 0);
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap().flatten() {
        let ty = entry.file_type().unwrap();
        let dest = to.join(entry.file_name());
        if ty.is_dir() {
            let (f, l) = copy_tree(&entry.path(), &dest);
            files += f;
            lines += l;
        } else if ty.is_file() {
            std::fs::copy(entry.path(), &dest).unwrap();
            if evoflux_code::Language::of_path(&dest).is_some() {
                files += 1;
                lines += std::fs::read_to_string(&dest)
                    .map(|t| t.lines().count())
                    .unwrap_or(0);
            }
        }
    }
    (files, lines)
}

fn peak_rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|n| n.parse().ok())
        })
        .unwrap_or(0)
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

fn main() {
    let source = source_repo();
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("repo");
    let (files, lines) = copy_tree(&source, &root);
    let root = root.canonicalize().unwrap();
    // Files modified just before a refresh are hashed again on every
    // refresh for two seconds (the index's racy-timestamp rule); a real
    // checkout's files are older than that.
    std::thread::sleep(Duration::from_millis(2100));
    let cache = tmp.path().join("cache");
    println!(
        "repository: {} ({files} source files, {lines} lines)",
        source.display()
    );
    println!("threads: {}", rayon::current_num_threads());

    let rss_before = peak_rss_kib();
    let mut cc = CodeContext::new(std::slice::from_ref(&root), Some(&cache));
    let t = Instant::now();
    let reports = cc.refresh(&|_, _, _| {});
    let cold = t.elapsed();
    let rss_after = peak_rss_kib();
    println!(
        "cold index: {:.0} ms ({} files parsed, {} definitions); peak RSS {} MiB (before: {} MiB)",
        ms(cold),
        reports[0].1.parsed.len(),
        cc.definition_count(),
        rss_after / 1024,
        rss_before / 1024
    );
    let file = index_file(&cache, &root);
    println!(
        "index file: {} KiB",
        std::fs::metadata(&file)
            .map(|m| m.len() / 1024)
            .unwrap_or(0)
    );

    let t = Instant::now();
    let mut loaded = CodeContext::new(std::slice::from_ref(&root), Some(&cache));
    let r = loaded.refresh(&|_, _, _| {});
    println!(
        "new session, index loaded from the cache: {:.1} ms ({} parsed)",
        ms(t.elapsed()),
        r[0].1.parsed.len()
    );

    let mut unchanged = Vec::new();
    for _ in 0..20 {
        let t = Instant::now();
        cc.refresh(&|_, _, _| {});
        unchanged.push(t.elapsed());
    }
    unchanged.sort();
    println!(
        "refresh, nothing changed: p50 {:.1} ms, p99 {:.1} ms",
        ms(percentile(&unchanged, 0.5)),
        ms(percentile(&unchanged, 0.99))
    );

    let index = RepoIndex::load(&file).unwrap();
    let target = index
        .files
        .iter()
        .max_by_key(|f| f.facts.definitions.len())
        .unwrap()
        .path
        .clone();
    let mut edits = Vec::new();
    for i in 0..20 {
        let path = root.join(&target);
        let mut text = std::fs::read_to_string(&path).unwrap();
        text.push_str(&format!("\nfn bench_added_{i}() {{}}\n"));
        std::fs::write(&path, text).unwrap();
        let t = Instant::now();
        let r = cc.refresh(&|_, _, _| {});
        edits.push(t.elapsed());
        assert_eq!(r[0].1.parsed, std::slice::from_ref(&target));
    }
    edits.sort();
    println!(
        "refresh after editing one file ({target}): p50 {:.1} ms, p99 {:.1} ms",
        ms(percentile(&edits, 0.5)),
        ms(percentile(&edits, 0.99))
    );

    // Query every operation on a spread of real symbols.
    let mut symbols: Vec<String> = index
        .files
        .iter()
        .flat_map(|f| {
            f.facts
                .definitions
                .iter()
                .filter(|d| matches!(d.kind, DefKind::Method | DefKind::Function))
                .map(move |d| d.qualified(f.facts.language))
        })
        .collect();
    symbols.sort();
    symbols.dedup();
    let step = (symbols.len() / 100).max(1);
    let picked: Vec<&String> = symbols.iter().step_by(step).take(100).collect();
    let mut all = Vec::new();
    for op in [
        "definition",
        "references",
        "callers",
        "callees",
        "implementations",
        "impact",
        "neighborhood",
    ] {
        let mut times = Vec::new();
        for s in &picked {
            let t = Instant::now();
            let a = cc.answer(&json!({"operation": op, "symbol": s}));
            times.push(t.elapsed());
            if let Ok(a) = a {
                std::hint::black_box(a.render());
            }
        }
        times.sort();
        println!(
            "query {op:<15} p50 {:>6.2} ms  p99 {:>6.2} ms  ({} symbols)",
            ms(percentile(&times, 0.5)),
            ms(percentile(&times, 0.99)),
            times.len()
        );
        all.extend(times);
    }
    all.sort();
    println!(
        "query, all operations (each includes the refresh): p50 {:.2} ms, p99 {:.2} ms",
        ms(percentile(&all, 0.5)),
        ms(percentile(&all, 0.99))
    );
}
