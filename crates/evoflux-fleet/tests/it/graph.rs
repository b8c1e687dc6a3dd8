//! `validate_fleet_graph`: every error code, with the step id and field.

use crate::common;

use common::{V3, V5, doc, expect_one, refused, valid};
use evoflux_fleet::graph::codes;
use evoflux_fleet::{FleetStep, validate_fleet_graph};

fn contract(steps: &str) -> String {
    doc(&format!(
        "version: 3\nname: g\nmaxWorkers: 1\nonFailure: stop\nsteps:\n{steps}"
    ))
}

#[test]
fn a_valid_graph_has_no_diagnostics() {
    let c = valid(&doc(V3));
    assert!(validate_fleet_graph(&c).is_empty());
}

#[test]
fn duplicate_ids() {
    let d = refused(&contract(
        "  - {id: a, agent: coder, scope: readonly, dependencies: []}\n  - {id: a, agent: scout, scope: readonly, dependencies: []}\n",
    ));
    let msg = expect_one(&d, codes::DUPLICATE_ID, "steps.a.id");
    assert_eq!(msg, "duplicate step id 'a'");
}

#[test]
fn ids_colliding_with_generated_loop_ids() {
    let d = refused(&contract(
        "  - {id: suite.check.1, agent: coder, scope: readonly, dependencies: []}\n  - id: suite\n    kind: loop\n    maxAttempts: 2\n    dependencies: []\n    check: {kind: code, command: test, scope: readonly}\n    repair: {agent: coder, scope: workspace}\n",
    ));
    let msg = expect_one(&d, codes::ID_COLLISION, "steps.suite.check.1.id");
    assert_eq!(
        msg,
        "step id 'suite.check.1' collides with an id loop 'suite' generates"
    );

    // A repair id collides too; an id past the bound does not.
    let d = refused(&contract(
        "  - {id: suite.repair.1, agent: coder, scope: readonly, dependencies: []}\n  - {id: suite.check.3, agent: coder, scope: readonly, dependencies: []}\n  - id: suite\n    kind: loop\n    maxAttempts: 2\n    dependencies: []\n    check: {kind: code, command: test, scope: readonly}\n    repair: {agent: coder, scope: workspace}\n",
    ));
    assert_eq!(d.codes(), vec![codes::ID_COLLISION]);
    expect_one(&d, codes::ID_COLLISION, "steps.suite.repair.1.id");
}

#[test]
fn self_reference() {
    let d = refused(&contract(
        "  - {id: a, agent: coder, scope: readonly, dependencies: [a]}\n",
    ));
    let msg = expect_one(&d, codes::SELF_DEPENDENCY, "steps.a.dependencies");
    assert_eq!(msg, "step 'a' depends on itself");
    assert!(
        !d.has_code(codes::DEPENDENCY_CYCLE),
        "one mistake, one diagnostic"
    );

    let d = refused(&doc(
        &V3.replace("dependencies: [build]\n", "dependencies: [suite]\n")
    ));
    expect_one(&d, codes::SELF_DEPENDENCY, "steps.suite.dependencies");
}

#[test]
fn dangling_dependencies() {
    let d = refused(&contract(
        "  - {id: a, agent: coder, scope: readonly, dependencies: [ghost]}\n",
    ));
    let msg = expect_one(&d, codes::UNKNOWN_DEPENDENCY, "steps.a.dependencies");
    assert_eq!(msg, "step 'a' has unknown dependency 'ghost'");
    assert_eq!(d.len(), 1);
}

#[test]
fn cycles_name_only_their_members() {
    let d = refused(&contract(
        "  - {id: a, agent: coder, scope: readonly, dependencies: [b]}\n  - {id: b, agent: coder, scope: readonly, dependencies: [a]}\n  - {id: after, agent: coder, scope: readonly, dependencies: [b]}\n  - {id: free, agent: coder, scope: readonly, dependencies: []}\n",
    ));
    let msg = expect_one(&d, codes::DEPENDENCY_CYCLE, "steps.a.dependencies");
    assert!(
        msg.starts_with("dependency cycle among steps a, b;"),
        "{msg}"
    );
    assert_eq!(d.len(), 1);

    // A longer cycle through a loop.
    let d = refused(&contract(
        "  - {id: build, agent: coder, scope: workspace, dependencies: [review]}\n  - id: suite\n    kind: loop\n    maxAttempts: 2\n    dependencies: [build]\n    check: {kind: code, command: test, scope: readonly}\n    repair: {agent: coder, scope: workspace}\n  - {id: review, agent: verifier, scope: readonly, dependencies: [suite]}\n",
    ));
    let msg = expect_one(&d, codes::DEPENDENCY_CYCLE, "steps.build.dependencies");
    assert!(msg.contains("build, review, suite"), "{msg}");
}

#[test]
fn two_cycles_are_two_problems_and_a_step_between_them_is_neither() {
    // a <-> b, then mid waits on a, and c <-> d waits on mid.
    let d = refused(&contract(
        "  - {id: a, agent: coder, scope: readonly, dependencies: [b]}\n  - {id: b, agent: coder, scope: readonly, dependencies: [a]}\n  - {id: mid, agent: coder, scope: readonly, dependencies: [a]}\n  - {id: c, agent: coder, scope: readonly, dependencies: [d, mid]}\n  - {id: d, agent: coder, scope: readonly, dependencies: [c]}\n",
    ));
    let found: Vec<(Option<&str>, &str)> = d
        .iter()
        .map(|d| {
            assert_eq!(d.code, codes::DEPENDENCY_CYCLE);
            (d.locator.field.as_deref(), d.message.as_str())
        })
        .collect();
    assert_eq!(found.len(), 2, "{}", d.render_human());
    assert_eq!(found[0].0, Some("steps.a.dependencies"));
    assert!(
        found[0].1.starts_with("dependency cycle among steps a, b;"),
        "{}",
        found[0].1
    );
    assert_eq!(found[1].0, Some("steps.c.dependencies"));
    assert!(
        found[1].1.starts_with("dependency cycle among steps c, d;"),
        "{}",
        found[1].1
    );
}

#[test]
fn commit_sources() {
    let unknown = V3.replace("commitFrom: [suite, build]", "commitFrom: [ghost]");
    let d = refused(&doc(&unknown));
    let msg = expect_one(&d, codes::COMMIT_SOURCE_UNKNOWN, "steps.commit.commitFrom");
    assert_eq!(msg, "commit step 'commit' names unknown source 'ghost'");

    let code = format!(
        "{}  - {{id: lint, kind: code, command: lint, scope: readonly, dependencies: []}}\n",
        V3.replace("commitFrom: [suite, build]", "commitFrom: [lint]")
            .replace(
                "dependencies: [suite], commitFrom",
                "dependencies: [suite, lint], commitFrom"
            )
    );
    let d = refused(&doc(&code));
    let msg = expect_one(&d, codes::COMMIT_SOURCE_CODE, "steps.commit.commitFrom");
    assert_eq!(
        msg,
        "commit step 'commit' source 'lint' is a code step and authors no commit message"
    );

    let other = format!(
        "{}  - {{id: other, agent: coder, scope: workspace, dependencies: []}}\n",
        V3.replace("commitFrom: [suite, build]", "commitFrom: [other]")
    );
    let d = refused(&doc(&other));
    let msg = expect_one(
        &d,
        codes::COMMIT_SOURCE_NOT_DEPENDENCY,
        "steps.commit.commitFrom",
    );
    assert_eq!(
        msg,
        "commit step 'commit' must depend on its message source 'other'"
    );

    // A transitive ancestor is enough: commit waits for suite, suite for build.
    valid(&doc(V3));
}

#[test]
fn a_gate_checked_loop_names_a_gate() {
    let yaml = V5.replace(
        "check: {kind: gate, gate: acceptance}",
        "check: {kind: gate, gate: architect}",
    );
    let d = refused(&doc(&yaml));
    let msg = expect_one(&d, codes::UNKNOWN_GATE, "steps.repair.check.gate");
    assert_eq!(msg, "loop 'repair' names unknown gate 'architect'");
}

#[test]
fn every_problem_is_reported_together() {
    let d = refused(&contract(
        "  - {id: a, agent: coder, scope: readonly, dependencies: [a, ghost]}\n  - {id: a, agent: coder, scope: readonly, dependencies: []}\n  - {id: c, agent: coder, scope: readonly, dependencies: [d]}\n  - {id: d, agent: coder, scope: readonly, dependencies: [c]}\n",
    ));
    let mut codes_seen = d.codes();
    codes_seen.sort();
    assert_eq!(
        codes_seen,
        vec![
            codes::DEPENDENCY_CYCLE,
            codes::DUPLICATE_ID,
            codes::SELF_DEPENDENCY,
            codes::UNKNOWN_DEPENDENCY,
        ]
    );
}

#[test]
fn validation_runs_on_hand_built_contracts() {
    let mut c = valid(&doc(V3));
    if let FleetStep::Agent(build) = &mut c.steps[0] {
        build.dependencies.push("commit".to_owned());
    }
    let d = validate_fleet_graph(&c);
    assert_eq!(d.codes(), vec![codes::DEPENDENCY_CYCLE]);
}
