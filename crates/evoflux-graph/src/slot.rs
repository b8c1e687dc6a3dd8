//! Slots: the logical identity of a capability, derived from its path.
//!
//! A logical path inside a root (`tools/shell.toml`) selects exactly one
//! slot (`tools/shell`); the slot's kind decides how its winner is
//! normalized and which composition policy applies. This module is the only
//! place that turns paths into slots (the canonical-slot function) and the
//! only place that knows the name rules. The slot identity itself
//! ([`Slot`], [`SlotKind`], its canonical text) lives in
//! [`evoflux_core::slot`], so a diagnostic's locator can hold one.

pub use evoflux_core::slot::{Slot, SlotKind};
use serde::{Deserialize, Serialize};

/// The file format of a declarative definition. Several formats of one stem
/// select the same slot, so two of them in one directory collide.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FileFormat {
    Toml,
    Json,
    Yaml,
    Markdown,
}

/// What a relative path inside a full root (such as `.evoflux/`) is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PathClass {
    /// A definition for `slot`.
    Slot { slot: Slot, format: FileFormat },
    /// `mcp.json`: each entry becomes a `connections/<name>` candidate.
    McpServers,
    /// A file inside a skill bundle other than `SKILL.md` (resources).
    SkillResource,
    /// A file in a folder under `evals/` (`evals/scripts/fix.yaml`): what
    /// an eval reads by its path, such as the script of its `scripted:`
    /// model, which is relative to the eval's file. Not an eval, and not
    /// a source.
    EvalResource,
    /// What runs wrote (`artifacts/`, where the `artifact` tool writes
    /// plans and reports): not a source, and never a diagnostic.
    RunArtifact,
    /// A path that names a slot but breaks a name rule.
    InvalidName { code: &'static str, message: String },
    /// Fits no slot.
    Unsupported,
}

/// Tool names are model-visible verbatim.
pub fn is_valid_tool_name(name: &str) -> bool {
    let b = name.as_bytes();
    !b.is_empty()
        && b.len() <= 64
        && b[0].is_ascii_alphabetic()
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || *c == b'_' || *c == b'-')
}

/// Connection names: `^[a-z][a-z0-9-]{0,63}$`.
pub fn is_valid_connection_name(name: &str) -> bool {
    let b = name.as_bytes();
    !b.is_empty()
        && b.len() <= 64
        && b[0].is_ascii_lowercase()
        && b.iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
}

/// A channel path segment: lowercase kebab (optionally with a leading dot,
/// as in `.well-known`) or a `[param]`.
pub fn is_valid_channel_segment(seg: &str) -> bool {
    fn kebab(s: &str) -> bool {
        let b = s.as_bytes();
        !b.is_empty()
            && (b[0].is_ascii_lowercase() || b[0].is_ascii_digit())
            && !s.ends_with('-')
            && !s.contains("--")
            && b.iter()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
    }
    if let Some(inner) = seg.strip_prefix('[').and_then(|s| s.strip_suffix(']')) {
        let b = inner.as_bytes();
        return !b.is_empty()
            && (b[0].is_ascii_alphabetic() || b[0] == b'_')
            && b.iter().all(|c| c.is_ascii_alphanumeric() || *c == b'_');
    }
    kebab(seg.strip_prefix('.').unwrap_or(seg))
}

/// Names of Markdown-defined kinds (team agents, workers, fleets,
/// schedules): `^[a-zA-Z0-9][a-zA-Z0-9._-]{0,63}$`. The one implementation
/// of the rule: the graph applies it to file names, the agents crate to
/// names written inside files and given on the command line.
pub fn is_valid_document_name(name: &str) -> bool {
    let b = name.as_bytes();
    !b.is_empty()
        && b.len() <= 64
        && b[0].is_ascii_alphanumeric()
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'.' | b'_' | b'-'))
}

fn declarative_format(ext: &str) -> Option<FileFormat> {
    match ext {
        "toml" => Some(FileFormat::Toml),
        "json" => Some(FileFormat::Json),
        _ => None,
    }
}

/// Splits `name.ext` into stem and extension.
fn stem_ext(file: &str) -> Option<(&str, &str)> {
    let (stem, ext) = file.rsplit_once('.')?;
    (!stem.is_empty()).then_some((stem, ext))
}

/// The canonical-slot function: classifies a relative POSIX path inside a
/// full root. Callers pass paths that are already relative and normalized
/// (no `.`/`..`, no empty segments); anything else is unsupported.
pub fn classify(rel: &str) -> PathClass {
    let segs: Vec<&str> = rel.split('/').collect();
    if segs.iter().any(|s| s.is_empty() || *s == "." || *s == "..") {
        return PathClass::Unsupported;
    }
    let invalid = |code: &'static str, message: String| PathClass::InvalidName { code, message };
    match segs.as_slice() {
        ["config.toml"] => PathClass::Slot {
            slot: Slot::config(),
            format: FileFormat::Toml,
        },
        ["sandbox.toml"] => PathClass::Slot {
            slot: Slot::sandbox(),
            format: FileFormat::Toml,
        },
        ["sandbox.json"] => PathClass::Slot {
            slot: Slot::sandbox(),
            format: FileFormat::Json,
        },
        ["mcp.json"] => PathClass::McpServers,
        ["tools", file] => {
            match stem_ext(file).and_then(|(s, e)| Some((s, declarative_format(e)?))) {
                Some((name, format)) if is_valid_tool_name(name) => PathClass::Slot {
                    slot: Slot::tool(name),
                    format,
                },
                Some((name, _)) => invalid(
                    "discover/tool-name-invalid",
                    format!(
                        "tool name `{name}` must start with a letter and use only letters, digits, \
                     `_` and `-` (at most 64 characters)"
                    ),
                ),
                None => PathClass::Unsupported,
            }
        }
        ["channels", rest @ .., file] => {
            let Some((stem, format)) =
                stem_ext(file).and_then(|(s, e)| Some((s, declarative_format(e)?)))
            else {
                return PathClass::Unsupported;
            };
            let mut parts: Vec<&str> = rest.to_vec();
            parts.push(stem);
            if let Some(bad) = parts.iter().find(|s| !is_valid_channel_segment(s)) {
                return invalid(
                    "discover/channel-name-invalid",
                    format!(
                        "channel path segment `{bad}` must be lowercase kebab-case (such as \
                         `github-events`) or a parameter such as `[repo]`"
                    ),
                );
            }
            PathClass::Slot {
                slot: Slot::channel(&parts.join("/")),
                format,
            }
        }
        ["schedules", file] => match stem_ext(file)
            .and_then(|(s, e)| Some((s, declarative_format(e)?)))
        {
            Some((name, format)) if is_valid_document_name(name) => PathClass::Slot {
                slot: Slot::new(SlotKind::Schedule, name),
                format,
            },
            Some((name, _)) => invalid(
                "discover/schedule-name-invalid",
                format!("schedule name `{name}` must use only letters, digits, `.`, `_` and `-`"),
            ),
            None => PathClass::Unsupported,
        },
        ["evals", file] => match stem_ext(file).and_then(|(s, e)| {
            let format = match e {
                "yaml" | "yml" => FileFormat::Yaml,
                other => declarative_format(other)?,
            };
            Some((s, format))
        }) {
            Some((name, format)) if is_valid_document_name(name) => PathClass::Slot {
                slot: Slot::new(SlotKind::Eval, name),
                format,
            },
            Some((name, _)) => invalid(
                "discover/eval-name-invalid",
                format!("eval name `{name}` must use only letters, digits, `.`, `_` and `-`"),
            ),
            None => PathClass::Unsupported,
        },
        ["evals", _, _, ..] => PathClass::EvalResource,
        // A bundle directly under `skills/`, or a legacy nested one
        // (`skills/parent/child/SKILL.md` is the slot `skills/parent/child`).
        ["skills", bundle @ .., "SKILL.md"] if !bundle.is_empty() => PathClass::Slot {
            slot: Slot::new(SlotKind::Skill, bundle.join("/")),
            format: FileFormat::Markdown,
        },
        ["skills", _, _, ..] => PathClass::SkillResource,
        ["artifacts", _, ..] => PathClass::RunArtifact,
        ["agents", "coding", file] => markdown_slot(file, SlotKind::CodingAgent, "agent"),
        ["agents", file] => markdown_slot(file, SlotKind::WorkAgent, "agent"),
        ["agents", dir, _, ..] => invalid(
            "discover/agent-folder-invalid",
            format!(
                "agents live in `agents/<name>.md` (Work) or `agents/coding/<name>.md` (Coding); \
                 the folder `agents/{dir}/` is not supported"
            ),
        ),
        ["workers", file] => markdown_slot(file, SlotKind::Worker, "worker"),
        ["fleets", "commands.yaml"] => PathClass::Slot {
            slot: Slot::new(SlotKind::FleetCommands, ""),
            format: FileFormat::Yaml,
        },
        ["fleets", "commands.yml"] => PathClass::Slot {
            slot: Slot::new(SlotKind::FleetCommands, ""),
            format: FileFormat::Yaml,
        },
        ["fleets", file] => markdown_slot(file, SlotKind::Fleet, "fleet"),
        _ => PathClass::Unsupported,
    }
}

fn markdown_slot(file: &str, kind: SlotKind, what: &str) -> PathClass {
    match stem_ext(file) {
        Some((name, "md")) if is_valid_document_name(name) => PathClass::Slot {
            slot: Slot::new(kind, name),
            format: FileFormat::Markdown,
        },
        Some((name, "md")) => PathClass::InvalidName {
            code: "discover/document-name-invalid",
            message: format!(
                "{what} name `{name}` must start with a letter or digit and use only letters, \
                 digits, `.`, `_` and `-` (at most 64 characters)"
            ),
        },
        _ => PathClass::Unsupported,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn slot_of(rel: &str) -> String {
        match classify(rel) {
            PathClass::Slot { slot, .. } => slot.to_string(),
            other => format!("{other:?}"),
        }
    }

    #[test]
    fn canonical_slots() {
        assert_eq!(slot_of("tools/shell.toml"), "tools/shell");
        assert_eq!(slot_of("tools/shell.json"), "tools/shell");
        assert_eq!(
            slot_of("channels/hooks/github.toml"),
            "channels/hooks/github"
        );
        assert_eq!(
            slot_of("channels/[org]/events.toml"),
            "channels/[org]/events"
        );
        assert_eq!(slot_of("skills/review/SKILL.md"), "skills/review");
        assert_eq!(slot_of("agents/lead.md"), "agents/lead");
        assert_eq!(
            slot_of("agents/coding/reviewer.md"),
            "agents/coding/reviewer"
        );
        assert_eq!(slot_of("workers/code-review.md"), "workers/code-review");
        assert_eq!(slot_of("fleets/release.md"), "fleets/release");
        assert_eq!(slot_of("fleets/commands.yaml"), "fleets/commands");
        assert_eq!(slot_of("schedules/nightly.toml"), "schedules/nightly");
        assert_eq!(slot_of("evals/greets.yaml"), "evals/greets");
        assert_eq!(slot_of("evals/greets.yml"), "evals/greets");
        assert_eq!(slot_of("config.toml"), "config");
        assert_eq!(slot_of("sandbox.toml"), "sandbox");
        assert_eq!(classify("mcp.json"), PathClass::McpServers);
        assert_eq!(
            classify("skills/review/scripts/run.sh"),
            PathClass::SkillResource
        );
        assert_eq!(classify("artifacts/PLAN.md"), PathClass::RunArtifact);
        assert_eq!(classify("artifacts/notes/a.md"), PathClass::RunArtifact);
        // Where README puts an eval's scripted model: beside the eval, in
        // a folder of its own.
        assert_eq!(classify("evals/scripts/fix.yaml"), PathClass::EvalResource);
        assert_eq!(
            classify("evals/fixtures/input/a.json"),
            PathClass::EvalResource
        );
    }

    #[test]
    fn unsupported_and_invalid() {
        for rel in [
            "README.md",
            "tools/x.py",
            "tools/nested/x.toml",
            "config.json",
            "x/../y",
        ] {
            assert_eq!(classify(rel), PathClass::Unsupported, "{rel}");
        }
        let code = |rel| match classify(rel) {
            PathClass::InvalidName { code, .. } => code,
            other => panic!("{rel}: {other:?}"),
        };
        assert_eq!(code("tools/1bad.toml"), "discover/tool-name-invalid");
        assert_eq!(code("tools/has space.toml"), "discover/tool-name-invalid");
        assert_eq!(code("channels/Hooks.toml"), "discover/channel-name-invalid");
        assert_eq!(code("channels/a--b.toml"), "discover/channel-name-invalid");
        assert_eq!(code("agents/team/x.md"), "discover/agent-folder-invalid");
    }

    #[test]
    fn name_rules() {
        assert!(is_valid_tool_name("web_fetch"));
        assert!(is_valid_tool_name(&"a".repeat(64)));
        assert!(!is_valid_tool_name(&"a".repeat(65)));
        assert!(!is_valid_tool_name("_x"));
        assert!(is_valid_connection_name("github-mcp"));
        assert!(!is_valid_connection_name("GitHub"));
        assert!(!is_valid_connection_name("a_b"));
        assert!(is_valid_channel_segment(".well-known"));
        assert!(is_valid_channel_segment("[repo_id]"));
        assert!(!is_valid_channel_segment("[]"));
        assert!(!is_valid_channel_segment("x_y"));
    }
}
