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
use evoflux_graph::skill_root::SKILL_FILE;
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

/// Why a folder under `skills/` is not loaded, found before its
/// `SKILL.md` is read. Closed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SkillDirProblem {
    /// The folder resolves (through a link) outside the plugin root.
    EscapesRoot,
    /// The folder holds no `SKILL.md`: it is not a skill.
    ManifestMissing,
    /// `SKILL.md` resolves (through a link) outside the plugin root.
    ManifestEscapesRoot,
    /// `SKILL.md` is not a regular file.
    ManifestNotFile,
}

/// One immediate child folder of `skills/`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkillDir {
    /// The folder name under `skills/`.
    pub dir: String,
    /// The folder, under the root as given (not link-resolved).
    pub path: PathBuf,
    /// `None` when the skill may be loaded.
    pub problem: Option<SkillDirProblem>,
}

impl SkillDir {
    /// The folder's `SKILL.md`.
    pub fn manifest(&self) -> PathBuf {
        self.path.join(SKILL_FILE)
    }
}

/// The state of the `skills/` location itself. Closed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SkillsFolder {
    /// No `skills/`: the plugin has no skills, which is not an error.
    Absent,
    /// The plugin root itself cannot be resolved: nothing is loaded.
    RootUnresolved,
    /// `skills` resolves outside the plugin root: no skill is loaded.
    EscapesRoot,
    /// `skills` is not a folder: no skill is loaded.
    NotDirectory,
    /// `skills/` cannot be listed (the reason): no skill is loaded.
    Unreadable(String),
    /// `skills/` was listed.
    Listed,
}

/// The skill folders of one plugin root, each with its verdict.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkillDirListing {
    /// The `skills/` location.
    pub location: PathBuf,
    pub folder: SkillsFolder,
    /// Sorted by folder name. Empty unless `folder` is `Listed`.
    pub dirs: Vec<SkillDir>,
}

/// The one rule for which folders of a plugin's `skills/` may be loaded:
/// only immediate child folders (hidden and cache folders are not skills)
/// that resolve, with their `SKILL.md`, inside the plugin root, whose
/// `SKILL.md` is a regular file. Inspection reports every verdict and
/// then validates the loadable folders; the source graph loads exactly
/// the loadable ones ([`loadable_skill_dirs`]), so a skill that `plugin
/// show` calls skipped is never loaded either.
///
/// `root` need not be canonical; containment is checked against its
/// canonical form.
pub fn list_skill_dirs(root: &Path) -> SkillDirListing {
    let location = root.join("skills");
    let mut listing = SkillDirListing {
        location: location.clone(),
        folder: SkillsFolder::Absent,
        dirs: Vec::new(),
    };
    let Ok(canonical) = root.canonicalize() else {
        listing.folder = SkillsFolder::RootUnresolved;
        return listing;
    };
    if fs::symlink_metadata(&location).is_err() {
        return listing;
    }
    if !stays_inside(&canonical, "skills") {
        listing.folder = SkillsFolder::EscapesRoot;
        return listing;
    }
    let read = match fs::metadata(&location) {
        Ok(meta) if meta.is_dir() => fs::read_dir(&location),
        _ => {
            listing.folder = SkillsFolder::NotDirectory;
            return listing;
        }
    };
    let mut children: Vec<(String, PathBuf)> = match read {
        Ok(read) => read
            .filter_map(Result::ok)
            .filter_map(|e| Some((e.file_name().to_str()?.to_owned(), e.path())))
            .collect(),
        Err(e) => {
            listing.folder = SkillsFolder::Unreadable(e.to_string());
            return listing;
        }
    };
    listing.folder = SkillsFolder::Listed;
    children.sort();
    for (dir, path) in children {
        let is_dir = fs::metadata(&path).is_ok_and(|m| m.is_dir());
        if !is_dir || dir.starts_with('.') || is_skipped(&dir, true) {
            continue;
        }
        let problem = if !stays_inside(&canonical, &format!("skills/{dir}")) {
            Some(SkillDirProblem::EscapesRoot)
        } else if fs::symlink_metadata(path.join(SKILL_FILE)).is_err() {
            Some(SkillDirProblem::ManifestMissing)
        } else if !stays_inside(&canonical, &format!("skills/{dir}/{SKILL_FILE}")) {
            Some(SkillDirProblem::ManifestEscapesRoot)
        } else if !fs::metadata(path.join(SKILL_FILE)).is_ok_and(|m| m.is_file()) {
            Some(SkillDirProblem::ManifestNotFile)
        } else {
            None
        };
        listing.dirs.push(SkillDir { dir, path, problem });
    }
    listing
}

/// The skill folders of `root` that may be loaded (see
/// [`list_skill_dirs`]): what the source graph discovers for an enabled
/// plugin.
pub fn loadable_skill_dirs(root: &Path) -> Vec<SkillDir> {
    list_skill_dirs(root)
        .dirs
        .into_iter()
        .filter(|d| d.problem.is_none())
        .collect()
}

/// Discovers and validates the skills of the canonical `root`: the
/// verdicts of [`list_skill_dirs`] as diagnostics, then each loadable
/// `SKILL.md` read within the size limit and validated. Nothing deeper
/// than the immediate children of `skills/` is ever looked at.
pub fn discover_skills(
    root: &Path,
    limits: &PackageLimits,
    validator: &dyn SkillValidator,
) -> (Vec<PluginSkill>, Vec<ScopedDiagnostic>) {
    let mut skills = Vec::new();
    let mut diagnostics = Vec::new();
    let listing = list_skill_dirs(root);
    let location = &listing.location;
    let folder_error = |code: &'static str, message: String| {
        vec![ScopedDiagnostic::new(
            Scope::Skills,
            Diagnostic::error(code, message).with_file(location),
        )]
    };
    match listing.folder {
        SkillsFolder::Absent | SkillsFolder::RootUnresolved => return (skills, diagnostics),
        SkillsFolder::EscapesRoot => {
            return (
                skills,
                folder_error(
                    codes::SKILLS_ESCAPES_ROOT,
                    "`skills` resolves outside the plugin root; no skill is loaded".into(),
                ),
            );
        }
        SkillsFolder::NotDirectory => {
            return (
                skills,
                folder_error(
                    codes::SKILLS_NOT_DIRECTORY,
                    "`skills` must be a folder; no skill is loaded".into(),
                ),
            );
        }
        SkillsFolder::Unreadable(reason) => {
            return (
                skills,
                folder_error(
                    codes::SKILLS_NOT_DIRECTORY,
                    format!("cannot read `skills`: {reason}"),
                ),
            );
        }
        SkillsFolder::Listed => {}
    }
    for entry in listing.dirs {
        let dir = entry.dir.clone();
        let path = entry.path.clone();
        let file = entry.manifest();
        let scope = Scope::Skill(dir.clone());
        let mut push = |d: Diagnostic| diagnostics.push(ScopedDiagnostic::new(scope.clone(), d));
        let mut skill = PluginSkill {
            dir: dir.clone(),
            name: None,
            description: None,
            path: file.clone(),
            valid: false,
        };
        match entry.problem {
            Some(SkillDirProblem::EscapesRoot) => {
                push(
                    Diagnostic::error(
                        codes::SKILL_ESCAPES_ROOT,
                        format!("skill folder `{dir}` resolves outside the plugin root; skipped"),
                    )
                    .with_file(&path),
                );
                // Listed as skipped, so an inspection names it.
                skills.push(skill);
                continue;
            }
            Some(SkillDirProblem::ManifestMissing) => {
                push(
                    Diagnostic::info(
                        codes::SKILL_MANIFEST_MISSING,
                        format!("`skills/{dir}` has no SKILL.md, so it is not a skill"),
                    )
                    .with_file(&path),
                );
                continue;
            }
            Some(SkillDirProblem::ManifestEscapesRoot) => {
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
            Some(SkillDirProblem::ManifestNotFile) => {
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
            None => {}
        }
        let size = fs::metadata(&file).map(|m| m.len()).unwrap_or(0);
        if size > limits.max_skill_bytes {
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
