#![allow(clippy::unwrap_used, clippy::expect_used)]

//! `evoflux eval` through the real binary: a suite of five task evals with
//! the scripted provider (three pass, two fail, each for its own reason),
//! `--repeat 3` pass rates, `--compare` against an earlier report naming
//! the one regression, a broken eval file refused with its code, and the
//! bundled skills' activation evals through the same runner.

use crate::common;

use common::{Sandbox, run, stderr_codes};
use serde_json::Value;

fn eval(s: &Sandbox, name: &str, yaml: &str, script: &str) {
    s.project(&format!("evals/{name}.yaml"), yaml);
    s.project(&format!("evals/scripts/{name}.yaml"), script);
}

fn suite(s: &Sandbox) {
    s.write(s.repo().join("README.md"), "# readme\n");
    eval(
        s,
        "greets",
        "prompt: Say hello\nmodel: scripted:scripts/greets.yaml\nexpect:\n  text_contains: [hello]\n  tools_not_called: [shell]\n  max_model_calls: 1\n",
        "turns:\n  - expect: {user: Say hello}\n    reply: {text: hello there}\n",
    );
    eval(
        s,
        "writes",
        "prompt: Write the notes\nmode: coding\nmodel: scripted:scripts/writes.yaml\nexpect:\n  tools_called: [write]\n  kinds_called: [write]\n  files_changed: [\"notes/*.md\"]\n  files_unchanged: [README.md]\n",
        "turns:\n  - reply:\n      tool_calls:\n        - {name: write, arguments: {path: notes/today.md, content: \"notes\\n\"}}\n  - reply: {text: written}\n",
    );
    eval(
        s,
        "reads",
        "prompt: Read the readme\nmode: coding\nmodel: scripted:scripts/reads.yaml\nexpect:\n  tools_called: [read]\n  kinds_not_called: [write, execute]\n  files_unchanged: [\"**\"]\n  text_not_contains: [TODO]\n",
        "turns:\n  - reply:\n      tool_calls:\n        - {name: read, arguments: {path: README.md}}\n  - expect: {tool_result: {contains: readme}}\n    reply: {text: it is a readme}\n",
    );
    eval(
        s,
        "wrong-answer",
        "prompt: Say hello\nmodel: scripted:scripts/wrong-answer.yaml\nexpect:\n  text_contains: [hello]\n",
        "turns:\n  - reply: {text: goodbye}\n",
    );
    eval(
        s,
        "too-chatty",
        "prompt: List\nmodel: scripted:scripts/too-chatty.yaml\nexpect:\n  max_model_calls: 2\n  tools_called: [shell]\n",
        "turns:\n  - reply:\n      tool_calls:\n        - {name: ls, arguments: {path: .}}\n  - reply:\n      tool_calls:\n        - {name: ls, arguments: {path: .}}\n  - reply: {text: listed}\n",
    );
    s.trust();
}

fn report(out: &std::process::Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "not JSON ({e}): {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

fn result<'a>(r: &'a Value, name: &str) -> &'a Value {
    r["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["name"] == name)
        .unwrap_or_else(|| panic!("no result {name}: {r}"))
}

fn codes(r: &Value, name: &str) -> Vec<String> {
    result(r, name)["failures"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["code"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn a_suite_counts_passes_and_failures_with_pass_rates_over_repeats() {
    let s = Sandbox::new();
    suite(&s);
    let file = s.tmp.path().join("first.json");
    let out = run(
        &s,
        &[
            "--json",
            "eval",
            "--repeat",
            "3",
            "--report",
            file.to_str().unwrap(),
        ],
    );
    // Two evals fail, so the run does.
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r = report(&out);
    assert_eq!(r["results"].as_array().unwrap().len(), 5, "{r}");
    for name in ["greets", "writes", "reads"] {
        assert_eq!(result(&r, name)["runs"], 3, "{name}");
        assert_eq!(
            result(&r, name)["passed"],
            3,
            "{name}: {}",
            result(&r, name)
        );
    }
    assert_eq!(result(&r, "wrong-answer")["passed"], 0);
    assert_eq!(codes(&r, "wrong-answer"), ["eval/text-missing"; 3]);
    assert_eq!(result(&r, "too-chatty")["runs"], 3);
    assert_eq!(result(&r, "too-chatty")["passed"], 0);
    let chatty = codes(&r, "too-chatty");
    assert_eq!(chatty.len(), 6, "{chatty:?}");
    assert!(chatty.contains(&"eval/too-many-model-calls".to_owned()));
    assert!(chatty.contains(&"eval/tool-not-called".to_owned()));
    assert_eq!(result(&r, "writes")["model_calls"], 6);
    // The report file is what --json printed, and the user's repository
    // was never written: each Coding run worked in its own copy.
    let saved: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(saved["results"], r["results"]);
    assert!(!s.repo().join("notes").exists());

    // The human table shows the rates.
    let out = run(&s, &["eval", "greets", "wrong-answer", "--repeat", "3"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("greets"), "{text}");
    let line = text
        .lines()
        .find(|l| l.starts_with("wrong-answer"))
        .unwrap();
    assert!(line.contains("  0%"), "{line}");
    assert!(
        text.contains("wrong-answer run 3: [eval/text-missing]"),
        "{text}"
    );
}

#[test]
fn compare_names_the_eval_that_got_worse() {
    let s = Sandbox::new();
    suite(&s);
    let first = s.tmp.path().join("first.json");
    run(&s, &["--json", "eval", "--report", first.to_str().unwrap()]);
    // `greets` regresses: its model now answers without the greeting.
    s.project(
        "evals/scripts/greets.yaml",
        "turns:\n  - reply: {text: good day}\n",
    );
    let out = run(
        &s,
        &["--json", "eval", "--compare", first.to_str().unwrap()],
    );
    assert_eq!(out.status.code(), Some(1));
    let r = report(&out);
    let changes = r["compare"].as_array().unwrap();
    let moved: Vec<(&str, &str)> = changes
        .iter()
        .filter(|c| c["trend"] != "same")
        .map(|c| (c["name"].as_str().unwrap(), c["trend"].as_str().unwrap()))
        .collect();
    assert_eq!(moved, [("greets", "worse")], "{r}");
    let out = run(&s, &["eval", "--compare", first.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("worse: greets 100% → 0%"), "{text}");
}

#[test]
fn a_broken_eval_file_and_unknown_names_are_refused_with_codes() {
    let s = Sandbox::new();
    s.project("evals/typo.yaml", "prompt: hi\nexpects: {}\n");
    s.trust();
    let out = run(&s, &["--json", "eval"]);
    assert_eq!(out.status.code(), Some(3));
    assert_eq!(stderr_codes(&out), ["eval/unknown-field"]);
    s.project("evals/typo.yaml", "prompt: hi\n");
    s.trust();
    let out = run(&s, &["eval", "nope"]);
    assert_eq!(out.status.code(), Some(3));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("[eval/unknown]") && err.contains("typo"),
        "{err}"
    );
}

#[test]
fn bundled_activation_evals_run_through_the_same_runner() {
    let s = Sandbox::new();
    let out = run(&s, &["--json", "eval", "activation/testing"]);
    let r = report(&out);
    let t = result(&r, "activation/testing");
    assert_eq!(t["kind"], "activation");
    assert!(t["runs"].as_u64().unwrap() >= 10, "{t}");
    assert_eq!(t["passed"], t["runs"], "{t}");
    // Without names and without --activation, only task evals run.
    let out = run(&s, &["--json", "eval"]);
    assert_eq!(report(&out)["results"], serde_json::json!([]));
    let out = run(&s, &["--json", "eval", "--activation"]);
    let all = report(&out)["results"].as_array().unwrap().len();
    assert!(all >= 6, "every bundled skill with trigger cases: {all}");
}

#[test]
fn info_lists_evals_with_their_source() {
    let s = Sandbox::new();
    suite(&s);
    let info = s.json(&["--json", "info"]);
    let names: Vec<&str> = info["evals"]["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        ["greets", "reads", "too-chatty", "writes", "wrong-answer"]
    );
    assert_eq!(info["evals"]["entries"][0]["source"]["layer"], "project");
}

#[test]
fn evals_of_an_untrusted_repository_are_not_skipped_silently() {
    let s = Sandbox::new();
    s.project(
        "evals/greets.yaml",
        "prompt: Say hello\nexpect:\n  text_contains: [hello]\n",
    );
    let out = run(&s, &["eval"]);
    assert_eq!(out.status.code(), Some(3));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("[eval/awaiting-trust]") && err.contains("greets"),
        "{err}"
    );
}
