#![allow(clippy::unwrap_used, clippy::expect_used)]

//! Skills in a real run: the scripted model loads a project skill through
//! the `skill` tool, reads one of its resources, and a resumed session
//! still knows the skill is loaded.

use crate::common;

use std::process::Output;

use common::Sandbox;
use serde_json::Value;

fn script(s: &Sandbox, name: &str, yaml: &str) -> String {
    let path = s.tmp.path().join(name);
    std::fs::write(&path, yaml).unwrap();
    format!("scripted:{}", path.display())
}

fn events(out: &Output) -> Vec<Value> {
    assert!(
        out.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn of_type<'a>(events: &'a [Value], kind: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["type"] == kind).collect()
}

fn project_skill(s: &Sandbox) {
    s.project(
        "skills/build-fixer/SKILL.md",
        "---\nname: build-fixer\ndescription: Fix failing cargo builds.\n---\n# Build fixer\n\nFIXER-BODY: run cargo check first.\nRead `references/errors.md` when an error code appears.\n",
    );
    s.project(
        "skills/build-fixer/references/errors.md",
        "E0308 means mismatched types.\n",
    );
    s.project(
        "skills/build-fixer/evals/trigger-cases.json",
        "[{\"query\": \"EVAL-ONLY\", \"should_trigger\": true}]",
    );
}

#[test]
fn a_scripted_run_loads_a_project_skill_through_the_skill_tool() {
    let s = Sandbox::new();
    project_skill(&s);
    let model = script(
        &s,
        "skill.yaml",
        r#"
turns:
  - expect: {user: {contains: build}}
    reply:
      tool_calls:
        - {name: skill, arguments: {action: load, skill_name: build-fixer}}
  - expect: {tool_result: {contains: "FIXER-BODY: run cargo check first."}}
    reply:
      tool_calls:
        - {name: skill, arguments: {action: read_resource, skill_name: build-fixer, resource_path: references/errors.md}}
  - expect: {tool_result: {contains: E0308 means mismatched types}}
    reply:
      text: Fixed using the build-fixer skill.
"#,
    );
    let out = s
        .command(&[
            "--json",
            "run",
            "--mode",
            "coding",
            "--model",
            &model,
            "the build is broken",
        ])
        .output()
        .unwrap();
    let ev = events(&out);
    let ended = of_type(&ev, "tool_ended");
    assert_eq!(ended.len(), 2);
    let activation = ended[0]["content"].as_str().unwrap();
    assert!(activation.starts_with("<skill_content name=\"build-fixer\""));
    assert!(activation.contains("- references/errors.md (30 bytes)"));
    assert!(
        !activation.contains("E0308"),
        "resource contents are not inlined"
    );
    assert!(!activation.contains("EVAL-ONLY"));
    let meta = &ended[0]["metadata"]["skill_activation"];
    assert_eq!(meta["skill"], "build-fixer");
    assert_eq!(meta["source"], "tool");
    assert_eq!(
        of_type(&ev, "turn_completed")[0]["text"],
        "Fixed using the build-fixer skill."
    );

    // The activation is durable: a resumed session answers a second load
    // with the already-loaded receipt.
    let id = of_type(&ev, "session_started")[0]["session_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let again = script(
        &s,
        "again.yaml",
        r#"
turns:
  - expect: {user: once more}
    reply:
      tool_calls:
        - {name: skill, arguments: {action: load, skill_name: build-fixer}}
  - expect: {tool_result: {contains: already loaded}}
    reply:
      text: Still loaded.
"#,
    );
    let out = s
        .command(&[
            "--json",
            "sessions",
            "resume",
            &id,
            "once more",
            "--model",
            &again,
        ])
        .output()
        .unwrap();
    let ev = events(&out);
    assert_eq!(
        of_type(&ev, "turn_completed")[0]["text"],
        "Still loaded.",
        "{ev:#?}"
    );
}

#[test]
fn dollar_name_activates_a_project_skill_before_the_first_model_call() {
    let s = Sandbox::new();
    project_skill(&s);
    let model = script(
        &s,
        "explicit.yaml",
        r#"
turns:
  - expect: {tool_result: {contains: "FIXER-BODY"}}
    reply:
      text: Following the skill.
"#,
    );
    let out = s
        .command(&[
            "--json",
            "run",
            "--mode",
            "coding",
            "--model",
            &model,
            "use $build-fixer on this",
        ])
        .output()
        .unwrap();
    let ev = events(&out);
    let started = of_type(&ev, "tool_started");
    assert_eq!(started.len(), 1);
    assert!(
        started[0]["call_id"]
            .as_str()
            .unwrap()
            .starts_with("explicit_")
    );
    assert_eq!(
        of_type(&ev, "tool_ended")[0]["metadata"]["skill_activation"]["source"],
        "explicit"
    );
}
