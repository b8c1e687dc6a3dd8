//! `evoflux skills` end to end: bundled skills, composition with user and
//! project skills, the projections, the catalog and preferences.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::Sandbox as Env;

use std::path::PathBuf;

use serde_json::Value;

impl Env {
    fn skill(&self, dir: PathBuf, name: &str, front: &str) -> PathBuf {
        let path = dir.join(name).join("SKILL.md");
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(
            &path,
            format!("---\n{front}\n---\nInstructions for {name}.\n"),
        )
        .unwrap();
        path
    }

    fn project_skill(&self, name: &str, front: &str) -> PathBuf {
        self.skill(self.repo().join(".evoflux/skills"), name, front)
    }

    fn list(&self, extra: &[&str]) -> Vec<Value> {
        let mut args = vec!["skills", "list", "--json"];
        args.extend_from_slice(extra);
        self.json(&args).as_array().unwrap().clone()
    }
}

fn names(rows: &[Value]) -> Vec<&str> {
    rows.iter().map(|r| r["name"].as_str().unwrap()).collect()
}

#[test]
fn bundled_skills_are_listed_and_mode_scoped() {
    let env = Env::new();
    // The core bundled skills; release-bundled plugins add their own skills
    // (source `plugin:<id>`), which are not under test here.
    let core = |extra: &[&str]| -> Vec<Value> {
        env.list(extra)
            .into_iter()
            .filter(|r| r["source"] == "builtin")
            .collect()
    };
    assert_eq!(
        names(&core(&[])),
        [
            "code-review",
            "debugging",
            "research",
            "skill-authoring",
            "testing",
            "writing"
        ]
    );
    // Work never lists a Coding-only bundled skill, and vice versa.
    assert_eq!(
        names(&core(&["--mode", "work"])),
        ["research", "skill-authoring", "writing"]
    );
    assert_eq!(
        names(&core(&["--mode", "coding"])),
        ["code-review", "debugging", "skill-authoring", "testing"]
    );
    let rows = core(&[]);
    assert!(rows.iter().all(|r| r["editable"] == false));
}

#[test]
fn project_skill_replaces_a_bundled_one_and_an_invalid_winner_stays_repairable() {
    let env = Env::new();
    env.project_skill(
        "debugging",
        "name: debugging\ndescription: Our own debugging routine",
    );
    let rows = env.list(&[]);
    let d = rows.iter().find(|r| r["name"] == "debugging").unwrap();
    assert_eq!(d["source"], "project-evoflux");
    assert_eq!(d["description"], "Our own debugging routine");

    let shown = env.json(&["skills", "show", "debugging", "--json"]);
    let sources: Vec<&str> = shown["candidates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["origin"]["source"].as_str().unwrap_or("?"))
        .collect();
    assert_eq!(sources.len(), 2, "{shown}");

    // Break the project variant: Settings still shows it (to repair it),
    // while the runtime catalog serves the valid bundled fallback.
    env.project_skill("debugging", "name: debugging");
    let rows = env.list(&[]);
    let d = rows.iter().find(|r| r["name"] == "debugging").unwrap();
    assert_eq!(d["valid"], false);
    assert_eq!(d["role"], "invalid_winner");
    assert!(
        d["diagnostics"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c == "skill/missing-description")
    );
    let catalog = env.json(&["skills", "catalog", "--mode", "coding", "--json"]);
    let text = catalog["text"].as_str().unwrap();
    assert!(
        text.contains("- debugging: Find and fix the root cause"),
        "{text}"
    );
}

#[test]
fn coding_only_project_skill_coexists_with_a_work_user_skill() {
    let env = Env::new();
    env.skill(
        env.home().join(".config/evoflux/skills"),
        "notes",
        "name: notes\ndescription: User notes skill",
    );
    let project = env.project_skill("notes", "name: notes\ndescription: Project notes skill");
    std::fs::write(
        project.parent().unwrap().join(".evoflux.json"),
        r#"{"modes": ["coding"]}"#,
    )
    .unwrap();
    let user = env.skill(
        env.home().join(".config/evoflux/skills"),
        "notes",
        "name: notes\ndescription: User notes skill",
    );
    std::fs::write(
        user.parent().unwrap().join(".evoflux.json"),
        r#"{"modes": ["work"]}"#,
    )
    .unwrap();
    let work = env.json(&["skills", "catalog", "--mode", "work", "--json"]);
    assert!(
        work["text"]
            .as_str()
            .unwrap()
            .contains("- notes: User notes skill")
    );
    let coding = env.json(&["skills", "catalog", "--mode", "coding", "--json"]);
    assert!(
        coding["text"]
            .as_str()
            .unwrap()
            .contains("- notes: Project notes skill")
    );
}

#[test]
fn preferences_change_runtime_views_but_never_skill_files() {
    let env = Env::new();
    let file = env.project_skill("review", "name: review\ndescription: Review pull requests");
    let before = std::fs::read(&file).unwrap();
    let set = env.json(&[
        "skills",
        "prefs",
        "set",
        "review",
        "--coding",
        "off",
        "--implicit",
        "off",
        "--json",
    ]);
    assert_eq!(set["prefs"]["modes"], serde_json::json!(["work"]));
    assert_eq!(set["prefs"]["allow_implicit_invocation"], false);
    assert_eq!(std::fs::read(&file).unwrap(), before);
    let store = env.home().join(".config/evoflux/skill-settings.json");
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(
        std::fs::metadata(&store).unwrap().permissions().mode() & 0o777,
        0o600
    );

    assert!(!names(&env.list(&["--mode", "coding"])).contains(&"review"));
    let work = env.json(&["skills", "catalog", "--mode", "work", "--json"]);
    assert!(!work["text"].as_str().unwrap().contains("- review:"));

    let got = env.json(&["skills", "prefs", "get", "review", "--json"]);
    assert_eq!(got["prefs"]["modes"], serde_json::json!(["work"]));
    let reset = env.json(&["skills", "prefs", "reset", "review", "--json"]);
    assert_eq!(
        reset["prefs"]["modes"],
        serde_json::json!(["work", "coding"])
    );
    assert!(names(&env.list(&["--mode", "coding"])).contains(&"review"));

    // Bundled skills are not editable through preferences of their files,
    // but an unknown name is a clear failure.
    let out = env.run(&["skills", "prefs", "get", "nope"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no skill named `nope`"));
}

#[test]
fn malformed_store_refuses_writes_and_is_left_untouched() {
    let env = Env::new();
    env.project_skill("review", "name: review\ndescription: Review pull requests");
    let store = env.home().join(".config/evoflux/skill-settings.json");
    std::fs::create_dir_all(store.parent().unwrap()).unwrap();
    std::fs::write(&store, "{ not json").unwrap();
    let out = env.run(&["skills", "prefs", "set", "review", "--work", "off"]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("skill/settings-store-malformed"), "{err}");
    assert_eq!(std::fs::read(&store).unwrap(), b"{ not json");
}

#[test]
fn validate_is_strict_by_default() {
    let env = Env::new();
    let ok = env.project_skill("good-skill", "name: good-skill\ndescription: Does a thing");
    let out = env.run(&["skills", "validate", ok.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let bad = env.project_skill("Bad Skill", "name: Bad Skill\ndescription: x");
    let out = env.run(&[
        "skills",
        "validate",
        bad.parent().unwrap().to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&out.stderr).contains("error[skill/name-invalid]"));
    let out = env.run(&["skills", "validate", "--runtime", bad.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "the runtime validator loads legacy names with a warning"
    );
}

#[test]
fn catalog_respects_a_tiny_context_window() {
    let env = Env::new();
    let full = env.json(&["skills", "catalog", "--mode", "coding", "--json"]);
    let tiny = env.json(&[
        "skills",
        "catalog",
        "--mode",
        "coding",
        "--context-window",
        "10000",
        "--json",
    ]);
    assert!(tiny["text"].as_str().unwrap().len() <= 800);
    assert!(full["text"].as_str().unwrap().len() > tiny["text"].as_str().unwrap().len());
    assert_eq!(tiny["report"]["budget_bytes"], 800);
}

#[test]
fn eval_runs_the_bundled_trigger_cases() {
    let env = Env::new();
    let v = env.json(&["skills", "eval", "--json"]);
    let skills = v["skills"].as_array().unwrap();
    assert_eq!(skills.len(), 6);
    let (hit, total) = skills.iter().fold((0, 0), |(h, t), s| {
        (
            h + s["positives"]["hit"].as_u64().unwrap() + s["negatives"]["hit"].as_u64().unwrap(),
            t + s["positives"]["total"].as_u64().unwrap()
                + s["negatives"]["total"].as_u64().unwrap(),
        )
    });
    assert!(total >= 60 && hit * 10 >= total * 9, "{hit}/{total}");
    let text = String::from_utf8_lossy(&env.run(&["skills", "eval"]).stdout).into_owned();
    assert!(text.lines().last().unwrap().starts_with("total "), "{text}");
}
