//! Plan compilation figures for a 200-step contract (issue 19 asks for
//! them): parse and validate the file, compile the plan (validation again,
//! rendering, loop unrolling, hashing). Prints medians; asserts nothing
//! about time.
//!
//! `cargo bench -p evoflux-fleet --bench plan`
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use evoflux_core::Diagnostics;
use evoflux_fleet::{compile_fleet_plan, parse_fleet_contract};

const STEPS: usize = 200;
const RUNS: usize = 101;

/// A v4 contract of `STEPS` declared steps: every tenth a loop (three
/// attempts, code check), every fifth a code step, the rest agents; each
/// step depends on the one or two before it, so the graph is deep and a
/// little wide.
fn contract_text() -> String {
    let mut yaml = String::from(
        "version: 4\nname: bench\nmaxWorkers: 4\nbudgetUsd: 25\nonFailure: continue\nsteps:\n",
    );
    for i in 0..STEPS {
        let deps = match i {
            0 => String::new(),
            1 => "s0".to_owned(),
            _ => format!("s{}, s{}", i - 1, i - 2),
        };
        let line = if i % 10 == 9 {
            format!(
                "  - id: s{i}\n    kind: loop\n    maxAttempts: 3\n    dependencies: [{deps}]\n    \
                 check: {{kind: code, command: test, args: ['{{{{filter}}}}'], scope: readonly}}\n    \
                 repair: {{agent: coder, scope: workspace, writes: [src/m{i}/, tests/]}}\n"
            )
        } else if i % 5 == 4 {
            format!(
                "  - {{id: s{i}, kind: code, command: lint, scope: readonly, dependencies: [{deps}]}}\n"
            )
        } else {
            format!(
                "  - {{id: s{i}, agent: coder, scope: workspace, writes: [src/m{i}/, docs/m{i}.md], \
                 dependencies: [{deps}]}}\n"
            )
        };
        yaml.push_str(&line);
    }
    format!(
        "---\n{yaml}---\nImplement {{{{feature}}}} in small steps; keep {{{{filter}}}} green.\n"
    )
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn main() {
    let text = contract_text();
    let path = Path::new("fleets/bench.md");
    let vars: BTreeMap<String, String> = [("feature", "streaming"), ("filter", "unit")]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();

    let mut parse_times = Vec::with_capacity(RUNS);
    let mut contract = None;
    for _ in 0..RUNS {
        let mut diags = Diagnostics::new();
        let start = Instant::now();
        let c = parse_fleet_contract(path, &text, &mut diags);
        parse_times.push(start.elapsed());
        if c.is_none() {
            eprintln!("the bench contract is invalid:\n{}", diags.render_human());
            return;
        }
        contract = c;
    }
    let contract = contract.expect("parsed");

    let mut compile_times = Vec::with_capacity(RUNS);
    let mut plan = None;
    for _ in 0..RUNS {
        let start = Instant::now();
        let p = compile_fleet_plan(&contract, &vars).expect("compiles");
        compile_times.push(start.elapsed());
        plan = Some(p);
    }
    let plan = plan.expect("compiled");

    println!(
        "fleet plan bench: {} declared steps, {} plan nodes, {} loops, {} bytes of contract",
        contract.steps.len(),
        plan.nodes.len(),
        plan.loops.len(),
        text.len()
    );
    println!(
        "  parse + validate (median of {RUNS}): {:?}",
        median(parse_times)
    );
    println!(
        "  compile_fleet_plan (median of {RUNS}): {:?}",
        median(compile_times)
    );
    println!("  plan hash: {}", plan.hash);
}
