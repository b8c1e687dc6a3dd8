#![allow(clippy::unwrap_used, clippy::expect_used)]

//! `evoflux fleet` through the real binary: the builtin fleet and a
//! repository's, shadowing, validation with one diagnostic per problem,
//! and plans compiled with their variables.

mod common;

use common::{Sandbox, json, stderr_codes};
use serde_json::Value;

const SHIP: &str = "---
version: 3
name: ship
description: Build, test until green, then commit.
maxWorkers: 1
onFailure: stop
steps:
  - {id: build, agent: coder, scope: workspace, dependencies: []}
  - id: suite
    kind: loop
    maxAttempts: 2
    dependencies: [build]
    check: {kind: code, command: test, scope: workspace}
    repair: {kind: agent, agent: coder, scope: workspace}
---
Make {{target}} build and pass its tests.
";

const COMMANDS: &str = "version: 1
commands:
  test:
    argv: [cargo, test]
";

fn names(v: &Value) -> Vec<(String, String, bool)> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["name"].as_str().unwrap().to_owned(),
                f["origin"]["kind"].as_str().unwrap().to_owned(),
                f["valid"].as_bool().unwrap(),
            )
        })
        .collect()
}

#[test]
fn the_builtin_fleet_is_listed_valid_and_plans_with_its_variable() {
    let s = Sandbox::new();
    let listed = s.json(&["--json", "fleet", "list"]);
    assert_eq!(
        names(&listed),
        [("investigate-fix".into(), "builtin".into(), true)]
    );
    let plan = s.json(&[
        "--json",
        "fleet",
        "plan",
        "investigate-fix",
        "--var",
        "problem=the parser drops the last line",
    ]);
    let ids: Vec<&str> = plan["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["id"].as_str().unwrap())
        .collect();
    assert_eq!(
        ids,
        [
            "investigate",
            "implement",
            "verify.check.1",
            "verify.repair.1",
            "verify.check.2",
            "verify.repair.2",
            "verify.check.3",
            "review"
        ]
    );
    assert!(
        plan["task"]
            .as_str()
            .unwrap()
            .contains("the parser drops the last line")
    );
    // The same inputs compile to the same plan, hash included.
    let again = s.json(&[
        "--json",
        "fleet",
        "plan",
        "investigate-fix",
        "--var",
        "problem=the parser drops the last line",
    ]);
    assert_eq!(plan, again);

    // Without its variable nothing is planned, and the message says how.
    let out = s.run(&["--json", "fleet", "plan", "investigate-fix"]);
    assert_eq!(out.status.code(), Some(3));
    assert_eq!(stderr_codes(&out), ["fleet/prompt-unresolved"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("--var problem="));
    let out = s.run(&["--json", "fleet", "plan", "nope"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(stderr_codes(&out), ["fleet/not-found"]);
}

#[test]
fn a_repository_fleet_binds_its_commands_and_shadows_a_builtin_of_its_name() {
    let s = Sandbox::new();
    s.project("fleets/ship.md", SHIP);
    s.trust();
    // Its code step needs the registry: invalid until there is one.
    let out = s.run(&["--json", "fleet", "validate", "ship"]);
    assert_eq!(out.status.code(), Some(3));
    assert_eq!(stderr_codes(&out), ["fleet/commands-registry-missing"]);

    s.project("fleets/commands.yaml", COMMANDS);
    let v = s.json(&["--json", "fleet", "validate"]);
    assert_eq!(v["valid"], true);
    assert_eq!(v["fleets"], 2);
    let plan = s.json(&["--json", "fleet", "plan", "ship", "--var", "target=the cli"]);
    assert_eq!(plan["nodes"].as_array().unwrap().len(), 4);

    // A repository's fleet of a builtin's name replaces it.
    s.project(
        "fleets/investigate-fix.md",
        &SHIP.replace("name: ship", "name: investigate-fix"),
    );
    let listed = s.json(&["--json", "fleet", "list"]);
    assert_eq!(
        names(&listed),
        [
            ("investigate-fix".into(), "file".into(), true),
            ("ship".into(), "file".into(), true)
        ]
    );
    let shown = s.json(&["--json", "fleet", "show", "investigate-fix"]);
    assert_eq!(shown["origin"]["layer"], "project");
    assert_eq!(shown["contract"]["steps"][0]["id"], "build");
}

#[test]
fn a_bad_fleet_gets_one_diagnostic_per_problem_with_file_and_field() {
    let s = Sandbox::new();
    let bad = "---
version: 3
name: broken
description: Everything wrong at once.
maxWorkers: 1
onFailure: stop
steps:
  - {id: a, agent: coder, scope: workspace, writes: [src/], dependencies: [ghost]}
  - {id: b, agent: coder, scope: workspace, dependencies: [b]}
---
Do {{it}}.
";
    let path = s.project("fleets/broken.md", bad);
    s.trust();
    let out = s.run(&["--json", "fleet", "validate"]);
    assert_eq!(out.status.code(), Some(3));
    let v = json(&out);
    assert_eq!(v["invalid"], serde_json::json!(["broken"]));
    let diags = v["diagnostics"].as_array().unwrap();
    let mut found: Vec<(String, String)> = diags
        .iter()
        .map(|d| {
            assert_eq!(
                d["locator"]["file"].as_str(),
                Some(path.to_str().unwrap()),
                "{d}"
            );
            (
                d["code"].as_str().unwrap().to_owned(),
                d["locator"]["field"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
            )
        })
        .collect();
    found.sort();
    assert_eq!(
        found,
        [
            ("fleet/key-requires-version".into(), "steps.a.writes".into()),
            (
                "fleet/self-dependency".into(),
                "steps.b.dependencies".into()
            ),
            (
                "fleet/unknown-dependency".into(),
                "steps.a.dependencies".into()
            ),
        ]
    );
    // Listing still shows it, marked invalid, beside the valid builtin.
    let listed = s.json(&["--json", "fleet", "list"]);
    assert_eq!(
        names(&listed),
        [
            ("broken".into(), "file".into(), false),
            ("investigate-fix".into(), "builtin".into(), true)
        ]
    );
}
