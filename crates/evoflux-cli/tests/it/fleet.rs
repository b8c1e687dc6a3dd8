#![allow(clippy::unwrap_used, clippy::expect_used)]

//! `evoflux fleet` through the real binary: the builtin fleet and a
//! repository's, shadowing, validation with one diagnostic per problem,
//! and plans compiled with their variables.

use crate::common;

use common::{Sandbox, git, git_repo, json, stderr_codes};
use serde_json::Value;

const SHIP: &str = "---
version: 3
name: ship
description: Build, test until green, then commit.
maxWorkers: 1
onFailure: stop
steps:
  - {id: build, agent: coder, scope: workspace, dependencies: []}
  - id: suite
    kind: loop
    maxAttempts: 2
    dependencies: [build]
    check: {kind: code, command: test, scope: workspace}
    repair: {kind: agent, agent: coder, scope: workspace}
---
Make {{target}} build and pass its tests.
";

const COMMANDS: &str = "version: 1
commands:
  test:
    argv: [cargo, test]
";

fn names(v: &Value) -> Vec<(String, String, bool)> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["name"].as_str().unwrap().to_owned(),
                f["origin"]["kind"].as_str().unwrap().to_owned(),
                f["valid"].as_bool().unwrap(),
            )
        })
        .collect()
}

#[test]
fn the_builtin_fleet_is_listed_valid_and_plans_with_its_variable() {
    let s = Sandbox::new();
    let listed = s.json(&["--json", "fleet", "list"]);
    assert_eq!(
        names(&listed),
        [("investigate-fix".into(), "builtin".into(), true)]
    );
    let plan = s.json(&[
        "--json",
        "fleet",
        "plan",
        "investigate-fix",
        "--var",
        "problem=the parser drops the last line",
    ]);
    let ids: Vec<&str> = plan["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["id"].as_str().unwrap())
        .collect();
    assert_eq!(
        ids,
        [
            "investigate",
            "implement",
            "verify.check.1",
            "verify.repair.1",
            "verify.check.2",
            "verify.repair.2",
            "verify.check.3",
            "review"
        ]
    );
    assert!(
        plan["task"]
            .as_str()
            .unwrap()
            .contains("the parser drops the last line")
    );
    // The same inputs compile to the same plan, hash included.
    let again = s.json(&[
        "--json",
        "fleet",
        "plan",
        "investigate-fix",
        "--var",
        "problem=the parser drops the last line",
    ]);
    assert_eq!(plan, again);

    // Without its variable nothing is planned, and the message says how.
    let out = s.run(&["--json", "fleet", "plan", "investigate-fix"]);
    assert_eq!(out.status.code(), Some(3));
    assert_eq!(stderr_codes(&out), ["fleet/prompt-unresolved"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("--var problem="));
    let out = s.run(&["--json", "fleet", "plan", "nope"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(stderr_codes(&out), ["fleet/not-found"]);
}

#[test]
fn a_repository_fleet_binds_its_commands_and_shadows_a_builtin_of_its_name() {
    let s = Sandbox::new();
    s.project("fleets/ship.md", SHIP);
    s.trust();
    // Its code step needs the registry: invalid until there is one.
    let out = s.run(&["--json", "fleet", "validate", "ship"]);
    assert_eq!(out.status.code(), Some(3));
    assert_eq!(stderr_codes(&out), ["fleet/commands-registry-missing"]);

    s.project("fleets/commands.yaml", COMMANDS);
    // Check commands added after trust wait until it is given again.
    s.trust();
    let v = s.json(&["--json", "fleet", "validate"]);
    assert_eq!(v["valid"], true);
    assert_eq!(v["fleets"], 2);
    let plan = s.json(&["--json", "fleet", "plan", "ship", "--var", "target=the cli"]);
    assert_eq!(plan["nodes"].as_array().unwrap().len(), 4);

    // A repository's fleet of a builtin's name replaces it.
    s.project(
        "fleets/investigate-fix.md",
        &SHIP.replace("name: ship", "name: investigate-fix"),
    );
    let listed = s.json(&["--json", "fleet", "list"]);
    assert_eq!(
        names(&listed),
        [
            ("investigate-fix".into(), "file".into(), true),
            ("ship".into(), "file".into(), true)
        ]
    );
    let shown = s.json(&["--json", "fleet", "show", "investigate-fix"]);
    assert_eq!(shown["origin"]["layer"], "project");
    assert_eq!(shown["contract"]["steps"][0]["id"], "build");
}

#[test]
fn a_bad_fleet_gets_one_diagnostic_per_problem_with_file_and_field() {
    let s = Sandbox::new();
    let bad = "---
version: 3
name: broken
description: Everything wrong at once.
maxWorkers: 1
onFailure: stop
steps:
  - {id: a, agent: coder, scope: workspace, writes: [src/], dependencies: [ghost]}
  - {id: b, agent: coder, scope: workspace, dependencies: [b]}
---
Do {{it}}.
";
    let path = s.project("fleets/broken.md", bad);
    s.trust();
    let out = s.run(&["--json", "fleet", "validate"]);
    assert_eq!(out.status.code(), Some(3));
    let v = json(&out);
    assert_eq!(v["invalid"], serde_json::json!(["broken"]));
    let diags = v["diagnostics"].as_array().unwrap();
    let mut found: Vec<(String, String)> = diags
        .iter()
        .map(|d| {
            assert_eq!(
                d["locator"]["file"].as_str(),
                Some(path.to_str().unwrap()),
                "{d}"
            );
            (
                d["code"].as_str().unwrap().to_owned(),
                d["locator"]["field"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
            )
        })
        .collect();
    found.sort();
    assert_eq!(
        found,
        [
            ("fleet/key-requires-version".into(), "steps.a.writes".into()),
            (
                "fleet/self-dependency".into(),
                "steps.b.dependencies".into()
            ),
            (
                "fleet/unknown-dependency".into(),
                "steps.a.dependencies".into()
            ),
        ]
    );
    // Listing still shows it, marked invalid, beside the valid builtin.
    let listed = s.json(&["--json", "fleet", "list"]);
    assert_eq!(
        names(&listed),
        [
            ("broken".into(), "file".into(), false),
            ("investigate-fix".into(), "builtin".into(), true)
        ]
    );
}

// ------------------------------------------------------------ fleet run

/// `fix`: a coder bounded to `src/`, then a registered check that the fix
/// is there.
const FIX: &str = "---
version: 4
name: fix
description: Implement the fix, then check it is there.
maxWorkers: 1
onFailure: stop
steps:
  - {id: implement, agent: coder, scope: workspace, writes: [src/], dependencies: []}
  - {id: check, kind: code, command: has-fix, scope: readonly, dependencies: [implement]}
---
Make answer() in src/lib.rs return {{value}}.
";

const FIX_COMMANDS: &str = "version: 1
commands:
  has-fix:
    argv: [grep, -q, '42', src/lib.rs]
";

/// A real git repository with a committed `src/lib.rs` and `docs/guide.md`,
/// trusted, holding `fleet` and the fix commands.
fn fleet_repo(fleet: (&str, &str), commands: &str) -> Sandbox {
    let s = Sandbox::new();
    s.write(
        s.repo().join("src/lib.rs"),
        "pub fn answer() -> u32 {\n    0\n}\n",
    );
    s.write(s.repo().join("docs/guide.md"), "the guide\n");
    s.project(&format!("fleets/{}.md", fleet.0), fleet.1);
    s.project("fleets/commands.yaml", commands);
    git_repo(&s);
    s.trust();
    s
}

/// A coder's turn: `writes` with the `write` tool, then its mutation
/// report naming them.
fn coder_turns(expect: &str, writes: &[(&str, &str)]) -> String {
    let calls: Vec<String> = writes
        .iter()
        .map(|(path, content)| {
            format!(
                "        - {{name: write, arguments: {{path: {path}, content: {}}}}}\n",
                serde_json::to_string(content).unwrap()
            )
        })
        .collect();
    let report = serde_json::json!({
        "mutatedPaths": writes.iter().map(|(p, _)| *p).collect::<Vec<_>>(),
        "validations": [{"name": "read back", "passed": true, "evidence": "wrote src/lib.rs"}],
    })
    .to_string();
    format!(
        "  - expect: {{user: {{contains: {}}}}}\n    reply:\n      tool_calls:\n{}  - reply: {{text: {}}}\n",
        serde_json::to_string(expect).unwrap(),
        calls.concat(),
        serde_json::to_string(&report).unwrap()
    )
}

/// Asserts the exit code, showing what the run printed when it differs.
fn exits(out: &std::process::Output, code: i32) {
    assert_eq!(
        out.status.code(),
        Some(code),
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Each receipt's node and status, in report order.
fn statuses(report: &Value) -> Vec<(&str, &str)> {
    report["receipts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["node"].as_str().unwrap(), r["status"].as_str().unwrap()))
        .collect()
}

const FIXED: &str = "pub fn answer() -> u32 {\n    42\n}\n";

#[test]
fn a_fleet_run_undoes_a_write_outside_its_boundary_and_a_resume_finishes_it() {
    let s = fleet_repo(("fix", FIX), FIX_COMMANDS);
    // The coder fixes src/lib.rs and also rewrites the guide, outside its
    // boundary.
    let model = common::script(
        &s,
        "first.yaml",
        &format!(
            "turns:\n{}",
            coder_turns(
                "Make answer() in src/lib.rs return 42",
                &[("src/lib.rs", FIXED), ("docs/guide.md", "vandalized\n")]
            )
        ),
    );
    let out = common::run(
        &s,
        &[
            "--json", "fleet", "run", "fix", "--var", "value=42", "--model", &model,
        ],
    );
    exits(&out, 1);
    let report = json(&out);
    let run_id = report["runId"].as_str().unwrap().to_owned();
    assert_eq!(report["status"], "stopped");
    let implement = &report["receipts"][0];
    assert_eq!(implement["node"], "implement");
    assert_eq!(implement["status"], "failed");
    assert_eq!(implement["reason"], "write-boundary");
    assert_eq!(
        implement["boundaryViolations"],
        serde_json::json!(["docs/guide.md"])
    );
    assert_eq!(implement["contract"], "met");
    // Undone outside the boundary; kept inside it.
    assert_eq!(
        std::fs::read_to_string(s.repo().join("docs/guide.md")).unwrap(),
        "the guide\n"
    );
    assert_eq!(
        std::fs::read_to_string(s.repo().join("src/lib.rs")).unwrap(),
        FIXED
    );
    assert_eq!(report["receipts"][1]["status"], "skipped");
    // The worker's task said which step it was and what it may change.
    let task = implement["output"].as_str().unwrap();
    assert!(task.contains("mutatedPaths"), "{task}");

    // `runs` and `show-run` see it as it stands.
    let runs = s.json(&["--json", "fleet", "runs"]);
    assert_eq!(runs[0]["runId"], run_id.as_str());
    assert_eq!(runs[0]["state"], "stopped");
    assert_eq!(runs[0]["vars"]["value"], "42");

    // Resumed (with another script: the first is spent), the failed step
    // runs again, within its boundary, and the check passes.
    let model = common::script(
        &s,
        "second.yaml",
        &format!(
            "turns:\n{}",
            coder_turns(
                "You are step `implement` of fleet `fix`",
                &[("src/lib.rs", FIXED)]
            )
        ),
    );
    let out = common::run(
        &s,
        &[
            "--json", "fleet", "run", "--resume", &run_id, "--model", &model,
        ],
    );
    exits(&out, 0);
    let report = json(&out);
    assert_eq!(report["runId"], run_id.as_str());
    assert_eq!(report["status"], "succeeded");
    let statuses = statuses(&report);
    assert_eq!(
        statuses,
        [("implement", "succeeded"), ("check", "succeeded")]
    );
    assert_eq!(
        report["receipts"][1]["command"],
        serde_json::json!(["grep", "-q", "42", "src/lib.rs"])
    );
    // The command was journalled like every command, beside the run.
    let log = std::path::PathBuf::from(report["receipts"][1]["log"].as_str().unwrap());
    assert!(
        log.starts_with(
            s.home()
                .join(format!(".local/share/evoflux/fleet-runs/{run_id}.logs"))
        ),
        "{}",
        log.display()
    );
    assert!(log.is_file());
    let shown = s.json(&["--json", "fleet", "show-run", &run_id]);
    assert_eq!(shown["state"], "succeeded");
    assert_eq!(shown["fleet"], "fix");
    assert_eq!(shown["receipts"].as_array().unwrap().len(), 2);
    assert!(shown["unsettled"].as_array().unwrap().is_empty());
    // Each agent step was a real session, kept with the others.
    let sessions = s.json(&["--json", "sessions", "list"]);
    assert_eq!(sessions.as_array().unwrap().len(), 2, "{sessions:#}");
}

/// `slow`: a coder step, then a command that takes a while.
const SLOW: &str = "---
version: 3
name: slow
description: Implement, then a slow check.
maxWorkers: 1
onFailure: stop
steps:
  - {id: implement, agent: coder, scope: workspace, dependencies: []}
  - {id: wait, kind: code, command: pause, scope: readonly, dependencies: [implement]}
---
Make answer() in src/lib.rs return 42.
";

const SLOW_COMMANDS: &str = "version: 1
commands:
  pause:
    argv: [sleep, '2']
";

#[test]
fn a_killed_run_resumes_without_running_its_settled_steps_again() {
    let s = fleet_repo(("slow", SLOW), SLOW_COMMANDS);
    let model = common::script(
        &s,
        "coder.yaml",
        &format!(
            "turns:\n{}",
            coder_turns("return 42", &[("src/lib.rs", FIXED)])
        ),
    );
    let mut child = s
        .command(&["--json", "fleet", "run", "slow", "--model", &model])
        .env("PATH", std::env::var_os("PATH").unwrap())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Kill it once the slow step has started (its start is journalled).
    let runs = s.home().join(".local/share/evoflux/fleet-runs");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let journal = loop {
        assert!(
            std::time::Instant::now() < deadline,
            "the slow step never started"
        );
        let found = std::fs::read_dir(&runs).ok().and_then(|d| {
            d.flatten()
                .map(|e| e.path())
                .find(|p| p.extension().is_some_and(|x| x == "jsonl"))
        });
        if let Some(path) = found
            && std::fs::read_to_string(&path)
                .unwrap()
                .contains(r#""entry":"started","node":"wait""#)
        {
            break path;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    child.kill().unwrap();
    child.wait().unwrap();
    let run_id = journal.file_stem().unwrap().to_string_lossy().into_owned();
    let shown = s.json(&["--json", "fleet", "show-run", &run_id]);
    assert_eq!(shown["state"], "incomplete");
    assert_eq!(shown["unsettled"], serde_json::json!(["wait"]));

    // The same (spent) script again: a coder step run a second time would
    // get no answer from it and fail.
    let out = common::run(
        &s,
        &[
            "--json", "fleet", "run", "--resume", &run_id, "--model", &model,
        ],
    );
    exits(&out, 0);
    let report = json(&out);
    assert_eq!(report["resumed"], serde_json::json!(["implement"]));
    assert_eq!(report["interrupted"], serde_json::json!(["wait"]));
    assert_eq!(report["status"], "succeeded");
    let sessions = s.json(&["--json", "sessions", "list"]);
    assert_eq!(sessions.as_array().unwrap().len(), 1, "{sessions:#}");
}

#[test]
fn a_fleet_run_that_cannot_start_says_why_with_its_code() {
    let s = fleet_repo(("fix", FIX), FIX_COMMANDS);
    // Diagnostics for a bad fleet or variable; an error naming its code
    // for the rest.
    let codes = |args: &[&str]| {
        let out = common::run(&s, args);
        let err: Value = serde_json::from_slice(&out.stderr).unwrap();
        let found = match err["error"].as_str() {
            Some(text) => {
                let code = text.rsplit_once('[').unwrap().1.trim_end_matches(']');
                vec![code.to_owned()]
            }
            None => stderr_codes(&out),
        };
        (out.status.code(), found)
    };
    let (code, found) = codes(&["--json", "fleet", "run", "nope"]);
    assert_eq!(code, Some(3));
    assert!(found.contains(&"fleet/not-found".to_owned()), "{found:?}");
    let (code, found) = codes(&["--json", "fleet", "run", "fix"]);
    assert_eq!(code, Some(3));
    assert_eq!(found, ["fleet/prompt-unresolved"]);
    let (code, found) = codes(&["--json", "fleet", "run", "--resume", "fix-1"]);
    assert_eq!(code, Some(3));
    assert!(
        found.contains(&"fleet/run-not-found".to_owned()),
        "{found:?}"
    );
    let (code, found) = codes(&["--json", "fleet", "show-run", "../x"]);
    assert_eq!(code, Some(3));
    assert!(
        found.contains(&"fleet/run-not-found".to_owned()),
        "{found:?}"
    );
    let (code, found) = codes(&["--json", "fleet", "run"]);
    assert_eq!(code, Some(3));
    assert!(
        found.contains(&"fleet/nothing-to-run".to_owned()),
        "{found:?}"
    );
    // An agent that is no worker recipe, named before anything runs.
    s.project(
        "fleets/typo.md",
        "---\nversion: 1\nname: typo\ndescription: Typo.\nmaxWorkers: 1\nonFailure: stop\nsteps:\n  - {id: look, agent: scuot, scope: readonly, dependencies: []}\n---\nLook.\n",
    );
    let (code, found) = codes(&["--json", "fleet", "run", "typo"]);
    assert_eq!(code, Some(3));
    assert_eq!(found, ["fleet/agent-unknown"]);
    // `validate` says so too, with the field.
    let out = common::run(&s, &["--json", "fleet", "validate", "typo"]);
    assert_eq!(out.status.code(), Some(3));
    let err: Value = serde_json::from_slice(&out.stderr).unwrap();
    let d = &err["diagnostics"][0];
    assert_eq!(d["code"], "fleet/agent-unknown");
    assert_eq!(d["locator"]["field"], "steps.look.agent");
    assert!(d["message"].as_str().unwrap().contains("'scuot'"));
    // Nothing ran, so nothing is listed.
    assert_eq!(s.json(&["--json", "fleet", "runs"]), serde_json::json!([]));
}

/// One scripted turn: `expect` (YAML) and a reply of tool calls or text.
fn turn(expect: &str, reply: &str) -> String {
    format!("  - expect: {expect}\n    reply: {reply}\n")
}

fn text(v: &serde_json::Value) -> String {
    format!(
        "{{text: {}}}",
        serde_json::to_string(&v.to_string()).unwrap()
    )
}

/// The answer `v` in a fenced block, as models often write JSON.
fn fenced(v: &serde_json::Value) -> String {
    format!(
        "{{text: {}}}",
        serde_json::to_string(&format!("Here it is:\n```json\n{v:#}\n```\n")).unwrap()
    )
}

fn user(contains: &str) -> String {
    format!(
        "{{user: {{contains: {}}}}}",
        serde_json::to_string(contains).unwrap()
    )
}

fn tool_result(contains: &str) -> String {
    format!(
        "{{tool_result: {{contains: {}}}}}",
        serde_json::to_string(contains).unwrap()
    )
}

fn write_call(content: &str) -> String {
    format!(
        "{{tool_calls: [{{name: write, arguments: {{path: src/lib.rs, content: {}}}}}]}}",
        serde_json::to_string(content).unwrap()
    )
}

const VERIFY: &str = "{tool_calls: [{name: verify, arguments: {command: test}}]}";

#[test]
fn the_builtin_fleet_investigates_implements_verifies_until_green_and_reviews() {
    let s = fleet_repo(
        ("unused", FIX),
        "version: 1\ncommands:\n  test:\n    argv: [grep, -q, '42', src/lib.rs]\n",
    );
    let mutation = serde_json::json!({
        "mutatedPaths": ["src/lib.rs"],
        "validations": [{"name": "read back", "passed": true, "evidence": "wrote src/lib.rs"}],
    });
    let verdict = |pass: bool| {
        serde_json::json!({
            "verdict": if pass { "pass" } else { "fail" },
            "checks": [{"name": "test", "passed": pass, "evidence": if pass { "exit 0" } else { "exit 1" }}],
        })
    };
    let scout = serde_json::json!({
        "findings": [{"claim": "answer() returns 0", "path": "src/lib.rs", "line": 1}],
        "needsSplit": false,
        "proposedSubtasks": [],
    });
    // Every worker on one script, in the order the run calls them: the
    // first fix is wrong, the verification fails, the repair fixes it.
    let script = [
        turn(
            &user("The problem: answer() should return 42"),
            "{tool_calls: [{name: grep, arguments: {pattern: answer}}]}",
        ),
        turn(&tool_result("src/lib.rs:1:"), &text(&scout)),
        turn(
            &user("You are step `implement` of fleet `investigate-fix`"),
            &write_call("pub fn answer() -> u32 {\n    41\n}\n"),
        ),
        turn(&tool_result("src/lib.rs"), &text(&mutation)),
        turn(&user("You are step `verify.check.1`"), VERIFY),
        // Fenced: the verdict is read as the contract check reads it.
        turn(
            &tool_result("check `test` failed"),
            &fenced(&verdict(false)),
        ),
        turn(&user("You repair exactly"), &write_call(FIXED)),
        turn(&tool_result("src/lib.rs"), &text(&mutation)),
        turn(&user("You are step `verify.check.2`"), VERIFY),
        turn(&tool_result("check `test` passed"), &text(&verdict(true))),
        turn(&user("You are step `review`"), VERIFY),
        turn(&tool_result("check `test` passed"), &text(&verdict(true))),
    ]
    .concat();
    let model = common::script(&s, "fleet.yaml", &format!("turns:\n{script}"));
    let out = common::run(
        &s,
        &[
            "--json",
            "fleet",
            "run",
            "investigate-fix",
            "--var",
            "problem=answer() should return 42",
            "--model",
            &model,
        ],
    );
    exits(&out, 0);
    let report = json(&out);
    let statuses = statuses(&report);
    assert_eq!(
        statuses,
        [
            ("investigate", "succeeded"),
            ("implement", "succeeded"),
            ("verify.check.1", "check-failed"),
            ("verify.repair.1", "succeeded"),
            ("verify.check.2", "succeeded"),
            ("verify.repair.2", "skipped"),
            ("verify.check.3", "skipped"),
            ("review", "succeeded"),
        ]
    );
    assert_eq!(report["status"], "succeeded");
    assert_eq!(report["loops"][0]["attempts"], 2);
    assert_eq!(report["loops"][0]["repairs"], 1);
    let check = &report["receipts"][2];
    assert_eq!(check["verdict"], "fail");
    assert_eq!(check["contract"], "met");
    // The repair was handed the failing check's answer.
    assert_eq!(report["receipts"][3]["inputs"][0]["node"], "verify.check.1");
    assert_eq!(
        std::fs::read_to_string(s.repo().join("src/lib.rs")).unwrap(),
        FIXED
    );
    // Six worker sessions, one per agent step that ran.
    let sessions = s.json(&["--json", "sessions", "list"]);
    assert_eq!(sessions.as_array().unwrap().len(), 6, "{sessions:#}");
}

#[test]
fn a_worker_that_cannot_have_its_required_tools_fails_its_step_with_the_reason() {
    // No command registry: the verifier's required `verify` is missing.
    let s = Sandbox::new();
    s.write(
        s.repo().join("src/lib.rs"),
        "pub fn answer() -> u32 {\n    0\n}\n",
    );
    s.project(
        "fleets/check.md",
        "---\nversion: 1\nname: check\ndescription: Check.\nmaxWorkers: 1\nonFailure: stop\nsteps:\n  - {id: look, agent: verifier, scope: readonly, dependencies: []}\n---\nCheck it.\n",
    );
    git_repo(&s);
    s.trust();
    let model = common::script(&s, "none.yaml", "turns: []\n");
    let out = common::run(&s, &["--json", "fleet", "run", "check", "--model", &model]);
    assert_eq!(out.status.code(), Some(1));
    let report = json(&out);
    let look = &report["receipts"][0];
    assert_eq!(look["reason"], "agent-failed");
    let message = look["message"].as_str().unwrap();
    assert!(
        message.contains("missing required tools: verify"),
        "{message}"
    );
    assert!(message.contains("fleets/commands.yaml"), "{message}");
    assert!(message.contains("dispatch/admission-refused"), "{message}");
}

/// `wide`: a coder and a command write side by side, each in its own
/// worktree, then a verifier checks the merged result.
const WIDE: &str = "---
version: 4
name: wide
description: Two writers side by side, then a check of both.
maxWorkers: 2
onFailure: stop
steps:
  - {id: code, agent: coder, scope: workspace, writes: [src/], dependencies: []}
  - {id: docs, kind: code, command: write-docs, scope: workspace, writes: [docs/], dependencies: []}
  - {id: review, agent: verifier, scope: readonly, dependencies: [code, docs]}
---
Fix answer() and document it.
";

const WIDE_COMMANDS: &str = "version: 1
commands:
  write-docs:
    argv: [cp, src/lib.rs, docs/answer.rs]
  test:
    argv: [grep, -q, '42', src/lib.rs, docs/guide.md]
";

#[test]
fn parallel_steps_work_in_worktrees_merged_before_the_step_after_them() {
    let s = fleet_repo(("wide", WIDE), WIDE_COMMANDS);
    let mutation = serde_json::json!({
        "mutatedPaths": ["src/lib.rs"],
        "validations": [{"name": "read back", "passed": true, "evidence": "wrote src/lib.rs"}],
    });
    let pass = serde_json::json!({
        "verdict": "pass",
        "checks": [{"name": "test", "passed": true, "evidence": "exit 0"}],
    });
    s.write(s.repo().join("docs/guide.md"), "the guide says 42\n");
    git(&s.repo(), &["commit", "-qam", "guide"]);
    let script = [
        turn(&user("You are step `code`"), &write_call(FIXED)),
        turn(&tool_result("src/lib.rs"), &text(&mutation)),
        turn(&user("You are step `review`"), VERIFY),
        turn(&tool_result("check `test` passed"), &text(&pass)),
    ]
    .concat();
    let model = common::script(&s, "wide.yaml", &format!("turns:\n{script}"));
    let out = common::run(&s, &["--json", "fleet", "run", "wide", "--model", &model]);
    exits(&out, 0);
    let report = json(&out);
    let receipts = report["receipts"].as_array().unwrap();
    let by = |node: &str| receipts.iter().find(|r| r["node"] == node).unwrap().clone();
    assert_eq!(by("code")["workdir"], "worktree");
    assert_eq!(by("docs")["workdir"], "worktree");
    assert_eq!(
        by("code")["filesChanged"],
        serde_json::json!(["src/lib.rs"])
    );
    // The command ran in its own worktree, from the commit before the
    // coder's change: it copied the old file.
    assert_eq!(
        by("docs")["filesChanged"],
        serde_json::json!(["docs/answer.rs"])
    );
    assert_eq!(by("review")["status"], "succeeded");
    assert_eq!(
        std::fs::read_to_string(s.repo().join("src/lib.rs")).unwrap(),
        FIXED
    );
    assert_eq!(
        std::fs::read_to_string(s.repo().join("docs/answer.rs")).unwrap(),
        "pub fn answer() -> u32 {\n    0\n}\n"
    );
}

#[test]
fn a_code_step_is_confined_to_its_checkout_by_the_sandbox() {
    let fleet = "---\nversion: 3\nname: escape\ndescription: Writes outside.\nmaxWorkers: 1\nonFailure: stop\nsteps:\n  - {id: out, kind: code, command: escape, scope: workspace, dependencies: []}\n---\nGo.\n";
    let s = fleet_repo(("escape", fleet), "version: 1\ncommands: {}\n");
    // Outside the checkout, in an existing folder evoflux could write (the
    // home folder would not do: commands get an empty scratch one).
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("fleet-escape-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let outside = dir.join("escaped");
    s.project(
        "fleets/commands.yaml",
        &format!(
            "version: 1\ncommands:\n  escape:\n    argv: [sh, -c, 'echo tried; touch {}']\n",
            outside.display()
        ),
    );
    s.trust();
    let out = common::run(&s, &["--json", "fleet", "run", "escape"]);
    assert_eq!(out.status.code(), Some(1));
    let report = json(&out);
    let step = &report["receipts"][0];
    assert_eq!(step["reason"], "command-failed");
    assert!(step["output"].as_str().unwrap().contains("tried"), "{step}");
    assert!(!outside.exists());
}

/// `split` (v5): an architect plans the work over a roster; its tasks are
/// spliced in and run before the step that waited for the plan.
const SPLIT: &str = "---
version: 5
name: split
description: Plan the change, do its tasks, check the result.
maxWorkers: 1
onFailure: stop
steps:
  - {id: plan, kind: plan, roster: [coder], maxTasks: 2, scope: workspace, writes: [src/], dependencies: []}
  - {id: check, kind: code, command: has-fix, scope: readonly, dependencies: [plan]}
---
Make answer() return 42 and add twice().
";

#[test]
fn a_plan_step_splices_its_delegation_plan_into_the_run() {
    let s = fleet_repo(("split", SPLIT), FIX_COMMANDS);
    let plan = serde_json::json!({"tasks": [
        {"id": "answer", "agent": "coder", "description": "Make answer() return 42",
         "depends_on": [], "writes": ["src/lib.rs"]},
        {"id": "twice", "agent": "coder", "description": "Add twice() in src/twice.rs",
         "depends_on": ["answer"], "writes": ["src/twice.rs"]},
    ]});
    let report = |path: &str| {
        serde_json::json!({
            "mutatedPaths": [path],
            "validations": [{"name": "read back", "passed": true, "evidence": "wrote it"}],
        })
    };
    let twice = "pub fn twice(x: u32) -> u32 {\n    2 * x\n}\n";
    let script = [
        turn(&user("You plan, and change nothing"), &text(&plan)),
        turn(&user("Make answer() return 42\n"), &write_call(FIXED)),
        turn(&tool_result("src/lib.rs"), &text(&report("src/lib.rs"))),
        turn(
            &user("Add twice() in src/twice.rs"),
            &format!(
                "{{tool_calls: [{{name: write, arguments: {{path: src/twice.rs, content: {}}}}}]}}",
                serde_json::to_string(twice).unwrap()
            ),
        ),
        turn(&tool_result("src/twice.rs"), &text(&report("src/twice.rs"))),
    ]
    .concat();
    let model = common::script(&s, "split.yaml", &format!("turns:\n{script}"));
    let out = common::run(&s, &["--json", "fleet", "run", "split", "--model", &model]);
    exits(&out, 0);
    let report = json(&out);
    let statuses = statuses(&report);
    assert_eq!(
        statuses,
        [
            ("plan", "succeeded"),
            ("check", "succeeded"),
            ("plan.answer", "succeeded"),
            ("plan.twice", "succeeded"),
        ]
    );
    // The check ran after both tasks.
    let at = |node: &str| {
        report["receipts"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["node"] == node)
            .unwrap()["startedAtMs"]
            .as_u64()
            .unwrap()
    };
    assert!(at("check") >= at("plan.twice"));
    assert_eq!(
        std::fs::read_to_string(s.repo().join("src/twice.rs")).unwrap(),
        twice
    );
    // The journal holds the splice, so `show-run` sees the spliced steps.
    let run_id = report["runId"].as_str().unwrap();
    let shown = s.json(&["--json", "fleet", "show-run", run_id]);
    assert_eq!(shown["receipts"].as_array().unwrap().len(), 4);
}

#[test]
fn a_delegation_plan_outside_its_step_s_rules_fails_the_step_and_splices_nothing() {
    let s = fleet_repo(("split", SPLIT), FIX_COMMANDS);
    let plan = serde_json::json!({"tasks": [
        {"id": "docs", "agent": "coder", "description": "Rewrite the guide",
         "depends_on": [], "writes": ["docs/guide.md"]},
    ]});
    let script = turn(&user("You plan"), &text(&plan));
    let model = common::script(&s, "bad.yaml", &format!("turns:\n{script}"));
    let out = common::run(&s, &["--json", "fleet", "run", "split", "--model", &model]);
    assert_eq!(out.status.code(), Some(1));
    let report = json(&out);
    let receipts = report["receipts"].as_array().unwrap();
    assert_eq!(receipts.len(), 2, "{report:#}");
    assert_eq!(receipts[0]["reason"], "delegation-plan-invalid");
    let message = receipts[0]["message"].as_str().unwrap();
    assert!(
        message.contains("fleet/delegation-plan-writes-outside-boundary"),
        "{message}"
    );
    assert_eq!(receipts[1]["status"], "skipped");
}

#[test]
fn with_proposals_the_architect_plans_from_what_the_roster_proposed() {
    let fleet = SPLIT.replace("maxTasks: 2,", "maxTasks: 2, proposals: true,");
    let s = fleet_repo(("split", &fleet), FIX_COMMANDS);
    let plan = serde_json::json!({"tasks": [
        {"id": "answer", "agent": "coder", "description": "Make answer() return 42",
         "depends_on": [], "writes": ["src/lib.rs"]},
    ]});
    let mutation = serde_json::json!({
        "mutatedPaths": ["src/lib.rs"],
        "validations": [{"name": "read back", "passed": true, "evidence": "wrote it"}],
    });
    let script = [
        turn(
            &user("Propose your part"),
            "{text: \"I would change answer() in src/lib.rs.\"}",
        ),
        // Fenced: the plan reaches the executor as the contract check read it.
        turn(
            &user("PROPOSAL coder\nI would change answer() in src/lib.rs."),
            &fenced(&plan),
        ),
        turn(&user("Make answer() return 42\n"), &write_call(FIXED)),
        turn(&tool_result("src/lib.rs"), &text(&mutation)),
    ]
    .concat();
    let model = common::script(&s, "proposals.yaml", &format!("turns:\n{script}"));
    let out = common::run(&s, &["--json", "fleet", "run", "split", "--model", &model]);
    exits(&out, 0);
    let report = json(&out);
    assert_eq!(report["status"], "succeeded");
    assert_eq!(report["receipts"][2]["node"], "plan.answer");
    // The proposal was a session of its own, with the architect's and the task's.
    let sessions = s.json(&["--json", "sessions", "list"]);
    assert_eq!(sessions.as_array().unwrap().len(), 3, "{sessions:#}");
}
