//! Recall and precision of `code_context callers` against call sites a
//! reader counted by hand. Prints figures; asserts nothing.
//!
//! ```text
//! cargo run -p evoflux-code --example call_recall -- SPEC=ROOT...
//! ```
//!
//! Each `SPEC` (see `examples/call_recall/*.txt`) names targets and their
//! real call sites in the repository at `ROOT`:
//!
//! ```text
//! target Script::parse crates/evoflux-model/src/scripted.rs
//! site crates/evoflux-model/src/scripted.rs:505 path
//! ```
//!
//! `target SYMBOL [PATH]` is asked with `callers` (limit 50); each `site
//! FILE:LINE FORM` is one real call (FORM — `bare`, `path`, `method`,
//! `self`, `macro` — only groups the figures). A listed call site is
//! found when it is a real one, else it is a false match. The answer is
//! read through its JSON, so the same program measures any version of
//! the index.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use evoflux_code::CodeContext;
use serde_json::json;

/// The limit a caller gets without asking for more.
const DEFAULT_LIMIT: usize = 20;

struct Target {
    symbol: String,
    path: Option<String>,
    /// (file, line) → form.
    sites: BTreeMap<(String, u32), String>,
}

fn read_spec(text: &str) -> Vec<Target> {
    let mut out: Vec<Target> = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap_or("").trim();
        let words: Vec<&str> = line.split_whitespace().collect();
        match words.as_slice() {
            [] => {}
            ["target", symbol, rest @ ..] => out.push(Target {
                symbol: (*symbol).to_owned(),
                path: rest.first().map(|p| (*p).to_owned()),
                sites: BTreeMap::new(),
            }),
            ["site", at, form] => {
                let (file, l) = at.rsplit_once(':').expect("site FILE:LINE FORM");
                out.last_mut()
                    .expect("a site before any target")
                    .sites
                    .insert(
                        (file.to_owned(), l.parse().expect("a line number")),
                        (*form).to_owned(),
                    );
            }
            _ => panic!(
                "line {}: not `target SYMBOL [PATH]` or `site FILE:LINE FORM`: {line}",
                n + 1
            ),
        }
    }
    out
}

#[derive(Default)]
struct Tally {
    real: usize,
    found: usize,
    listed: usize,
    found_in_default: usize,
    /// certainty → (true, false) sites.
    by_certainty: BTreeMap<String, (usize, usize)>,
    /// form → (real, found).
    by_form: BTreeMap<String, (usize, usize)>,
    truncated: bool,
}

impl Tally {
    fn add(&mut self, o: &Tally) {
        self.real += o.real;
        self.found += o.found;
        self.listed += o.listed;
        self.found_in_default += o.found_in_default;
        for (k, (t, f)) in &o.by_certainty {
            let e = self.by_certainty.entry(k.clone()).or_default();
            e.0 += t;
            e.1 += f;
        }
        for (k, (r, f)) in &o.by_form {
            let e = self.by_form.entry(k.clone()).or_default();
            e.0 += r;
            e.1 += f;
        }
        self.truncated |= o.truncated;
    }
}

fn pct(a: usize, b: usize) -> String {
    if b == 0 {
        "-".to_owned()
    } else {
        format!("{:.0}%", 100.0 * a as f64 / b as f64)
    }
}

fn measure(cc: &mut CodeContext, t: &Target) -> Tally {
    let mut args = json!({"operation": "callers", "symbol": t.symbol, "limit": 50});
    if let Some(p) = &t.path {
        args["path"] = json!(p);
    }
    let answer = match cc.answer(&args) {
        Ok(a) => serde_json::to_value(&a).unwrap(),
        Err(e) => panic!("{}: {e}", t.symbol),
    };
    let mut tally = Tally {
        real: t.sites.len(),
        truncated: answer["limitations"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|l| l.as_str().is_some_and(|l| l.starts_with("showing "))),
        ..Tally::default()
    };
    let mut seen: BTreeSet<(String, u32)> = BTreeSet::new();
    let empty = Vec::new();
    for (rank, r) in answer["relationships"]
        .as_array()
        .unwrap_or(&empty)
        .iter()
        .enumerate()
    {
        let path = r["entry"]["path"].as_str().unwrap_or_default().to_owned();
        let certainty = r["certainty"].as_str().unwrap_or("(none)").to_owned();
        for line in r["lines"].as_array().unwrap_or(&empty) {
            let site = (path.clone(), line.as_u64().unwrap_or(0) as u32);
            if !seen.insert(site.clone()) {
                continue;
            }
            tally.listed += 1;
            let real = t.sites.contains_key(&site);
            let c = tally.by_certainty.entry(certainty.clone()).or_default();
            if real {
                c.0 += 1;
                tally.found += 1;
                if rank < DEFAULT_LIMIT {
                    tally.found_in_default += 1;
                }
            } else {
                c.1 += 1;
            }
        }
    }
    for (site, form) in &t.sites {
        let e = tally.by_form.entry(form.clone()).or_default();
        e.0 += 1;
        if seen.contains(site) {
            e.1 += 1;
        }
    }
    tally
}

fn main() {
    let pairs: Vec<(PathBuf, PathBuf)> = std::env::args()
        .skip(1)
        .map(|a| {
            let (spec, root) = a.split_once('=').expect("SPEC=ROOT");
            (PathBuf::from(spec), PathBuf::from(root))
        })
        .collect();
    assert!(!pairs.is_empty(), "usage: call_recall SPEC=ROOT...");
    let mut grand = Tally::default();
    for (spec, root) in pairs {
        let targets = read_spec(&std::fs::read_to_string(&spec).unwrap());
        let root = root.canonicalize().unwrap();
        let mut cc = CodeContext::new(std::slice::from_ref(&root), None);
        let t0 = std::time::Instant::now();
        cc.refresh(&|_, _, _| {});
        println!(
            "\n{} on {} ({} files indexed in {:.1} s)",
            spec.display(),
            root.display(),
            cc.repositories()[0].files,
            t0.elapsed().as_secs_f64()
        );
        println!(
            "{:<40} {:>5} {:>6} {:>7} {:>8} {:>10}",
            "target", "real", "found", "listed", "in top20", "precision"
        );
        let mut total = Tally::default();
        for t in &targets {
            let m = measure(&mut cc, t);
            println!(
                "{:<40} {:>5} {:>6} {:>7}{} {:>8} {:>10}",
                t.symbol,
                m.real,
                m.found,
                m.listed,
                if m.truncated { "+" } else { " " },
                m.found_in_default,
                pct(m.found, m.listed)
            );
            total.add(&m);
        }
        report("total", &total);
        grand.add(&total);
    }
    report("all repositories", &grand);
}

fn report(what: &str, t: &Tally) {
    println!(
        "{what}: {} of {} real call sites found (recall {}), {} listed (precision {}), {} found within the default limit of {DEFAULT_LIMIT}{}",
        t.found,
        t.real,
        pct(t.found, t.real),
        t.listed,
        pct(t.found, t.listed),
        t.found_in_default,
        if t.truncated {
            "; + = more than 50 callers, only 50 counted"
        } else {
            ""
        }
    );
    for (form, (real, found)) in &t.by_form {
        println!("  form {form:<7} {found}/{real} found");
    }
    for (c, (yes, no)) in &t.by_certainty {
        println!(
            "  certainty {c:<7} {yes} real, {no} not ({} precise)",
            pct(*yes, yes + no)
        );
    }
}
