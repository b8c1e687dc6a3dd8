#![allow(clippy::unwrap_used, clippy::expect_used)]

//! No process outlives evoflux: a command still running when evoflux is
//! killed (`kill -9`), hung up on (SIGHUP, a closed terminal), or done —
//! even one that left its session with `setsid` — is gone with it.

use crate::common;

use std::process::Stdio;
use std::time::{Duration, Instant};

use common::{Sandbox, script, with_marker};

/// Waits (at most 20 s) until `done` holds.
fn eventually(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !done() {
        assert!(Instant::now() < deadline, "timed out: {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn sleeping_run(s: &Sandbox, marker: &str) -> std::process::Child {
    let model = script(
        s,
        "sleep.yaml",
        &format!(
            "turns:\n  - reply:\n      tool_calls:\n        - {{name: shell, arguments: {{command: \"sleep {marker}\", yield_time_ms: 30000}}}}\n  - reply: {{text: done}}\n"
        ),
    );
    s.command(&["run", "--model", &model, "wait"])
        .env("PATH", std::env::var("PATH").unwrap())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

#[test]
fn kill_9_of_evoflux_takes_its_command_with_it() {
    let s = Sandbox::new();
    let marker = "987651";
    let mut child = sleeping_run(&s, marker);
    eventually("the command started", || !with_marker(marker).is_empty());
    child.kill().unwrap();
    child.wait().unwrap();
    eventually("the command is gone", || with_marker(marker).is_empty());
}

#[test]
fn sighup_of_evoflux_takes_its_command_with_it() {
    let s = Sandbox::new();
    let marker = "987652";
    let mut child = sleeping_run(&s, marker);
    eventually("the command started", || !with_marker(marker).is_empty());
    std::process::Command::new("kill")
        .args(["-HUP", &child.id().to_string()])
        .status()
        .unwrap();
    eventually("evoflux ended", || child.try_wait().unwrap().is_some());
    // Handled as SIGTERM is: the session is saved and evoflux says so.
    assert_eq!(child.wait().unwrap().code(), Some(130));
    eventually("the command is gone", || with_marker(marker).is_empty());
}

/// Runs a command that leaves its session with `setsid nohup` (and proves
/// it ran by writing a file), and checks that it is gone once evoflux
/// ended normally.
fn escaped_command_is_gone_after_a_normal_end(s: &Sandbox, marker: &str) {
    let command = format!(
        "setsid nohup sh -c 'echo started > started.txt; exec sleep {marker}' > /dev/null 2>&1 & sleep 0.3; cat started.txt"
    );
    let model = script(
        s,
        "escape.yaml",
        &format!(
            "turns:\n  - reply:\n      tool_calls:\n        - {{name: shell, arguments: {{command: {}}}}}\n  - expect: {{tool_result: {{contains: started}}}}\n    reply: {{text: done}}\n",
            serde_json::to_string(&command).unwrap()
        ),
    );
    let out = s
        .command(&["run", "--model", &model, "escape"])
        .env("PATH", std::env::var("PATH").unwrap())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    eventually("the escaped command is gone", || {
        with_marker(marker).is_empty()
    });
}

#[test]
fn a_command_that_escapes_its_session_is_gone_after_a_normal_end() {
    escaped_command_is_gone_after_a_normal_end(&Sandbox::new(), "987653");
}

/// Commands run unconfined: no PID namespace holds them.
fn full_access(s: &Sandbox) {
    s.write(
        s.config().join("sandbox.toml"),
        "filesystem = \"full-access\"\n",
    );
}

#[test]
fn an_unconfined_command_that_escapes_its_session_is_gone_after_a_normal_end() {
    let s = Sandbox::new();
    full_access(&s);
    escaped_command_is_gone_after_a_normal_end(&s, "987654");
}

#[test]
fn the_next_start_reaps_what_a_killed_evoflux_left_unconfined() {
    let s = Sandbox::new();
    full_access(&s);
    let marker = "987655";
    let mut child = sleeping_run(&s, marker);
    eventually("the command started", || !with_marker(marker).is_empty());
    child.kill().unwrap();
    child.wait().unwrap();
    // Nothing confined it, so it outlived the kill...
    std::thread::sleep(Duration::from_millis(300));
    assert!(!with_marker(marker).is_empty());
    // ...until the next evoflux starts and finds its predecessor gone.
    let model = script(&s, "hello.yaml", "turns:\n  - reply: {text: hello}\n");
    let out = s.run(&["run", "--model", &model, "hi"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    eventually("the left command is reaped", || {
        with_marker(marker).is_empty()
    });
    let runs = s.home().join(".local/share/evoflux/runs");
    assert_eq!(
        std::fs::read_dir(runs).unwrap().count(),
        0,
        "no record is left"
    );
}
