//! Plugin skills: discovery from the immediate child folders of `skills/`
//! and strict validation through a [`SkillValidator`].
//!
//! The one strict Agent Skills validator lives in `evoflux-skills`;
//! [`StrictSkillValidator`] adapts it. The trait stays a seam so that tests
//! (and a future stricter policy) can plug another rule set in without
//! this crate growing a second implementation of the skill rules.

use std::fs;
use std::path::{Path, PathBuf};

use evoflux_core::Diagnostic;
use evoflux_skills::BundleName;
use evoflux_skills::validate::{ValidationLevel, check_skill_text};
use serde::Serialize;

use crate::codes;
use crate::scope::{Scope, ScopedDiagnostic};
use crate::tree::{PackageLimits, is_skipped, stays_inside};

/// What a validator learned about one `SKILL.md`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SkillCheck {
    pub name: Option<String>,
    pub description: Option<String>,
    /// Errors make the skill invalid (it is skipped); warnings keep it.
    pub diagnostics: Vec<Diagnostic>,
}

/// Validates one plugin skill strictly.
pub trait SkillValidator {
    /// `dir_name` is the folder under `skills/`, `file` the path of its
    /// `SKILL.md` (for diagnostics) and `text` that file's contents, already
    /// read within the size limit.
    fn validate(&self, dir_name: &str, file: &Path, text: &str) -> SkillCheck;
}

/// The Agent Skills strict rules of `evoflux-skills`: name grammar and
/// length, name equal to the folder, description, allowed fields, body.
#[derive(Debug, Clone, Copy, Default)]
pub struct StrictSkillValidator;

impl SkillValidator for StrictSkillValidator {
    fn validate(&self, dir_name: &str, file: &Path, text: &str) -> SkillCheck {
        let Some(bundle) = BundleName::single(dir_name) else {
            return SkillCheck {
                diagnostics: vec![
                    Diagnostic::error(
                        "skill/name-invalid",
                        format!("`{dir_name}` cannot name a skill folder"),
                    )
                    .with_file(file),
                ],
                ..SkillCheck::default()
            };
        };
        let check = check_skill_text(text, file, &bundle, ValidationLevel::Strict);
        SkillCheck {
            name: check.fields.name,
            description: check.fields.description,
            diagnostics: check.diagnostics.into_vec(),
        }
    }
}

/// One discovered skill folder.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PluginSkill {
    /// The folder name under `skills/`.
    pub dir: String,
    pub name: Option<String>,
    pub description: Option<String>,
    /// The `SKILL.md` file.
    pub path: PathBuf,
    /// Valid skills join the catalog; invalid ones are skipped alone.
    pub valid: bool,
}

/// Discovers and validates the skills of the canonical `root`. Only
/// immediate children of `skills/` holding a regular `SKILL.md` are skills;
/// nothing deeper is ever looked at.
pub fn discover_skills(
    root: &Path,
    limits: &PackageLimits,
    validator: &dyn SkillValidator,
) -> (Vec<PluginSkill>, Vec<ScopedDiagnostic>) {
    let mut skills = Vec::new();
    let mut diagnostics = Vec::new();
    let location = root.join("skills");
    match fs::symlink_metadata(&location) {
        Err(_) => return (skills, diagnostics),
        Ok(_) if !stays_inside(root, "skills") => {
            diagnostics.push(ScopedDiagnostic::new(
                Scope::Skills,
                Diagnostic::error(
                    codes::SKILLS_ESCAPES_ROOT,
                    "`skills` resolves outside the plugin root; no skill is loaded",
                )
                .with_file(&location),
            ));
            return (skills, diagnostics);
        }
        Ok(_) => {}
    }
    let entries = match fs::metadata(&location) {
        Ok(meta) if meta.is_dir() => fs::read_dir(&location),
        _ => {
            diagnostics.push(ScopedDiagnostic::new(
                Scope::Skills,
                Diagnostic::error(
                    codes::SKILLS_NOT_DIRECTORY,
                    "`skills` must be a folder; no skill is loaded",
                )
                .with_file(&location),
            ));
            return (skills, diagnostics);
        }
    };
    let mut children: Vec<(String, PathBuf)> = match entries {
        Ok(read) => read
            .filter_map(Result::ok)
            .filter_map(|e| Some((e.file_name().to_str()?.to_owned(), e.path())))
            .collect(),
        Err(e) => {
            diagnostics.push(ScopedDiagnostic::new(
                Scope::Skills,
                Diagnostic::error(
                    codes::SKILLS_NOT_DIRECTORY,
                    format!("cannot read `skills`: {e}"),
                )
                .with_file(&location),
            ));
            return (skills, diagnostics);
        }
    };
    children.sort();
    for (dir, path) in children {
        let is_dir = fs::metadata(&path).is_ok_and(|m| m.is_dir());
        if !is_dir || is_skipped(&dir, true) {
            continue;
        }
        let scope = Scope::Skill(dir.clone());
        let mut push = |d: Diagnostic| diagnostics.push(ScopedDiagnostic::new(scope.clone(), d));
        if !stays_inside(root, &format!("skills/{dir}")) {
            push(
                Diagnostic::error(
                    codes::SKILL_ESCAPES_ROOT,
                    format!("skill folder `{dir}` resolves outside the plugin root; skipped"),
                )
                .with_file(&path),
            );
            continue;
        }
        let file = path.join("SKILL.md");
        if fs::symlink_metadata(&file).is_err() {
            push(
                Diagnostic::info(
                    codes::SKILL_MANIFEST_MISSING,
                    format!("`skills/{dir}` has no SKILL.md, so it is not a skill"),
                )
                .with_file(&path),
            );
            continue;
        }
        let mut skill = PluginSkill {
            dir: dir.clone(),
            name: None,
            description: None,
            path: file.clone(),
            valid: false,
        };
        if !stays_inside(root, &format!("skills/{dir}/SKILL.md")) {
            push(
                Diagnostic::error(
                    codes::SKILL_ESCAPES_ROOT,
                    "SKILL.md resolves outside the plugin root; skipped",
                )
                .with_file(&file),
            );
            skills.push(skill);
            continue;
        }
        let meta = match fs::metadata(&file) {
            Ok(meta) if meta.is_file() => meta,
            _ => {
                push(
                    Diagnostic::error(
                        codes::SKILL_MANIFEST_NOT_FILE,
                        "SKILL.md must be a regular file; skipped",
                    )
                    .with_file(&file),
                );
                skills.push(skill);
                continue;
            }
        };
        if meta.len() > limits.max_skill_bytes {
            push(
                Diagnostic::error(
                    codes::SKILL_TOO_LARGE,
                    format!(
                        "SKILL.md is larger than {} bytes; skipped",
                        limits.max_skill_bytes
                    ),
                )
                .with_file(&file),
            );
            skills.push(skill);
            continue;
        }
        let text = match fs::read(&file).map(String::from_utf8) {
            Ok(Ok(text)) => text,
            Ok(Err(_)) => {
                push(
                    Diagnostic::error(codes::SKILL_UNREADABLE, "SKILL.md is not UTF-8; skipped")
                        .with_file(&file),
                );
                skills.push(skill);
                continue;
            }
            Err(e) => {
                push(
                    Diagnostic::error(
                        codes::SKILL_UNREADABLE,
                        format!("cannot read SKILL.md: {e}"),
                    )
                    .with_file(&file),
                );
                skills.push(skill);
                continue;
            }
        };
        let check = validator.validate(&dir, &file, &text);
        skill.valid = !check.diagnostics.iter().any(Diagnostic::is_error);
        skill.name = check.name;
        skill.description = check.description;
        for d in check.diagnostics {
            push(d);
        }
        skills.push(skill);
    }
    (skills, diagnostics)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(dir: &str, text: &str) -> Vec<String> {
        StrictSkillValidator
            .validate(dir, Path::new("SKILL.md"), text)
            .diagnostics
            .into_iter()
            .map(|d| d.code.into_owned())
            .collect()
    }

    #[test]
    fn strict_validator_rules() {
        assert!(check("a", "---\nname: a\ndescription: does a\n---\nbody\n").is_empty());
        assert_eq!(
            check("a", "no front matter"),
            ["skill/front-matter-missing"]
        );
        assert_eq!(
            check("a", "---\nname: b\ndescription: x\n---\nbody\n"),
            ["skill/name-directory-mismatch"]
        );
        assert_eq!(
            check("A", "---\nname: A\ndescription: x\n---\nbody\n"),
            ["skill/name-invalid"]
        );
        assert_eq!(
            check("a", "---\nname: a\ndescription: '  '\n---\nbody\n"),
            ["skill/missing-description"]
        );
        assert_eq!(
            check("a", "---\ndescription: x\n---\nbody\n"),
            ["skill/missing-name"]
        );
        assert_eq!(
            check("a", "---\nname: a\ndescription: x\nextra: 1\n---\nbody\n"),
            ["skill/unknown-field"]
        );
        assert_eq!(
            check("a", "---\nname: a\ndescription: x\n---\n"),
            ["skill/empty-body"]
        );
        let bad_yaml = check("a", "---\nname: a\n- description: x\n---\n");
        assert_eq!(bad_yaml.len(), 1);
        assert!(bad_yaml[0].starts_with("frontmatter/"), "{bad_yaml:?}");
    }
}
