#![allow(clippy::unwrap_used, clippy::expect_used)]

//! `evoflux fleet` tells the truth, through the real binary: a fleet
//! whose checks wait for `evoflux trust` is refused before any step edits
//! (and `validate` and `plan` say so first), a code step's environment is
//! the closed list, a write into a git-ignored path outside a step's
//! boundary is caught, and a commit step with nothing to commit is not a
//! failure.

use crate::common;

use common::{Sandbox, git, git_repo, json, stderr_codes};
use serde_json::Value;

const ORIGINAL: &str = "pub fn answer() -> u32 {\n    0\n}\n";
const FIXED: &str = "pub fn answer() -> u32 {\n    42\n}\n";

/// A coder fixes, a verifier checks with `verify`: agents only, so the
/// registry is needed through the verifier's required tool alone.
const FIX_AND_VERIFY: &str = "---
version: 3
name: fix-and-verify
description: Fix it, then verify it with the registered checks.
maxWorkers: 1
onFailure: stop
steps:
  - {id: implement, agent: coder, scope: workspace, dependencies: []}
  - {id: verify, agent: verifier, scope: readonly, dependencies: [implement]}
---
Make answer() in src/lib.rs return 42.
";

/// A coder, then a registered command as the check.
const FIX_AND_TEST: &str = "---
version: 3
name: fix-and-test
description: Fix it, then run the test command.
maxWorkers: 1
onFailure: stop
steps:
  - {id: implement, agent: coder, scope: workspace, dependencies: []}
  - {id: test, kind: code, command: test, scope: readonly, dependencies: [implement]}
---
Make answer() in src/lib.rs return 42.
";

const TEST_COMMANDS: &str = "version: 1
commands:
  test:
    argv: [grep, -q, '42', src/lib.rs]
";

/// A git repository with `src/lib.rs` and the given project files
/// committed, not trusted.
fn repo(files: &[(&str, &str)]) -> Sandbox {
    let s = Sandbox::new();
    s.write(s.repo().join("src/lib.rs"), ORIGINAL);
    for (path, text) in files {
        s.project(path, text);
    }
    git_repo(&s);
    s
}

/// The one diagnostic of `out` (a `--json` run's stderr) with `code`.
fn diagnostic(out: &std::process::Output, code: &str) -> Value {
    let err: Value = serde_json::from_slice(&out.stderr).unwrap_or_else(|e| {
        panic!(
            "stderr is not JSON ({e}): {}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    let found: Vec<&Value> = err["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["code"] == code)
        .collect();
    assert_eq!(found.len(), 1, "{err:#}");
    found[0].clone()
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

/// A coder's turn: it writes `writes` with the `write` tool, then reports
/// them.
fn coder_turns(writes: &[(&str, &str)]) -> String {
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
        "validations": [{"name": "read back", "passed": true, "evidence": "wrote it"}],
    })
    .to_string();
    format!(
        "  - reply:\n      tool_calls:\n{}  - reply: {{text: {}}}\n",
        calls.concat(),
        serde_json::to_string(&report).unwrap()
    )
}

#[test]
fn a_fleet_whose_checks_wait_for_trust_is_refused_before_any_step_edits() {
    let s = repo(&[
        ("fleets/fix-and-verify.md", FIX_AND_VERIFY),
        ("fleets/fix-and-test.md", FIX_AND_TEST),
        ("fleets/commands.yaml", TEST_COMMANDS),
    ]);
    let root = s.repo().canonicalize().unwrap();
    let code = "fleet/commands-awaiting-trust";

    // `validate` says so, naming the repository and what to run, for a
    // verifier that needs `verify` and for a registered command alike.
    let out = common::run(&s, &["--json", "fleet", "validate", "fix-and-verify"]);
    exits(&out, 3);
    let d = diagnostic(&out, code);
    assert_eq!(d["locator"]["field"], "steps.verify.agent");
    let message = d["message"].as_str().unwrap();
    assert!(message.contains(&root.display().to_string()), "{message}");
    assert!(
        message.contains(&format!("`evoflux trust {}`", root.display())),
        "{message}"
    );
    let out = common::run(&s, &["--json", "fleet", "validate", "fix-and-test"]);
    exits(&out, 3);
    // Not "declare a registry": it is declared.
    assert_eq!(stderr_codes(&out), [code]);
    assert_eq!(
        diagnostic(&out, code)["locator"]["field"],
        "steps.test.command"
    );

    // `list` marks both as `validate` does.
    let listed = s.json(&["--json", "fleet", "list"]);
    let valid = |listed: &Value, name: &str| {
        listed
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["name"] == name)
            .unwrap()["valid"]
            .as_bool()
            .unwrap()
    };
    assert!(!valid(&listed, "fix-and-verify"));
    assert!(!valid(&listed, "fix-and-test"));

    // `plan` says so too, instead of a plan that cannot run.
    let out = common::run(&s, &["--json", "fleet", "plan", "fix-and-verify"]);
    exits(&out, 3);
    assert_eq!(stderr_codes(&out), [code]);

    // `run` refuses before its first step: the coder's fix is not made.
    let model = common::script(
        &s,
        "coder.yaml",
        &format!("turns:\n{}", coder_turns(&[("src/lib.rs", FIXED)])),
    );
    for fleet in ["fix-and-verify", "fix-and-test"] {
        let out = common::run(&s, &["--json", "fleet", "run", fleet, "--model", &model]);
        exits(&out, 3);
        assert_eq!(stderr_codes(&out), [code], "{fleet}");
    }
    assert_eq!(
        std::fs::read_to_string(s.repo().join("src/lib.rs")).unwrap(),
        ORIGINAL
    );
    assert_eq!(s.json(&["--json", "fleet", "runs"]), serde_json::json!([]));
    assert_eq!(
        s.json(&["--json", "sessions", "list"]),
        serde_json::json!([])
    );

    // Trusted, both are valid and plan.
    s.trust();
    let v = s.json(&["--json", "fleet", "validate"]);
    assert_eq!(v["valid"], true, "{v:#}");
    let listed = s.json(&["--json", "fleet", "list"]);
    assert!(valid(&listed, "fix-and-verify") && valid(&listed, "fix-and-test"));
    s.json(&["--json", "fleet", "plan", "fix-and-verify"]);
}

#[test]
fn a_code_step_gets_exactly_the_closed_environment_and_its_declared_names() {
    let fleet = "---\nversion: 3\nname: env\ndescription: Show the environment.\nmaxWorkers: 1\nonFailure: stop\nsteps:\n  - {id: show, kind: code, command: show-env, scope: readonly, dependencies: []}\n---\nGo.\n";
    let s = repo(&[
        ("fleets/env.md", fleet),
        (
            "fleets/commands.yaml",
            "version: 1\ncommands:\n  show-env:\n    argv: [env]\n    env: [FLEET_PROBE]\n",
        ),
    ]);
    s.trust();
    let out = s
        .command(&["--json", "fleet", "run", "env"])
        .env("PATH", std::env::var("PATH").unwrap())
        .env("TERM", "xterm-256color")
        .env("SHELL", "/bin/zsh")
        .env("USER", "someone")
        .env("FLEET_PROBE", "declared")
        .env("OPENAI_API_KEY", "sk-not-for-commands")
        .output()
        .unwrap();
    exits(&out, 0);
    let report = json(&out);
    let step = &report["receipts"][0];
    assert_eq!(step["status"], "succeeded", "{step:#}");
    let output = step["output"].as_str().unwrap();
    let names: Vec<&str> = output
        .lines()
        .filter_map(|l| l.split_once('=').map(|(n, _)| n))
        .collect();
    for leaked in ["TERM", "SHELL", "USER", "OPENAI_API_KEY"] {
        assert!(
            !names.contains(&leaked),
            "{leaked} reached the step:\n{output}"
        );
    }
    assert!(
        output.lines().any(|l| l == "FLEET_PROBE=declared"),
        "{output}"
    );
    assert!(output.lines().any(|l| l == "AI_AGENT=evoflux"), "{output}");
    // Nothing of the parent's beyond the closed list and the declared
    // name. The process runtime adds its own two: the sandbox's working
    // directory and the lineage tag that finds the command after a kill.
    let closed = [
        "PATH",
        "HOME",
        "LANG",
        "LC_ALL",
        "TZ",
        "TMPDIR",
        "FLEET_PROBE",
        "AI_AGENT",
        "PWD",
        "EVOFLUX_LINEAGE",
    ];
    for name in &names {
        assert!(closed.contains(name), "{name} reached the step:\n{output}");
    }
}

#[test]
fn a_write_into_a_git_ignored_path_outside_the_boundary_is_caught() {
    let fleet = "---\nversion: 4\nname: fix\ndescription: Fix it inside src/.\nmaxWorkers: 1\nonFailure: stop\nsteps:\n  - {id: implement, agent: coder, scope: workspace, writes: [src/], dependencies: []}\n---\nMake answer() in src/lib.rs return 42.\n";
    let s = Sandbox::new();
    s.write(s.repo().join("src/lib.rs"), ORIGINAL);
    s.write(s.repo().join(".gitignore"), "dist/\n");
    s.project("fleets/fix.md", fleet);
    git_repo(&s);
    s.trust();
    let model = common::script(
        &s,
        "coder.yaml",
        &format!(
            "turns:\n{}",
            coder_turns(&[("src/lib.rs", FIXED), ("dist/app.js", "steal()\n")])
        ),
    );
    let out = common::run(&s, &["--json", "fleet", "run", "fix", "--model", &model]);
    exits(&out, 1);
    let report = json(&out);
    let step = &report["receipts"][0];
    assert_eq!(step["reason"], "write-boundary", "{step:#}");
    assert_eq!(
        step["boundaryViolations"],
        serde_json::json!(["dist/app.js"])
    );
    // Undone outside the boundary, kept inside it.
    assert!(!s.repo().join("dist/app.js").exists());
    assert_eq!(
        std::fs::read_to_string(s.repo().join("src/lib.rs")).unwrap(),
        FIXED
    );
}

#[test]
fn a_commit_step_with_nothing_to_commit_is_not_a_failure() {
    let fleet = "---\nversion: 3\nname: ship\ndescription: Look, then commit.\nmaxWorkers: 1\nonFailure: stop\nsteps:\n  - {id: look, agent: scout, scope: readonly, dependencies: []}\n  - {id: commit, kind: code, command: commit, scope: workspace, dependencies: [look], commitFrom: [look]}\n---\nLook at src/lib.rs.\n";
    let s = repo(&[
        ("fleets/ship.md", fleet),
        (
            "fleets/commands.yaml",
            "version: 1\ncommands:\n  commit:\n    argv: [git, commit, -a, -m, '{{commitMessage}}']\n",
        ),
    ]);
    s.trust();
    let scout = serde_json::json!({
        "findings": [{"claim": "answer() returns 0", "path": "src/lib.rs", "line": 1}],
        "needsSplit": false,
        "proposedSubtasks": [],
    });
    // The scout reads before it answers, as its contract asks.
    let model = common::script(
        &s,
        "scout.yaml",
        &format!(
            "turns:\n  - reply: {{tool_calls: [{{name: grep, arguments: {{pattern: answer}}}}]}}\n  - reply: {{text: {}}}\n",
            serde_json::to_string(&scout.to_string()).unwrap()
        ),
    );
    let commits = git(&s.repo(), &["rev-list", "--count", "HEAD"]);
    let out = common::run(&s, &["--json", "fleet", "run", "ship", "--model", &model]);
    exits(&out, 0);
    let report = json(&out);
    assert_eq!(report["status"], "succeeded");
    let commit = &report["receipts"][1];
    assert_eq!(commit["node"], "commit");
    assert_eq!(commit["status"], "skipped", "{commit:#}");
    assert_eq!(commit["reason"], "nothing-to-commit");
    assert_eq!(git(&s.repo(), &["rev-list", "--count", "HEAD"]), commits);
}
