//! The skill-related regression invariants of the application-harness
//! spec, one named test each (the parts this crate carries).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::collections::BTreeSet;
use std::path::Path;

use common::*;
use evoflux_core::AppMode;
use evoflux_skills::activation::ActivationError;
use evoflux_skills::invocation::select_explicit;
use evoflux_skills::projection::{
    ManagementRole, management_choice, runtime_choice, runtime_projection,
};
use evoflux_skills::resolver::{ResolutionStatus, ResolverRequest, evaluate_response};
use evoflux_skills::resources::read_resource;
use evoflux_skills::{
    CatalogRequest, CompatDir, ModeSet, PlaceholderDirs, PrefsPatch, SkillOrigin, SkillRecord,
    SkillSettingsStore, SkillSource, activate, build_catalog,
};

const BODY_MARKER: &str = "SECRET-BODY-MARKER: follow these exact steps";

fn placeholders() -> PlaceholderDirs {
    PlaceholderDirs::from_config_dir("/cfg")
}

fn refs(records: &[SkillRecord]) -> Vec<&SkillRecord> {
    records.iter().collect()
}

fn catalog_names(records: &[&SkillRecord], mode: AppMode, query: Option<&str>) -> Vec<String> {
    build_catalog(
        records,
        &CatalogRequest {
            mode,
            context_window_tokens: None,
            latest_request: query,
            assigned: &[],
        },
    )
    .report
    .included
}

/// A root with a handful of ordinary skills.
fn sample_root(root: &Path) -> Vec<SkillRecord> {
    bundle(
        root,
        "coding-review",
        &skill_md(
            "coding-review",
            "Review a pull request for correctness, tests and security.",
            BODY_MARKER,
        ),
        &[("references/checklist.md", "CHECKLIST CONTENT")],
    );
    bundle(
        root,
        "work-writing",
        &skill_md(
            "work-writing",
            "Draft and edit reports, letters and documents.",
            BODY_MARKER,
        ),
        &[],
    );
    bundle(
        root,
        "pdf-tools",
        &skill_md(
            "pdf-tools",
            "Extract text and tables from PDF documents.",
            BODY_MARKER,
        ),
        &[],
    );
    bundle(
        root,
        "deploy",
        &format!(
            "---\nname: deploy\ndescription: Deploy the service to production.\ndisable-model-invocation: true\n---\n{BODY_MARKER}\n"
        ),
        &[],
    );
    bundle(
        root,
        "broken",
        "---\nname: broken\n---\nno description\n",
        &[],
    );
    load_root(root, SkillSource::Project(CompatDir::Agents), None)
}

#[test]
fn normal_prose_ranks_skill_metadata_but_is_never_transformed_into_a_repository_query() {
    let tmp = tempfile::tempdir().unwrap();
    let records = sample_root(tmp.path());
    let all = refs(&records);
    let prose = "please find the function parse_config in src/config.rs and review my pull request";
    let plain = catalog_names(&all, AppMode::Coding, None);
    let ranked = build_catalog(
        &all,
        &CatalogRequest {
            mode: AppMode::Coding,
            context_window_tokens: None,
            latest_request: Some(prose),
            assigned: &[],
        },
    );
    // Ranking reorders, never filters: the same set of skills is listed.
    let a: BTreeSet<_> = plain.iter().collect();
    let b: BTreeSet<_> = ranked.report.included.iter().collect();
    assert_eq!(a, b);
    assert_eq!(ranked.report.included[0], "coding-review");
    // The only product of ranking is an ordering of known names; the prose
    // itself goes nowhere.
    assert!(ranked.report.query_ranked.iter().all(|n| a.contains(n)));
    assert!(!ranked.text.contains("parse_config"));
    assert!(!ranked.text.contains("src/config.rs"));
}

#[test]
fn resolver_decision_is_bounded_to_one_exact_eligible_name() {
    let tmp = tempfile::tempdir().unwrap();
    let records = sample_root(tmp.path());
    let all = refs(&records);
    let request = ResolverRequest::build("review my PR", AppMode::Coding, &all).unwrap();
    let names: Vec<&str> = request.skills.iter().map(|s| s.name.as_str()).collect();
    // Manual-only (`deploy`) and invalid (`broken`) skills are not candidates.
    assert_eq!(names, ["coding-review", "pdf-tools", "work-writing"]);
    // Only request, mode and Tier-1 metadata are sent: no body, no path.
    let message = request.user_message();
    assert!(!message.contains(BODY_MARKER));
    assert!(!message.contains(&tmp.path().display().to_string()));
    let keys: Vec<String> = serde_json::from_str::<serde_json::Value>(&message)
        .unwrap()
        .as_object()
        .unwrap()
        .keys()
        .cloned()
        .collect();
    assert_eq!(keys.len(), 3);
    // A decision naming a non-eligible skill is rejected, even a real one.
    let r = evaluate_response(
        &request,
        r#"{"skill_name":"deploy","confidence":0.99,"reason":"x"}"#,
    );
    assert_eq!(r.status, ResolutionStatus::Rejected);
    assert_eq!(r.selected, None);
    let r = evaluate_response(
        &request,
        r#"{"skill_name":"coding-review","confidence":0.95,"reason":"x"}"#,
    );
    assert_eq!(r.status, ResolutionStatus::Selected);
    assert_eq!(r.selected.as_deref(), Some("coding-review"));
    // At most 64 candidates.
    let many_root = tempfile::tempdir().unwrap();
    for i in 0..70 {
        let n = format!("skill-{i:02}");
        bundle(
            many_root.path(),
            &n,
            &skill_md(&n, "Does things.", "B"),
            &[],
        );
    }
    let many = load_root(many_root.path(), SkillSource::Custom, None);
    let req = ResolverRequest::build("x", AppMode::Work, &refs(&many)).unwrap();
    assert_eq!(req.skills.len(), 64);
    assert!(ResolverRequest::build("   ", AppMode::Work, &refs(&many)).is_none());
}

#[test]
fn bounded_tier1_catalog_contains_metadata_but_no_skill_body() {
    let tmp = tempfile::tempdir().unwrap();
    let records = sample_root(tmp.path());
    let catalog = build_catalog(
        &refs(&records),
        &CatalogRequest {
            mode: AppMode::Coding,
            context_window_tokens: None,
            latest_request: Some("review"),
            assigned: &[],
        },
    );
    assert!(
        catalog
            .text
            .contains("- coding-review: Review a pull request")
    );
    assert!(!catalog.text.contains(BODY_MARKER));
    assert!(!catalog.text.contains("SKILL.md"));
    assert!(!catalog.text.contains(&tmp.path().display().to_string()));
    assert!(catalog.text.len() <= catalog.report.budget_bytes);
    // Records never hold the body either.
    let json = serde_json::to_string(&records).unwrap();
    assert!(!json.contains(BODY_MARKER));
}

#[test]
fn assigned_skills_preload_exact_bodies_and_unassigned_stay_on_demand() {
    let tmp = tempfile::tempdir().unwrap();
    let body = "Step 1: do {SKILL_DIR}/x.\n\n  Keep   spacing exactly.\n";
    bundle(
        tmp.path(),
        "assigned",
        &format!("---\nname: assigned\ndescription: A.\n---\n{body}"),
        &[],
    );
    bundle(
        tmp.path(),
        "zz-other",
        &skill_md("zz-other", "Other.", "Other body"),
        &[],
    );
    bundle(
        tmp.path(),
        "aa-other",
        &skill_md("aa-other", "Another.", "Another body"),
        &[],
    );
    let records = load_root(tmp.path(), SkillSource::Custom, None);
    let all = refs(&records);
    // The catalog lists every eligible skill by name (an assigned one only
    // survives a tight budget first)...
    let assigned = vec!["assigned".to_owned()];
    let catalog = build_catalog(
        &all,
        &CatalogRequest {
            mode: AppMode::Work,
            context_window_tokens: None,
            latest_request: None,
            assigned: &assigned,
        },
    );
    assert_eq!(
        catalog.report.included,
        ["aa-other", "assigned", "zz-other"]
    );
    // ...and activation yields the exact body (placeholders expanded only).
    let rec = all.iter().find(|r| r.name == "assigned").unwrap();
    let act = activate(rec, &placeholders(), &BTreeSet::new()).unwrap();
    assert_eq!(
        act.instructions,
        body.replace(
            "{SKILL_DIR}",
            &tmp.path().join("assigned").display().to_string()
        )
    );
    // Unassigned skills carry no body anywhere before activation.
    assert!(!catalog.text.contains("Other body"));
}

#[test]
fn manual_only_operational_skills_stay_out_of_implicit_resolution_but_remain_addressable() {
    let tmp = tempfile::tempdir().unwrap();
    let mut records = sample_root(tmp.path());
    // The metadata-file policy works the same way as the front-matter key.
    bundle(
        tmp.path(),
        "release",
        &skill_md("release", "Cut a release.", "B"),
        &[(
            "agents/evoflux.yaml",
            "policy:\n  allow_implicit_invocation: false\n",
        )],
    );
    records.push(load_one(tmp.path(), "release", SkillSource::Custom));
    let all = refs(&records);
    for mode in AppMode::ALL {
        let listed = catalog_names(&all, mode, Some("deploy the release to production"));
        assert!(!listed.contains(&"deploy".to_owned()), "{listed:?}");
        assert!(!listed.contains(&"release".to_owned()), "{listed:?}");
        let req = ResolverRequest::build("deploy the release", mode, &all).unwrap();
        assert!(
            req.skills
                .iter()
                .all(|s| s.name != "deploy" && s.name != "release")
        );
        let picked = select_explicit("$deploy now, then /skill:release", &all, mode);
        let names: Vec<&str> = picked.skills.iter().map(|(r, _)| r.name.as_str()).collect();
        assert_eq!(names, ["deploy"], "slash form must start the line");
        let picked = select_explicit("/skill:release please", &all, mode);
        assert_eq!(picked.skills[0].0.name, "release");
        assert!(picked.suppresses_resolver());
    }
    // Unknown names are ignored silently; invalid skills cannot be picked.
    let none = select_explicit("$nope and $broken", &all, AppMode::Work);
    assert!(none.skills.is_empty() && !none.suppresses_resolver());
}

#[test]
fn user_invocable_false_blocks_explicit_selection_only() {
    let tmp = tempfile::tempdir().unwrap();
    bundle(
        tmp.path(),
        "auto",
        "---\nname: auto\ndescription: Automatic helper.\nuser-invocable: false\n---\nB\n",
        &[],
    );
    let records = load_root(tmp.path(), SkillSource::Custom, None);
    let all = refs(&records);
    assert!(
        select_explicit("$auto", &all, AppMode::Work)
            .skills
            .is_empty()
    );
    assert_eq!(catalog_names(&all, AppMode::Work, None), ["auto"]);
}

#[test]
fn activated_skill_instructions_remain_exact_and_canonical() {
    let tmp = tempfile::tempdir().unwrap();
    let records = sample_root(tmp.path());
    let rec = records.iter().find(|r| r.name == "coding-review").unwrap();
    let a = activate(rec, &placeholders(), &BTreeSet::new()).unwrap();
    let b = activate(rec, &placeholders(), &BTreeSet::new()).unwrap();
    // Re-activation (rehydration) renders byte-identical text.
    assert_eq!(a.render(), b.render());
    assert_eq!(a.instructions, format!("{BODY_MARKER}\n"));
    assert_eq!(a.revision.len(), 16);
    assert_eq!(Some(a.revision.clone()), rec.revision);
    let text = a.render();
    assert!(text.starts_with(&format!(
        "<skill_content name=\"coding-review\" revision=\"{}\">\nSkill directory: {}\n",
        a.revision,
        rec.bundle_dir.display()
    )));
    assert!(text.contains(&format!("<instructions>\n{BODY_MARKER}\n</instructions>")));
    assert!(text.ends_with("</skill_content>"));
}

#[test]
fn skill_activation_advertises_task_resource_paths_but_never_their_contents() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = bundle(
        tmp.path(),
        "research",
        &skill_md(
            "research",
            "Research a topic.",
            "Read references/method.md when sources conflict.",
        ),
        &[
            ("references/method.md", "METHOD CONTENT"),
            ("scripts/fetch.py", "print('FETCH CONTENT')"),
            (
                "agents/evoflux.yaml",
                "interface:\n  display_name: Research\n  short_description: R\n",
            ),
            (
                "evals/trigger-cases.json",
                "[{\"query\": \"EVAL CONTENT\", \"should_trigger\": true}]",
            ),
            (".evoflux.json", "{\"modes\": [\"work\"]}"),
        ],
    );
    std::os::unix::fs::symlink("/etc/hostname", dir.join("link.txt")).unwrap();
    let rec = load_one(tmp.path(), "research", SkillSource::Custom);
    assert_eq!(rec.resource_count, 2);
    let act = activate(&rec, &placeholders(), &BTreeSet::new()).unwrap();
    let paths: Vec<&str> = act.resources.iter().map(|r| r.path.as_str()).collect();
    assert_eq!(paths, ["references/method.md", "scripts/fetch.py"]);
    let text = act.render();
    assert!(text.contains("- references/method.md (14 bytes)"));
    for hidden in [
        "METHOD CONTENT",
        "FETCH CONTENT",
        "EVAL CONTENT",
        "agents/",
        "evals/",
        ".evoflux.json",
        "link.txt",
    ] {
        assert!(!text.contains(hidden), "{hidden} leaked");
    }
    // Control-plane files are not readable as task resources.
    for path in [
        "agents/evoflux.yaml",
        "evals/trigger-cases.json",
        ".evoflux.json",
        "SKILL.md",
    ] {
        let err = read_resource(&dir, path).unwrap_err();
        assert_eq!(err.code(), "skill/resource-control-plane", "{path}");
    }
    assert_eq!(
        read_resource(&dir, "references/method.md").unwrap().text,
        "METHOD CONTENT"
    );
}

#[test]
fn loading_a_skill_atomically_validates_every_declared_builtin_tool_dependency() {
    let tmp = tempfile::tempdir().unwrap();
    bundle(
        tmp.path(),
        "coding-debugging",
        &skill_md("coding-debugging", "Debug failures.", "Use code_context."),
        &[(
            "agents/evoflux.yaml",
            "dependencies:\n  tools:\n    - type: builtin\n      value: code_context\n    - type: builtin\n      value: shell\n    - type: mcp\n      value: github\n",
        )],
    );
    let rec = load_one(tmp.path(), "coding-debugging", SkillSource::Custom);
    let granted: BTreeSet<String> = ["code_context".to_owned()].into();
    let err = activate(&rec, &placeholders(), &granted).unwrap_err();
    assert_eq!(err.code(), "skill/dependency-missing");
    match err {
        ActivationError::MissingDependencies { missing, .. } => assert_eq!(missing, ["shell"]),
        other => panic!("{other:?}"),
    }
    let granted: BTreeSet<String> = ["code_context".to_owned(), "shell".to_owned()].into();
    let act = activate(&rec, &placeholders(), &granted).unwrap();
    // The same contract comes back every time the skill is (re)activated.
    assert_eq!(act.contract.required_tools, ["code_context", "shell"]);
    let again = activate(&rec, &placeholders(), &granted).unwrap();
    assert_eq!(again.contract, act.contract);
}

#[test]
fn symlinked_bundles_cannot_be_updated_or_deleted_through_settings() {
    let tmp = tempfile::tempdir().unwrap();
    let elsewhere = tmp.path().join("elsewhere");
    bundle(
        &elsewhere,
        "linked",
        &skill_md("linked", "Linked skill.", "B"),
        &[],
    );
    let root = tmp.path().join("root");
    bundle(&root, "plain", &skill_md("plain", "Plain skill.", "B"), &[]);
    std::os::unix::fs::symlink(elsewhere.join("linked"), root.join("linked")).unwrap();
    let records = load_root(&root, SkillSource::User(CompatDir::Agents), None);
    let linked = records.iter().find(|r| r.name == "linked").unwrap();
    let plain = records.iter().find(|r| r.name == "plain").unwrap();
    assert!(linked.symlinked && !linked.editable);
    assert!(linked.valid, "symlinked bundles are readable");
    assert!(linked.settings_editable, "preferences stay editable");
    assert!(!plain.symlinked && plain.editable);
    // A symlinked root makes every bundle read-only.
    let origin =
        SkillOrigin::new(SkillSource::User(CompatDir::Claude), &root).with_root_symlinked(true);
    let found = evoflux_skills::scan_root(&root, Default::default());
    let r = evoflux_skills::load_bundle(&found.bundles[1], &origin, &options(Path::new("/cfg")));
    assert_eq!(r.name, "plain");
    assert!(!r.editable);
}

#[test]
fn bundled_admin_and_plugin_bundles_are_never_editable() {
    let tmp = tempfile::tempdir().unwrap();
    bundle(tmp.path(), "s", &skill_md("s", "d", "B"), &[]);
    for source in [
        SkillSource::Bundled {
            modes: ModeSet::BOTH,
        },
        SkillSource::Admin,
        SkillSource::Plugin {
            installation_id: "acme".into(),
        },
    ] {
        let r = load_one(tmp.path(), "s", source.clone());
        assert!(!r.editable, "{source}");
        assert!(r.settings_editable, "{source}");
    }
    for source in [
        SkillSource::Project(CompatDir::Evoflux),
        SkillSource::User(CompatDir::Opencode),
        SkillSource::Custom,
    ] {
        assert!(
            load_one(tmp.path(), "s", source.clone()).editable,
            "{source}"
        );
    }
}

#[test]
fn runtime_preference_edits_never_rewrite_skill_md_agent_metadata_or_sidecar() {
    let tmp = tempfile::tempdir().unwrap();
    let config = tmp.path().join("config");
    let store = SkillSettingsStore::in_config_dir(&config);
    let files: &[(&str, &str)] = &[
        (
            "agents/evoflux.yaml",
            "interface:\n  display_name: X\n  short_description: Y\n",
        ),
        (
            "agents/openai.yaml",
            "interface:\n  display_name: Z\n  short_description: W\n",
        ),
        (".evoflux.json", "{\"modes\": [\"coding\"]}"),
    ];
    let project = tmp.path().join("repo/.agents/skills");
    bundle(
        &project,
        "proj",
        &skill_md("proj", "Project skill.", "B"),
        files,
    );
    let builtin = tmp.path().join("builtin");
    bundle(
        &builtin,
        "coding-review",
        &skill_md("coding-review", "Review.", "B"),
        files,
    );
    let elsewhere = tmp.path().join("elsewhere");
    bundle(
        &elsewhere,
        "linked",
        &skill_md("linked", "Linked.", "B"),
        files,
    );
    let user = tmp.path().join("user");
    std::fs::create_dir_all(&user).unwrap();
    std::os::unix::fs::symlink(elsewhere.join("linked"), user.join("linked")).unwrap();

    let before = (
        tree_digest(&project),
        tree_digest(&builtin),
        tree_digest(&elsewhere),
    );
    let mut records = load_root(&project, SkillSource::Project(CompatDir::Agents), None);
    records.extend(load_root(
        &builtin,
        SkillSource::Bundled {
            modes: ModeSet::CODING,
        },
        None,
    ));
    records.extend(load_root(&user, SkillSource::User(CompatDir::Agents), None));
    assert_eq!(records.len(), 3);
    for r in &records {
        store
            .set(
                r,
                PrefsPatch {
                    modes: Some(ModeSet::WORK),
                    allow_implicit_invocation: Some(false),
                    user_invocable: Some(false),
                },
            )
            .unwrap();
    }
    let snap = store.read();
    assert_eq!(snap.records.len(), 3);
    for r in &records {
        assert!(store.reset(&r.settings_id).unwrap());
    }
    assert!(
        !store.path().exists(),
        "removing the last record deletes the file"
    );
    let after = (
        tree_digest(&project),
        tree_digest(&builtin),
        tree_digest(&elsewhere),
    );
    assert_eq!(before, after);
}

#[test]
fn same_name_variants_in_different_repositories_have_isolated_preferences_and_reset_targets_the_variant()
 {
    let tmp = tempfile::tempdir().unwrap();
    let store = SkillSettingsStore::in_config_dir(&tmp.path().join("config"));
    let repo_a = tmp.path().join("a/.agents/skills");
    let repo_b = tmp.path().join("b/.agents/skills");
    for root in [&repo_a, &repo_b] {
        bundle(
            root,
            "review",
            &skill_md("review", "Review code.", "B"),
            &[],
        );
    }
    let a = load_root(&repo_a, SkillSource::Project(CompatDir::Agents), None).remove(0);
    let b = load_root(&repo_b, SkillSource::Project(CompatDir::Agents), None).remove(0);
    assert_eq!(a.name, b.name);
    assert_ne!(a.settings_id, b.settings_id);

    store
        .set(
            &a,
            PrefsPatch {
                modes: Some(ModeSet::CODING),
                ..Default::default()
            },
        )
        .unwrap();
    store
        .set(
            &b,
            PrefsPatch {
                user_invocable: Some(false),
                ..Default::default()
            },
        )
        .unwrap();
    let snap = store.read();
    let a2 = load_root(
        &repo_a,
        SkillSource::Project(CompatDir::Agents),
        Some(&snap),
    )
    .remove(0);
    let b2 = load_root(
        &repo_b,
        SkillSource::Project(CompatDir::Agents),
        Some(&snap),
    )
    .remove(0);
    assert_eq!(a2.prefs.modes, ModeSet::CODING);
    assert!(a2.prefs.user_invocable);
    assert_eq!(b2.prefs.modes, ModeSet::BOTH);
    assert!(!b2.prefs.user_invocable);

    // Reset touches exactly the one variant and restores its defaults.
    assert!(store.reset(&a.settings_id).unwrap());
    assert!(!store.reset(&a.settings_id).unwrap());
    let snap = store.read();
    let a3 = load_root(
        &repo_a,
        SkillSource::Project(CompatDir::Agents),
        Some(&snap),
    )
    .remove(0);
    let b3 = load_root(
        &repo_b,
        SkillSource::Project(CompatDir::Agents),
        Some(&snap),
    )
    .remove(0);
    assert_eq!(a3.prefs, a3.defaults);
    assert!(!a3.settings_overridden);
    assert!(!b3.prefs.user_invocable && b3.settings_overridden);
}

#[test]
fn invalid_higher_precedence_bundle_remains_repairable_in_settings_but_never_replaces_a_valid_runtime_fallback()
 {
    let tmp = tempfile::tempdir().unwrap();
    let project = tmp.path().join("project");
    let user = tmp.path().join("user");
    bundle(
        &project,
        "review",
        "---\nname: review\ndescription: [broken\n---\nB\n",
        &[],
    );
    bundle(
        &user,
        "review",
        &skill_md("review", "Valid user review.", "B"),
        &[],
    );
    let mut slot = load_root(&project, SkillSource::Project(CompatDir::Agents), None);
    slot.extend(load_root(&user, SkillSource::User(CompatDir::Agents), None));
    assert!(!slot[0].valid && slot[1].valid);

    for mode in AppMode::ALL {
        let chosen = runtime_choice(&slot, mode).unwrap();
        assert_eq!(chosen.origin.root, user);
        let view = management_choice(&slot, Some(mode)).unwrap();
        assert_eq!(view.role, ManagementRole::Effective);
        assert_eq!(view.record.origin.root, user);
    }
    let unscoped = management_choice(&slot, None).unwrap();
    assert_eq!(unscoped.role, ManagementRole::InvalidWinner);
    assert_eq!(unscoped.record.origin.root, project);
    assert_eq!(unscoped.effective_modes, ModeSet::BOTH);

    // With no valid fallback, Settings alone shows the invalid winner.
    let alone = &slot[..1];
    assert!(runtime_choice(alone, AppMode::Work).is_none());
    assert_eq!(
        management_choice(alone, Some(AppMode::Work)).unwrap().role,
        ManagementRole::InvalidWinner
    );
    let (projected, _) = runtime_projection([alone], AppMode::Work);
    assert!(projected.is_empty());
    assert!(catalog_names(&refs(&slot[..1]), AppMode::Work, None).is_empty());
}

#[test]
fn mode_aware_collision_lets_a_coding_only_project_skill_coexist_with_a_work_user_skill() {
    let tmp = tempfile::tempdir().unwrap();
    let project = tmp.path().join("project");
    let user = tmp.path().join("user");
    bundle(
        &project,
        "notes",
        &skill_md("notes", "Coding notes.", "B"),
        &[(".evoflux.json", "{\"modes\":[\"coding\"]}")],
    );
    bundle(&user, "notes", &skill_md("notes", "Work notes.", "B"), &[]);
    let mut slot = load_root(&project, SkillSource::Project(CompatDir::Agents), None);
    slot.extend(load_root(&user, SkillSource::User(CompatDir::Agents), None));
    assert_eq!(
        runtime_choice(&slot, AppMode::Coding).unwrap().origin.root,
        project
    );
    assert_eq!(
        runtime_choice(&slot, AppMode::Work).unwrap().origin.root,
        user
    );
    let view = management_choice(&slot, None).unwrap();
    assert_eq!(view.record.origin.root, project);
    assert_eq!(view.diagnostics.codes(), ["skill/mode-specific-collision"]);
    // Without a Work fallback and with a valid (out-of-mode) winner there is
    // nothing to show in Work.
    assert!(management_choice(&slot[..1], Some(AppMode::Work)).is_none());
}

#[test]
fn work_cannot_list_or_load_a_coding_only_bundled_skill_and_vice_versa() {
    let tmp = tempfile::tempdir().unwrap();
    let builtin = tmp.path().join("builtin");
    // A sidecar inside a bundled skill is ignored: code owns its modes.
    bundle(
        &builtin,
        "coding-testing",
        &skill_md("coding-testing", "Write and run tests.", "B"),
        &[(".evoflux.json", "{\"modes\":[\"work\",\"coding\"]}")],
    );
    bundle(
        &builtin,
        "work-research",
        &skill_md("work-research", "Research topics.", "B"),
        &[],
    );
    let origin_for = |modes| SkillSource::Bundled { modes };
    let mut records = vec![
        load_one(&builtin, "coding-testing", origin_for(ModeSet::CODING)),
        load_one(&builtin, "work-research", origin_for(ModeSet::WORK)),
    ];
    // The overlay cannot widen a bundled skill's modes either.
    let store = SkillSettingsStore::in_config_dir(&tmp.path().join("config"));
    for r in &records {
        let effective = store
            .set(
                r,
                PrefsPatch {
                    modes: Some(ModeSet::BOTH),
                    ..Default::default()
                },
            )
            .unwrap();
        assert_eq!(effective.modes, r.defaults.modes);
    }
    let snap = store.read();
    for r in &mut records {
        evoflux_skills::apply_overlay(r, &snap);
    }
    let all = refs(&records);
    for (mode, allowed, forbidden) in [
        (AppMode::Work, "work-research", "coding-testing"),
        (AppMode::Coding, "coding-testing", "work-research"),
    ] {
        assert_eq!(catalog_names(&all, mode, Some("tests research")), [allowed]);
        let slots: Vec<&[SkillRecord]> = records.chunks(1).collect();
        let (projected, _) = runtime_projection(slots, mode);
        assert_eq!(
            projected
                .iter()
                .map(|r| r.name.as_str())
                .collect::<Vec<_>>(),
            [allowed]
        );
        assert!(
            select_explicit(&format!("${forbidden}"), &all, mode)
                .skills
                .is_empty()
        );
        let req = ResolverRequest::build("tests research", mode, &all).unwrap();
        assert!(req.skills.iter().all(|s| s.name != forbidden));
    }
}

#[test]
fn malformed_bundles_are_fault_isolated() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    bundle(root, "a-good", &skill_md("a-good", "Good.", "B"), &[]);
    bundle(root, "b-bad-yaml", "---\nname: [\n---\nB\n", &[]);
    std::fs::create_dir_all(root.join("c-dir-skill/SKILL.md")).unwrap();
    bundle(
        root,
        "d-bad-sidecar",
        &skill_md("d-bad-sidecar", "Bad sidecar.", "B"),
        &[(".evoflux.json", "{")],
    );
    std::fs::write(root.join("e-good-file"), "not a folder").unwrap();
    bundle(root, "f-good", &skill_md("f-good", "Good too.", "B"), &[]);
    let records = load_root(root, SkillSource::Custom, None);
    let summary: Vec<(&str, bool)> = records.iter().map(|r| (r.name.as_str(), r.valid)).collect();
    assert_eq!(
        summary,
        [
            ("a-good", true),
            ("b-bad-yaml", false),
            ("d-bad-sidecar", true),
            ("f-good", true)
        ]
    );
    let sidecar = records.iter().find(|r| r.name == "d-bad-sidecar").unwrap();
    assert_eq!(codes(sidecar), ["skill/scope-invalid"]);
    assert_eq!(sidecar.prefs.modes, ModeSet::BOTH);
}
