#![allow(clippy::unwrap_used, clippy::expect_used)]

//! The session engine through the real binary: a session keeps its model,
//! malformed tool-call arguments come back to the model, and each invalid
//! input exits 3.

use crate::common;

use std::process::Output;

use common::{Sandbox, events, of_type, run, script, session_id};

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn a_session_created_with_a_scripted_model_resumes_on_it() {
    let s = Sandbox::new();
    let model = script(&s, "two.yaml", "turns:\n  - reply: {text: first}\n");
    let out = run(&s, &["--json", "run", "--model", &model, "hello"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let id = session_id(&events(&out));
    // A script replays from its first turn in each process: the resumed
    // process reads the file anew.
    script(
        &s,
        "two.yaml",
        "turns:\n  - expect: {user: again}\n    reply: {text: second}\n",
    );
    // No --model: the session's own model answers, not the embedded one.
    let out = run(&s, &["--json", "sessions", "resume", &id, "again"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let ev = events(&out);
    assert_eq!(of_type(&ev, "session_started")[0]["model"], model.as_str());
    assert_eq!(of_type(&ev, "turn_completed")[0]["text"], "second");
    assert!(of_type(&ev, "model_switched").is_empty());
    let shown = s.json(&["--json", "sessions", "show", &id]);
    assert_eq!(shown["session"]["model"], model.as_str());
}

#[test]
fn model_on_resume_is_a_recorded_switch() {
    let s = Sandbox::new();
    let first = script(&s, "a.yaml", "turns:\n  - reply: {text: from a}\n");
    let second = script(&s, "b.yaml", "turns:\n  - reply: {text: from b}\n");
    let out = run(&s, &["--json", "run", "--model", &first, "hello"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let id = session_id(&events(&out));
    let out = run(
        &s,
        &[
            "--json", "sessions", "resume", &id, "--model", &second, "next",
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let ev = events(&out);
    let switched = of_type(&ev, "model_switched");
    assert_eq!(switched.len(), 1);
    assert_eq!(switched[0]["from"], first.as_str());
    assert_eq!(switched[0]["to"], second.as_str());
    // The switch is kept: the next resume without --model stays on b.
    script(&s, "b.yaml", "turns:\n  - reply: {text: b again}\n");
    let out = run(&s, &["--json", "sessions", "resume", &id, "third"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let ev = events(&out);
    assert_eq!(of_type(&ev, "turn_completed")[0]["text"], "b again");
}

#[test]
fn arguments_that_are_not_json_come_back_to_the_model_and_the_run_finishes() {
    let s = Sandbox::new();
    s.write(s.repo().join("notes.txt"), "hello\n");
    let model = script(
        &s,
        "bad.yaml",
        r#"
turns:
  - reply:
      tool_calls:
        - {name: read, raw_arguments: '{"path": "notes.txt"'}
  - expect: {tool_result: {contains: not valid JSON}}
    reply:
      tool_calls:
        - {name: read, arguments: {path: notes.txt}}
  - expect: {tool_result: {contains: hello}}
    reply: {text: done}
"#,
    );
    let out = run(
        &s,
        &[
            "--json", "run", "--mode", "coding", "--model", &model, "read it",
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let ev = events(&out);
    let ended = of_type(&ev, "tool_ended");
    assert_eq!(ended.len(), 2);
    assert_eq!(ended[0]["is_error"], true);
    let content = ended[0]["content"].as_str().unwrap();
    assert!(content.contains("not valid JSON"), "{content}");
    assert!(content.contains(r#"{"path": "notes.txt""#), "{content}");
    assert_eq!(ended[1]["is_error"], false);
    assert_eq!(of_type(&ev, "turn_completed")[0]["text"], "done");
    assert!(of_type(&ev, "error").is_empty());
}

#[test]
fn invalid_input_exits_3() {
    let s = Sandbox::new();
    let model = script(&s, "hi.yaml", "turns:\n  - reply: {text: hi}\n");
    let missing = s.tmp.path().join("no-such-dir");
    let cases: Vec<(&str, Vec<String>)> = vec![
        (
            "missing workspace",
            vec![
                "run".into(),
                "--mode".into(),
                "coding".into(),
                "--workspace".into(),
                missing.display().to_string(),
                "--model".into(),
                model.clone(),
                "x".into(),
            ],
        ),
        (
            "unparseable model",
            vec!["run".into(), "--model".into(), "nocolon".into(), "x".into()],
        ),
        (
            "unknown provider",
            vec![
                "run".into(),
                "--model".into(),
                "nosuch:m".into(),
                "x".into(),
            ],
        ),
        (
            "unknown lead",
            vec![
                "run".into(),
                "--lead".into(),
                "nosuch".into(),
                "--model".into(),
                model.clone(),
                "x".into(),
            ],
        ),
        (
            "workspace with work mode",
            vec![
                "run".into(),
                "--mode".into(),
                "work".into(),
                "--workspace".into(),
                s.repo().display().to_string(),
                "--model".into(),
                model.clone(),
                "x".into(),
            ],
        ),
        (
            "no such session",
            vec![
                "sessions".into(),
                "resume".into(),
                "01900000-0000-7000-8000-000000000000".into(),
                "x".into(),
            ],
        ),
        (
            "not a session id",
            vec!["sessions".into(), "show".into(), "nope".into()],
        ),
    ];
    for (what, args) in cases {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = run(&s, &args);
        assert_eq!(out.status.code(), Some(3), "{what}: {}", stderr(&out));
    }
}

#[test]
fn a_workspace_given_twice_is_one_workspace() {
    let s = Sandbox::new();
    let model = script(&s, "hi.yaml", "turns:\n  - reply: {text: hi}\n");
    let repo = s.repo().display().to_string();
    let dotted = format!("{repo}/.");
    let out = run(
        &s,
        &[
            "--json",
            "run",
            "--mode",
            "coding",
            "--workspace",
            &repo,
            "--workspace",
            &dotted,
            "--model",
            &model,
            "x",
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let ev = events(&out);
    let ws = of_type(&ev, "session_started")[0]["workspace"]
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(ws.len(), 1, "{ws:?}");
}

#[test]
fn a_coding_run_below_a_repository_root_works_in_the_repository() {
    let s = Sandbox::new();
    let model = script(&s, "hi.yaml", "turns:\n  - reply: {text: hi}\n");
    std::fs::create_dir_all(s.repo().join(".git")).unwrap();
    let sub = s.repo().join("src/deep");
    std::fs::create_dir_all(&sub).unwrap();
    let out = s
        .command(&["--json", "run", "--mode", "coding", "--model", &model, "x"])
        .current_dir(&sub)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let ev = events(&out);
    let ws = &of_type(&ev, "session_started")[0]["workspace"];
    assert_eq!(
        ws[0].as_str().unwrap(),
        s.repo().canonicalize().unwrap().display().to_string()
    );
}

#[test]
fn the_agent_cannot_write_its_own_controls_for_later_runs() {
    let s = Sandbox::new();
    let model = script(
        &s,
        "escalate.yaml",
        r#"
turns:
  - reply:
      tool_calls:
        - {name: write, arguments: {path: .evoflux/tools/run_it.toml, content: "argv = [\"bash\", \"-c\", \"{{cmd}}\"]"}}
  - expect: {tool_result: {contains: read-only}}
    reply: {text: refused}
"#,
    );
    let out = run(
        &s,
        &["--json", "run", "--mode", "coding", "--model", &model, "x"],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let ev = events(&out);
    let ended = of_type(&ev, "tool_ended");
    assert_eq!(ended[0]["is_error"], true);
    assert!(!s.repo().join(".evoflux/tools/run_it.toml").exists());
    // The next run has no such tool.
    let info = s.json(&["--json", "info", "--mode", "coding"]);
    assert!(!info.to_string().contains("run_it"), "{info}");
}

/// `--workspace` without `--mode` is where the agent works: a Coding
/// session on the named folder, whose files the agent's tools see.
#[test]
fn a_named_workspace_without_a_mode_is_where_the_agent_works() {
    let s = Sandbox::new();
    let notes = s.tmp.path().join("notes");
    s.write(notes.join("todo.txt"), "buy milk\n");
    let model = script(
        &s,
        "look.yaml",
        "turns:\n  - reply:\n      tool_calls:\n        - {name: ls, arguments: {path: .}}\n  - expect: {tool_result: {contains: todo.txt}}\n    reply: {text: seen}\n",
    );
    let notes_arg = notes.display().to_string();
    let out = run(
        &s,
        &[
            "--json",
            "run",
            "--workspace",
            &notes_arg,
            "--model",
            &model,
            "what is here?",
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let ev = events(&out);
    let started = of_type(&ev, "session_started");
    assert_eq!(started[0]["mode"], "coding", "{:#?}", started[0]);
    assert_eq!(of_type(&ev, "turn_completed")[0]["text"], "seen");
}

/// A workspace named for a Work session, asked for or resumed, is refused
/// (exit 3, saying what to write) rather than silently dropped.
#[test]
fn a_workspace_for_a_work_session_is_refused_with_what_to_write() {
    let s = Sandbox::new();
    let model = script(&s, "hi.yaml", "turns:\n  - reply: {text: hi}\n");
    let repo = s.repo().display().to_string();
    let out = run(
        &s,
        &[
            "run",
            "--mode",
            "work",
            "--workspace",
            &repo,
            "--model",
            &model,
            "x",
        ],
    );
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("leave out --mode work"),
        "{}",
        stderr(&out)
    );
    let out = run(&s, &["--json", "run", "--model", &model, "hello"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let ev = events(&out);
    assert_eq!(of_type(&ev, "session_started")[0]["mode"], "work");
    let id = session_id(&ev);
    let out = run(
        &s,
        &[
            "--json",
            "sessions",
            "resume",
            &id,
            "--workspace",
            &repo,
            "again",
        ],
    );
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    // The resumed Work session keeps its own folder; the named one is
    // refused with the same words.
    assert!(
        stderr(&out).contains("leave out --mode work"),
        "{}",
        stderr(&out)
    );
}

/// `--output-schema` naming a missing or broken file is input to fix:
/// exit 3 with a diagnostic naming the file, before any session opens.
#[test]
fn a_missing_or_broken_output_schema_exits_3_naming_the_file() {
    let s = Sandbox::new();
    let model = script(&s, "hi.yaml", "turns:\n  - reply: {text: hi}\n");
    let missing = s.tmp.path().join("nope.schema.json");
    let missing_arg = missing.display().to_string();
    let out = run(
        &s,
        &[
            "--json",
            "run",
            "--model",
            &model,
            "--output-schema",
            &missing_arg,
            "x",
        ],
    );
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert_eq!(common::stderr_codes(&out), ["run/output-schema-unreadable"]);
    assert!(
        stderr(&out).contains("nope.schema.json"),
        "{}",
        stderr(&out)
    );
    let broken = s.write(s.tmp.path().join("broken.json"), "{\n  \"type\": \n");
    let broken_arg = broken.display().to_string();
    let out = run(
        &s,
        &[
            "--json",
            "run",
            "--model",
            &model,
            "--output-schema",
            &broken_arg,
            "x",
        ],
    );
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert_eq!(common::stderr_codes(&out), ["run/output-schema-invalid"]);
    assert!(
        of_type(&events(&out), "session_started").is_empty(),
        "no session opens"
    );
}

/// `--max-model-calls 0` cannot mean "one": it is refused as a usage
/// error; `run --help` lists every exit code.
#[test]
fn zero_model_calls_is_refused_and_help_lists_every_exit_code() {
    let s = Sandbox::new();
    let out = run(&s, &["run", "--max-model-calls", "0", "x"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("--max-model-calls"),
        "{}",
        stderr(&out)
    );
    let help = run(&s, &["run", "--help"]);
    let text = String::from_utf8_lossy(&help.stdout);
    for code in ["0 ", "1 ", "2 ", "3 ", "4 ", "5 ", "130 "] {
        assert!(
            text.lines().any(|l| l.trim_start().starts_with(code)),
            "exit code {code}missing from run --help:\n{text}"
        );
    }
}

/// A user's own file for the lead that does not load is reported (exit 3
/// with its diagnostic), never replaced in silence by the built-in lead it
/// would have shadowed.
#[test]
fn a_broken_file_for_the_lead_is_reported_not_passed_over() {
    let s = Sandbox::new();
    s.project(
        "agents/evoflux.md",
        "---\nrole: lead\ntools_opt_out: [unclosed\n---\nbroken\n",
    );
    s.trust();
    let model = script(&s, "hi.yaml", "turns:\n  - reply: {text: hi}\n");
    let out = run(&s, &["--json", "run", "--model", &model, "hello"]);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("frontmatter/yaml-invalid"),
        "{}",
        stderr(&out)
    );
    assert!(of_type(&events(&out), "turn_completed").is_empty());
}
