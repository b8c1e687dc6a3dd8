//! The `skill-settings.json` overlay: format, bounds, permissions, refusal
//! to overwrite a malformed file, and concurrent writers in two processes.
//!
//! The second process is this test binary re-run with one ignored helper
//! test selected; it reads its instructions from the environment.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::fs;
use std::io::{BufRead, BufReader};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use common::*;
use evoflux_skills::overlay::{MAX_SETTINGS_RECORDS, SETTINGS_FILE, StoreStatus};
use evoflux_skills::{
    CompatDir, ModeSet, PrefsPatch, SkillRecord, SkillSettingsStore, SkillSource, apply_overlay,
};

const CONFIG_VAR: &str = "EVOFLUX_SKILLS_TEST_CONFIG";
const ROOT_VAR: &str = "EVOFLUX_SKILLS_TEST_ROOT";
const PREFIX_VAR: &str = "EVOFLUX_SKILLS_TEST_PREFIX";
const SKILLS_PER_WRITER: usize = 25;

fn mode_bits(path: &Path) -> u32 {
    fs::metadata(path).unwrap().permissions().mode() & 0o777
}

fn records_in(root: &Path) -> Vec<SkillRecord> {
    load_root(root, SkillSource::Project(CompatDir::Evoflux), None)
}

fn one_skill(tmp: &Path) -> SkillRecord {
    let root = tmp.join("skills");
    bundle(&root, "review", &skill_md("review", "Review.", "B"), &[]);
    records_in(&root).remove(0)
}

#[test]
fn written_file_has_the_documented_shape_sorted_and_0600() {
    let tmp = tempfile::tempdir().unwrap();
    let rec = one_skill(tmp.path());
    let store = SkillSettingsStore::in_config_dir(&tmp.path().join("config"));
    let prefs = store
        .set(
            &rec,
            PrefsPatch {
                modes: Some(ModeSet::WORK),
                ..Default::default()
            },
        )
        .unwrap();
    assert_eq!(prefs.modes, ModeSet::WORK);
    assert!(prefs.allow_implicit_invocation && prefs.user_invocable);
    let text = fs::read_to_string(store.path()).unwrap();
    let expected = format!(
        "{{\n  \"skills\": {{\n    \"{}\": {{\n      \"allow_implicit_invocation\": true,\n      \"modes\": [\n        \"work\"\n      ],\n      \"name\": \"review\",\n      \"source\": \"project-evoflux\",\n      \"user_invocable\": true\n    }}\n  }},\n  \"version\": 1\n}}\n",
        rec.settings_id
    );
    assert_eq!(text, expected);
    assert_eq!(mode_bits(store.path()), 0o600);
    let lock = tmp
        .path()
        .join("config")
        .join(format!("{SETTINGS_FILE}.lock"));
    assert_eq!(mode_bits(&lock), 0o600);

    // Applying the snapshot: the overlay wins, the defaults stay visible.
    let mut r = rec.clone();
    apply_overlay(&mut r, &store.read());
    assert_eq!(r.prefs.modes, ModeSet::WORK);
    assert_eq!(r.defaults.modes, ModeSet::BOTH);
    assert!(r.settings_overridden);
}

#[test]
fn permissive_file_is_tightened_to_0600_on_every_write() {
    let tmp = tempfile::tempdir().unwrap();
    let rec = one_skill(tmp.path());
    let store = SkillSettingsStore::in_config_dir(&tmp.path().join("config"));
    store.set(&rec, PrefsPatch::default()).unwrap();
    fs::set_permissions(store.path(), fs::Permissions::from_mode(0o644)).unwrap();
    store
        .set(
            &rec,
            PrefsPatch {
                user_invocable: Some(false),
                ..Default::default()
            },
        )
        .unwrap();
    assert_eq!(mode_bits(store.path()), 0o600);
    fs::set_permissions(store.path(), fs::Permissions::from_mode(0o666)).unwrap();
    store
        .set(
            &rec,
            PrefsPatch {
                user_invocable: Some(true),
                ..Default::default()
            },
        )
        .unwrap();
    assert_eq!(mode_bits(store.path()), 0o600);
}

#[test]
fn malformed_store_is_ignored_on_read_and_left_byte_identical_after_a_refused_write() {
    let tmp = tempfile::tempdir().unwrap();
    let rec = one_skill(tmp.path());
    let config = tmp.path().join("config");
    fs::create_dir_all(&config).unwrap();
    let store = SkillSettingsStore::in_config_dir(&config);
    let big = format!(
        "{{\"version\":1,\"skills\":{{}},\"pad\":\"{}\"}}",
        "x".repeat(1024 * 1024)
    );
    let mut too_many = serde_json::Map::new();
    for i in 0..=MAX_SETTINGS_RECORDS {
        too_many.insert(format!("skill_{i:032x}"), serde_json::json!({}));
    }
    let too_many = serde_json::json!({"version": 1, "skills": too_many}).to_string();
    for bad in [
        "{ not json".to_owned(),
        "[]".to_owned(),
        "{\"version\": 2, \"skills\": {}}".to_owned(),
        "{\"skills\": {}}".to_owned(),
        "{\"version\": 1, \"skills\": []}".to_owned(),
        big,
        too_many,
    ] {
        fs::write(store.path(), &bad).unwrap();
        fs::set_permissions(store.path(), fs::Permissions::from_mode(0o644)).unwrap();
        let snap = store.read();
        assert!(
            matches!(snap.status, StoreStatus::Malformed { .. }),
            "{}",
            &bad[..bad.len().min(40)]
        );
        assert!(snap.records.is_empty());
        assert_eq!(
            snap.diagnostics().codes(),
            ["skill/settings-store-malformed"]
        );
        // Bundle defaults apply.
        let mut r = rec.clone();
        apply_overlay(&mut r, &snap);
        assert_eq!(r.prefs, r.defaults);

        let err = store
            .set(
                &rec,
                PrefsPatch {
                    modes: Some(ModeSet::WORK),
                    ..Default::default()
                },
            )
            .unwrap_err();
        assert_eq!(err.code(), "skill/settings-store-malformed");
        let msg = err.to_string();
        assert!(
            msg.contains("Back it up") && msg.contains("repair or remove"),
            "{msg}"
        );
        assert_eq!(
            store.reset(&rec.settings_id).unwrap_err().code(),
            "skill/settings-store-malformed"
        );
        assert_eq!(
            fs::read_to_string(store.path()).unwrap(),
            bad,
            "left byte-identical"
        );
        assert_eq!(mode_bits(store.path()), 0o644, "not even re-permissioned");
    }
}

#[test]
fn invalid_single_record_falls_back_to_defaults_with_a_diagnostic_and_survives_writes() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("skills");
    bundle(&root, "review", &skill_md("review", "Review.", "B"), &[]);
    bundle(&root, "write", &skill_md("write", "Write.", "B"), &[]);
    let recs = records_in(&root);
    let (review, write) = (&recs[0], &recs[1]);
    let config = tmp.path().join("config");
    fs::create_dir_all(&config).unwrap();
    let store = SkillSettingsStore::in_config_dir(&config);
    let text = serde_json::json!({
        "version": 1,
        "skills": {
            review.settings_id.as_str(): {"name": "review", "source": "x", "modes": ["play"],
                "allow_implicit_invocation": true, "user_invocable": true},
            "not-an-id": {"anything": true}
        }
    })
    .to_string();
    fs::write(store.path(), &text).unwrap();
    let snap = store.read();
    assert_eq!(snap.status, StoreStatus::Loaded);
    assert_eq!(snap.invalid.len(), 2);
    let mut r = review.clone();
    apply_overlay(&mut r, &snap);
    assert_eq!(codes(&r), ["skill/runtime-settings-invalid"]);
    assert_eq!(r.prefs, r.defaults);
    assert!(r.valid, "a bad preference never invalidates the skill");

    // Writing another skill keeps the unusable records for the user to fix.
    store
        .set(
            write,
            PrefsPatch {
                user_invocable: Some(false),
                ..Default::default()
            },
        )
        .unwrap();
    let v: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(store.path()).unwrap()).unwrap();
    let skills = v["skills"].as_object().unwrap();
    assert!(skills.contains_key("not-an-id"));
    assert!(skills.contains_key(review.settings_id.as_str()));
    assert!(skills.contains_key(write.settings_id.as_str()));
    // Saving the broken one replaces it with a valid record.
    store.set(review, PrefsPatch::default()).unwrap();
    let mut r = review.clone();
    apply_overlay(&mut r, &store.read());
    assert!(codes(&r).is_empty());
}

#[test]
fn invalid_skills_cannot_have_preferences_saved() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("skills");
    bundle(&root, "broken", "---\nname: broken\n---\nB\n", &[]);
    let rec = records_in(&root).remove(0);
    assert!(!rec.valid && !rec.settings_editable);
    let store = SkillSettingsStore::in_config_dir(&tmp.path().join("config"));
    let err = store.set(&rec, PrefsPatch::default()).unwrap_err();
    assert_eq!(err.code(), "skill/settings-not-editable");
    assert!(!store.path().exists());
}

#[test]
fn a_held_lock_makes_writers_wait_then_time_out_cleanly() {
    let tmp = tempfile::tempdir().unwrap();
    let rec = one_skill(tmp.path());
    let config = tmp.path().join("config");
    fs::create_dir_all(&config).unwrap();
    let store = SkillSettingsStore::in_config_dir(&config)
        .with_lock_wait(std::time::Duration::from_millis(50));
    let held =
        evoflux_core::lock::FileLock::acquire(store.path(), std::time::Duration::ZERO).unwrap();
    let err = store.set(&rec, PrefsPatch::default()).unwrap_err();
    assert_eq!(err.code(), "skill/settings-locked");
    assert!(!store.path().exists());
    drop(held);
    store.set(&rec, PrefsPatch::default()).unwrap();
    assert!(store.path().exists());
}

/// Writes preferences for the helper's share of skills.
fn write_share(config: &Path, root: &Path, prefix: &str) {
    let store = SkillSettingsStore::in_config_dir(config);
    for r in records_in(root)
        .iter()
        .filter(|r| r.name.starts_with(prefix))
    {
        store
            .set(
                r,
                PrefsPatch {
                    modes: Some(ModeSet::CODING),
                    user_invocable: Some(false),
                    ..Default::default()
                },
            )
            .unwrap();
    }
}

#[test]
#[ignore = "helper process for concurrent_writers_in_two_processes_keep_every_record"]
fn helper_overlay_writer() {
    let config = PathBuf::from(std::env::var_os(CONFIG_VAR).expect("run by the parent test"));
    let root = PathBuf::from(std::env::var_os(ROOT_VAR).unwrap());
    let prefix = std::env::var(PREFIX_VAR).unwrap();
    println!("STARTED");
    write_share(&config, &root, &prefix);
    println!("DONE");
}

#[test]
fn concurrent_writers_in_two_processes_keep_every_record() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("skills");
    for who in ["a", "b"] {
        for i in 0..SKILLS_PER_WRITER {
            let name = format!("{who}-skill-{i:02}");
            bundle(&root, &name, &skill_md(&name, "Concurrent.", "B"), &[]);
        }
    }
    let config = tmp.path().join("config");
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            // The test binary holds every integration test of the crate.
            "overlay::helper_overlay_writer",
            "--exact",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CONFIG_VAR, &config)
        .env(ROOT_VAR, &root)
        .env(PREFIX_VAR, "b-")
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    // Start writing once the other process is running, so the two overlap.
    for line in lines.by_ref() {
        if line.unwrap().trim_end().ends_with("STARTED") {
            break;
        }
    }
    write_share(&config, &root, "a-");
    let mut finished = false;
    for line in lines {
        if line.unwrap().trim_end().ends_with("DONE") {
            finished = true;
        }
    }
    assert!(child.wait().unwrap().success());
    assert!(finished, "helper did not finish");

    let store = SkillSettingsStore::in_config_dir(&config);
    let snap = store.read();
    assert_eq!(snap.status, StoreStatus::Loaded);
    assert!(snap.invalid.is_empty());
    assert_eq!(snap.records.len(), 2 * SKILLS_PER_WRITER);
    for r in records_in(&root) {
        let stored = snap
            .get(&r.settings_id)
            .unwrap_or_else(|| panic!("lost {}", r.name));
        assert_eq!(stored.name, r.name);
        assert_eq!(stored.modes, ModeSet::CODING);
        assert!(!stored.user_invocable);
    }
    assert_eq!(mode_bits(store.path()), 0o600);
    // No temporary files left behind.
    let mut entries: Vec<String> = fs::read_dir(&config)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    entries.sort();
    assert_eq!(
        entries,
        [SETTINGS_FILE.to_owned(), format!("{SETTINGS_FILE}.lock")]
    );
}
