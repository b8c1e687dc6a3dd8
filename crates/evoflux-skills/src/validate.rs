//! The two SKILL.md validators.
//!
//! **Strict** is the public Agent Skills format: name grammar and length,
//! name equals folder, description length, only the six allowed top-level
//! keys. Plugin skills and authors (`evoflux skills validate`) use it.
//! **Runtime** loads whatever can safely run: legacy names and a name that
//! differs from its folder are warnings; unreadable YAML, a missing name or
//! description, an oversize file or an empty body are errors.
//!
//! Both validators report every problem they find (never fail-fast) with
//! stable codes, and both extract the same typed fields so a caller never
//! reads the YAML twice.

use std::fs::File;
use std::io::Read;
use std::path::Path;

use evoflux_core::frontmatter::{self, FrontMatterErrorKind};
use evoflux_core::{Diagnostic, Diagnostics};
use serde::{Deserialize, Serialize};
use unicode_normalization::UnicodeNormalization;
use yaml_serde::{Mapping, Value};

use crate::name::BundleName;

/// Largest SKILL.md read (512 KiB).
pub const MAX_SKILL_FILE_BYTES: u64 = evoflux_core::source::MAX_SOURCE_FILE_BYTES;
/// Longest name, in characters.
pub const MAX_NAME_CHARS: usize = 64;
/// Longest description, in characters.
pub const MAX_DESCRIPTION_CHARS: usize = 1024;
/// Longest `compatibility` (strict), in characters.
pub const MAX_COMPATIBILITY_CHARS: usize = 500;
/// A body longer than this many lines earns a warning.
pub const LONG_BODY_LINES: usize = 500;
/// The top-level keys the public format allows.
pub const ALLOWED_FIELDS: [&str; 6] = [
    "name",
    "description",
    "license",
    "allowed-tools",
    "metadata",
    "compatibility",
];

/// Which rule set to apply.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ValidationLevel {
    /// The public Agent Skills rules.
    Strict,
    /// What the runtime needs to run a skill safely.
    Runtime,
}

/// The fields of a SKILL.md the rest of the crate uses.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SkillFields {
    /// The declared name, trimmed; `None` when absent or not a string.
    pub name: Option<String>,
    /// The declared description, trimmed; `None` when absent or not a string.
    pub description: Option<String>,
    /// `disable-model-invocation: true`.
    pub disable_model_invocation: bool,
    /// `user-invocable`, when given as a boolean.
    pub user_invocable: Option<bool>,
}

/// The result of checking one SKILL.md text.
#[derive(Debug, Clone, Default)]
pub struct SkillFileCheck {
    pub fields: SkillFields,
    pub diagnostics: Diagnostics,
}

impl SkillFileCheck {
    pub fn is_valid(&self) -> bool {
        !self.diagnostics.has_errors()
    }
}

/// Reads a SKILL.md, refusing files over [`MAX_SKILL_FILE_BYTES`] without
/// reading them whole and files that are not UTF-8.
pub fn read_skill_file(path: &Path) -> Result<String, Diagnostic> {
    let unreadable = |e: std::io::Error| {
        Diagnostic::error(
            "skill/file-unreadable",
            format!("cannot read SKILL.md: {e}"),
        )
        .with_file(path)
    };
    let file = File::open(path).map_err(unreadable)?;
    let mut bytes = Vec::new();
    file.take(MAX_SKILL_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(unreadable)?;
    if bytes.len() as u64 > MAX_SKILL_FILE_BYTES {
        return Err(Diagnostic::error(
            "skill/file-too-large",
            format!(
                "SKILL.md is larger than {} KiB: move long material into references/ and link it",
                MAX_SKILL_FILE_BYTES / 1024
            ),
        )
        .with_file(path));
    }
    String::from_utf8(bytes).map_err(|e| {
        Diagnostic::error(
            "skill/not-utf8",
            format!(
                "SKILL.md is not UTF-8 (invalid byte at offset {}): save it as UTF-8",
                e.utf8_error().valid_up_to()
            ),
        )
        .with_file(path)
    })
}

/// Checks one SKILL.md text for a bundle at `bundle` under its root.
pub fn check_skill_text(
    text: &str,
    file: &Path,
    bundle: &BundleName,
    level: ValidationLevel,
) -> SkillFileCheck {
    let mut out = SkillFileCheck::default();
    let doc = match frontmatter::parse(text) {
        Ok(doc) => doc,
        Err(e) => match level {
            ValidationLevel::Runtime if e.kind == FrontMatterErrorKind::YamlInvalid => {
                // Real skills often carry `description: Use when: ...`
                // unquoted; retry once with such values quoted.
                match repair_unquoted_colons(text).and_then(|t| {
                    frontmatter::parse(&t)
                        .ok()
                        .map(|d| (d.mapping, d.body.to_owned(), d.body_line))
                }) {
                    Some((mapping, body, body_line)) => {
                        out.diagnostics.push(
                            Diagnostic::warning(
                                "skill/yaml-repaired",
                                format!(
                                    "{}; loaded by quoting values that contain `: `: quote them \
                                     in the file",
                                    e.message
                                ),
                            )
                            .with_file(file),
                        );
                        check_document(&mapping, &body, body_line, file, bundle, level, &mut out);
                        return out;
                    }
                    None => {
                        out.diagnostics.push(e.to_diagnostic(file));
                        return out;
                    }
                }
            }
            ValidationLevel::Runtime | ValidationLevel::Strict => {
                out.diagnostics.push(e.to_diagnostic(file));
                return out;
            }
        },
    };
    if !doc.has_front_matter {
        out.diagnostics.push(
            Diagnostic::error(
                "skill/front-matter-missing",
                "SKILL.md must start with YAML front matter (`---`, `name:`, `description:`, \
                 `---`)",
            )
            .with_file(file)
            .with_line(1),
        );
        return out;
    }
    check_document(
        &doc.mapping,
        doc.body,
        doc.body_line,
        file,
        bundle,
        level,
        &mut out,
    );
    out
}

fn check_document(
    mapping: &Mapping,
    body: &str,
    body_line: u32,
    file: &Path,
    bundle: &BundleName,
    level: ValidationLevel,
    out: &mut SkillFileCheck,
) {
    let diags = &mut out.diagnostics;
    let at = |d: Diagnostic, field: &str| d.with_file(file).with_field(field.to_owned());

    // name
    match mapping.get("name") {
        None | Some(Value::Null) => diags.push(at(
            Diagnostic::error("skill/missing-name", "front matter has no `name`"),
            "name",
        )),
        Some(Value::String(raw)) if raw.trim().is_empty() => diags.push(at(
            Diagnostic::error("skill/missing-name", "`name` is empty"),
            "name",
        )),
        Some(Value::String(raw)) => {
            let name = raw.trim().to_owned();
            check_name(&name, bundle, level, file, diags);
            out.fields.name = Some(name);
        }
        Some(_) => diags.push(at(
            Diagnostic::error("skill/name-invalid", "`name` must be a string"),
            "name",
        )),
    }

    // description
    match mapping.get("description") {
        None | Some(Value::Null) => diags.push(at(
            Diagnostic::error(
                "skill/missing-description",
                "front matter has no `description`: say what the skill does and when to use it",
            ),
            "description",
        )),
        Some(Value::String(raw)) if raw.trim().is_empty() => diags.push(at(
            Diagnostic::error("skill/missing-description", "`description` is empty"),
            "description",
        )),
        Some(Value::String(raw)) => {
            let chars = raw.chars().count();
            if chars > MAX_DESCRIPTION_CHARS {
                diags.push(at(
                    Diagnostic::error(
                        "skill/description-too-long",
                        format!(
                            "description exceeds {MAX_DESCRIPTION_CHARS} character limit \
                             ({chars} chars)"
                        ),
                    ),
                    "description",
                ));
            }
            out.fields.description = Some(raw.trim().to_owned());
        }
        Some(_) => diags.push(at(
            Diagnostic::error(
                "skill/description-invalid",
                "`description` must be a string",
            ),
            "description",
        )),
    }

    // policy keys (client extensions honoured at runtime)
    match mapping.get("disable-model-invocation") {
        None | Some(Value::Null) => {}
        Some(Value::Bool(b)) => out.fields.disable_model_invocation = *b,
        Some(_) => diags.push(at(
            Diagnostic::warning(
                "skill/policy-invalid",
                "`disable-model-invocation` must be true or false; ignored",
            ),
            "disable-model-invocation",
        )),
    }
    match mapping.get("user-invocable") {
        None | Some(Value::Null) => {}
        Some(Value::Bool(b)) => out.fields.user_invocable = Some(*b),
        Some(_) => diags.push(at(
            Diagnostic::warning(
                "skill/policy-invalid",
                "`user-invocable` must be true or false; ignored",
            ),
            "user-invocable",
        )),
    }

    match level {
        ValidationLevel::Strict => check_strict_fields(mapping, file, diags),
        ValidationLevel::Runtime => {}
    }

    // body
    if body.trim().is_empty() {
        diags.push(
            Diagnostic::error(
                "skill/empty-body",
                "SKILL.md has no instructions after the front matter",
            )
            .with_file(file)
            .with_line(body_line),
        );
    } else {
        let lines = body.lines().count();
        if lines > LONG_BODY_LINES {
            diags.push(
                Diagnostic::warning(
                    "skill/body-long",
                    format!(
                        "body has {lines} lines (over {LONG_BODY_LINES}): move optional detail \
                         into references/"
                    ),
                )
                .with_file(file)
                .with_line(body_line),
            );
        }
    }
}

fn check_name(
    name: &str,
    bundle: &BundleName,
    level: ValidationLevel,
    file: &Path,
    diags: &mut Diagnostics,
) {
    let at = |d: Diagnostic| d.with_file(file).with_field("name");
    let nfkc: String = name.nfkc().collect();
    let chars = nfkc.chars().count();
    let mut problems: Vec<String> = Vec::new();
    if chars > MAX_NAME_CHARS {
        problems.push(format!(
            "exceeds {MAX_NAME_CHARS} character limit ({chars} chars)"
        ));
    }
    match level {
        ValidationLevel::Runtime => {
            if let Some(why) = path_unsafe(&nfkc) {
                problems.push(why.to_owned());
            }
        }
        ValidationLevel::Strict => {
            if nfkc.to_lowercase() != nfkc {
                problems.push("must be lowercase".to_owned());
            }
            if nfkc.starts_with('-') || nfkc.ends_with('-') {
                problems.push("cannot start or end with a hyphen".to_owned());
            }
            if nfkc.contains("--") {
                problems.push("cannot contain consecutive hyphens".to_owned());
            }
            if !nfkc.chars().all(|c| c.is_alphanumeric() || c == '-') {
                problems.push("may contain only letters, digits and hyphens".to_owned());
            }
        }
    }
    if !problems.is_empty() {
        diags.push(at(Diagnostic::error(
            "skill/name-invalid",
            format!("name `{name}` {}", problems.join("; ")),
        )));
        return;
    }
    if level == ValidationLevel::Runtime && !is_portable_name(&nfkc) {
        diags.push(at(Diagnostic::warning(
            "skill/legacy-name",
            format!(
                "name `{name}` is not portable (lowercase a-z, 0-9 and single hyphens): other \
                 clients may reject it, and `$name` cannot address it"
            ),
        )));
    }
    let leaf: String = bundle.leaf().nfkc().collect();
    let stem: String = bundle.stem().nfkc().collect();
    let matches = match level {
        // The public rule compares with the folder that holds SKILL.md.
        ValidationLevel::Strict => nfkc == leaf,
        ValidationLevel::Runtime => nfkc == leaf || nfkc == stem,
    };
    if !matches {
        let msg = format!(
            "directory name `{}` must match skill name `{name}`",
            bundle.leaf()
        );
        diags.push(at(match level {
            ValidationLevel::Strict => Diagnostic::error("skill/name-directory-mismatch", msg),
            ValidationLevel::Runtime => Diagnostic::warning("skill/name-directory-mismatch", msg),
        }));
    }
}

/// Why a name cannot safely name a folder or a slot, if it cannot.
fn path_unsafe(name: &str) -> Option<&'static str> {
    if name.chars().any(char::is_control) {
        return Some("contains a control character");
    }
    if name.contains('\\') {
        return Some("contains a backslash");
    }
    if name
        .split('/')
        .any(|seg| seg.is_empty() || seg == "." || seg == "..")
    {
        return Some("is not a safe relative path (empty, `.` or `..` segment)");
    }
    None
}

/// `^[a-z0-9]+(-[a-z0-9]+)*$`: the portable name grammar.
pub fn is_portable_name(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with('-')
        && !name.ends_with('-')
        && !name.contains("--")
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
}

fn check_strict_fields(mapping: &Mapping, file: &Path, diags: &mut Diagnostics) {
    let mut unknown: Vec<String> = mapping
        .keys()
        .map(|k| match k.as_str() {
            Some(s) => s.to_owned(),
            None => format!("{k:?}"),
        })
        .filter(|k| !ALLOWED_FIELDS.contains(&k.as_str()))
        .collect();
    unknown.sort();
    for key in unknown {
        diags.push(
            Diagnostic::error(
                "skill/unknown-field",
                format!(
                    "unexpected field `{key}` in front matter; only {} are allowed",
                    ALLOWED_FIELDS.join(", ")
                ),
            )
            .with_file(file)
            .with_field(key),
        );
    }
    match mapping.get("compatibility") {
        None => {}
        Some(Value::String(s)) if s.chars().count() <= MAX_COMPATIBILITY_CHARS && !s.is_empty() => {
        }
        Some(Value::String(s)) => diags.push(
            Diagnostic::error(
                "skill/compatibility-invalid",
                format!(
                    "`compatibility` must be 1-{MAX_COMPATIBILITY_CHARS} characters ({} chars)",
                    s.chars().count()
                ),
            )
            .with_file(file)
            .with_field("compatibility"),
        ),
        Some(_) => diags.push(
            Diagnostic::error(
                "skill/compatibility-invalid",
                "`compatibility` must be a string",
            )
            .with_file(file)
            .with_field("compatibility"),
        ),
    }
    match mapping.get("metadata") {
        None => {}
        Some(Value::Mapping(m)) => {
            for (k, v) in m {
                if !matches!(v, Value::String(_)) {
                    diags.push(
                        Diagnostic::warning(
                            "skill/metadata-value-not-string",
                            "`metadata` should map strings to strings; other values are read as \
                             text",
                        )
                        .with_file(file)
                        .with_field(format!("metadata.{}", k.as_str().unwrap_or("?"))),
                    );
                }
            }
        }
        Some(_) => diags.push(
            Diagnostic::error("skill/metadata-invalid", "`metadata` must be a mapping")
                .with_file(file)
                .with_field("metadata"),
        ),
    }
    match mapping.get("allowed-tools") {
        None | Some(Value::String(_)) => {}
        Some(_) => diags.push(
            Diagnostic::warning(
                "skill/allowed-tools-not-string",
                "`allowed-tools` should be one space-separated string such as `Read Bash(git:*)`",
            )
            .with_file(file)
            .with_field("allowed-tools"),
        ),
    }
}

/// Quotes top-level `key: value` lines whose plain value contains `: `,
/// the most common way real SKILL.md front matter breaks YAML. `None` when
/// nothing would change.
fn repair_unquoted_colons(text: &str) -> Option<String> {
    let split = frontmatter::split(text).ok()?;
    let yaml = split.yaml?;
    let mut changed = false;
    let mut fixed = String::with_capacity(yaml.len() + 16);
    for line in yaml.split_inclusive('\n') {
        let (content, ending) = match line.strip_suffix("\r\n") {
            Some(c) => (c, "\r\n"),
            None => match line.strip_suffix('\n') {
                Some(c) => (c, "\n"),
                None => (line, ""),
            },
        };
        let repaired = content.split_once(": ").and_then(|(key, value)| {
            let key_ok = !key.is_empty()
                && key
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
            let v = value.trim();
            let plain = !v.starts_with(['"', '\'', '[', '{', '|', '>', '&', '*', '!']);
            (key_ok && plain && v.contains(": "))
                .then(|| format!("{key}: '{}'", v.replace('\'', "''")))
        });
        match repaired {
            Some(r) => {
                changed = true;
                fixed.push_str(&r);
            }
            None => fixed.push_str(content),
        }
        fixed.push_str(ending);
    }
    changed.then(|| format!("---\n{fixed}---\n{}", split.body))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(text: &str, folder: &str, level: ValidationLevel) -> SkillFileCheck {
        let bundle = BundleName::single(folder).unwrap();
        check_skill_text(text, Path::new("x/SKILL.md"), &bundle, level)
    }

    #[test]
    fn portable_grammar() {
        for good in ["a", "pdf", "a-b-c", "x1-2y"] {
            assert!(is_portable_name(good), "{good}");
        }
        for bad in ["", "-a", "a-", "a--b", "A", "a_b", "a b", "技能"] {
            assert!(!is_portable_name(bad), "{bad}");
        }
    }

    #[test]
    fn strict_name_accepts_unicode_lowercase_like_the_reference() {
        let ok = check(
            "---\nname: мой-навык\ndescription: d\n---\nbody\n",
            "мой-навык",
            ValidationLevel::Strict,
        );
        assert!(ok.is_valid(), "{:?}", ok.diagnostics.codes());
        let bad = check(
            "---\nname: НАВЫК\ndescription: d\n---\nbody\n",
            "НАВЫК",
            ValidationLevel::Strict,
        );
        assert_eq!(bad.diagnostics.codes(), ["skill/name-invalid"]);
    }

    #[test]
    fn unquoted_colon_is_repaired_at_runtime_only() {
        let text = "---\nname: x\ndescription: Use this skill when: things happen\n---\nbody\n";
        let rt = check(text, "x", ValidationLevel::Runtime);
        assert!(rt.is_valid());
        assert_eq!(rt.diagnostics.codes(), ["skill/yaml-repaired"]);
        assert_eq!(
            rt.fields.description.as_deref(),
            Some("Use this skill when: things happen")
        );
        let strict = check(text, "x", ValidationLevel::Strict);
        assert_eq!(strict.diagnostics.codes(), ["frontmatter/yaml-invalid"]);
    }

    #[test]
    fn path_unsafe_names() {
        assert!(path_unsafe("a/../b").is_some());
        assert!(path_unsafe("a\\b").is_some());
        assert!(path_unsafe("/a").is_some());
        assert!(path_unsafe("Brainstorming Ideas").is_none());
        assert!(path_unsafe("parent/child").is_none());
    }
}
