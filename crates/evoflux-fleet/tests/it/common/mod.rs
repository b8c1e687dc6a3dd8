#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::Path;

use evoflux_core::Diagnostics;
use evoflux_fleet::{FleetContract, parse_fleet_contract};

pub const FILE: &str = "fleets/test.md";

/// Parses `text` as `fleets/test.md`.
pub fn parse(text: &str) -> (Option<FleetContract>, Diagnostics) {
    let mut diags = Diagnostics::new();
    let c = parse_fleet_contract(Path::new(FILE), text, &mut diags);
    (c, diags)
}

/// Parses `text`, panicking with the diagnostics when it is refused.
pub fn valid(text: &str) -> FleetContract {
    let (c, diags) = parse(text);
    match c {
        Some(c) if diags.is_empty() => c,
        _ => panic!("expected a valid contract, got:\n{}", diags.render_human()),
    }
}

/// Parses `text`, which must be refused; returns its diagnostics.
pub fn refused(text: &str) -> Diagnostics {
    let (c, diags) = parse(text);
    assert!(c.is_none(), "expected a refusal");
    assert!(diags.has_errors(), "a refusal without an error");
    diags
}

/// The one diagnostic with `code`, asserting it names the file and `field`
/// (no field when `field` is empty).
pub fn expect_one(diags: &Diagnostics, code: &str, field: &str) -> String {
    let hits: Vec<_> = diags.iter().filter(|d| d.code == code).collect();
    assert_eq!(
        hits.len(),
        1,
        "expected one `{code}`, got:\n{}",
        diags.render_human()
    );
    let d = hits[0];
    assert_eq!(d.locator.file.as_deref(), Some(Path::new(FILE)));
    let expected = (!field.is_empty()).then_some(field);
    assert_eq!(d.locator.field.as_deref(), expected, "{}", d.render_human());
    d.message.clone()
}

/// A contract with front matter `yaml` and a non-empty body.
pub fn doc(yaml: &str) -> String {
    format!("---\n{yaml}---\nWork on {{{{target}}}}.\n")
}

pub fn vars(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

pub const V1: &str = "\
version: 1
name: review-only
maxWorkers: 2
onFailure: stop
steps:
  - {id: scout, agent: scout, scope: readonly, dependencies: []}
  - {id: check, agent: verifier, scope: readonly, dependencies: [scout]}
";

pub const V2: &str = "\
version: 2
name: build-then-test
maxWorkers: 1
onFailure: stop
steps:
  - {id: build, agent: coder, scope: workspace, dependencies: []}
  - {id: test, kind: code, command: test, scope: workspace, dependencies: [build]}
";

pub const V3: &str = "\
version: 3
name: build-test
maxWorkers: 1
onFailure: stop
steps:
  - {id: build, agent: coder, scope: workspace, dependencies: []}
  - id: suite
    kind: loop
    maxAttempts: 3
    dependencies: [build]
    check: {kind: code, command: test, scope: workspace}
    repair: {kind: agent, agent: coder, scope: workspace}
  - {id: commit, kind: code, command: commit, scope: workspace, dependencies: [suite], commitFrom: [suite, build]}
";

pub const V4: &str = "\
version: 4
name: bounded
maxWorkers: 2
budgetUsd: 2.5
onFailure: continue
steps:
  - {id: build, agent: coder, scope: workspace, writes: [src/], dependencies: []}
  - id: suite
    kind: loop
    maxAttempts: 2
    dependencies: [build]
    check: {kind: code, command: test, scope: readonly}
    repair: {kind: agent, agent: coder, scope: workspace, writes: [src/, src/]}
  - {id: docs, agent: documenter, scope: workspace, writes: [docs/, README.md], dependencies: [build]}
";

pub const V5: &str = "\
version: 5
name: gated
writers: 1
maxWorkers: 2
onFailure: stop
steps:
  - {id: acceptance, kind: gate, agent: tester, path: tests/acceptance.mjs, run: acceptance, dependencies: []}
  - id: architect
    kind: plan
    roster: [coder, tester]
    maxTasks: 4
    proposals: true
    scope: workspace
    writes: [src/, tests/]
    target: frontier
    dependencies: [acceptance]
  - id: repair
    kind: loop
    maxAttempts: 2
    dependencies: [architect]
    check: {kind: gate, gate: acceptance}
    repair: {kind: agent, agent: coder, scope: workspace, writes: [src/], profile: cheap}
";
