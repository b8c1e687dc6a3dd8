//! Real-world SKILL.md variety, each with its documented verdict and codes
//! under both validators. The shapes mirror files found in public skill
//! repositories (see the corpus notes); the fixtures are written here.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::path::Path;

use common::*;
use evoflux_skills::{SkillSource, ValidationLevel, validate_path};

struct Verdict {
    runtime_valid: bool,
    runtime_codes: &'static [&'static str],
    strict_valid: bool,
    strict_codes: &'static [&'static str],
}

/// Writes `root/<folder>/SKILL.md` and checks both verdicts.
fn assert_verdict(folder: &str, skill: &str, expect: Verdict) {
    let tmp = tempfile::tempdir().unwrap();
    bundle(tmp.path(), folder, skill, &[]);
    let rt = load_one(tmp.path(), folder, SkillSource::Custom);
    assert_eq!(
        (rt.valid, codes(&rt).as_slice()),
        (expect.runtime_valid, expect.runtime_codes),
        "runtime verdict for {folder}: {:#?}",
        rt.diagnostics
    );
    let strict = validate_path(&tmp.path().join(folder), ValidationLevel::Strict);
    assert_eq!(
        (strict.valid, strict.diagnostics.codes().as_slice()),
        (expect.strict_valid, expect.strict_codes),
        "strict verdict for {folder}: {:#?}",
        strict.diagnostics
    );
    // Every error carries a code of the stable shape.
    for d in rt.diagnostics.iter().chain(strict.diagnostics.iter()) {
        assert!(
            evoflux_core::diagnostic::is_valid_code(&d.code),
            "{}",
            d.code
        );
    }
}

#[test]
fn clean_minimal_skill_is_valid_everywhere() {
    assert_verdict(
        "pdf",
        &skill_md(
            "pdf",
            "Extract text from PDF files. Use when a PDF is given.",
            "# PDF\nSteps.",
        ),
        Verdict {
            runtime_valid: true,
            runtime_codes: &[],
            strict_valid: true,
            strict_codes: &[],
        },
    );
}

#[test]
fn flow_style_allowed_tools_list() {
    // claude-plugins-official example-command: `allowed-tools: [Read, Glob, Grep, Bash]`.
    assert_verdict(
        "example-command",
        "---\nname: example-command\ndescription: An example.\nallowed-tools: [Read, Glob, Grep, Bash]\n---\nDo it.\n",
        Verdict {
            runtime_valid: true,
            runtime_codes: &[],
            strict_valid: true,
            strict_codes: &["skill/allowed-tools-not-string"],
        },
    );
}

#[test]
fn flow_style_argument_hint_is_an_unknown_field_in_strict() {
    // trailofbits firebase-apk-scanner: `argument-hint: [apk-file-or-directory]`.
    assert_verdict(
        "firebase-apk-scanner",
        "---\nname: firebase-apk-scanner\ndescription: Scan an APK for Firebase misconfiguration.\nargument-hint: [apk-file-or-directory]\nallowed-tools:\n  - Bash({baseDir}/scripts/*)\n  - Read\n---\nScan.\n",
        Verdict {
            runtime_valid: true,
            runtime_codes: &[],
            strict_valid: false,
            strict_codes: &["skill/unknown-field", "skill/allowed-tools-not-string"],
        },
    );
}

#[test]
fn nested_metadata_values() {
    // awesome-copilot nano-banana-pro-openrouter: metadata with maps, lists, emoji.
    assert_verdict(
        "nano-banana",
        "---\nname: nano-banana\ndescription: Generate images. 🍌\nmetadata:\n  version: '1.0.0'\n  tags: [image, ai]\n  author:\n    name: someone\n---\nGenerate.\n",
        Verdict {
            runtime_valid: true,
            runtime_codes: &[],
            strict_valid: true,
            strict_codes: &[
                "skill/metadata-value-not-string",
                "skill/metadata-value-not-string",
            ],
        },
    );
}

#[test]
fn missing_front_matter() {
    // memorybench code-reviewer: starts with `# Code Reviewer Skill`.
    assert_verdict(
        "code-reviewer",
        "# Code Reviewer Skill\n\nReview code carefully.\n",
        Verdict {
            runtime_valid: false,
            runtime_codes: &["skill/front-matter-missing"],
            strict_valid: false,
            strict_codes: &["skill/front-matter-missing"],
        },
    );
}

#[test]
fn uppercase_name_with_spaces() {
    // Older superpowers: `name: Brainstorming Ideas Into Designs` plus extra keys.
    assert_verdict(
        "brainstorming",
        "---\nname: Brainstorming Ideas Into Designs\ndescription: Refine rough ideas into designs.\nwhen_to_use: when starting a design\nversion: 2.1.0\n---\nAsk questions.\n",
        Verdict {
            runtime_valid: true,
            runtime_codes: &["skill/legacy-name", "skill/name-directory-mismatch"],
            strict_valid: false,
            strict_codes: &[
                "skill/name-invalid",
                "skill/unknown-field",
                "skill/unknown-field",
            ],
        },
    );
}

#[test]
fn over_long_description_is_invalid_and_just_under_is_fine() {
    // anthropics claude-api: a `|-` block description of 1,068 characters.
    let long = "word ".repeat(213) + "end"; // 1,068 chars
    assert_eq!(long.chars().count(), 1068);
    let text = format!(
        "---\nname: claude-api\ndescription: |-\n  {long}\nlicense: Complete terms in LICENSE.txt\n---\nUse the API.\n"
    );
    assert_verdict(
        "claude-api",
        &text,
        Verdict {
            runtime_valid: false,
            runtime_codes: &["skill/description-too-long"],
            strict_valid: false,
            strict_codes: &["skill/description-too-long"],
        },
    );
    // awesome-copilot mentoring-juniors: 1,011 characters, under the limit.
    let under = "x".repeat(1011);
    assert_verdict(
        "mentoring-juniors",
        &skill_md("mentoring-juniors", &under, "Mentor."),
        Verdict {
            runtime_valid: true,
            runtime_codes: &[],
            strict_valid: true,
            strict_codes: &[],
        },
    );
}

#[test]
fn name_folder_mismatch() {
    // anthropics template: `name: template-skill` in folder `template`.
    assert_verdict(
        "template",
        &skill_md(
            "template-skill",
            "Replace with a description.",
            "# Insert instructions",
        ),
        Verdict {
            runtime_valid: true,
            runtime_codes: &["skill/name-directory-mismatch"],
            strict_valid: false,
            strict_codes: &["skill/name-directory-mismatch"],
        },
    );
}

#[test]
fn non_ascii_names() {
    // The reference validator accepts lowercase Unicode letters; the
    // runtime loads them with a portability warning.
    assert_verdict(
        "技能",
        &skill_md("技能", "Một kỹ năng.", "Làm việc."),
        Verdict {
            runtime_valid: true,
            runtime_codes: &["skill/legacy-name"],
            strict_valid: true,
            strict_codes: &[],
        },
    );
    assert_verdict(
        "мой-навык",
        &skill_md("мой-навык", "Навык.", "Тело."),
        Verdict {
            runtime_valid: true,
            runtime_codes: &["skill/legacy-name"],
            strict_valid: true,
            strict_codes: &[],
        },
    );
    assert_verdict(
        "НАВЫК",
        &skill_md("НАВЫК", "Навык.", "Тело."),
        Verdict {
            runtime_valid: true,
            runtime_codes: &["skill/legacy-name"],
            strict_valid: false,
            strict_codes: &["skill/name-invalid"],
        },
    );
}

#[test]
fn malformed_yaml() {
    // agent-plugins-conformance recovery: YAML that does not parse.
    assert_verdict(
        "conformance-recovery-invalid",
        "---\nname: conformance-recovery-invalid\ndescription: [unclosed\n---\nBody.\n",
        Verdict {
            runtime_valid: false,
            runtime_codes: &["frontmatter/yaml-invalid"],
            strict_valid: false,
            strict_codes: &["frontmatter/yaml-invalid"],
        },
    );
    assert_verdict(
        "list-front-matter",
        "---\n- a\n- b\n---\nBody.\n",
        Verdict {
            runtime_valid: false,
            runtime_codes: &["frontmatter/not-a-mapping"],
            strict_valid: false,
            strict_codes: &["frontmatter/not-a-mapping"],
        },
    );
    assert_verdict(
        "unterminated",
        "---\nname: unterminated\ndescription: d\nBody.\n",
        Verdict {
            runtime_valid: false,
            runtime_codes: &["frontmatter/unterminated"],
            strict_valid: false,
            strict_codes: &["frontmatter/unterminated"],
        },
    );
}

#[test]
fn unquoted_colon_in_description_is_repaired_only_at_runtime() {
    assert_verdict(
        "colon",
        "---\nname: colon\ndescription: Use this skill when: the user asks\n---\nBody.\n",
        Verdict {
            runtime_valid: true,
            runtime_codes: &["skill/yaml-repaired"],
            strict_valid: false,
            strict_codes: &["frontmatter/yaml-invalid"],
        },
    );
}

#[test]
fn missing_fields_and_empty_body() {
    assert_verdict(
        "no-name",
        "---\ndescription: d\n---\nBody.\n",
        Verdict {
            runtime_valid: false,
            runtime_codes: &["skill/missing-name"],
            strict_valid: false,
            strict_codes: &["skill/missing-name"],
        },
    );
    assert_verdict(
        "no-description",
        "---\nname: no-description\ndescription: \"  \"\n---\nBody.\n",
        Verdict {
            runtime_valid: false,
            runtime_codes: &["skill/missing-description"],
            strict_valid: false,
            strict_codes: &["skill/missing-description"],
        },
    );
    assert_verdict(
        "empty-body",
        "---\nname: empty-body\ndescription: d\n---\n\n   \n",
        Verdict {
            runtime_valid: false,
            runtime_codes: &["skill/empty-body"],
            strict_valid: false,
            strict_codes: &["skill/empty-body"],
        },
    );
    assert_verdict(
        "numeric-name",
        "---\nname: 42\ndescription: d\n---\nBody.\n",
        Verdict {
            runtime_valid: false,
            runtime_codes: &["skill/name-invalid"],
            strict_valid: false,
            strict_codes: &["skill/name-invalid"],
        },
    );
    assert_verdict(
        "too-long-name",
        &skill_md(&"a".repeat(65), "d", "Body."),
        Verdict {
            runtime_valid: false,
            runtime_codes: &["skill/name-invalid"],
            strict_valid: false,
            strict_codes: &["skill/name-invalid"],
        },
    );
}

#[test]
fn policy_keys_are_honoured_at_runtime_and_unknown_in_strict() {
    // claude-plugins-official claude-security / discord access.
    let text = "---\nname: access\ndescription: Manage access.\ndisable-model-invocation: true\nuser-invocable: false\n---\nBody.\n";
    assert_verdict(
        "access",
        text,
        Verdict {
            runtime_valid: true,
            runtime_codes: &[],
            strict_valid: false,
            strict_codes: &["skill/unknown-field", "skill/unknown-field"],
        },
    );
    let tmp = tempfile::tempdir().unwrap();
    bundle(tmp.path(), "access", text, &[]);
    let r = load_one(tmp.path(), "access", SkillSource::Custom);
    assert!(!r.prefs.allow_implicit_invocation);
    assert!(!r.prefs.user_invocable);
    bundle(
        tmp.path(),
        "odd",
        "---\nname: odd\ndescription: d\nuser-invocable: sometimes\n---\nBody.\n",
        &[],
    );
    let r = load_one(tmp.path(), "odd", SkillSource::Custom);
    assert_eq!(codes(&r), ["skill/policy-invalid"]);
    assert!(r.valid && r.prefs.user_invocable);
}

#[test]
fn crlf_bom_and_long_body() {
    let body: String = (0..501).map(|i| format!("line {i}\r\n")).collect();
    let text = format!("\u{feff}---\r\nname: crlf\r\ndescription: CRLF file\r\n---\r\n{body}");
    assert_verdict(
        "crlf",
        &text,
        Verdict {
            runtime_valid: true,
            runtime_codes: &["skill/body-long"],
            strict_valid: true,
            strict_codes: &["skill/body-long"],
        },
    );
}

#[test]
fn oversize_and_non_utf8_files() {
    let big = skill_md("big", "d", &"x".repeat(513 * 1024));
    assert_verdict(
        "big",
        &big,
        Verdict {
            runtime_valid: false,
            runtime_codes: &["skill/file-too-large"],
            strict_valid: false,
            strict_codes: &["skill/file-too-large"],
        },
    );
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("latin1");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("SKILL.md"),
        b"---\nname: latin1\ndescription: caf\xe9\n---\nb\n",
    )
    .unwrap();
    let r = load_one(tmp.path(), "latin1", SkillSource::Custom);
    assert_eq!(codes(&r), ["skill/not-utf8"]);
    assert!(!r.valid);
}

#[test]
fn nested_skills_get_legacy_names() {
    // awesome-copilot qdrant-*: skills inside other skills' folders; and a
    // conformance example under `references/` that must be ignored.
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    bundle(
        root,
        "qdrant-scaling",
        &skill_md("qdrant-scaling", "Scale Qdrant.", "B"),
        &[],
    );
    bundle(
        root,
        "qdrant-scaling/scaling-data-volume",
        &skill_md("scaling-data-volume", "Scale data volume.", "B"),
        &[],
    );
    bundle(
        root,
        "qdrant-scaling/scaling-data-volume/horizontal-scaling",
        &skill_md("qdrant-horizontal", "Scale out.", "B"),
        &[],
    );
    bundle(
        root,
        "conformance-alpha/references/conformance-nested",
        &skill_md("conformance-nested", "Never a skill.", "B"),
        &[],
    );
    bundle(
        root,
        "conformance-alpha",
        &skill_md("conformance-alpha", "Alpha.", "B"),
        &[],
    );
    let scan = evoflux_skills::scan_root(root, evoflux_skills::WalkLimits::default());
    assert_eq!(
        scan.diagnostics.codes(),
        ["skill/nested-legacy-skill", "skill/nested-legacy-skill"]
    );
    let records = load_root(root, SkillSource::Custom, None);
    let summary: Vec<(String, bool, Vec<&str>)> = records
        .iter()
        .map(|r| (r.name.clone(), r.valid, codes(r)))
        .collect();
    assert_eq!(
        summary,
        [
            ("conformance-alpha".to_owned(), true, vec![]),
            ("qdrant-scaling".to_owned(), true, vec![]),
            (
                "qdrant-scaling/scaling-data-volume".to_owned(),
                true,
                vec![]
            ),
            (
                "qdrant-scaling/scaling-data-volume/horizontal-scaling".to_owned(),
                true,
                vec!["skill/name-directory-mismatch"]
            ),
        ]
    );
}

#[test]
fn placeholders_expand_in_the_description() {
    let tmp = tempfile::tempdir().unwrap();
    bundle(
        tmp.path(),
        "tool",
        &skill_md(
            "tool",
            "Runs {SKILL_DIR}/run.sh; config in {EVOFLUX_CONFIG_DIR}; not {baseDir}.",
            "B",
        ),
        &[],
    );
    let r = load_one(tmp.path(), "tool", SkillSource::Custom);
    assert_eq!(
        r.description,
        format!(
            "Runs {}/run.sh; config in /cfg; not {{baseDir}}.",
            tmp.path().join("tool").display()
        )
    );
}

#[test]
fn validate_path_accepts_a_file_or_a_folder() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = bundle(tmp.path(), "pdf", &skill_md("pdf", "d", "B"), &[]);
    assert!(validate_path(&dir, ValidationLevel::Strict).valid);
    assert!(validate_path(&dir.join("SKILL.md"), ValidationLevel::Strict).valid);
    let missing = validate_path(Path::new("/nonexistent/x"), ValidationLevel::Strict);
    assert_eq!(missing.diagnostics.codes(), ["skill/file-unreadable"]);
}
