#![allow(clippy::unwrap_used, clippy::expect_used)]

//! Nothing of a deleted session is left behind: its transcript, its Work
//! folder, its command journals and its objects in the artifact store go
//! with it; `sessions prune` deletes old sessions and the folders no
//! session owns.

use crate::common;

use common::{Sandbox, script};

fn session_with_a_journal(s: &Sandbox) -> String {
    let model = script(
        s,
        "journal.yaml",
        "turns:\n  - reply:\n      tool_calls:\n        - {name: shell, arguments: {command: \"echo kept\"}}\n  - reply: {text: done}\n",
    );
    let started = common::events(&s.run(&["--json", "run", "--model", &model, "go"]));
    started
        .iter()
        .find(|e| e["type"] == "session_started")
        .unwrap()["session_id"]
        .as_str()
        .unwrap()
        .to_owned()
}

#[test]
fn deleting_a_session_removes_its_folder_and_its_artifacts() {
    let s = Sandbox::new();
    let id = session_with_a_journal(&s);
    let data = s.home().join(".local/share/evoflux");
    let artifacts = data.join("artifacts").join(&id);
    assert!(artifacts.is_dir(), "the command left a journal");
    let deleted = s.json(&["--json", "sessions", "delete", &id]);
    assert_eq!(deleted["deleted"][0], id.as_str());
    assert!(!artifacts.exists());
    assert!(!data.join("sessions").join(&id).exists());
    let again = s.run(&["sessions", "delete", &id]);
    assert_eq!(again.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&again.stderr).contains("store/session-not-found"));
}

#[test]
fn deleting_or_pruning_a_session_removes_its_objects_from_the_artifact_store() {
    let s = Sandbox::new();
    let bucket = s.tmp.path().join("bucket");
    s.user(
        "config.toml",
        &format!("[store]\nartifacts = \"file://{}\"\n", bucket.display()),
    );
    // What a server replica copied up for each session's command journal.
    let object = |id: &str| bucket.join(id).join("commands/proc_1.txt");
    let deleted = session_with_a_journal(&s);
    let pruned = session_with_a_journal(&s);
    for id in [&deleted, &pruned] {
        common::write(&object(id), "kept");
    }
    let out = s.json(&["--json", "sessions", "delete", &deleted]);
    assert_eq!(out["deleted"][0], deleted.as_str());
    assert!(!object(&deleted).exists());
    assert!(object(&pruned).is_file(), "another session's objects stay");
    let out = s.json(&["--json", "sessions", "prune", "--older-than-days", "0"]);
    assert_eq!(out["deleted"][0], pruned.as_str(), "{out}");
    assert!(!object(&pruned).exists());
}

#[test]
fn prune_deletes_old_sessions_and_folders_no_session_owns() {
    let s = Sandbox::new();
    let kept = session_with_a_journal(&s);
    let data = s.home().join(".local/share/evoflux");
    // A folder a crashed evoflux left: a session id the store does not know.
    let orphan = data
        .join("artifacts")
        .join("01a20000-0000-7000-8000-000000000000");
    std::fs::create_dir_all(&orphan).unwrap();
    let young = s.json(&["--json", "sessions", "prune", "--older-than-days", "30"]);
    assert_eq!(young["deleted"].as_array().unwrap().len(), 0, "{young}");
    assert_eq!(young["orphan_folders_removed"].as_array().unwrap().len(), 1);
    assert!(!orphan.exists());
    assert!(data.join("artifacts").join(&kept).is_dir());
    let all = s.json(&["--json", "sessions", "prune", "--older-than-days", "0"]);
    assert_eq!(all["deleted"][0], kept.as_str(), "{all}");
    assert!(!data.join("artifacts").join(&kept).exists());
}

#[test]
fn a_session_start_applies_retention_once_a_day_and_prune_reads_the_config() {
    let s = Sandbox::new();
    let data = s.home().join(".local/share/evoflux");
    let orphan = data
        .join("artifacts")
        .join("01a20000-0000-7000-8000-000000000000");
    std::fs::create_dir_all(&orphan).unwrap();
    // The first start of the day prunes: the orphan folder goes.
    let first = session_with_a_journal(&s);
    assert!(!orphan.exists());
    assert!(data.join("retention.stamp").is_file());
    // Later starts that day leave the data dir alone.
    std::fs::create_dir_all(&orphan).unwrap();
    session_with_a_journal(&s);
    assert!(orphan.is_dir());

    // Without flags, prune applies [storage]; with none set it says so.
    let out = s.run(&["sessions", "prune"]);
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("no retention is set"));
    s.write(
        s.config().join("config.toml"),
        "[storage]\nmax_total_mib = 1\nmax_age_days = 0\n",
    );
    let bad = s.run(&["--json", "sessions", "prune"]);
    assert_eq!(bad.status.code(), Some(3));
    assert_eq!(common::stderr_codes(&bad), ["config/storage-invalid"]);
    s.write(
        s.config().join("config.toml"),
        "[storage]\nmax_age_days = 365\n",
    );
    let kept = s.json(&["--json", "sessions", "prune"]);
    assert_eq!(kept["deleted"].as_array().unwrap().len(), 0, "{kept}");
    assert!(data.join("artifacts").join(&first).is_dir());
}
