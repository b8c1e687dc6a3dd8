//! `parse_fleet_contract`: one contract per version parses; every version
//! boundary refuses newer keys by name; the schema is strict.

use crate::common;

use common::{V1, V2, V3, V4, V5, doc, expect_one, parse, refused, valid};
use evoflux_fleet::{
    FleetStep, FleetVersion, LoopCheck, OnFailure, Route, Scope, StepKind,
    contract::{AgentWork, CodeWork},
};

#[test]
fn one_contract_per_version_parses() {
    let v1 = valid(&doc(V1));
    assert_eq!(v1.version, FleetVersion::V1);
    assert_eq!(v1.name, "review-only");
    assert_eq!(v1.max_workers, 2);
    assert_eq!(v1.on_failure, OnFailure::Stop);
    assert_eq!(v1.budget_usd, None);
    assert_eq!(v1.body, "Work on {{target}}.");
    assert!(matches!(&v1.steps[0], FleetStep::Agent(a) if a.work.agent == "scout"));

    let v2 = valid(&doc(V2));
    assert_eq!(v2.steps[1].kind(), StepKind::Code);

    let v3 = valid(&doc(V3));
    let FleetStep::Loop(suite) = &v3.steps[1] else {
        panic!("suite is a loop")
    };
    assert_eq!(suite.max_attempts, 3);
    assert!(matches!(&suite.check, LoopCheck::Code(CodeWork { command, .. }) if command == "test"));
    let FleetStep::Code(commit) = &v3.steps[2] else {
        panic!("commit is code")
    };
    assert_eq!(
        commit.commit_from.as_deref(),
        Some(&["suite".to_owned(), "build".to_owned()][..])
    );

    let v4 = valid(&doc(V4));
    assert_eq!(v4.budget_usd, Some(2.5));
    assert_eq!(v4.on_failure, OnFailure::Continue);
    let FleetStep::Loop(suite) = &v4.steps[1] else {
        panic!("suite is a loop")
    };
    // Duplicates collapse when the boundary is normalized.
    assert_eq!(
        suite.repair.writes.as_ref().map(|w| w.entries().to_vec()),
        Some(vec!["src/".to_owned()])
    );
    let FleetStep::Agent(docs) = &v4.steps[2] else {
        panic!("docs is an agent")
    };
    assert_eq!(
        docs.work.writes.as_ref().map(|w| w.entries().to_vec()),
        Some(vec!["README.md".to_owned(), "docs/".to_owned()])
    );

    let v5 = valid(&doc(V5));
    assert!(v5.single_writer);
    let FleetStep::Plan(plan) = &v5.steps[1] else {
        panic!("architect is a plan step")
    };
    assert_eq!(plan.work.agent, "architect", "the default plan agent");
    assert_eq!(plan.work.route, Some(Route::Target("frontier".to_owned())));
    assert!(plan.proposals);
    let FleetStep::Loop(repair) = &v5.steps[2] else {
        panic!("repair is a loop")
    };
    assert_eq!(
        repair.check,
        LoopCheck::Gate {
            gate: "acceptance".to_owned()
        }
    );
    assert!(matches!(
        &repair.repair,
        AgentWork { route: Some(Route::Profile(p)), scope: Scope::Workspace, .. } if p == "cheap"
    ));
}

#[test]
fn version_must_be_one_to_five() {
    for v in ["0", "6", "\"3\"", "3.5", "null"] {
        let yaml = V1.replace("version: 1", &format!("version: {v}"));
        let d = refused(&doc(&yaml));
        let msg = expect_one(&d, "fleet/version-unsupported", "version");
        assert!(msg.contains("1 (agent steps)"), "{msg}");
        assert_eq!(d.len(), 1, "nothing else is read without a schema");
    }
    let d = refused(&doc(&V1.replace("version: 1\n", "")));
    expect_one(&d, "fleet/version-unsupported", "version");
}

#[test]
fn writes_in_a_v3_contract_is_refused_by_name() {
    let yaml = V3.replace(
        "{id: build, agent: coder, scope: workspace, dependencies: []}",
        "{id: build, agent: coder, scope: workspace, writes: [src/], dependencies: []}",
    );
    let d = refused(&doc(&yaml));
    let msg = expect_one(&d, "fleet/key-requires-version", "steps.build.writes");
    assert!(
        msg.contains("'writes' requires contract version 4; this contract declares version 3"),
        "{msg}"
    );
    assert!(!d.has_code("fleet/key-unknown"), "reported once, by name");
    assert_eq!(d.len(), 1);

    // On a loop half too.
    let yaml = V3.replace(
        "repair: {kind: agent, agent: coder, scope: workspace}",
        "repair: {kind: agent, agent: coder, scope: workspace, writes: [src/]}",
    );
    let d = refused(&doc(&yaml));
    expect_one(
        &d,
        "fleet/key-requires-version",
        "steps.suite.repair.writes",
    );
}

#[test]
fn v5_fields_in_a_v4_contract_are_refused_by_name() {
    let target = V4.replace(
        "writes: [src/], dependencies: []}",
        "writes: [src/], target: fast, dependencies: []}",
    );
    let d = refused(&doc(&target));
    let msg = expect_one(&d, "fleet/key-requires-version", "steps.build.target");
    assert!(
        msg.contains("'target' requires contract version 5; this contract declares version 4"),
        "{msg}"
    );

    let profile = V4.replace(
        "repair: {kind: agent, agent: coder, scope: workspace,",
        "repair: {kind: agent, agent: coder, profile: cheap, scope: workspace,",
    );
    let d = refused(&doc(&profile));
    expect_one(
        &d,
        "fleet/key-requires-version",
        "steps.suite.repair.profile",
    );

    let writers = V4.replace("maxWorkers: 2", "maxWorkers: 2\nwriters: 1");
    let d = refused(&doc(&writers));
    let msg = expect_one(&d, "fleet/key-requires-version", "writers");
    assert!(
        msg.contains("'writers' requires contract version 5"),
        "{msg}"
    );

    for kind in ["gate", "plan"] {
        let yaml =
            format!("{V4}  - {{id: extra, kind: {kind}, agent: tester, dependencies: []}}\n");
        let d = refused(&doc(&yaml));
        let msg = expect_one(&d, "fleet/kind-requires-version", "steps.extra.kind");
        assert!(
            msg.contains(&format!(
                "kind '{kind}' requires contract version 5; this contract declares version 4"
            )),
            "{msg}"
        );
    }

    let gate_check = V4.replace(
        "check: {kind: code, command: test, scope: readonly}",
        "check: {kind: gate, gate: acceptance}",
    );
    let d = refused(&doc(&gate_check));
    expect_one(&d, "fleet/kind-requires-version", "steps.suite.check.kind");
}

#[test]
fn older_kinds_and_keys_need_their_versions() {
    // A code step in v1, a loop in v2, commitFrom in v2.
    let code_in_v1 = format!(
        "{V1}  - {{id: t, kind: code, command: test, scope: readonly, dependencies: []}}\n"
    );
    let d = refused(&doc(&code_in_v1));
    let msg = expect_one(&d, "fleet/kind-requires-version", "steps.t.kind");
    assert!(
        msg.contains("kind 'code' requires contract version 2"),
        "{msg}"
    );

    let loop_in_v2 = V3
        .replace("version: 3", "version: 2")
        .replace(", commitFrom: [suite, build]", "");
    let d = refused(&doc(&loop_in_v2));
    let msg = expect_one(&d, "fleet/kind-requires-version", "steps.suite.kind");
    assert!(
        msg.contains("kind 'loop' requires contract version 3"),
        "{msg}"
    );

    let commit_in_v2 = V2.replace(
        "dependencies: [build]}",
        "dependencies: [build], commitFrom: [build]}",
    );
    let d = refused(&doc(&commit_in_v2));
    let msg = expect_one(&d, "fleet/key-requires-version", "steps.test.commitFrom");
    assert!(
        msg.contains("'commitFrom' requires contract version 3"),
        "{msg}"
    );
}

#[test]
fn a_key_no_version_gives_that_position_is_unknown_not_newer() {
    // commitFrom belongs to code steps: on an agent step it is unknown at
    // every version, so "requires version 3" would send the author to an
    // upgrade that does not help.
    let agent_commit = V2.replace(
        "{id: build, agent: coder, scope: workspace, dependencies: []}",
        "{id: build, agent: coder, scope: workspace, commitFrom: [x], dependencies: []}",
    );
    let d = refused(&doc(&agent_commit));
    expect_one(&d, "fleet/key-unknown", "steps.build.commitFrom");
    assert!(!d.has_code("fleet/key-requires-version"));

    // Code steps are never routed; loops declare no boundary of their own.
    let code_target = V4.replace(
        "check: {kind: code, command: test, scope: readonly}",
        "check: {kind: code, command: test, scope: readonly, target: fast}",
    );
    let d = refused(&doc(&code_target));
    expect_one(&d, "fleet/key-unknown", "steps.suite.check.target");
    assert!(!d.has_code("fleet/key-requires-version"));

    let loop_writes = V3.replace(
        "    maxAttempts: 3\n",
        "    maxAttempts: 3\n    writes: [src/]\n",
    );
    let d = refused(&doc(&loop_writes));
    expect_one(&d, "fleet/key-unknown", "steps.suite.writes");
    assert!(!d.has_code("fleet/key-requires-version"));
}

#[test]
fn a_readonly_step_with_writes_is_refused() {
    let yaml = V4.replace(
        "check: {kind: code, command: test, scope: readonly}",
        "check: {kind: code, command: test, scope: readonly, writes: []}",
    );
    let d = refused(&doc(&yaml));
    let msg = expect_one(&d, "fleet/writes-readonly", "steps.suite.check.writes");
    assert!(
        msg.contains("step 'suite.check' is 'readonly', which is the empty allowlist"),
        "{msg}"
    );

    let yaml = format!(
        "{V4}  - {{id: look, agent: scout, scope: readonly, writes: [src/], dependencies: []}}\n"
    );
    let d = refused(&doc(&yaml));
    expect_one(&d, "fleet/writes-readonly", "steps.look.writes");
}

#[test]
fn a_v4_workspace_step_needs_a_non_empty_allowlist() {
    let missing = V4.replace("writes: [src/], dependencies: []}", "dependencies: []}");
    let d = refused(&doc(&missing));
    let msg = expect_one(&d, "fleet/writes-missing", "steps.build.writes");
    assert!(
        msg.contains("must declare a non-empty 'writes' allowlist at version 4"),
        "{msg}"
    );

    let empty = V4.replace(
        "writes: [src/], dependencies: []}",
        "writes: [], dependencies: []}",
    );
    let d = refused(&doc(&empty));
    expect_one(&d, "fleet/writes-missing", "steps.build.writes");

    let repair = V4.replace("writes: [src/, src/]}", "}");
    let d = refused(&doc(&repair));
    expect_one(&d, "fleet/writes-missing", "steps.suite.repair.writes");
}

#[test]
fn bad_writes_entries_are_named() {
    for (entry, needle) in [
        ("/etc/", "not absolute"),
        ("../up/", "'.' or '..'"),
        ("src/*.rs", "glob"),
        ("'src\\\\lib.rs'", "'/' separators"),
        ("''", "must not be empty"),
    ] {
        let yaml = V4.replace(
            "writes: [src/], dependencies: []}",
            &format!("writes: [{entry}], dependencies: []}}"),
        );
        let d = refused(&doc(&yaml));
        let msg = expect_one(&d, "fleet/writes-invalid", "steps.build.writes");
        assert!(msg.contains(needle), "{entry}: {msg}");
    }
    let many: Vec<String> = (0..33).map(|i| format!("f{i}")).collect();
    let yaml = V4.replace(
        "writes: [src/], dependencies: []}",
        &format!("writes: [{}], dependencies: []}}", many.join(", ")),
    );
    let d = refused(&doc(&yaml));
    let msg = expect_one(&d, "fleet/writes-too-many", "steps.build.writes");
    assert!(msg.contains("at most 32"), "{msg}");
}

#[test]
fn a_gate_must_not_declare_writes() {
    let yaml = V5.replace(
        "run: acceptance, dependencies: []}",
        "run: acceptance, writes: [tests/], dependencies: []}",
    );
    let d = refused(&doc(&yaml));
    let msg = expect_one(&d, "fleet/gate-writes", "steps.acceptance.writes");
    assert_eq!(
        msg,
        "gate step 'acceptance' must not declare 'writes'; its write boundary is derived from 'path'"
    );
    assert!(!d.has_code("fleet/key-unknown"));
}

#[test]
fn v5_declarations_are_checked() {
    let both = V5.replace("target: frontier", "target: frontier\n    profile: cheap");
    let d = refused(&doc(&both));
    let msg = expect_one(&d, "fleet/route-conflict", "steps.architect.profile");
    assert_eq!(
        msg,
        "step 'architect' may declare target or profile, never both"
    );

    let half = V5.replace("profile: cheap}", "profile: cheap, target: big}");
    let d = refused(&doc(&half));
    let msg = expect_one(&d, "fleet/route-conflict", "steps.repair.repair.profile");
    assert!(msg.contains("step 'repair.repair'"), "{msg}");

    let dup = V5.replace("roster: [coder, tester]", "roster: [coder, coder]");
    let d = refused(&doc(&dup));
    let msg = expect_one(&d, "fleet/roster-duplicate", "steps.architect.roster");
    assert_eq!(
        msg,
        "plan step 'architect' roster contains duplicate agents"
    );

    for path in ["../acceptance.mjs", "tests//acceptance.mjs", "tests/"] {
        let yaml = V5.replace("path: tests/acceptance.mjs", &format!("path: {path}"));
        let d = refused(&doc(&yaml));
        let msg = expect_one(&d, "fleet/gate-path-invalid", "steps.acceptance.path");
        assert!(msg.starts_with("gate 'acceptance' path"), "{msg}");
    }

    let tasks = V5.replace("maxTasks: 4", "maxTasks: 17");
    let d = refused(&doc(&tasks));
    expect_one(&d, "fleet/field-invalid", "steps.architect.maxTasks");
}

#[test]
fn an_unknown_step_kind_refuses_the_whole_contract() {
    let yaml =
        format!("{V3}  - {{id: deploy, kind: shell, command: deploy, dependencies: [commit]}}\n");
    let (contract, d) = parse(&doc(&yaml));
    assert!(contract.is_none(), "no partial DAG");
    let msg = expect_one(&d, "fleet/kind-unknown", "steps.deploy.kind");
    assert!(msg.contains("unknown step kind 'shell'"), "{msg}");
    assert!(msg.contains("refuses the whole contract"), "{msg}");

    let check = V3.replace("check: {kind: code,", "check: {kind: script,");
    let d = refused(&doc(&check));
    expect_one(&d, "fleet/kind-unknown", "steps.suite.check.kind");
}

#[test]
fn loop_attempts_are_bounded_by_five() {
    for bad in ["0", "6", "2.5", "many"] {
        let yaml = V3.replace("maxAttempts: 3", &format!("maxAttempts: {bad}"));
        let d = refused(&doc(&yaml));
        let msg = expect_one(&d, "fleet/loop-attempts-invalid", "steps.suite.maxAttempts");
        assert!(msg.contains("from 1 to 5"), "{msg}");
    }
    let d = refused(&doc(&V3.replace("    maxAttempts: 3\n", "")));
    expect_one(&d, "fleet/key-missing", "steps.suite.maxAttempts");
    valid(&doc(&V3.replace("maxAttempts: 3", "maxAttempts: 5")));
}

#[test]
fn the_schema_is_strict() {
    let d = refused(&doc(&format!("{V1}future: no\n")));
    let msg = expect_one(&d, "fleet/key-unknown", "future");
    assert!(msg.contains("unknown key 'future'"), "{msg}");

    let d = refused(&doc(&V1.replace(
        "scope: readonly, dependencies: []",
        "scope: readonly, model: big, dependencies: []",
    )));
    expect_one(&d, "fleet/key-unknown", "steps.scout.model");

    let d = refused(&doc(&V1.replace("maxWorkers: 2\n", "")));
    expect_one(&d, "fleet/key-missing", "maxWorkers");
    let d = refused(&doc(&V1.replace("maxWorkers: 2", "maxWorkers: 0")));
    expect_one(&d, "fleet/field-invalid", "maxWorkers");
    let d = refused(&doc(&V1.replace("onFailure: stop", "onFailure: retry")));
    expect_one(&d, "fleet/field-invalid", "onFailure");
    for budget in ["0", "-1", "free"] {
        let d = refused(&doc(&V1.replace(
            "maxWorkers: 2",
            &format!("maxWorkers: 2\nbudgetUsd: {budget}"),
        )));
        let msg = expect_one(&d, "fleet/field-invalid", "budgetUsd");
        assert_eq!(msg, "budgetUsd must be a positive number");
    }
    let d = refused(&doc(&V1.replace(
        "scope: readonly, dependencies: []}",
        "scope: everywhere, dependencies: []}",
    )));
    expect_one(&d, "fleet/field-invalid", "steps.scout.scope");
    let d = refused(&doc(&V1.replace(
        "{id: scout, agent: scout, scope: readonly, dependencies: []}",
        "{id: scout, agent: scout, scope: readonly}",
    )));
    expect_one(&d, "fleet/key-missing", "steps.scout.dependencies");
    let d = refused(&doc(
        &V3.replace("repair: {kind: agent,", "repair: {kind: code,")
    ));
    expect_one(&d, "fleet/field-invalid", "steps.suite.repair.kind");
    let d = refused(&doc(
        "version: 1\nname: x\nmaxWorkers: 1\nonFailure: stop\nsteps: []\n",
    ));
    expect_one(&d, "fleet/field-invalid", "steps");
}

#[test]
fn body_and_front_matter_are_required() {
    let d = refused(&format!("---\n{V1}---\n  \n"));
    expect_one(&d, "fleet/body-empty", "");
    let d = refused("Just a prompt.\n");
    assert_eq!(d.codes(), vec!["fleet/frontmatter-missing"]);
    let d = refused("---\nversion: [\n---\nbody\n");
    assert_eq!(d.codes(), vec!["frontmatter/yaml-invalid"]);
}

#[test]
fn code_step_args_are_checked() {
    let ok = V2.replace(
        "command: test,",
        "command: test, args: ['{{ file }}', plain],",
    );
    let c = valid(&doc(&ok));
    let FleetStep::Code(step) = &c.steps[1] else {
        panic!("code")
    };
    assert_eq!(
        step.work.args,
        vec!["{{ file }}".to_owned(), "plain".to_owned()]
    );

    let embedded = V2.replace(
        "command: test,",
        "command: test, args: ['--file={{file}}'],",
    );
    let d = refused(&doc(&embedded));
    let msg = expect_one(&d, "fleet/args-invalid", "steps.test.args");
    assert!(
        msg.contains("placeholders must occupy a whole argument"),
        "{msg}"
    );
}

#[test]
fn a_bad_file_gives_one_diagnostic_per_problem() {
    let yaml = "\
version: 4
name: ''
maxWorkers: 0
onFailure: stop
colour: blue
steps:
  - {id: a, agent: coder, scope: workspace, dependencies: [], target: x}
  - {id: b, kind: code, command: test, scope: nowhere, dependencies: [a]}
";
    let d = refused(&doc(yaml));
    let mut seen: Vec<(String, String)> = d
        .iter()
        .map(|d| {
            (
                d.code.to_string(),
                d.locator.field.clone().unwrap_or_default(),
            )
        })
        .collect();
    seen.sort();
    assert_eq!(
        seen,
        vec![
            ("fleet/field-invalid".to_owned(), "maxWorkers".to_owned()),
            ("fleet/field-invalid".to_owned(), "name".to_owned()),
            ("fleet/field-invalid".to_owned(), "steps.b.scope".to_owned()),
            (
                "fleet/key-requires-version".to_owned(),
                "steps.a.target".to_owned()
            ),
            ("fleet/key-unknown".to_owned(), "colour".to_owned()),
        ],
        "{}",
        d.render_human()
    );
    assert!(
        d.iter()
            .all(|d| d.locator.file.as_deref() == Some(std::path::Path::new(common::FILE)))
    );
}

#[test]
fn graph_problems_are_reported_beside_refused_keys() {
    let yaml = "\
version: 3
name: x
maxWorkers: 1
onFailure: stop
steps:
  - {id: build, agent: coder, scope: workspace, writes: [src/], dependencies: [ghost]}
  - {id: test, kind: code, command: test, scope: workspace, dependencies: [test]}
";
    let d = refused(&doc(yaml));
    expect_one(&d, "fleet/key-requires-version", "steps.build.writes");
    expect_one(&d, "fleet/unknown-dependency", "steps.build.dependencies");
    expect_one(&d, "fleet/self-dependency", "steps.test.dependencies");
    assert_eq!(d.len(), 3, "{}", d.render_human());
}
