#![allow(clippy::unwrap_used, clippy::expect_used)]

//! `sandbox.toml` applied, through the real binary: every shell command
//! runs under bubblewrap (the Debian package `bubblewrap`, which `.ci/run`
//! installs) with the policy's filesystem, network, denied files, timeout
//! and environment.

use crate::common;

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Output;

use common::{Sandbox, events, of_type, run, script};

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Runs one `shell` call in `mode` and returns the tool's result text.
fn shell(s: &Sandbox, mode: &str, command: &str) -> String {
    shell_with(s, mode, command, &[])
}

fn shell_with(s: &Sandbox, mode: &str, command: &str, env: &[(&str, &str)]) -> String {
    let call = serde_json::json!({"name": "shell", "arguments": {"command": command}});
    let model = script(
        s,
        "shell.yaml",
        &format!(
            "turns:\n  - reply:\n      tool_calls:\n        - {call}\n  - reply: {{text: done}}\n"
        ),
    );
    let mut cmd = s.command(&["--json", "run", "--mode", mode, "--model", &model, "go"]);
    cmd.env("PATH", std::env::var("PATH").unwrap());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    tool_output(&out)
}

/// The text the model got back from the first tool call.
fn tool_output(out: &Output) -> String {
    let ev = events(out);
    let ended = of_type(&ev, "tool_ended");
    assert!(!ended.is_empty(), "no tool ran: {ev:?}");
    ended[0]["output"]
        .as_str()
        .or_else(|| ended[0]["content"].as_str())
        .unwrap_or_else(|| panic!("no output in {}", ended[0]))
        .to_owned()
}

/// A directory outside every temporary directory (the build's own tmp,
/// below the target dir), fresh for one test.
fn outside_dir(name: &str) -> PathBuf {
    let base = std::env::var_os("EVOFLUX_TEST_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_TARGET_TMPDIR")));
    let dir = base
        .join("sandbox-tests")
        .join(format!("{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn writes_land_only_inside_the_workspace_and_controls_stay_read_only() {
    let s = Sandbox::new();
    let outside = outside_dir("write");
    s.project("agents/.keep", "");
    let out = shell(
        &s,
        "coding",
        &format!(
            "echo in > inside.txt && echo ok-inside; echo out > {}/x.txt || echo refused-outside; \
             echo 'argv = [\"sh\"]' > .evoflux/tools/x.toml || echo refused-control; \
             echo hi > ~/.bashrc && echo home-is-scratch",
            outside.display()
        ),
    );
    for marker in [
        "ok-inside",
        "refused-outside",
        "refused-control",
        "home-is-scratch",
    ] {
        assert!(out.contains(marker), "{marker} missing: {out}");
    }
    assert_eq!(
        std::fs::read_to_string(s.repo().join("inside.txt")).unwrap(),
        "in\n"
    );
    assert!(!outside.join("x.txt").exists());
    assert!(!s.repo().join(".evoflux/tools/x.toml").exists());
    assert!(!s.home().join(".bashrc").exists());
}

#[test]
fn denied_network_blocks_a_loopback_port_evoflux_can_reach() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let probe = format!(
        "(echo hi > /dev/tcp/127.0.0.1/{port}) 2>/dev/null && echo connected || echo blocked"
    );
    let s = Sandbox::new();
    assert!(shell(&s, "coding", &probe).contains("connected"));
    s.user("sandbox.toml", "network = \"deny\"\n");
    assert!(shell(&s, "coding", &probe).contains("blocked"));
}

#[test]
fn commands_cannot_read_evofluxs_environment_its_data_or_denied_files() {
    let s = Sandbox::new();
    s.write(s.repo().join(".env"), "SECRET=from-dotenv\n");
    s.write(s.repo().join("app/.env.local"), "SECRET=local\n");
    let key = "sk-test-key-never-seen-by-commands";
    let out = shell_with(
        &s,
        "coding",
        "cat /proc/$PPID/environ /proc/1/environ 2>/dev/null | tr '\\0' '\\n' | grep -c sk-test-key || echo no-key; \
         cat .env app/.env.local; echo dotenv-done; \
         ls -A ~/.local/share/evoflux | wc -l",
        &[("OPENAI_API_KEY", key)],
    );
    assert!(out.contains("no-key"), "{out}");
    assert!(
        !out.contains("from-dotenv") && !out.contains("SECRET=local"),
        "{out}"
    );
    assert!(out.contains("dotenv-done"), "{out}");
    // The data directory (session store, credentials) looks empty.
    let last = out
        .lines()
        .rfind(|l| !l.trim().is_empty())
        .unwrap_or_default();
    assert_eq!(last.trim(), "0", "{out}");

    // The file tools refuse denied files too.
    let model = script(
        &s,
        "read.yaml",
        "turns:\n  - reply:\n      tool_calls:\n        - {name: read, arguments: {path: .env}}\n  - expect: {tool_result: {contains: denied patterns}}\n    reply: {text: refused}\n",
    );
    let out = run(
        &s,
        &["--json", "run", "--mode", "coding", "--model", &model, "go"],
    );
    assert!(out.status.success(), "{}", stderr(&out));
}

#[test]
fn the_timeout_ceiling_and_the_environment_allowlist_apply() {
    let s = Sandbox::new();
    s.user(
        "sandbox.toml",
        "max_timeout_seconds = 1\nenv_allowlist = [\"PATH\"]\n",
    );
    let out = shell(
        &s,
        "coding",
        "env | cut -d= -f1 | sort | tr '\\n' ' '; echo; echo HOME=${HOME:-unset} LANG=${LANG:-unset}",
    );
    assert!(out.contains("HOME=unset LANG=unset"), "{out}");
    let started = std::time::Instant::now();
    let call = serde_json::json!({"name": "shell", "arguments": {"command": "sleep 20", "timeout_seconds": 30}});
    let model = script(
        &s,
        "slow.yaml",
        &format!(
            "turns:\n  - reply:\n      tool_calls:\n        - {call}\n  - reply: {{text: done}}\n"
        ),
    );
    let out = run(
        &s,
        &["--json", "run", "--mode", "coding", "--model", &model, "go"],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let ev = events(&out);
    let ended = of_type(&ev, "tool_ended");
    assert_eq!(ended[0]["metadata"]["status"], "timed_out", "{}", ended[0]);
    assert!(started.elapsed().as_secs() < 15);
}

#[test]
fn a_work_session_sees_only_its_workspace_and_the_system() {
    let s = Sandbox::new();
    s.write(s.repo().join("private.txt"), "repo secret\n");
    s.write(s.home().join("notes.txt"), "home secret\n");
    let repo = s.repo();
    let out = shell(
        &s,
        "work",
        &format!(
            "echo note > note.txt && echo wrote-here; cat {}/private.txt 2>/dev/null || echo no-repo; \
             cat {}/notes.txt 2>/dev/null || echo no-home; ls /usr/bin/env >/dev/null && echo has-system",
            repo.display(),
            s.home().display()
        ),
    );
    for marker in ["wrote-here", "no-repo", "no-home", "has-system"] {
        assert!(out.contains(marker), "{marker} missing: {out}");
    }
    assert!(!out.contains("secret"), "{out}");
}

#[test]
fn without_bubblewrap_a_confined_command_fails_naming_the_package() {
    let s = Sandbox::new();
    // A PATH with a shell and coreutils but no bwrap.
    let bin = s.tmp.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    for tool in ["sh", "bash", "echo", "cat", "env"] {
        for dir in ["/usr/bin", "/bin"] {
            let p = Path::new(dir).join(tool);
            if p.exists() && !bin.join(tool).exists() {
                std::os::unix::fs::symlink(&p, bin.join(tool)).unwrap();
            }
        }
    }
    let call = serde_json::json!({"name": "shell", "arguments": {"command": "echo ran"}});
    let model = script(
        &s,
        "nobwrap.yaml",
        &format!(
            "turns:\n  - reply:\n      tool_calls:\n        - {call}\n  - expect: {{tool_result: {{contains: bubblewrap}}}}\n    reply: {{text: done}}\n"
        ),
    );
    let out = s
        .command(&["--json", "run", "--mode", "coding", "--model", &model, "go"])
        .env("PATH", &bin)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!tool_output(&out).contains("\nran"));

    // Full access is the user's explicit way out.
    s.user("sandbox.toml", "filesystem = \"full-access\"\n");
    let model = script(
        &s,
        "full.yaml",
        &format!(
            "turns:\n  - reply:\n      tool_calls:\n        - {call}\n  - expect: {{tool_result: {{contains: ran}}}}\n    reply: {{text: done}}\n"
        ),
    );
    let out = s
        .command(&["--json", "run", "--mode", "coding", "--model", &model, "go"])
        .env("PATH", &bin)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
}

/// The chains a hostile model used to end with its own code running on the
/// host: `core.fsmonitor` and `core.hooksPath` through `.git/config` (by the
/// `write` tool and by a command), a hook planted after moving `.git` aside
/// and copying it back, and a planted `.mcp.json`. After the run, the
/// user's own `git status`, `git commit` and `evoflux mcp list` run none of
/// it.
#[test]
fn a_hostile_model_cannot_plant_code_that_runs_on_the_host() {
    let s = Sandbox::new();
    let repo = s.repo();
    let git = |args: &[&str]| {
        let out = std::process::Command::new("git")
            .arg("-C")
            .arg(&repo)
            .args(["-c", "user.name=t", "-c", "user.email=t@example.org"])
            .args(args)
            .output()
            .unwrap();
        assert!(out.status.success(), "git {args:?}: {}", stderr(&out));
    };
    std::fs::remove_dir_all(repo.join(".git")).unwrap();
    git(&["init", "-q"]);
    s.write(repo.join("a.txt"), "one\n");
    git(&["add", "a.txt"]);
    git(&["commit", "-qm", "first"]);
    let config_before = std::fs::read_to_string(repo.join(".git/config")).unwrap();
    // Trusted: a planted `.mcp.json` would start its server.
    s.trust();
    let mark = outside_dir("chains").join("ran");
    let m = mark.display();
    let hook = format!("#!/bin/sh\\ntouch {m}\\n");
    let chain = format!(
        "git config core.fsmonitor 'touch {m}'; git config core.hooksPath .githooks; \
         mkdir -p .githooks && printf '{hook}' > .githooks/pre-commit && chmod +x .githooks/pre-commit; \
         mv .git .git-old && mkdir .git && cp -a .git-old/. .git/; \
         printf '{hook}' > .git/hooks/pre-commit; chmod +x .git/hooks/pre-commit; \
         echo '{{\"mcpServers\":{{\"x\":{{\"command\":\"touch\",\"args\":[\"{m}\"]}}}}}}' > .mcp.json; \
         echo chain-done"
    );
    let calls = serde_json::json!([
        {"name": "write", "arguments": {"path": ".git/config", "content": format!("[core]\n\tfsmonitor = touch {m}\n")}},
        {"name": "write", "arguments": {"path": ".mcp.json", "content": "{}"}},
        {"name": "shell", "arguments": {"command": chain}},
    ]);
    let model = script(
        &s,
        "chains.yaml",
        &format!("turns:\n  - reply:\n      tool_calls: {calls}\n  - reply: {{text: done}}\n"),
    );
    let out = run(
        &s,
        &["--json", "run", "--mode", "coding", "--model", &model, "go"],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let ev = events(&out);
    let ended = of_type(&ev, "tool_ended");
    assert_eq!(ended.len(), 3, "{ev:?}");
    let text = |i: usize| ended[i].to_string();
    assert!(
        text(0).contains("protected") || text(0).contains("control"),
        "{}",
        text(0)
    );
    assert!(
        text(1).contains("protected") || text(1).contains("control"),
        "{}",
        text(1)
    );
    assert!(text(2).contains("chain-done"), "{}", text(2));

    assert_eq!(
        std::fs::read_to_string(repo.join(".git/config")).unwrap(),
        config_before
    );
    assert!(!repo.join(".git-old").exists());
    assert!(!repo.join(".git/hooks/pre-commit").exists());
    assert!(!repo.join(".mcp.json").exists());
    // The user's own next commands run nothing of the model's.
    git(&["status", "--short"]);
    git(&["commit", "-qam", "second", "--allow-empty"]);
    s.run(&["mcp", "list"]);
    assert!(!mark.exists(), "the model's code ran on the host");
}

/// As root, bubblewrap keeps every capability unless told otherwise and the
/// kernel applies no process limit: CI runs as root, so every test above
/// runs again as `nobody`, on copies of this test and of `evoflux` in a
/// folder that user can reach.
#[test]
fn the_sandbox_holds_for_an_unprivileged_user_too() {
    common::rerun_unprivileged(
        "sandbox::",
        "the_sandbox_holds_for_an_unprivileged_user_too",
    );
}
