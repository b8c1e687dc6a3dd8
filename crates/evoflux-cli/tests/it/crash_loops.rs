#![allow(clippy::unwrap_used, clippy::expect_used)]

//! Crash loops: the real binary killed with SIGKILL at spread-out moments
//! while it writes a session, the skill preferences overlay or the plugin
//! registry, 20 times each on one data directory. After every kill each
//! store is readable, and at the end every session resumes and the next
//! mutation succeeds.

use crate::common;

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use common::{Sandbox, json, script, write};

const KILLS: u64 = 20;

/// A moment to kill the `i`th run at: spread over the binary's whole
/// life, from before it opened anything to after most of its writes.
fn moment(i: u64, span_ms: u64) -> Duration {
    Duration::from_millis(2 + (i * span_ms) / KILLS)
}

/// Starts `args` and kills it with SIGKILL after `after`.
fn kill_after(s: &Sandbox, args: &[&str], after: Duration) {
    let mut child = s
        .command(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(after);
    let _ = child.kill();
    child.wait().unwrap();
}

fn ok(s: &Sandbox, args: &[&str]) -> serde_json::Value {
    let out = s.run(args);
    assert!(
        out.status.success(),
        "{args:?} failed after a kill: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    json(&out)
}

#[test]
fn killed_session_writes_leave_every_session_readable_and_resumable() {
    let s = Sandbox::new();
    s.write(s.repo().join("a.txt"), "a\n");
    let calls: String = (0..40)
        .map(|_| "  - reply:\n      tool_calls:\n        - {name: ls, arguments: {path: .}}\n")
        .collect();
    let model = script(
        &s,
        "many.yaml",
        &format!("turns:\n{calls}  - reply: {{text: done}}\n"),
    );
    for i in 0..KILLS {
        kill_after(
            &s,
            &["run", "--mode", "coding", "--model", &model, "list"],
            moment(i, 400),
        );
        let sessions = ok(&s, &["--json", "sessions", "list"]);
        for session in sessions.as_array().unwrap() {
            let id = session["id"].as_str().unwrap();
            ok(&s, &["--json", "sessions", "show", id]);
        }
    }
    let sessions = ok(&s, &["--json", "sessions", "list"]);
    println!(
        "{} of {KILLS} killed runs had opened a session",
        sessions.as_array().unwrap().len()
    );
    assert!(
        !sessions.as_array().unwrap().is_empty(),
        "no run got as far as a session"
    );
    let answer = script(&s, "answer.yaml", "turns:\n  - reply: {text: resumed}\n");
    for session in sessions.as_array().unwrap() {
        let id = session["id"].as_str().unwrap();
        let out = s.run(&["sessions", "resume", id, "go on", "--model", &answer]);
        assert!(
            out.status.success(),
            "session {id} does not resume: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

#[test]
fn killed_overlay_writes_leave_the_preferences_readable() {
    let s = Sandbox::new();
    s.project(
        "skills/review/SKILL.md",
        "---\nname: review\ndescription: Review pull requests.\n---\nReview.\n",
    );
    for i in 0..KILLS {
        let switch = if i % 2 == 0 { "off" } else { "on" };
        kill_after(
            &s,
            &["skills", "prefs", "set", "review", "--coding", switch],
            moment(i, 40),
        );
        let got = ok(&s, &["skills", "prefs", "get", "review", "--json"]);
        assert!(got["prefs"]["modes"].is_array(), "{got}");
        let listed = ok(&s, &["skills", "list", "--json"]);
        let text = listed.to_string();
        assert!(!text.contains("settings-malformed"), "{text}");
    }
    let set = ok(
        &s,
        &[
            "skills", "prefs", "set", "review", "--coding", "off", "--json",
        ],
    );
    assert_eq!(set["prefs"]["modes"], serde_json::json!(["work"]));
}

#[test]
fn killed_registry_writes_leave_the_registry_readable_and_the_next_install_lands() {
    let s = Sandbox::new();
    let plugin = |n: u64| -> PathBuf {
        let root = s.tmp.path().join(format!("src/p{n}"));
        write(
            &root.join("plugin.json"),
            &serde_json::json!({
                "$schema": "https://agent-plugins.org/schemas/1.0.0/plugin.schema.json",
                "name": format!("p{n}"), "version": "1.0.0", "description": "crash loop"
            })
            .to_string(),
        );
        write(
            &root.join(format!("skills/s{n}/SKILL.md")),
            &format!("---\nname: s{n}\ndescription: Skill {n}.\n---\nDo it.\n"),
        );
        root
    };
    for i in 0..KILLS {
        let root = plugin(i);
        kill_after(
            &s,
            &["plugin", "install", root.to_str().unwrap()],
            moment(i, 40),
        );
        let listed = ok(&s, &["plugin", "list", "--json"]);
        let text = listed.to_string();
        assert!(!text.contains("registry-malformed"), "{text}");
    }
    // The next mutation sweeps what the kills left and lands.
    let last = plugin(KILLS);
    ok(&s, &["plugin", "install", last.to_str().unwrap(), "--json"]);
    let data = s.home().join(".local/share/evoflux/agent-plugins");
    let registry: serde_json::Value =
        serde_json::from_slice(&std::fs::read(data.join("registry.json")).unwrap()).unwrap();
    let mut registered: Vec<String> = registry["installations"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["source_type"] == "installed")
        .map(|r| r["id"].as_str().unwrap().to_owned())
        .collect();
    registered.sort();
    println!(
        "{} of {KILLS} killed installs had landed",
        registered.len() - 1
    );
    let mut on_disk: Vec<String> = std::fs::read_dir(data.join("installed"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    on_disk.sort();
    assert_eq!(
        on_disk, registered,
        "every tree on disk is registered, and only those"
    );
    assert!(registry.to_string().contains("\"p20\""));
}
