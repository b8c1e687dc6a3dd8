//! Plan compilation: loops unrolled within their bounds, dependencies
//! expanded, a deterministic content hash.

use crate::common;

use common::{V3, V4, V5, doc, valid, vars};
use evoflux_fleet::contract::FleetStep;
use evoflux_fleet::plan::{NodeRole, NodeWork, PLAN_FORMAT_VERSION};
use evoflux_fleet::{
    ExecutionPlan, FLEET_LOOP_MAX_ATTEMPTS, FleetContract, LoopCheckKind, PlanError,
    compile_fleet_plan,
};

fn compile(c: &FleetContract) -> ExecutionPlan {
    match compile_fleet_plan(c, &vars(&[("target", "the parser")])) {
        Ok(p) => p,
        Err(e) => panic!("{e}"),
    }
}

fn ids(p: &ExecutionPlan) -> Vec<&str> {
    p.node_ids().collect()
}

#[test]
fn a_loop_unrolls_into_checks_and_repairs() {
    let p = compile(&valid(&doc(V3)));
    assert_eq!(
        ids(&p),
        [
            "build",
            "suite.check.1",
            "suite.repair.1",
            "suite.check.2",
            "suite.repair.2",
            "suite.check.3",
            "commit"
        ]
    );
    let node = |id: &str| p.node(id).unwrap_or_else(|| panic!("no node {id}"));
    assert_eq!(node("suite.check.1").dependencies, ["build"]);
    assert_eq!(node("suite.repair.1").dependencies, ["suite.check.1"]);
    assert_eq!(node("suite.check.2").dependencies, ["suite.repair.1"]);
    assert_eq!(node("suite.check.3").dependencies, ["suite.repair.2"]);
    assert_eq!(node("suite.check.2").role, NodeRole::Check);
    assert_eq!(node("suite.check.2").attempt, Some(2));
    assert_eq!(node("suite.check.2").position, "suite.check");
    assert_eq!(node("suite.repair.2").position, "suite.repair");
    assert_eq!(node("suite.repair.1").role, NodeRole::Repair);
    assert!(matches!(
        &node("suite.check.1").work,
        NodeWork::Code { command, verification: true, .. } if command == "test"
    ));
    assert!(
        matches!(&node("suite.repair.1").work, NodeWork::Agent { agent, .. } if agent == "coder")
    );
    // A dependency on a loop is a dependency on all of its checks; a
    // commitFrom loop stands for its repairs, newest first.
    assert_eq!(
        node("commit").dependencies,
        ["suite.check.1", "suite.check.2", "suite.check.3"]
    );
    assert!(matches!(
        &node("commit").work,
        NodeWork::Code { commit_from, verification: false, .. }
            if commit_from == &["suite.repair.2", "suite.repair.1", "build"]
    ));
    assert_eq!(p.loops.len(), 1);
    assert_eq!(p.loops[0].check_kind, LoopCheckKind::Code);
    assert_eq!(
        p.loops[0].check_ids,
        ["suite.check.1", "suite.check.2", "suite.check.3"]
    );
    assert_eq!(p.loops[0].repair_ids, ["suite.repair.1", "suite.repair.2"]);
    assert_eq!(p.task, "Work on the parser.");
    assert_eq!(p.format, PLAN_FORMAT_VERSION);
    assert!(
        p.nodes.iter().all(|n| n.writes.is_none()),
        "no claim below v4"
    );
}

#[test]
fn the_loop_bound_is_five_verifications_and_four_repairs() {
    assert_eq!(FLEET_LOOP_MAX_ATTEMPTS, 5);
    for attempts in 1..=FLEET_LOOP_MAX_ATTEMPTS {
        let c = valid(&doc(
            &V3.replace("maxAttempts: 3", &format!("maxAttempts: {attempts}"))
        ));
        let p = compile(&c);
        let checks = p.nodes.iter().filter(|n| n.role == NodeRole::Check).count();
        let repairs = p
            .nodes
            .iter()
            .filter(|n| n.role == NodeRole::Repair)
            .count();
        assert_eq!(checks, attempts as usize);
        assert_eq!(repairs, attempts as usize - 1);
        if attempts == FLEET_LOOP_MAX_ATTEMPTS {
            assert_eq!((checks, repairs), (5, 4));
            assert_eq!(
                p.loops[0].check_ids.last().map(String::as_str),
                Some("suite.check.5")
            );
            assert_eq!(
                p.loops[0].repair_ids.last().map(String::as_str),
                Some("suite.repair.4")
            );
        }
        // Every node id is unique: every attempt has its own receipt.
        let mut seen: Vec<&str> = ids(&p);
        seen.sort_unstable();
        seen.dedup();
        assert_eq!(seen.len(), p.nodes.len());
    }
}

#[test]
fn nodes_come_in_topological_order() {
    for text in [V3, V4, V5] {
        let p = compile(&valid(&doc(text)));
        for (i, node) in p.nodes.iter().enumerate() {
            for dep in &node.dependencies {
                let at = p.nodes.iter().position(|n| &n.id == dep);
                assert!(at.is_some_and(|at| at < i), "{} before {dep}", node.id);
            }
        }
    }
}

#[test]
fn the_hash_is_deterministic_and_covers_the_prompt() {
    let c = valid(&doc(V4));
    let a = compile(&c);
    let b = compile(&valid(&doc(V4)));
    assert_eq!(a, b);
    assert_eq!(a.hash, b.hash);
    assert_eq!(a.compute_hash().ok(), Some(a.hash.clone()));

    let mut edited = c.clone();
    edited.body = "Work on {{target}} carefully.".to_owned();
    assert_ne!(
        compile(&edited).hash,
        a.hash,
        "a changed prompt changes the hash"
    );

    let other_vars = compile_fleet_plan(&c, &vars(&[("target", "the lexer")]));
    assert_ne!(
        other_vars.ok().map(|p| p.hash),
        Some(a.hash.clone()),
        "so do the variables"
    );

    let mut bigger = c.clone();
    if let Some(FleetStep::Loop(l)) = bigger.steps.get_mut(1) {
        l.max_attempts = 3;
    }
    assert_ne!(compile(&bigger).hash, a.hash, "and the loop bound");

    // Where the file lives and what it says about itself do not.
    let mut moved = c.clone();
    moved.path = "elsewhere/fleets/bounded.md".into();
    moved.description = "another description".to_owned();
    assert_eq!(compile(&moved).hash, a.hash);
}

#[test]
fn v4_nodes_carry_their_boundaries() {
    let p = compile(&valid(&doc(V4)));
    let writes = |id: &str| {
        p.node(id)
            .and_then(|n| n.writes.as_ref())
            .map(|w| w.to_string())
    };
    assert_eq!(writes("build").as_deref(), Some("src/"));
    assert_eq!(
        writes("suite.check.1").as_deref(),
        Some("(nothing: readonly)")
    );
    assert_eq!(writes("suite.repair.1").as_deref(), Some("src/"));
    assert_eq!(writes("docs").as_deref(), Some("README.md, docs/"));
}

#[test]
fn missing_variables_fail_before_anything_runs() {
    let c = valid(&doc(&V3.replace(
        "check: {kind: code, command: test, scope: workspace}",
        "check: {kind: code, command: test, args: ['{{suite_filter}}', '{{target}}'], scope: workspace}",
    )));
    match compile_fleet_plan(&c, &vars(&[])) {
        Err(PlanError::Unresolved(e)) => {
            assert_eq!(e.names, ["target", "suite_filter"]);
        }
        other => panic!("expected unresolved variables, got {other:?}"),
    }
    let p = compile_fleet_plan(&c, &vars(&[("target", "t"), ("suite_filter", "unit")]));
    let Ok(p) = p else { panic!("{p:?}") };
    assert!(matches!(
        &p.node("suite.check.2").map(|n| &n.work),
        Some(NodeWork::Code { args, .. }) if args == &["unit", "t"]
    ));
}

#[test]
fn a_bound_argument_must_be_data() {
    let c = valid(&doc(&V3.replace(
        "check: {kind: code, command: test, scope: workspace}",
        "check: {kind: code, command: test, args: [unit, '{{suite_filter}}'], scope: workspace}",
    )));
    let long = "x".repeat(8_193);
    for bad in ["--all", "", "a\0b", long.as_str()] {
        match compile_fleet_plan(&c, &vars(&[("target", "t"), ("suite_filter", bad)])) {
            Err(PlanError::Argument {
                position,
                index,
                name,
            }) => {
                assert_eq!(
                    (position.as_str(), index, name.as_str()),
                    ("suite.check", 1, "suite_filter")
                );
            }
            other => panic!("{bad:?}: expected a refused argument, got {other:?}"),
        }
    }
    assert!(compile_fleet_plan(&c, &vars(&[("target", "t"), ("suite_filter", "a-b")])).is_ok());
}

#[test]
fn an_invalid_hand_built_contract_is_not_compiled() {
    let mut c = valid(&doc(V3));
    if let Some(FleetStep::Agent(a)) = c.steps.get_mut(0) {
        a.dependencies.push("ghost".to_owned());
    }
    match compile_fleet_plan(&c, &vars(&[("target", "x")])) {
        Err(PlanError::Invalid { diagnostics, .. }) => {
            assert_eq!(diagnostics.codes(), ["fleet/unknown-dependency"]);
        }
        other => panic!("expected invalid, got {other:?}"),
    }
}

#[test]
fn a_hand_built_loop_outside_the_bound_is_not_unrolled() {
    // The parser refuses these; a contract built or edited in code must not
    // unroll into more verifications than the spec allows, or into none.
    for attempts in [0, FLEET_LOOP_MAX_ATTEMPTS + 1, u32::MAX] {
        let mut c = valid(&doc(V3));
        let Some(FleetStep::Loop(l)) = c.steps.get_mut(1) else {
            panic!("suite is the second step")
        };
        l.max_attempts = attempts;
        match compile_fleet_plan(&c, &vars(&[("target", "x")])) {
            Err(PlanError::Invalid { diagnostics, .. }) => {
                assert_eq!(
                    diagnostics.codes(),
                    ["fleet/loop-attempts-invalid"],
                    "{attempts}"
                );
                let d = &diagnostics.as_slice()[0];
                assert_eq!(d.locator.field.as_deref(), Some("steps.suite.maxAttempts"));
            }
            other => panic!("{attempts}: expected invalid, got {other:?}"),
        }
    }
}

#[test]
fn compiled_v3_plan() {
    insta::assert_json_snapshot!(compile(&valid(&doc(V3))));
}

#[test]
fn compiled_v5_plan() {
    insta::assert_json_snapshot!(compile(&valid(&doc(V5))));
}
