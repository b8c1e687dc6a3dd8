//! Skill discovery: immediate children of `skills/` only, each validated
//! strictly, each failing alone.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::path::Path;

use common::{Fixture, codes_in};
use evoflux_core::{Diagnostic, Severity};
use evoflux_plugins::{McpStatus, SkillCheck, SkillValidator, inspect};
use serde_json::json;

#[test]
fn nested_skill_is_not_discovered() {
    let f = Fixture::minimal();
    f.skill("conformance-alpha", "conformance-alpha");
    f.write(
        "skills/conformance-alpha/references/conformance-nested/SKILL.md",
        "---\nname: conformance-nested\ndescription: nested\n---\n",
    );
    f.write(
        "skills/group/inner/SKILL.md",
        "---\nname: inner\ndescription: nested\n---\n",
    );
    let i = f.inspect();
    let dirs: Vec<_> = i.valid_skills().map(|s| s.dir.as_str()).collect();
    assert_eq!(dirs, ["conformance-alpha"]);
    // `group` has no SKILL.md of its own: it is not a skill.
    assert_eq!(
        codes_in(&i, "skill:group"),
        ["plugin/skill-manifest-missing"]
    );
    assert_eq!(i.diagnostics[0].diagnostic.severity, Severity::Info);
}

#[test]
fn invalid_skill_is_skipped_alone() {
    let f = Fixture::minimal();
    f.skill("conformance-recovery-valid", "conformance-recovery-valid");
    f.write(
        "skills/conformance-recovery-invalid/SKILL.md",
        "---\nname: conformance-recovery-invalid\n- description: broken\n---\nbody\n",
    );
    f.skill("wrong-folder", "other-name");
    f.write(
        "skills/no-description/SKILL.md",
        "---\nname: no-description\n---\nbody\n",
    );
    let i = f.inspect();
    assert!(i.valid);
    let valid: Vec<_> = i.valid_skills().map(|s| s.dir.as_str()).collect();
    assert_eq!(valid, ["conformance-recovery-valid"]);
    assert_eq!(i.skills.len(), 4);
    assert_eq!(
        codes_in(&i, "skill:conformance-recovery-invalid"),
        ["frontmatter/yaml-invalid"]
    );
    assert_eq!(
        codes_in(&i, "skill:wrong-folder"),
        ["skill/name-directory-mismatch"]
    );
    assert_eq!(
        codes_in(&i, "skill:no-description"),
        ["skill/missing-description"]
    );
    assert!(codes_in(&i, "skill:conformance-recovery-valid").is_empty());
    // Only the valid skill is a capability.
    assert_eq!(i.trust.capabilities.len(), 1);
}

#[test]
fn files_and_caches_under_skills_are_not_skills() {
    let f = Fixture::minimal();
    f.write("skills/README.md", "not a skill");
    f.write("skills/__pycache__/SKILL.md", "---\nname: x\n---\n");
    f.skill("a", "a");
    let i = f.inspect();
    assert_eq!(i.skills.len(), 1);
    assert!(i.diagnostics.is_empty(), "{:?}", i.diagnostics);
}

#[test]
fn skills_that_is_a_file_disables_only_skills() {
    let f = Fixture::minimal();
    f.write("skills", "oops");
    f.mcp_servers(json!({"s": {"type": "stdio", "command": "node"}}));
    let i = f.inspect();
    assert!(i.valid);
    assert_eq!(codes_in(&i, "skills"), ["plugin/skills-not-directory"]);
    assert_eq!(i.mcp_status, McpStatus::Loaded);
    assert_eq!(i.startable_servers().count(), 1);
}

#[test]
fn skill_manifest_problems_skip_the_skill() {
    let f = Fixture::minimal();
    std::fs::create_dir_all(f.root.join("skills/dir-manifest/SKILL.md")).unwrap();
    f.write("skills/binary/SKILL.md", [0xff, 0xfe]);
    f.write(
        "skills/huge/SKILL.md",
        format!(
            "---\nname: huge\ndescription: big\n---\n{}",
            "x".repeat(512 * 1024)
        ),
    );
    f.skill("ok", "ok");
    let i = f.inspect();
    assert_eq!(
        codes_in(&i, "skill:dir-manifest"),
        ["plugin/skill-manifest-not-file"]
    );
    assert_eq!(codes_in(&i, "skill:binary"), ["plugin/skill-unreadable"]);
    assert_eq!(codes_in(&i, "skill:huge"), ["plugin/skill-too-large"]);
    assert_eq!(i.valid_skills().count(), 1);
}

#[cfg(unix)]
#[test]
fn skill_reached_through_an_escaping_link_is_skipped() {
    let f = Fixture::minimal();
    let outside = f.dir.path().join("elsewhere");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(
        outside.join("SKILL.md"),
        "---\nname: linked\ndescription: d\n---\n",
    )
    .unwrap();
    f.symlink(&outside, "skills/linked");
    f.skill("local", "local");
    f.write(
        "shared/SKILL.md",
        "---\nname: inside\ndescription: d\n---\nbody\n",
    );
    f.symlink("../shared", "skills/inside");
    let i = f.inspect();
    assert!(i.valid);
    assert_eq!(codes_in(&i, "skill:linked"), ["plugin/skill-escapes-root"]);
    let valid: Vec<_> = i.valid_skills().map(|s| s.dir.as_str()).collect();
    assert_eq!(valid, ["inside", "local"]);
}

#[cfg(unix)]
#[test]
fn skills_folder_escaping_the_root_is_refused() {
    let f = Fixture::minimal();
    let outside = f.dir.path().join("other-skills");
    std::fs::create_dir_all(outside.join("a")).unwrap();
    std::fs::write(
        outside.join("a/SKILL.md"),
        "---\nname: a\ndescription: d\n---\n",
    )
    .unwrap();
    f.symlink(&outside, "skills");
    let i = f.inspect();
    assert!(i.valid);
    assert_eq!(codes_in(&i, "skills"), ["plugin/skills-escapes-root"]);
    assert!(i.skills.is_empty());
}

/// A stand-in for the strict validator of `evoflux-skills`: the trait is the
/// seam the harness plugs it into.
struct RejectEverything;

impl SkillValidator for RejectEverything {
    fn validate(&self, dir_name: &str, file: &Path, _text: &str) -> SkillCheck {
        SkillCheck {
            name: Some(dir_name.to_owned()),
            description: None,
            diagnostics: vec![
                Diagnostic::error("skill/strict-rule", "strict").with_file(file),
                Diagnostic::warning("skill/style", "style"),
            ],
        }
    }
}

#[test]
fn validator_is_pluggable_and_its_codes_are_scoped() {
    let f = Fixture::minimal();
    f.skill("a", "a");
    let i = inspect(&f.root, &RejectEverything);
    assert!(i.valid);
    assert_eq!(
        codes_in(&i, "skill:a"),
        ["skill/strict-rule", "skill/style"]
    );
    assert!(!i.skills[0].valid);
}

#[cfg(unix)]
#[test]
fn the_graph_listing_and_inspection_apply_one_rule() {
    let f = Fixture::minimal();
    let outside = f.dir.path().join("elsewhere");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(
        outside.join("SKILL.md"),
        "---\nname: evil\ndescription: d\n---\nbody\n",
    )
    .unwrap();
    f.skill("good", "good");
    f.symlink(&outside, "skills/evil");
    std::fs::create_dir_all(f.root.join("skills/file-link")).unwrap();
    f.symlink(outside.join("SKILL.md"), "skills/file-link/SKILL.md");
    f.skill(".hidden", "hidden");
    f.write(
        "skills/group/inner/SKILL.md",
        "---\nname: inner\ndescription: nested\n---\nbody\n",
    );
    let listing = evoflux_plugins::list_skill_dirs(&f.root);
    let verdicts: Vec<(&str, Option<evoflux_plugins::SkillDirProblem>)> = listing
        .dirs
        .iter()
        .map(|d| (d.dir.as_str(), d.problem))
        .collect();
    use evoflux_plugins::SkillDirProblem as P;
    assert_eq!(
        verdicts,
        [
            ("evil", Some(P::EscapesRoot)),
            ("file-link", Some(P::ManifestEscapesRoot)),
            ("good", None),
            ("group", Some(P::ManifestMissing)),
        ]
    );
    let loadable: Vec<String> = evoflux_plugins::loadable_skill_dirs(&f.root)
        .into_iter()
        .map(|d| d.dir)
        .collect();
    assert_eq!(loadable, ["good"]);
    let i = f.inspect();
    assert_eq!(codes_in(&i, "skill:evil"), ["plugin/skill-escapes-root"]);
    assert_eq!(
        codes_in(&i, "skill:file-link"),
        ["plugin/skill-escapes-root"]
    );
    assert!(codes_in(&i, "skill:.hidden").is_empty());
    let valid: Vec<_> = i.valid_skills().map(|s| s.dir.as_str()).collect();
    assert_eq!(valid, loadable);
}
