//! The clio `dispatch-admission` focused tests, re-expressed with the same
//! inputs and expected outputs.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use evoflux_agents::ToolCatalog;
use evoflux_agents::worker::{
    AgentSpec, MismatchDecision, TaskType, assess_capability_mismatch, framework_specs,
};

fn installed() -> Vec<AgentSpec> {
    framework_specs(&ToolCatalog::framework()).unwrap()
}

fn get(specs: &[AgentSpec], id: &str) -> AgentSpec {
    specs.iter().find(|s| s.id == id).unwrap().clone()
}

#[test]
fn dispatch_admission_pinned_verifier_refused_for_mutation_task() {
    let all = installed();
    let m = assess_capability_mismatch(
        &get(&all, "verifier"),
        "Fix the off-by-one bug in src/sum.ts",
        &all,
        false,
    )
    .unwrap();
    assert_eq!(m.decision, MismatchDecision::Refuse);
    assert_eq!(m.task_type, TaskType::Debug);
    assert_eq!(m.suggested_agent_id.as_deref(), Some("coder"));
    assert!(
        m.detail.contains("cannot write to the workspace"),
        "{}",
        m.detail
    );
    assert!(m.detail.contains("agent:\"coder\""), "{}", m.detail);
    // The coder, declaring mutation-report, is admitted for the same task.
    let coder = get(&all, "coder");
    assert_eq!(coder.result_contract.kind.as_str(), "mutation-report");
    assert!(
        assess_capability_mismatch(&coder, "Fix the off-by-one bug in src/sum.ts", &all, false)
            .is_none()
    );
}

#[test]
fn dispatch_admission_scout_investigation_wording() {
    let all = installed();
    let scout = get(&all, "scout");
    assert!(
        assess_capability_mismatch(
            &scout,
            "Find where to add environment awareness",
            &all,
            false
        )
        .is_none()
    );
    for task in [
        "Add environment awareness to the config loader",
        "Write the report to disk",
    ] {
        let m = assess_capability_mismatch(&scout, task, &all, false).unwrap();
        assert_eq!(m.decision, MismatchDecision::Refuse, "{task}");
    }
}

#[test]
fn read_verb_turns_refusal_into_flag() {
    let all = installed();
    let m = assess_capability_mismatch(
        &get(&all, "scout"),
        "Explain how the config loader resolves settings and cite file paths",
        &all,
        false,
    )
    .unwrap();
    assert_eq!(m.decision, MismatchDecision::Flag);
    assert_eq!(m.task_type, TaskType::Config);
    assert!(m.detail.starts_with("capability_mismatch="), "{}", m.detail);
}

#[test]
fn auto_selected_worker_is_flagged_not_refused() {
    let all = installed();
    let m = assess_capability_mismatch(&get(&all, "scout"), "Fix the TTL cache bug", &all, true)
        .unwrap();
    assert_eq!(m.decision, MismatchDecision::Flag);
}

#[test]
fn no_mismatch_for_writers_or_read_tasks() {
    let all = installed();
    assert!(assess_capability_mismatch(&get(&all, "coder"), "Fix the bug", &all, false).is_none());
    assert!(
        assess_capability_mismatch(
            &get(&all, "verifier"),
            "Review the diff for boundary violations",
            &all,
            false
        )
        .is_none()
    );
}

#[test]
fn suggestion_follows_installed_specialists() {
    let all = installed();
    let verifier = get(&all, "verifier");
    let two = vec![verifier.clone(), get(&all, "tester")];
    let m = assess_capability_mismatch(&verifier, "Add unit tests for src/format.ts", &two, false)
        .unwrap();
    assert_eq!(m.suggested_agent_id.as_deref(), Some("tester"));
    let alone = vec![verifier.clone()];
    let m =
        assess_capability_mismatch(&verifier, "Add unit tests for src/format.ts", &alone, false)
            .unwrap();
    assert_eq!(m.suggested_agent_id, None);
    assert!(
        m.detail
            .contains("No installed recipe can change the workspace")
    );
}
