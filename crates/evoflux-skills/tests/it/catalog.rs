//! Tier-1 catalog snapshots and budget rules.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::*;
use evoflux_core::AppMode;
use evoflux_skills::catalog::{DESCRIPTION_STEP_CHARS, budget_for};
use evoflux_skills::{Catalog, CatalogRequest, SkillRecord, SkillSource, build_catalog};

/// A known set: seven eligible Coding skills, plus one Work-only, one
/// manual-only and one invalid skill that must never appear in Coding.
fn known_set(root: &std::path::Path) -> Vec<SkillRecord> {
    let skills: &[(&str, &str)] = &[
        (
            "coding-debugging",
            "Find the root cause of a failing test, crash or wrong output. Use when a concrete failure is observed; not for new features.",
        ),
        (
            "coding-review",
            "Review a diff or pull request for correctness, security and missing tests. Use when asked to review changes; not for writing them.",
        ),
        (
            "coding-testing",
            "Design and write focused tests for existing behaviour. Use when coverage is missing or a bug needs a regression test.",
        ),
        (
            "coding-migration",
            "Plan and carry out a dependency or API migration in small verified steps.",
        ),
        (
            "coding-performance",
            "Measure before optimizing: profile, find the hot path, change one thing, measure again.",
        ),
        (
            "pdf-tools",
            "Extract text, tables and images from PDF documents.",
        ),
        (
            "skill-authoring",
            "Create or improve an Agent Skill: name, description with triggers and near-misses, lean body, evals.",
        ),
    ];
    for (name, description) in skills {
        bundle(
            root,
            name,
            &skill_md(name, description, "Body that must never appear."),
            &[],
        );
    }
    bundle(
        root,
        "work-research",
        &skill_md(
            "work-research",
            "Research a question across sources and cite them.",
            "B",
        ),
        &[(".evoflux.json", "{\"modes\": [\"work\"]}")],
    );
    bundle(
        root,
        "deploy",
        "---\nname: deploy\ndescription: Deploy to production.\ndisable-model-invocation: true\n---\nB\n",
        &[],
    );
    bundle(root, "broken", "---\nname: broken\n---\nB\n", &[]);
    load_root(root, SkillSource::Custom, None)
}

fn build(
    records: &[SkillRecord],
    window: Option<u64>,
    query: Option<&str>,
    assigned: &[String],
) -> Catalog {
    let refs: Vec<&SkillRecord> = records.iter().collect();
    build_catalog(
        &refs,
        &CatalogRequest {
            mode: AppMode::Coding,
            context_window_tokens: window,
            latest_request: query,
            assigned,
        },
    )
}

#[test]
fn known_set_under_the_default_budget() {
    let tmp = tempfile::tempdir().unwrap();
    let records = known_set(tmp.path());
    let assigned = vec!["pdf-tools".to_owned()];
    let catalog = build(
        &records,
        None,
        Some("the login test is failing with a crash"),
        &assigned,
    );
    assert!(catalog.text.len() < 8_000);
    assert!(catalog.report.omitted.is_empty());
    assert!(catalog.report.descriptions_shortened.is_empty());
    insta::assert_snapshot!("default_budget_text", catalog.text);
    insta::assert_json_snapshot!("default_budget_report", catalog.report);
}

#[test]
fn known_set_under_a_tiny_budget() {
    let tmp = tempfile::tempdir().unwrap();
    let records = known_set(tmp.path());
    // 12,500 tokens → 1,000 bytes.
    let window = Some(12_500);
    assert_eq!(budget_for(window), 1_000);
    let catalog = build(&records, window, Some("review my pull request"), &[]);
    assert!(catalog.text.len() <= 1_000, "{}", catalog.text.len());
    assert!(!catalog.report.descriptions_shortened.is_empty());
    insta::assert_snapshot!("tiny_budget_text", catalog.text);
    insta::assert_json_snapshot!("tiny_budget_report", catalog.report);
}

/// Bytes of the fixed header and rules (the catalog minus its skill lines).
fn fixed_len(c: &Catalog) -> usize {
    c.text.len()
        - c.text
            .lines()
            .filter(|l| {
                l.starts_with("- ")
                    && c.report
                        .included
                        .iter()
                        .any(|n| l.starts_with(&format!("- {n}")))
            })
            .map(|l| l.len() + 1)
            .sum::<usize>()
}

/// The smallest context window whose budget is at least `bytes`.
fn window_for(bytes: usize) -> Option<u64> {
    Some((bytes as u64 * 100).div_ceil(8))
}

#[test]
fn names_come_first_then_descriptions_grow_round_robin() {
    let tmp = tempfile::tempdir().unwrap();
    let records = known_set(tmp.path());
    let full = build(&records, None, None, &[]);
    let fixed = fixed_len(&full);
    // Exactly room for the fixed text and every bare name line.
    let names_only: usize = full.report.included.iter().map(|n| n.len() + 3).sum();
    let budget_tokens = ((fixed + names_only) as u64 * 100).div_ceil(8);
    let tight = build(&records, Some(budget_tokens), None, &[]);
    assert_eq!(
        tight.report.included, full.report.included,
        "every name kept"
    );
    assert!(tight.report.omitted.is_empty());
    assert_eq!(tight.report.descriptions_shortened, full.report.included);
    for name in &tight.report.included {
        assert!(
            tight.text.contains(&format!("\n- {name}\n")),
            "{name} as a bare name"
        );
    }
    // A few more bytes: descriptions grow in 24-character steps, the first
    // skill first.
    let more = budget_for(Some(budget_tokens)) + 2 + DESCRIPTION_STEP_CHARS + 3 + 8;
    let grown = build(&records, Some((more as u64 * 100).div_ceil(8)), None, &[]);
    let first = &grown.report.included[0];
    let line = grown
        .text
        .lines()
        .find(|l| l.starts_with(&format!("- {first}:")))
        .unwrap();
    assert_eq!(
        line.chars().count(),
        2 + first.len() + 2 + DESCRIPTION_STEP_CHARS + 1
    );
    assert!(line.ends_with('…'));
}

#[test]
fn omitted_skills_are_recorded_when_not_even_names_fit() {
    let tmp = tempfile::tempdir().unwrap();
    let records = known_set(tmp.path());
    let fixed = fixed_len(&build(&records, None, None, &[]));
    let budget = fixed + 2 * "- coding-debugging\n".len();
    let catalog = build(&records, window_for(budget), None, &[]);
    assert!(catalog.text.len() <= budget);
    assert_eq!(
        catalog.report.included,
        ["coding-debugging", "coding-migration"]
    );
    assert!(!catalog.report.omitted.is_empty());
    let mut all = catalog.report.included.clone();
    all.extend(catalog.report.omitted.clone());
    all.sort();
    assert_eq!(all.len(), 7);
    let none = build(&records, window_for(fixed - 1), None, &[]);
    assert_eq!(none.text, "");
    assert_eq!(none.report.omitted.len(), 7);
}

#[test]
fn no_eligible_skill_means_no_block() {
    let catalog = build_catalog(
        &[],
        &CatalogRequest {
            mode: AppMode::Work,
            context_window_tokens: None,
            latest_request: Some("anything"),
            assigned: &[],
        },
    );
    assert_eq!(catalog.text, "");
    assert!(catalog.report.included.is_empty());
}

#[test]
fn the_block_is_the_same_bytes_whatever_the_request_while_every_skill_fits() {
    let tmp = tempfile::tempdir().unwrap();
    let records = known_set(tmp.path());
    let a = build(&records, None, Some("debug the failing migration"), &[]);
    let b = build(&records, None, Some("write the release notes"), &[]);
    assert_ne!(a.report.query_ranked, b.report.query_ranked);
    assert_eq!(a.text, b.text);
    let mut sorted = a.report.included.clone();
    sorted.sort();
    assert_eq!(a.report.included, sorted);
}
