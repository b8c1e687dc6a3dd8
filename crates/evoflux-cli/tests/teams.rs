#![allow(clippy::unwrap_used, clippy::expect_used)]

//! Teams that delegate, through the real binary: the lead's `agent` tool
//! reaches the members defined as files, each member runs as a child
//! session on its own model, and its answer comes back to the lead.

mod common;

use common::{Sandbox, events, of_type, run, script};

fn member(s: &Sandbox, name: &str, description: &str, model: &str) {
    s.project(
        &format!("agents/{name}.md"),
        &format!("---\nrole: member\ndescription: {description}\nmodel: {model}\n---\nYou are the {name}.\n"),
    );
}

#[test]
fn a_lead_delegates_to_two_members_and_gets_their_answers() {
    let s = Sandbox::new();
    let researcher = script(
        &s,
        "researcher.yaml",
        "turns:\n  - expect: {user: {contains: find the facts}}\n    reply: {text: \"Fact: water boils at 100 C.\"}\n",
    );
    let writer = script(
        &s,
        "writer.yaml",
        "turns:\n  - expect: {user: {contains: write it up}}\n    reply: {text: \"Report: boiling point noted.\"}\n",
    );
    member(&s, "researcher", "Finds facts.", &researcher);
    member(&s, "writer", "Writes reports.", &writer);
    let lead = script(
        &s,
        "lead.yaml",
        r#"
turns:
  - reply:
      tool_calls:
        - {name: agent, arguments: {agent_id: researcher, message: "find the facts about water"}}
  - expect: {tool_result: {contains: "water boils at 100 C"}}
    reply:
      tool_calls:
        - {name: agent, arguments: {agent_id: writer, message: "write it up: water boils at 100 C"}}
  - expect: {tool_result: {contains: "Report: boiling point noted."}}
    reply:
      tool_calls:
        - {name: agent, arguments: {agent_id: nobody, message: "anything"}}
  - expect: {tool_result: {contains: "is not one of"}}
    reply: {text: "Done: the report is written."}
"#,
    );
    let out = run(
        &s,
        &["--json", "run", "--model", &lead, "research and write"],
    );
    assert!(
        out.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let ev = events(&out);
    let started: Vec<&str> = of_type(&ev, "dispatch_started")
        .iter()
        .map(|e| e["agent"].as_str().unwrap())
        .collect();
    assert_eq!(started, ["researcher", "writer"]);
    let ended = of_type(&ev, "dispatch_ended");
    assert!(
        ended
            .iter()
            .all(|e| e["status"] == "completed" && e["is_error"] == false)
    );
    // The children's own events are in the stream, tagged with the call.
    let child_turns: Vec<&serde_json::Value> = of_type(&ev, "child")
        .into_iter()
        .filter(|e| e["event"]["type"] == "turn_completed")
        .collect();
    assert_eq!(child_turns.len(), 2);
    assert_eq!(
        of_type(&ev, "turn_completed")[0]["text"],
        "Done: the report is written."
    );
    // The lead was offered exactly its members.
    let started = of_type(&ev, "session_started");
    assert!(
        started[0]["tools"]
            .as_array()
            .unwrap()
            .contains(&"agent".into())
    );

    // Both children are durable sessions with the lead as parent.
    let list = s.json(&["--json", "sessions", "list"]);
    let sessions = list.as_array().unwrap();
    assert_eq!(sessions.len(), 3);
    let lead_id = of_type(&ev, "session_started")[0]["session_id"].clone();
    let children: Vec<&serde_json::Value> = sessions
        .iter()
        .filter(|x| x["parent"]["session_id"] == lead_id)
        .collect();
    assert_eq!(children.len(), 2, "{list:#}");
    assert!(children.iter().any(|c| c["lead"] == "researcher"));
}

#[test]
fn a_member_of_another_lead_is_never_offered_and_one_without_a_model_runs_on_the_leads() {
    let s = Sandbox::new();
    s.project(
        "agents/boss.md",
        "---\nrole: lead\ndescription: Another lead.\n---\nLead.\n",
    );
    s.project(
        "agents/helper.md",
        "---\nrole: member\nlead: boss\ndescription: Helps the boss.\n---\nHelp.\n",
    );
    s.project(
        "agents/mine.md",
        "---\nrole: member\ndescription: Mine.\n---\nMine.\n",
    );
    let lead = script(
        &s,
        "lead.yaml",
        r#"
turns:
  - reply:
      tool_calls:
        - {name: agent, arguments: {agent_id: helper, message: "help"}}
  - expect: {tool_result: {contains: "is not one of"}}
    reply:
      tool_calls:
        - {name: agent, arguments: {agent_id: mine, message: "do it"}}
  # `mine` has no model of its own: it runs on the lead's, so this script
  # answers its turn too.
  - expect: {user: {contains: "do it"}}
    reply: {text: "mine did it"}
  - expect: {tool_result: {contains: "mine did it"}}
    reply: {text: "helper is not mine"}
"#,
    );
    let out = run(&s, &["--json", "run", "--model", &lead, "go"]);
    assert!(
        out.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}
