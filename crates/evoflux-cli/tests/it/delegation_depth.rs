#![allow(clippy::unwrap_used, clippy::expect_used)]

//! Delegation below the lead, through the real binary: a member hands a
//! task to another member (depth 2) and the answers flow back up; the
//! member at the last level of `[teams] max_depth` is not offered the
//! delegation tool and a call of it is refused with its code; an agent on
//! the dispatch path cannot be handed a task below itself. The tree is in
//! the events and in `sessions show`.

use crate::common;

use common::{Sandbox, member, of_type, run, run_ok, script};
use serde_json::Value;

/// The events `child` wraps, `levels` deep (1: a child's own events).
fn nested(events: &[Value], levels: usize) -> Vec<Value> {
    let mut at: Vec<Value> = events.to_vec();
    for _ in 0..levels {
        at = at
            .iter()
            .filter(|e| e["type"] == "child")
            .map(|e| e["event"].clone())
            .collect();
    }
    at
}

#[test]
fn a_member_delegates_to_its_member_and_the_answers_flow_back_up() {
    let s = Sandbox::new();
    // Depth 2, the last level: it tries to hand the task further.
    let coder = script(
        &s,
        "coder.yaml",
        r#"
turns:
  - expect: {user: {contains: "build the parser"}}
    reply:
      tool_calls:
        - {name: agent, arguments: {agent_id: tester, message: "test the parser"}}
  - expect: {tool_result: {contains: "dispatch/depth-limit"}}
    reply: {text: "coder: parser built"}
"#,
    );
    // Depth 1: hands the work to the coder, then tries to hand a task to
    // itself (a cycle).
    let planner = script(
        &s,
        "planner.yaml",
        r#"
turns:
  - expect: {user: {contains: "plan and build"}}
    reply:
      tool_calls:
        - {name: agent, arguments: {agent_id: coder, message: "build the parser"}}
  - expect: {tool_result: {contains: "coder: parser built"}}
    reply:
      tool_calls:
        - {name: agent, arguments: {agent_id: planner, message: "plan it again"}}
  - expect: {tool_result: {contains: "dispatch/cycle"}}
    reply: {text: "planner: the coder reports parser built"}
"#,
    );
    let tester = script(&s, "tester.yaml", "turns: []\n");
    member(&s, "planner", "Plans work and hands it out.", &planner);
    member(&s, "coder", "Writes code.", &coder);
    member(&s, "tester", "Tests code.", &tester);
    let lead = script(
        &s,
        "lead.yaml",
        r#"
turns:
  - reply:
      tool_calls:
        - {name: agent, arguments: {agent_id: planner, message: "plan and build a parser"}}
  - expect: {tool_result: {contains: "the coder reports parser built"}}
    reply: {text: "Done: the parser is built."}
"#,
    );
    let ev = run_ok(&s, &["--json", "run", "--model", &lead, "build a parser"]);
    assert_eq!(
        of_type(&ev, "turn_completed")[0]["text"],
        "Done: the parser is built."
    );
    let lead_id = of_type(&ev, "session_started")[0]["session_id"]
        .as_str()
        .unwrap()
        .to_owned();

    // The lead dispatched the planner at depth 1.
    let first = of_type(&ev, "dispatch_started");
    assert_eq!(first.len(), 1);
    assert_eq!(first[0]["agent"], "planner");
    assert_eq!(first[0]["depth"], 1);
    assert_eq!(first[0]["parent_session_id"], lead_id.as_str());
    let planner_id = first[0]["child_session_id"].as_str().unwrap().to_owned();
    let ended = of_type(&ev, "dispatch_ended");
    assert_eq!(ended[0]["depth"], 1);
    assert_eq!(ended[0]["status"], "completed");

    // The planner was offered the delegation tool and used it at depth 2.
    let planner_events = nested(&ev, 1);
    let planner_started = of_type(&planner_events, "session_started");
    assert!(
        planner_started[0]["tools"]
            .as_array()
            .unwrap()
            .contains(&"agent".into()),
        "{:#}",
        planner_started[0]
    );
    let second = of_type(&planner_events, "dispatch_started");
    assert_eq!(second.len(), 1, "the cycle opened no session");
    assert_eq!(second[0]["agent"], "coder");
    assert_eq!(second[0]["depth"], 2);
    assert_eq!(second[0]["parent_session_id"], planner_id.as_str());
    let coder_id = second[0]["child_session_id"].as_str().unwrap().to_owned();
    // Its call of itself was refused with the cycle's code.
    let refused: Vec<&Value> = of_type(&planner_events, "tool_ended")
        .into_iter()
        .filter(|e| e["is_error"] == true)
        .collect();
    assert_eq!(refused.len(), 1);
    assert!(
        refused[0]["content"]
            .as_str()
            .unwrap()
            .contains("[dispatch/cycle]"),
        "{:#}",
        refused[0]
    );

    // The coder, at the last level, was not offered it: it says why.
    let coder_events = nested(&ev, 2);
    let coder_started = of_type(&coder_events, "session_started");
    let tools = coder_started[0]["tools"].as_array().unwrap();
    assert!(!tools.contains(&"agent".into()), "{tools:?}");
    let left_out: Vec<&Value> = coder_started[0]["unavailable_tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|u| u["tool"] == "agent")
        .collect();
    assert_eq!(left_out.len(), 1);
    assert_eq!(left_out[0]["code"], "dispatch/depth-limit");
    // Its depth-3 attempt was refused with that code, and nothing opened.
    let attempt: Vec<&Value> = of_type(&coder_events, "tool_ended")
        .into_iter()
        .filter(|e| e["tool"] == "agent")
        .collect();
    assert_eq!(attempt.len(), 1);
    assert_eq!(attempt[0]["is_error"], true);
    assert!(
        attempt[0]["content"]
            .as_str()
            .unwrap()
            .contains("[dispatch/depth-limit]")
    );
    assert!(of_type(&coder_events, "dispatch_started").is_empty());
    assert!(of_type(&nested(&ev, 3), "session_started").is_empty());

    // The store holds the tree: lead → planner → coder.
    let shown = s.json(&["--json", "sessions", "show", &lead_id]);
    let tree: Vec<(u64, &str, &str)> = shown["tree"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["depth"].as_u64().unwrap(),
                e["session"]["lead"].as_str().unwrap(),
                e["session"]["id"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        tree,
        [
            (1, "planner", planner_id.as_str()),
            (2, "coder", coder_id.as_str())
        ]
    );
    // `sessions show` indents each child under the one that dispatched it.
    let out = s.run(&["sessions", "show", &lead_id]);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(&format!("\n  ↳ child {planner_id} · planner")),
        "{text}"
    );
    assert!(
        text.contains(&format!("\n    ↳ child {coder_id} · coder")),
        "{text}"
    );
}

#[test]
fn max_depth_one_keeps_delegation_to_the_lead_and_a_bad_value_is_named() {
    let s = Sandbox::new();
    s.user("config.toml", "[teams]\nmax_depth = 1\n");
    let info = s.json(&["--json", "info"]);
    assert_eq!(
        info["config"]["teams"]["max_depth"], 1,
        "{:#}",
        info["config"]
    );
    let worker = script(
        &s,
        "worker.yaml",
        r#"
turns:
  - expect: {user: {contains: "do it"}}
    reply:
      tool_calls:
        - {name: agent, arguments: {agent_id: worker, message: "again"}}
  - expect: {tool_result: {contains: "dispatch/depth-limit"}}
    reply: {text: "done alone"}
"#,
    );
    member(&s, "worker", "Works.", &worker);
    let lead = script(
        &s,
        "lead.yaml",
        r#"
turns:
  - reply:
      tool_calls:
        - {name: agent, arguments: {agent_id: worker, message: "do it"}}
  - expect: {tool_result: {contains: "done alone"}}
    reply: {text: "ok"}
"#,
    );
    let ev = run_ok(&s, &["--json", "run", "--model", &lead, "go"]);
    assert_eq!(of_type(&ev, "turn_completed")[0]["text"], "ok");
    let child = nested(&ev, 1);
    let started = of_type(&child, "session_started");
    assert!(
        !started[0]["tools"]
            .as_array()
            .unwrap()
            .contains(&"agent".into())
    );

    // Out of range: an error naming the key, with its code.
    s.user("config.toml", "[teams]\nmax_depth = 0\n");
    let out = run(&s, &["--json", "info"]);
    assert!(!out.status.success());
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(all.contains("config/teams-max-depth-invalid"), "{all}");
    assert!(all.contains("teams.max_depth"), "{all}");
}

#[test]
fn a_depth_two_child_gets_no_more_model_calls_than_its_parent_has_left() {
    let s = Sandbox::new();
    // Three model calls for the lead's turn: it spends one dispatching the
    // planner (two left), the planner one dispatching the coder (one
    // left), so the coder stops after its first call.
    let coder = script(
        &s,
        "coder.yaml",
        r#"
turns:
  - expect: {user: {contains: "build the parser"}}
    reply:
      text: "coder: reading first"
      tool_calls:
        - {name: read, arguments: {path: "parser.rs"}}
  - reply: {text: "coder: parser built"}
"#,
    );
    let planner = script(
        &s,
        "planner.yaml",
        r#"
turns:
  - expect: {user: {contains: "plan and build"}}
    reply:
      tool_calls:
        - {name: agent, arguments: {agent_id: coder, message: "build the parser"}}
  - expect: {tool_result: {contains: "stopped at its limit of model calls"}}
    reply: {text: "planner: the coder ran out of calls"}
"#,
    );
    member(&s, "planner", "Plans work and hands it out.", &planner);
    member(&s, "coder", "Writes code.", &coder);
    let lead = script(
        &s,
        "lead.yaml",
        r#"
turns:
  - reply:
      tool_calls:
        - {name: agent, arguments: {agent_id: planner, message: "plan and build a parser"}}
  - expect: {tool_result: {contains: "the coder ran out of calls"}}
    reply: {text: "Not done: the coder ran out."}
"#,
    );
    let ev = run_ok(
        &s,
        &[
            "--json",
            "run",
            "--max-model-calls",
            "3",
            "--model",
            &lead,
            "build a parser",
        ],
    );
    assert_eq!(
        of_type(&ev, "turn_completed")[0]["text"],
        "Not done: the coder ran out."
    );
    let calls = |events: &[Value]| of_type(events, "model_call_completed").len();
    assert_eq!(calls(&ev), 2);
    let planner_events = nested(&ev, 1);
    assert_eq!(calls(&planner_events), 2, "the planner's two left");
    // The coder, at depth 2, stopped at the one call left to it.
    let coder_events = nested(&ev, 2);
    assert_eq!(calls(&coder_events), 1);
    let ended = of_type(&planner_events, "dispatch_ended");
    assert_eq!(ended.len(), 1);
    assert_eq!(ended[0]["depth"], 2);
    assert_eq!(ended[0]["agent"], "coder");
    assert_eq!(ended[0]["status"], "limit_reached", "{:#}", ended[0]);
    assert_eq!(ended[0]["is_error"], true);
    assert_eq!(
        of_type(&coder_events, "turn_completed")[0]["status"],
        "limit_reached"
    );

    // Without `--json`, each dispatch line names its chain from the lead,
    // one step in from the call that opened it; the coder's call sits
    // one step further in.
    let out = run(
        &s,
        &[
            "run",
            "--max-model-calls",
            "3",
            "--model",
            &lead,
            "build a parser",
        ],
    );
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stderr);
    let line = |prefix: &str| {
        text.lines()
            .position(|l| l.starts_with(prefix))
            .unwrap_or_else(|| panic!("no line starting {prefix:?} in:\n{text}"))
    };
    let lead_name = of_type(&ev, "session_started")[0]["lead"]
        .as_str()
        .unwrap()
        .to_owned();
    let planner_line = line(&format!("  ⇢ {lead_name} → planner (session "));
    let coder_line = line(&format!("      ⇢ {lead_name} → planner → coder (session "));
    let read = line("        → read ");
    let answered = line("      ✗ coder answered");
    assert!(
        planner_line < coder_line && coder_line < read && read < answered,
        "{text}"
    );
}
