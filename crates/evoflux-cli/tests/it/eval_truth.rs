#![allow(clippy::unwrap_used, clippy::expect_used)]

//! `evoflux eval` as README describes it, through the real binary with the
//! scripted provider: README's own example eval (its YAML taken from
//! README, so the two cannot drift apart) passes, its answer read through
//! `final_output`; the scripted model's script where README puts it draws
//! no `discover/unsupported-file`; `text_not_contains` reads the
//! structured answer too; a worker recipe runs alone, held to its result
//! contract; and an eval whose `lead` or `worker` names nothing stops the
//! run with its file and field.

use crate::common;

use common::{Sandbox, run};
use serde_json::Value;

/// The first YAML block of README's "### Evals" section.
fn readme_eval() -> String {
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../README.md")).unwrap();
    let section = &readme[readme
        .find("### Evals")
        .expect("README has an Evals section")..];
    let block = &section[section.find("```yaml\n").unwrap() + "```yaml\n".len()..];
    block[..block.find("```").unwrap()].to_owned()
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

/// The diagnostics `evoflux info` shows, as (code, file).
fn info_diagnostics(s: &Sandbox) -> Vec<(String, String)> {
    let info = s.json(&["--json", "info"]);
    info["diagnostics"]["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            (
                d["code"].as_str().unwrap().to_owned(),
                d["locator"]["file"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect()
}

/// A repository with a changelog and a source file README's eval must not
/// touch.
fn changelog_repo() -> Sandbox {
    let s = Sandbox::new();
    s.write(s.repo().join("CHANGELOG.md"), "# Changelog\n\n");
    s.write(
        s.repo().join("src/lib.rs"),
        "pub fn answer() -> u32 {\n    0\n}\n",
    );
    s
}

/// The script README's example names (`scripts/fix.yaml`, relative to the
/// eval): read the changelog, add the entry, answer through
/// `final_output` with no text of its own.
const FIX_SCRIPT: &str = r##"
turns:
  - expect: {user: {contains: CHANGELOG}}
    reply:
      tool_calls:
        - {name: read, arguments: {path: CHANGELOG.md}}
  - expect: {tool_result: {contains: Changelog}}
    reply:
      tool_calls:
        - {name: edit, arguments: {path: CHANGELOG.md, old_string: "# Changelog\n", new_string: "# Changelog\n\n- Fixed the answer.\n"}}
  - reply:
      tool_calls:
        - {name: final_output, arguments: {summary: "Added a CHANGELOG entry for the fix"}}
"##;

#[test]
fn readmes_example_eval_passes_on_its_structured_answer() {
    let s = changelog_repo();
    let yaml = readme_eval();
    assert!(yaml.contains("output_schema") && yaml.contains("text_contains"));
    s.project("evals/changelog.yaml", &yaml);
    s.project("evals/scripts/fix.yaml", FIX_SCRIPT);
    s.trust();
    let out = run(&s, &["--json", "eval"]);
    let r = report(&out);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{r}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let changelog = result(&r, "changelog");
    assert_eq!(changelog["passed"], 1, "{changelog}");
    assert_eq!(codes(&r, "changelog"), Vec::<String>::new());
    // The user's checkout is never written.
    assert_eq!(
        std::fs::read_to_string(s.repo().join("CHANGELOG.md")).unwrap(),
        "# Changelog\n\n"
    );
}

#[test]
fn an_eval_script_where_readme_puts_it_draws_no_warning() {
    let s = changelog_repo();
    s.project("evals/changelog.yaml", &readme_eval());
    s.project("evals/scripts/fix.yaml", FIX_SCRIPT);
    s.project("evals/fixtures/input/a.json", "{}");
    // A stray file beside the evals still fits no slot and is said.
    s.project("evals/notes.txt", "scratch");
    s.trust();
    let unsupported: Vec<String> = info_diagnostics(&s)
        .into_iter()
        .filter(|(code, _)| code == "discover/unsupported-file")
        .map(|(_, file)| file)
        .collect();
    assert_eq!(unsupported.len(), 1, "{unsupported:?}");
    assert!(
        unsupported[0].ends_with("evals/notes.txt"),
        "{unsupported:?}"
    );
    let info = s.json(&["--json", "info"]);
    let names: Vec<&str> = info["evals"]["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["changelog"], "a script is no eval");
}

#[test]
fn text_not_contains_reads_the_structured_answer_too() {
    let s = Sandbox::new();
    s.project(
        "evals/summary.yaml",
        "prompt: Summarize\nmodel: scripted:scripts/summary.yaml\noutput_schema: {type: object, required: [summary]}\nexpect:\n  text_contains: [shipped]\n  text_not_contains: [TODO]\n",
    );
    s.project(
        "evals/scripts/summary.yaml",
        "turns:\n  - reply:\n      text: Here it is.\n      tool_calls:\n        - {name: final_output, arguments: {summary: \"shipped; TODO: the docs\"}}\n",
    );
    s.trust();
    let out = run(&s, &["--json", "eval"]);
    assert_eq!(out.status.code(), Some(1));
    let r = report(&out);
    assert_eq!(codes(&r, "summary"), ["eval/text-forbidden"], "{r}");
}

/// A scout recipe's report on `src/lib.rs`, as its contract asks.
fn scout_report() -> String {
    let report = serde_json::json!({
        "findings": [{"claim": "answer() returns 0", "path": "src/lib.rs", "line": 1}],
        "needsSplit": false,
        "proposedSubtasks": [],
    });
    serde_json::to_string(&report.to_string()).unwrap()
}

#[test]
fn a_worker_recipe_runs_alone_held_to_its_contract() {
    let s = changelog_repo();
    // The framework's scout, alone: it finds and reports, and its report
    // meets the scout-report contract.
    s.project(
        "evals/scouts.yaml",
        "prompt: Find what answer() returns\nworker: scout\nmodel: scripted:scripts/scouts.yaml\nexpect:\n  tools_called: [grep]\n  kinds_not_called: [write]\n  text_contains: [\"answer() returns 0\"]\n  contract: met\n",
    );
    s.project(
        "evals/scripts/scouts.yaml",
        &format!(
            "turns:\n  - expect: {{user: {{contains: \"answer() returns\"}}}}\n    reply:\n      tool_calls:\n        - {{name: grep, arguments: {{pattern: answer}}}}\n  - expect: {{tool_result: {{contains: \"src/lib.rs:1:\"}}}}\n    reply: {{text: {}}}\n",
            scout_report()
        ),
    );
    // A scout that never reports in its contract's shape fails the eval,
    // though the eval did not say `contract:` (a recipe's answer is its
    // contract's shape) ...
    let vague = "turns:\n  - reply: {text: It returns zero.}\n  - reply: {text: Still zero.}\n  - reply: {text: Zero.}\n";
    s.project(
        "evals/vague.yaml",
        "prompt: Find what answer() returns\nworker: scout\nmodel: scripted:scripts/vague.yaml\n",
    );
    s.project("evals/scripts/vague.yaml", vague);
    // ... and passes where the eval expects the miss.
    s.project(
        "evals/vague-expected.yaml",
        "prompt: Find what answer() returns\nworker: scout\nmodel: scripted:scripts/vague.yaml\nexpect:\n  contract: unmet\n",
    );
    s.trust();
    let out = run(&s, &["--json", "eval"]);
    let r = report(&out);
    assert_eq!(out.status.code(), Some(1), "{r}");
    assert_eq!(
        result(&r, "scouts")["passed"],
        1,
        "{}",
        result(&r, "scouts")
    );
    assert_eq!(codes(&r, "vague"), ["eval/contract-unmet"], "{r}");
    assert_eq!(
        result(&r, "vague-expected")["passed"],
        1,
        "{}",
        result(&r, "vague-expected")
    );
    // The first answer and two repair rounds.
    assert_eq!(result(&r, "vague")["model_calls"], 3);
}

#[test]
fn an_eval_naming_no_lead_or_worker_stops_the_run_with_its_file_and_field() {
    let s = Sandbox::new();
    s.project(
        "evals/typo-worker.yaml",
        "prompt: Look\nworker: scuot\nmodel: scripted:scripts/none.yaml\n",
    );
    // A worker recipe's id given as a lead.
    s.project(
        "evals/typo-lead.yaml",
        "prompt: Look\nmode: coding\nlead: scout\nmodel: scripted:scripts/none.yaml\n",
    );
    s.project(
        "evals/both.yaml",
        "prompt: Look\nlead: evoflux\nworker: scout\n",
    );
    s.trust();
    let out = run(&s, &["--json", "eval"]);
    assert_eq!(
        out.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let err: Value = serde_json::from_slice(&out.stderr).unwrap();
    let mut found: Vec<(String, String, String)> = err["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            let file = d["locator"]["file"].as_str().unwrap_or_default();
            (
                d["code"].as_str().unwrap().to_owned(),
                d["locator"]["field"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
                file.rsplit('/').next().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    found.sort();
    let row = |c: &str, f: &str, file: &str| (c.to_owned(), f.to_owned(), file.to_owned());
    assert_eq!(
        found,
        [
            row("eval/field-conflict", "worker", "both.yaml"),
            row("eval/lead-unknown", "lead", "typo-lead.yaml"),
            row("eval/worker-unknown", "worker", "typo-worker.yaml"),
        ],
        "{err}"
    );
}
