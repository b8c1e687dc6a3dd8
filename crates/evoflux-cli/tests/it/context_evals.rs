#![allow(clippy::unwrap_used, clippy::expect_used)]

//! The context owners' eval set: long scripted tasks run through
//! `evoflux eval` with the cost model deciding projection. Each step's
//! result is checked by the script when it is new (`expect: tool_result`),
//! so a task passes only when the model saw what it needed, made the same
//! tool calls and got the same outcome: many large reads followed by edits
//! and a search whose results must be exact, and a test run whose 230 KB
//! of output is kept as an artifact the receipt names.

use crate::common;

use common::{Sandbox, run};
use serde_json::Value;
use std::fmt::Write as _;

/// A file of `lines` distinct lines of about 70 bytes.
fn source(n: usize, lines: usize) -> String {
    (1..=lines)
        .map(|l| format!("file {n:02} line {l:03}: fn handler_{n}_{l}() {{ route({n}, {l}); }}\n"))
        .collect()
}

fn call(name: &str, args: &str) -> String {
    format!("  - reply:\n      tool_calls:\n        - {{name: {name}, arguments: {args}}}\n")
}

/// Like [`call`], checking first that the previous result holds `seen`.
fn call_after(seen: &str, name: &str, args: &str) -> String {
    format!(
        "  - expect: {{tool_result: {{contains: \"{seen}\"}}}}\n    reply:\n      tool_calls:\n        - {{name: {name}, arguments: {args}}}\n"
    )
}

fn long_reads_script(files: usize) -> String {
    let mut s = String::from("turns:\n");
    s.push_str(&call("read", "{path: src/f01.rs}"));
    for n in 2..=files {
        s.push_str(&call_after(
            &format!("file {:02} line 200", n - 1),
            "read",
            &format!("{{path: src/f{n:02}.rs}}"),
        ));
    }
    s.push_str(&call_after(
        &format!("file {files:02} line 200"),
        "edit",
        "{path: src/config.rs, old_string: \"retries = 3\", new_string: \"retries = 5\"}",
    ));
    s.push_str(&call("grep", "{pattern: \"retries = \", directory: src}"));
    s.push_str(&call_after(
        "retries = 5",
        "edit",
        "{path: src/f01.rs, old_string: \"file 01 line 001\", new_string: \"file 01 line one\"}",
    ));
    s.push_str("  - reply: {text: \"retries raised to 5\"}\n");
    s
}

fn test_run_script() -> String {
    let mut s = String::from("turns:\n");
    s.push_str(&call(
        "shell",
        "{command: \"seq 1 40000\", description: run the tests}",
    ));
    // The result shows the end of the output and where all of it is.
    s.push_str(&call_after("40000", "read", "{path: src/f01.rs}"));
    s.push_str(&call_after(
        "file 01 line 200",
        "shell",
        "{command: \"seq 1 40000 | tail -n 1\", description: check}",
    ));
    s.push_str("  - expect: {tool_result: {contains: \"40000\"}}\n    reply: {text: \"all 40000 passed\"}\n");
    s
}

#[test]
fn long_sessions_still_succeed_with_the_same_tool_calls_under_the_cost_model() {
    let s = Sandbox::new();
    let files = 24;
    for n in 1..=files {
        s.write(s.repo().join(format!("src/f{n:02}.rs")), &source(n, 200));
    }
    s.write(s.repo().join("src/config.rs"), "retries = 3\n");
    s.project("evals/scripts/long-reads.yaml", &long_reads_script(files));
    s.project(
        "evals/long-reads.yaml",
        &format!(
            "prompt: Read the sources, then raise the retries\nmode: coding\nmodel: scripted:scripts/long-reads.yaml\nexpect:\n  tools_called: [read, edit, grep]\n  files_changed: [src/config.rs, src/f01.rs]\n  text_contains: [retries raised]\n  max_model_calls: {}\n",
            files + 4
        ),
    );
    s.project("evals/scripts/test-run.yaml", &test_run_script());
    s.project(
        "evals/test-run.yaml",
        "prompt: Run the tests\nmode: coding\nmodel: scripted:scripts/test-run.yaml\nexpect:\n  tools_called: [shell, read]\n  files_unchanged: [\"**\"]\n  text_contains: [\"40000 passed\"]\n  max_model_calls: 4\n",
    );
    s.trust();
    let out = run(&s, &["--json", "eval"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let r: Value = serde_json::from_str(&stdout).unwrap_or_else(|e| {
        panic!(
            "not JSON ({e}): {stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    let mut failures = String::new();
    for x in r["results"].as_array().unwrap() {
        if x["passed"] != x["runs"] {
            writeln!(failures, "{}: {}", x["name"], x["failures"]).unwrap();
        }
    }
    assert!(
        out.status.success() && failures.is_empty(),
        "{failures}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(r["results"].as_array().unwrap().len(), 2, "{r}");
}
