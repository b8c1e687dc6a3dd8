#![allow(clippy::unwrap_used, clippy::expect_used)]

//! Claude Code subagents, through the real binary: a `.claude/agents/*.md`
//! file copied as it is (comma-separated Claude tool names, a `model:`
//! alias, keys evoflux does not read) joins the default Coding lead's team
//! in a trusted repository, with exactly the tools it lists, and is listed
//! by `agents list` and `doctor` with where it came from.

use crate::common;

use common::{Sandbox, of_type, run_in};
use serde_json::Value;

const REVIEWER: &str = "---\nname: reviewer\ndescription: Reviews a change for bugs. Use after edits.\n\
tools: Read, Grep, Glob\nmodel: inherit\ncolor: purple\n---\nYou are a careful code reviewer.\n";

fn coding_agents(s: &Sandbox) -> Vec<Value> {
    let v = s.json(&["agents", "list", "--mode", "coding", "--json"]);
    let listing = v.as_array().map_or(&v, |a| &a[0]).clone();
    listing["agents"].as_array().unwrap().clone()
}

#[test]
fn a_claude_subagent_joins_the_default_coding_lead_and_is_dispatched() {
    let s = Sandbox::new();
    s.write(s.repo().join(".claude/agents/reviewer.md"), REVIEWER);
    s.write(
        s.home().join(".claude/agents/helper.md"),
        "---\nname: helper\ndescription: Helps.\ntools: [read, ls]\n---\nHelp.\n",
    );
    // Untrusted, the repository's subagent is not loaded; the user's is.
    let names: Vec<String> = coding_agents(&s)
        .iter()
        .map(|a| a["name"].as_str().unwrap().to_owned())
        .collect();
    assert!(!names.contains(&"reviewer".to_owned()), "{names:?}");
    assert!(names.contains(&"helper".to_owned()), "{names:?}");

    s.trust();
    let agents = coding_agents(&s);
    let reviewer = agents.iter().find(|a| a["name"] == "reviewer").unwrap();
    assert_eq!(reviewer["valid"], true, "{reviewer:#}");
    assert_eq!(reviewer["role"], "member");
    assert_eq!(reviewer["lead"], "evoflux");
    assert!(
        reviewer["source"]["path"]
            .as_str()
            .unwrap()
            .ends_with(".claude/agents/reviewer.md")
    );
    assert_eq!(
        reviewer["effective"]["tools"],
        serde_json::json!(["skill", "read", "grep", "glob"])
    );
    let helper = agents.iter().find(|a| a["name"] == "helper").unwrap();
    assert_eq!(
        helper["effective"]["tools"],
        serde_json::json!(["skill", "read", "ls"]),
        "a listed `tools:` restricts"
    );

    let doctor = s.command(&["doctor", "--json"]).output().unwrap();
    let report: Value = serde_json::from_slice(&doctor.stdout).unwrap();
    let details = report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["check"] == "agents")
        .unwrap()["details"]
        .to_string();
    assert!(
        details.contains("Claude Code agent `reviewer` from")
            && details.contains(".claude/agents/reviewer.md"),
        "{details}"
    );

    // `model: inherit`: the member runs on the lead's (scripted) model,
    // so this script answers its turn too.
    let lead = common::script(
        &s,
        "lead.yaml",
        r#"
turns:
  - reply:
      tool_calls:
        - {name: agent, arguments: {agent_id: reviewer, message: "review the last change"}}
  - expect: {user: {contains: "review the last change"}}
    reply: {text: "LGTM: no bugs found."}
  - expect: {tool_result: {contains: "LGTM"}}
    reply: {text: "The reviewer approved."}
"#,
    );
    let ev = run_in(&s, "coding", &lead, "review it");
    let started: Vec<&str> = of_type(&ev, "dispatch_started")
        .iter()
        .map(|e| e["agent"].as_str().unwrap())
        .collect();
    assert_eq!(started, ["reviewer"]);
    let ended = of_type(&ev, "dispatch_ended");
    assert_eq!(ended[0]["status"], "completed", "{ended:?}");
    let child_tools: Vec<String> = of_type(&ev, "child")
        .into_iter()
        .find(|e| e["event"]["type"] == "session_started")
        .unwrap()["event"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap().to_owned())
        .collect();
    assert_eq!(child_tools, ["skill", "read", "grep", "glob"]);
    assert_eq!(
        of_type(&ev, "turn_completed").last().unwrap()["text"],
        "The reviewer approved."
    );
}
