#![allow(clippy::unwrap_used, clippy::expect_used)]

//! Teams that delegate, through the real binary: the lead's `agent` tool
//! reaches the members defined as files, each member runs as a child
//! session on its own model, and its answer comes back to the lead.

use crate::common;

use common::{Sandbox, events, member, of_type, run, run_in, run_ok, script, stderr_codes};

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
    let ev = run_ok(
        &s,
        &["--json", "run", "--model", &lead, "research and write"],
    );
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
    // `sessions show` of the lead shows the tree.
    let shown = s.json(&["--json", "sessions", "show", lead_id.as_str().unwrap()]);
    let leads: Vec<&str> = shown["children"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["lead"].as_str().unwrap())
        .collect();
    assert_eq!(leads, ["researcher", "writer"]);
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
    run_ok(&s, &["--json", "run", "--model", &lead, "go"]);
}

/// A repository whose `src/config.rs` mentions the environment on line 6.
fn config_repo(s: &Sandbox) {
    s.write(
        s.repo().join("src/config.rs"),
        "pub struct Config {\n    pub name: String,\n}\n\nimpl Config {\n    pub fn from_env() -> Config { todo!() }\n}\n",
    );
}

fn scout_report(line: u32) -> String {
    serde_json::json!({
        "findings": [{"claim": "the config loader reads the environment", "path": "src/config.rs", "line": line}],
        "needsSplit": false,
        "proposedSubtasks": []
    })
    .to_string()
}

/// One script for the lead and the scout (which runs on the lead's
/// model): the lead dispatches, the scout greps, then answers with
/// `replies` in turn (a repair round after each failing one).
fn scout_script(s: &Sandbox, name: &str, replies: &[String], lead_expects: &str) -> String {
    let mut turns = String::from(
        "turns:\n  - reply:\n      tool_calls:\n        - {name: agent, arguments: {agent_id: scout, message: \"Find where to add environment awareness\"}}\n  - expect: {user: {contains: \"Find where\"}}\n    reply:\n      tool_calls:\n        - {name: grep, arguments: {pattern: from_env}}\n",
    );
    for (i, reply) in replies.iter().enumerate() {
        let expect = match i {
            0 => "{tool_result: {contains: \"src/config.rs:6:\"}}".to_owned(),
            _ => "{user: {contains: \"result contract\"}}".to_owned(),
        };
        turns.push_str(&format!(
            "  - expect: {expect}\n    reply: {{text: {}}}\n",
            serde_json::to_string(reply).unwrap()
        ));
    }
    turns.push_str(&format!(
        "  - expect: {{tool_result: {{contains: \"{lead_expects}\"}}}}\n    reply: {{text: done}}\n"
    ));
    script(s, name, &turns)
}

#[test]
fn scout_grounding_accepts_a_line_it_saw_and_repairs_then_exhausts_one_it_did_not() {
    let s = Sandbox::new();
    config_repo(&s);
    let model = scout_script(
        &s,
        "grounded.yaml",
        &[scout_report(6)],
        "reads the environment",
    );
    let ev = run_in(&s, "coding", &model, "look");
    let ended = of_type(&ev, "dispatch_ended");
    assert_eq!(ended[0]["contract"], "pass");
    assert_eq!(ended[0]["repairs"], 0);

    let s = Sandbox::new();
    config_repo(&s);
    let wrong = scout_report(2);
    let model = scout_script(
        &s,
        "ungrounded.yaml",
        &[wrong.clone(), wrong.clone(), wrong],
        "result_contract_exhausted",
    );
    // The lead went on, but the run reports the unmet contract: exit 1.
    let out = run(
        &s,
        &[
            "--json", "run", "--mode", "coding", "--model", &model, "look",
        ],
    );
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(stderr_codes(&out), ["dispatch/result-contract-exhausted"]);
    let ev = events(&out);
    let ended = of_type(&ev, "dispatch_ended");
    assert_eq!(ended[0]["contract"], "exhausted");
    assert_eq!(ended[0]["repairs"], 2);
    let result = of_type(&ev, "tool_ended")
        .into_iter()
        .find(|e| e["tool"] == "agent")
        .unwrap()["content"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(result.contains("src/config.rs:2"), "{result}");
    assert!(
        result.contains("src/config.rs:6-6"),
        "the ranges actually read: {result}"
    );
}

#[test]
fn admission_refuses_a_read_only_worker_for_a_change_and_names_who_can() {
    let s = Sandbox::new();
    config_repo(&s);
    let model = script(
        &s,
        "admission.yaml",
        r#"
turns:
  - reply:
      tool_calls:
        - {name: agent, arguments: {agent_id: verifier, message: "Add environment awareness to the config loader"}}
  - expect: {tool_result: {contains: "dispatch/admission-refused"}}
    reply:
      tool_calls:
        - {name: agent, arguments: {agent_id: scout, message: "Add environment awareness to the config loader"}}
  - expect: {tool_result: {contains: "dispatch/admission-refused"}}
    reply: {text: "neither can change files"}
"#,
    );
    let ev = run_in(&s, "coding", &model, "change it");
    let results: Vec<String> = of_type(&ev, "tool_ended")
        .iter()
        .map(|e| e["content"].as_str().unwrap().to_owned())
        .collect();
    assert!(results[0].contains("agent:\"coder\""), "{}", results[0]);
    // Nothing ran: admission decides before any child session opens.
    assert!(of_type(&ev, "dispatch_started").is_empty());
}

#[test]
fn a_dispatch_killed_mid_run_is_reattached_on_resume_and_never_run_twice() {
    use std::io::{BufRead, BufReader};
    use std::net::TcpListener;
    use std::process::Stdio;

    // The member's first model never answers: the process is killed while
    // the child waits on it.
    let hang = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = hang.local_addr().unwrap().port();
    let held = std::thread::spawn(move || {
        let mut open = Vec::new();
        for stream in hang.incoming().take(4) {
            open.push(stream);
        }
    });
    let s = Sandbox::new();
    s.user(
        "config.toml",
        &format!(
            "[providers.hang]\nkind = \"openai\"\nbase_url = \"http://127.0.0.1:{port}/v1\"\n"
        ),
    );
    member(&s, "slow", "Takes its time.", "hang:model");
    let lead = script(
        &s,
        "lead.yaml",
        "turns:\n  - reply:\n      tool_calls:\n        - {name: agent, arguments: {agent_id: slow, message: \"take your time\"}}\n",
    );
    let mut child = s
        .command(&["--json", "run", "--model", &lead, "go"])
        .env("PATH", std::env::var("PATH").unwrap())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut lead_id = String::new();
    for line in lines.by_ref() {
        let v: serde_json::Value = serde_json::from_str(&line.unwrap()).unwrap();
        if v["type"] == "session_started" && lead_id.is_empty() {
            lead_id = v["session_id"].as_str().unwrap().to_owned();
        }
        // The child has started its turn (and recorded its task) and waits
        // on the model that never answers.
        if v["type"] == "child" && v["event"]["type"] == "turn_started" {
            break;
        }
    }
    std::thread::sleep(std::time::Duration::from_millis(300));
    child.kill().unwrap();
    child.wait().unwrap();
    drop(held);

    // Resumed, on a model that answers: the same child continues.
    let answers = script(
        &s,
        "slow.yaml",
        "turns:\n  - reply: {text: \"slow but sure\"}\n",
    );
    member(&s, "slow", "Takes its time.", &answers);
    script(
        &s,
        "lead.yaml",
        "turns:\n  - expect: {tool_result: {contains: \"slow but sure\"}}\n    reply: {text: done}\n",
    );
    run_ok(&s, &["--json", "sessions", "resume", &lead_id]);
    let list = s.json(&["--json", "sessions", "list"]);
    let sessions = list.as_array().unwrap();
    assert_eq!(sessions.len(), 2, "one lead and one child: {list:#}");
    let child_id = sessions
        .iter()
        .find(|x| x["parent"]["session_id"] == lead_id.as_str())
        .unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let shown = s.json(&["--json", "sessions", "show", &child_id]);
    let users = shown["transcript"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["message"]["role"] == "user")
        .count();
    assert_eq!(users, 1, "the task was given once: {shown:#}");
}

/// Whether a process whose command line contains `marker` is running.
fn running(marker: &str) -> bool {
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .chars()
                .all(|c| c.is_ascii_digit())
        })
        .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
        .any(|c| String::from_utf8_lossy(&c).contains(marker))
}

#[test]
fn background_tasks_run_in_parallel_and_task_cancel_stops_one_and_its_commands() {
    let s = Sandbox::new();
    let marker = format!("sleep 1000 # waiter-{}", std::process::id());
    let waiter_call = serde_json::json!({"name": "shell", "arguments": {"command": marker, "yield_time_ms": 30000}});
    let waiter = script(
        &s,
        "waiter.yaml",
        &format!(
            "turns:\n  - reply:\n      tool_calls:\n        - {waiter_call}\n  - reply: {{text: \"waited\"}}\n"
        ),
    );
    let answerer = script(
        &s,
        "answerer.yaml",
        "turns:\n  - expect: {user: {contains: answer}}\n    reply: {text: \"the answer is 42\"}\n",
    );
    member(&s, "waiter", "Waits a long time.", &waiter);
    member(&s, "answerer", "Answers at once.", &answerer);
    let lead = script(
        &s,
        "lead.yaml",
        r#"
turns:
  - reply:
      tool_calls:
        - {name: agent, arguments: {agent_id: waiter, message: "wait", background: true}}
        - {name: agent, arguments: {agent_id: answerer, message: "answer please", background: true}}
  - expect: {tool_result: {contains: "Started background task"}}
    reply:
      tool_calls:
        - {name: shell, arguments: {command: "sleep 1"}}
  - expect: {tool_result: {contains: "Succeeded"}}
    reply:
      tool_calls:
        - {name: task_cancel, arguments: {task_ids: [call_1_1]}}
  - expect: {tool_result: {contains: "cancelled `call_1_1` (waiter)"}}
    reply: {text: "waiting for the rest"}
  - expect: {user: {contains: "the answer is 42"}}
    reply: {text: "done: 42"}
"#,
    );
    let started = std::time::Instant::now();
    let ev = run_ok(&s, &["--json", "run", "--model", &lead, "fan out"]);
    assert!(
        started.elapsed().as_secs() < 25,
        "the cancelled task did not hold the lead"
    );
    assert_eq!(of_type(&ev, "dispatch_started").len(), 2);
    assert_eq!(of_type(&ev, "task_cancelled")[0]["agent"], "waiter");
    let ended = of_type(&ev, "dispatch_ended");
    assert_eq!(ended.len(), 1);
    assert_eq!(ended[0]["agent"], "answerer");
    assert_eq!(
        of_type(&ev, "turn_completed").last().unwrap()["text"],
        "done: 42"
    );
    // The waiter's command is gone with it.
    assert!(!running(&marker), "the cancelled task's command still runs");
}

/// The registered checks of `config_repo`: one that passes and prints what
/// it was given, one that fails.
fn register_checks(s: &Sandbox) {
    s.project(
        "fleets/commands.yaml",
        r#"version: 1
commands:
  test:
    argv: [sh, -c, 'echo "agent=$AI_AGENT key=${OPENAI_API_KEY:-unset}"']
    description: the unit tests
  lint:
    argv: [sh, -c, 'echo lint found 3 problems; exit 3']
"#,
    );
    s.trust();
}

/// The child's own `session_started`, from the parent's stream.
fn child_tools(ev: &[serde_json::Value]) -> Vec<String> {
    of_type(ev, "child")
        .into_iter()
        .find(|e| e["event"]["type"] == "session_started")
        .unwrap()["event"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn a_verifier_runs_the_registered_checks_in_a_closed_environment_and_never_a_shell() {
    let s = Sandbox::new();
    config_repo(&s);
    register_checks(&s);
    let verdict = serde_json::json!({
        "verdict": "fail",
        "checks": [
            {"name": "test", "passed": true, "evidence": "exit 0"},
            {"name": "lint", "passed": false, "evidence": "exit 3"}
        ]
    })
    .to_string();
    let model = script(
        &s,
        "verify.yaml",
        &format!(
            r#"
turns:
  - reply:
      tool_calls:
        - {{name: agent, arguments: {{agent_id: verifier, message: "Report whether the checks pass"}}}}
  - expect: {{user: {{contains: "Report whether"}}}}
    reply:
      tool_calls:
        - {{name: verify, arguments: {{command: test}}}}
  - expect: {{tool_result: {{contains: "check `test` passed (exit 0)"}}}}
    reply:
      tool_calls:
        - {{name: verify, arguments: {{command: lint}}}}
  - expect: {{tool_result: {{contains: "check `lint` failed (exit 3)"}}}}
    reply:
      tool_calls:
        - {{name: verify, arguments: {{command: test, args: ["--all"]}}}}
  - expect: {{tool_result: {{contains: "fleet/command-argument-count"}}}}
    reply:
      tool_calls:
        - {{name: shell, arguments: {{command: "cargo test"}}}}
  - expect: {{tool_result: {{contains: "There is no tool named `shell`"}}}}
    reply: {{text: {}}}
  - expect: {{tool_result: {{contains: "\"verdict\":\"fail\""}}}}
    reply: {{text: "lint fails"}}
"#,
            serde_json::to_string(&verdict).unwrap()
        ),
    );
    let out = s
        .command(&[
            "--json", "run", "--mode", "coding", "--model", &model, "check it",
        ])
        .env("PATH", std::env::var("PATH").unwrap())
        .env("OPENAI_API_KEY", "sk-must-not-leak")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let ev = events(&out);
    let tools = child_tools(&ev);
    assert!(tools.contains(&"verify".to_owned()), "{tools:?}");
    assert!(
        !tools.iter().any(|t| t == "shell" || t == "process"),
        "{tools:?}"
    );
    let results: Vec<String> = of_type(&ev, "child")
        .into_iter()
        .filter(|e| e["event"]["type"] == "tool_ended")
        .map(|e| e["event"]["content"].as_str().unwrap().to_owned())
        .collect();
    // The closed environment: the agent marker, never the user's key.
    assert!(
        results[0].contains("agent=evoflux key=unset"),
        "{}",
        results[0]
    );
    assert!(
        results[1].contains("lint found 3 problems"),
        "{}",
        results[1]
    );
    let ended = of_type(&ev, "dispatch_ended");
    assert_eq!(ended[0]["contract"], "pass");
}

#[test]
fn a_verifier_without_registered_checks_is_refused_with_the_reason() {
    let s = Sandbox::new();
    config_repo(&s);
    let model = script(
        &s,
        "refused.yaml",
        r#"
turns:
  - reply:
      tool_calls:
        - {name: agent, arguments: {agent_id: verifier, message: "Report whether the checks pass"}}
  - expect: {tool_result: {contains: "missing required tools: verify"}}
    reply: {text: "no checks are registered"}
"#,
    );
    let ev = run_in(&s, "coding", &model, "check it");
    let result = of_type(&ev, "tool_ended")[0]["content"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(result.contains("fleets/commands.yaml"), "{result}");
    assert!(result.contains("dispatch/admission-refused"), "{result}");
    assert!(of_type(&ev, "dispatch_started").is_empty());
}

#[test]
fn an_architect_writes_its_plan_only_through_the_artifact_tool() {
    let s = Sandbox::new();
    config_repo(&s);
    // The Coding team's `architect` is a member; a project's own
    // artifact-write worker is reached as a worker, under its contract.
    s.project(
        "workers/planner.md",
        "---\nversion: 1\nname: Planner\ndescription: Writes migration plans for others to implement.\ntools:\n  required: [artifact]\n  optional: [read, grep]\nskills: []\naudience: custom\ncategory: plan\ncapabilityClass: artifact-write\nlatencyClass: deep\nprojectContextTier: none\nbudget: {toolCalls: 8, readReserve: 2, synthesis: true}\nresultContract: {kind: architect-plan, path: .evoflux/artifacts/PLAN.md}\ntags: [plan]\n---\nWrite the plan with `artifact`.\n",
    );
    let model = script(
        &s,
        "architect.yaml",
        r##"
turns:
  - reply:
      tool_calls:
        - {name: agent, arguments: {agent_id: planner, message: "Plan splitting the config loader"}}
  - expect: {user: {contains: "Plan splitting"}}
    reply:
      tool_calls:
        - {name: write, arguments: {path: src/config.rs, content: "gone"}}
  - expect: {tool_result: {contains: "There is no tool named `write`"}}
    reply:
      tool_calls:
        - {name: artifact, arguments: {path: ../src/config.rs, content: "gone"}}
  - expect: {tool_result: {contains: "leaves .evoflux/artifacts/"}}
    reply:
      tool_calls:
        - {name: artifact, arguments: {path: PLAN.md, content: "# Plan\n1. Split the loader.\n"}}
  - expect: {tool_result: {contains: "Created .evoflux/artifacts/PLAN.md"}}
    reply: {text: "{\"summary\": \"split the loader\"}"}
  - expect: {tool_result: {contains: "split the loader"}}
    reply: {text: "planned"}
"##,
    );
    let ev = run_in(&s, "coding", &model, "plan it");
    let tools = child_tools(&ev);
    assert!(tools.contains(&"artifact".to_owned()), "{tools:?}");
    assert!(
        !tools
            .iter()
            .any(|t| t == "write" || t == "edit" || t == "shell")
    );
    assert_eq!(of_type(&ev, "dispatch_ended")[0]["contract"], "pass");
    let plan = std::fs::read_to_string(s.repo().join(".evoflux/artifacts/PLAN.md")).unwrap();
    assert!(plan.contains("Split the loader"));
    assert!(
        std::fs::read_to_string(s.repo().join("src/config.rs"))
            .unwrap()
            .contains("from_env")
    );
    // The lead itself is never given `artifact`: only agents that name it.
    let lead = &of_type(&ev, "session_started")[0]["tools"];
    assert!(
        !lead.as_array().unwrap().contains(&"artifact".into()),
        "{lead}"
    );
}

#[test]
fn a_mutation_report_naming_a_file_the_run_never_wrote_is_repaired() {
    let s = Sandbox::new();
    config_repo(&s);
    let invented = serde_json::json!({
        "mutatedPaths": ["src/env.rs"],
        "validations": [{"name": "read back", "passed": true, "evidence": "read src/config.rs"}]
    })
    .to_string();
    let honest = serde_json::json!({
        "mutatedPaths": ["src/config.rs"],
        "validations": [{"name": "read back", "passed": true, "evidence": "read src/config.rs"}]
    })
    .to_string();
    let model = script(
        &s,
        "tester.yaml",
        &format!(
            r#"
turns:
  - reply:
      tool_calls:
        - {{name: agent, arguments: {{agent_id: tester, message: "Implement from_env in src/config.rs and test it"}}}}
  - expect: {{user: {{contains: "Implement from_env"}}}}
    reply:
      tool_calls:
        - {{name: edit, arguments: {{path: src/config.rs, old_string: "todo!()", new_string: "Config {{ name: String::new() }}"}}}}
  - expect: {{tool_result: {{contains: "src/config.rs"}}}}
    reply: {{text: {}}}
  - expect: {{user: {{contains: "never wrote and that does not exist: src/env.rs"}}}}
    reply: {{text: {}}}
  - expect: {{tool_result: {{contains: "mutatedPaths"}}}}
    reply: {{text: "implemented"}}
"#,
            serde_json::to_string(&invented).unwrap(),
            serde_json::to_string(&honest).unwrap()
        ),
    );
    let ev = run_in(&s, "coding", &model, "implement it");
    let ended = of_type(&ev, "dispatch_ended");
    assert_eq!(ended[0]["contract"], "pass");
    assert_eq!(ended[0]["repairs"], 1);
    // The repair round (the script's expectation) quoted the invented path;
    // the edit itself happened.
    assert!(
        std::fs::read_to_string(s.repo().join("src/config.rs"))
            .unwrap()
            .contains("String::new()")
    );
}

#[test]
fn info_lists_each_team_as_agent_nodes_with_their_effective_config_and_origin() {
    let s = Sandbox::new();
    let reviewer = s.project(
        "agents/coding/reviewer.md",
        "---\nrole: member\ndescription: Reviews diffs.\nmodel: scripted:x.yaml\n---\nReview.\n",
    );
    let v = s.json(&["--json", "info", "--mode", "coding"]);
    let coding = v["teams"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["mode"] == "coding")
        .unwrap()
        .clone();
    assert_eq!(coding["node_id"], "coding/evoflux");
    let member = coding["members"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == "reviewer")
        .unwrap();
    assert_eq!(member["node_id"], "coding/evoflux/reviewer");
    assert_eq!(member["parent_node_id"], "coding/evoflux");
    assert_eq!(member["model"], "scripted:x.yaml");
    assert_eq!(member["origin"]["kind"], "file");
    assert_eq!(member["origin"]["layer"], "project");
    assert_eq!(
        std::fs::canonicalize(member["origin"]["path"].as_str().unwrap()).unwrap(),
        std::fs::canonicalize(&reviewer).unwrap()
    );
    assert!(member["tools"].as_array().unwrap().contains(&"read".into()));
    let verifier = coding["workers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|w| w["name"] == "verifier")
        .unwrap();
    assert_eq!(verifier["parent_node_id"], "coding/evoflux");
    assert_eq!(verifier["capability_class"], "verification");
    assert_eq!(verifier["result_contract"], "verifier-report");
    assert_eq!(verifier["origin"]["kind"], "builtin");
    let tools = verifier["tools"].as_array().unwrap();
    assert!(tools.contains(&"verify".into()), "{tools:?}");
    assert!(!tools.contains(&"shell".into()), "{tools:?}");
}

#[test]
fn fan_out_is_bounded_per_session() {
    let s = Sandbox::new();
    let echo = script(&s, "echo.yaml", "turns:\n  - reply: {text: \"echoed\"}\n");
    member(&s, "echo", "Echoes.", &echo);
    let calls: String = (0..17)
        .map(|i| {
            format!(
                "        - {{name: agent, arguments: {{agent_id: echo, message: \"task {i}\", background: true}}}}\n"
            )
        })
        .collect();
    let lead = script(
        &s,
        "lead.yaml",
        &format!(
            "turns:\n  - reply:\n      tool_calls:\n{calls}  - expect: {{tool_result: {{contains: \"dispatch/fan-out-limit\"}}}}\n    reply: {{text: \"collecting\"}}\n  - expect: {{user: {{contains: echoed}}}}\n    reply: {{text: \"all in\"}}\n"
        ),
    );
    let ev = run_ok(&s, &["--json", "run", "--model", &lead, "fan out"]);
    assert_eq!(of_type(&ev, "dispatch_started").len(), 16);
    assert_eq!(of_type(&ev, "dispatch_ended").len(), 16);
    let refused: Vec<&serde_json::Value> = of_type(&ev, "tool_ended")
        .into_iter()
        .filter(|e| e["is_error"] == true)
        .collect();
    assert_eq!(refused.len(), 1);
    assert!(
        refused[0]["content"]
            .as_str()
            .unwrap()
            .contains("16 background tasks are already running")
    );
}
