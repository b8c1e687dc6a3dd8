//! `agents/evoflux.yaml` (else the portable `agents/openai.yaml`): UI
//! metadata, the implicit-invocation policy and tool dependencies.
//!
//! Only one file is read: the evoflux one when present, so a bundle can
//! override third-party metadata without deleting it. Every problem is a
//! warning and drops only the offending part: metadata decorates a skill,
//! it never invalidates one.

use std::fs::File;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

use evoflux_core::{Diagnostic, Diagnostics};
use serde::Serialize;
use yaml_serde::{Mapping, Value};

/// Largest metadata file read (256 KiB).
pub const MAX_AGENT_METADATA_BYTES: u64 = 256 * 1024;
/// Most dependency records kept.
pub const MAX_DEPENDENCIES: usize = 64;

/// The metadata files, in the order they are tried.
pub const AGENT_METADATA_FILES: [&str; 2] = ["agents/evoflux.yaml", "agents/openai.yaml"];

/// UI metadata for a skill.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct SkillInterface {
    pub display_name: Option<String>,
    pub short_description: Option<String>,
    pub default_prompt: Option<String>,
    pub icon_small: Option<String>,
    pub icon_large: Option<String>,
    pub brand_color: Option<String>,
}

/// What a dependency names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DependencyKind {
    /// A built-in evoflux tool that must be granted for the skill to load.
    Builtin,
    /// An MCP server.
    Mcp,
    /// An environment variable.
    EnvVar,
    /// A command-line program.
    Cli,
}

impl DependencyKind {
    fn parse(s: &str) -> Option<DependencyKind> {
        match s {
            "builtin" => Some(DependencyKind::Builtin),
            "mcp" => Some(DependencyKind::Mcp),
            "env_var" => Some(DependencyKind::EnvVar),
            "cli" => Some(DependencyKind::Cli),
            _ => None,
        }
    }
}

/// One `dependencies.tools` entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ToolDependency {
    pub kind: DependencyKind,
    pub value: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub transport: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
}

/// The usable parts of a metadata file.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct AgentMetadata {
    /// The file read, if any.
    pub file: Option<PathBuf>,
    pub interface: Option<SkillInterface>,
    /// `policy.allow_implicit_invocation`, when given.
    pub allow_implicit_invocation: Option<bool>,
    pub dependencies: Vec<ToolDependency>,
}

/// Reads the bundle's metadata file; problems become warnings in `diags`.
pub fn read_agent_metadata(bundle_dir: &Path, diags: &mut Diagnostics) -> AgentMetadata {
    let mut meta = AgentMetadata::default();
    let Some(path) = AGENT_METADATA_FILES
        .iter()
        .map(|rel| bundle_dir.join(rel))
        .find(|p| p.is_file())
    else {
        return meta;
    };
    meta.file = Some(path.clone());
    let text = match read_bounded(&path) {
        Ok(text) => text,
        Err(ReadProblem::TooLarge) => {
            diags.push(
                Diagnostic::warning(
                    "skill/agent-metadata-too-large",
                    format!(
                        "agent metadata is larger than {} KiB; ignored",
                        MAX_AGENT_METADATA_BYTES / 1024
                    ),
                )
                .with_file(&path),
            );
            return meta;
        }
        Err(ReadProblem::Io(e)) => {
            diags.push(invalid(&path, format!("cannot read agent metadata: {e}")));
            return meta;
        }
    };
    if let Err(e) = evoflux_core::nesting::check_yaml(&text) {
        diags.push(
            Diagnostic::warning(e.code(), format!("agent metadata: {e}; ignored"))
                .with_file(&path)
                .with_line(e.line),
        );
        return meta;
    }
    let root = match yaml_serde::from_str::<Value>(&text) {
        Ok(Value::Mapping(m)) => m,
        Ok(Value::Null) => return meta,
        Ok(_) => {
            diags.push(invalid(
                &path,
                "agent metadata must be a YAML mapping; ignored",
            ));
            return meta;
        }
        Err(e) => {
            diags.push(invalid(
                &path,
                format!("agent metadata is not valid YAML ({e}); ignored"),
            ));
            return meta;
        }
    };
    if let Some(v) = root.get("interface") {
        meta.interface = read_interface(v, &path, diags);
    }
    if let Some(v) = root.get("policy") {
        meta.allow_implicit_invocation = read_policy(v, &path, diags);
    }
    if let Some(v) = root.get("dependencies") {
        meta.dependencies = read_dependencies(v, &path, diags);
    }
    meta
}

enum ReadProblem {
    TooLarge,
    Io(io::Error),
}

fn read_bounded(path: &Path) -> Result<String, ReadProblem> {
    let file = File::open(path).map_err(ReadProblem::Io)?;
    let mut bytes = Vec::new();
    file.take(MAX_AGENT_METADATA_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(ReadProblem::Io)?;
    if bytes.len() as u64 > MAX_AGENT_METADATA_BYTES {
        return Err(ReadProblem::TooLarge);
    }
    String::from_utf8(bytes).map_err(|_| ReadProblem::Io(io::Error::other("not UTF-8")))
}

fn invalid(path: &Path, msg: impl Into<String>) -> Diagnostic {
    Diagnostic::warning("skill/agent-metadata-invalid", msg).with_file(path)
}

fn collapse(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn read_interface(v: &Value, path: &Path, diags: &mut Diagnostics) -> Option<SkillInterface> {
    let Some(m) = v.as_mapping() else {
        diags.push(
            Diagnostic::warning(
                "skill/agent-interface-invalid",
                "`interface` must be a mapping; ignored",
            )
            .with_file(path)
            .with_field("interface"),
        );
        return None;
    };
    let mut field = |key: &str, max: usize, required: bool| -> Option<String> {
        let dotted = format!("interface.{key}");
        match m.get(key) {
            None | Some(Value::Null) => {
                if required {
                    diags.push(
                        Diagnostic::warning(
                            "skill/agent-interface-field-missing",
                            format!("`{dotted}` is required when `interface` is present"),
                        )
                        .with_file(path)
                        .with_field(dotted),
                    );
                }
                None
            }
            Some(Value::String(s)) => {
                let s = collapse(s);
                if s.chars().count() > max {
                    diags.push(
                        Diagnostic::warning(
                            "skill/agent-interface-field-too-long",
                            format!("`{dotted}` is longer than {max} characters; ignored"),
                        )
                        .with_file(path)
                        .with_field(dotted),
                    );
                    None
                } else if s.is_empty() {
                    None
                } else {
                    Some(s)
                }
            }
            Some(_) => {
                diags.push(
                    Diagnostic::warning(
                        "skill/agent-interface-field-invalid",
                        format!("`{dotted}` must be a string; ignored"),
                    )
                    .with_file(path)
                    .with_field(dotted),
                );
                None
            }
        }
    };
    Some(SkillInterface {
        display_name: field("display_name", 128, true),
        short_description: field("short_description", 1024, true),
        default_prompt: field("default_prompt", 4096, false),
        icon_small: field("icon_small", 1024, false),
        icon_large: field("icon_large", 1024, false),
        brand_color: field("brand_color", 64, false),
    })
}

fn read_policy(v: &Value, path: &Path, diags: &mut Diagnostics) -> Option<bool> {
    let bad = |diags: &mut Diagnostics, msg: &str| {
        diags.push(
            Diagnostic::warning("skill/agent-policy-invalid", msg.to_owned())
                .with_file(path)
                .with_field("policy.allow_implicit_invocation"),
        );
    };
    let Some(m) = v.as_mapping() else {
        bad(diags, "`policy` must be a mapping; ignored");
        return None;
    };
    match m.get("allow_implicit_invocation") {
        None | Some(Value::Null) => None,
        Some(Value::Bool(b)) => Some(*b),
        Some(_) => {
            bad(
                diags,
                "`policy.allow_implicit_invocation` must be true or false; ignored",
            );
            None
        }
    }
}

fn read_dependencies(v: &Value, path: &Path, diags: &mut Diagnostics) -> Vec<ToolDependency> {
    let list = v
        .as_mapping()
        .and_then(|m| m.get("tools"))
        .and_then(Value::as_sequence);
    let Some(list) = list else {
        diags.push(
            Diagnostic::warning(
                "skill/agent-dependencies-invalid",
                "`dependencies` must be a mapping with a `tools` list; ignored",
            )
            .with_file(path)
            .with_field("dependencies"),
        );
        return Vec::new();
    };
    let mut out = Vec::new();
    for (i, item) in list.iter().enumerate() {
        if out.len() == MAX_DEPENDENCIES {
            diags.push(
                Diagnostic::warning(
                    "skill/agent-dependencies-truncated",
                    format!("only the first {MAX_DEPENDENCIES} tool dependencies are kept"),
                )
                .with_file(path)
                .with_field("dependencies.tools"),
            );
            break;
        }
        match read_dependency(item) {
            Ok(dep) => out.push(dep),
            Err(why) => diags.push(
                Diagnostic::warning(
                    "skill/agent-dependency-invalid",
                    format!("dependency {i} dropped: {why}"),
                )
                .with_file(path)
                .with_field(format!("dependencies.tools.{i}")),
            ),
        }
    }
    out
}

fn read_dependency(item: &Value) -> Result<ToolDependency, String> {
    let m: &Mapping = item.as_mapping().ok_or("not a mapping")?;
    let text = |key: &str, max: usize| -> Result<Option<String>, String> {
        match m.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => {
                let s = collapse(s);
                if s.chars().count() > max {
                    Err(format!("`{key}` is longer than {max} characters"))
                } else {
                    Ok(Some(s))
                }
            }
            Some(_) => Err(format!("`{key}` must be a string")),
        }
    };
    let kind_text = text("type", 64)?.ok_or("missing `type`")?;
    let kind = DependencyKind::parse(&kind_text)
        .ok_or_else(|| format!("unknown type `{kind_text}` (builtin, mcp, env_var, cli)"))?;
    let value = text("value", 1024)?.ok_or("missing `value`")?;
    Ok(ToolDependency {
        kind,
        value,
        description: text("description", 1024)?,
        transport: text("transport", 1024)?,
        command: text("command", 1024)?,
        url: text("url", 1024)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(files: &[(&str, &str)]) -> (AgentMetadata, Diagnostics) {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("agents")).unwrap();
        for (rel, text) in files {
            std::fs::write(dir.path().join(rel), text).unwrap();
        }
        let mut diags = Diagnostics::new();
        let meta = read_agent_metadata(dir.path(), &mut diags);
        (meta, diags)
    }

    #[test]
    fn hostile_nesting_is_ignored_before_parsing() {
        let text = format!("interface:\n  display_name: {}\n", "{a: ".repeat(10_000));
        let (meta, diags) = read(&[("agents/evoflux.yaml", &text)]);
        assert_eq!(diags.codes(), ["yaml/too-deep"]);
        assert_eq!(diags.as_slice()[0].locator.line, Some(2));
        assert!(meta.interface.is_none());
    }

    #[test]
    fn evoflux_file_wins_over_openai() {
        let (meta, diags) = read(&[
            (
                "agents/evoflux.yaml",
                "interface:\n  display_name: Ours\n  short_description: mine\npolicy:\n  allow_implicit_invocation: false\n",
            ),
            (
                "agents/openai.yaml",
                "interface:\n  display_name: Theirs\n  short_description: x\n",
            ),
        ]);
        assert!(diags.is_empty(), "{:?}", diags.codes());
        assert_eq!(
            meta.interface.unwrap().display_name.as_deref(),
            Some("Ours")
        );
        assert_eq!(meta.allow_implicit_invocation, Some(false));
        assert!(meta.file.unwrap().ends_with("agents/evoflux.yaml"));
    }

    #[test]
    fn openai_fallback_with_dependencies() {
        let (meta, diags) = read(&[(
            "agents/openai.yaml",
            concat!(
                "interface:\n  display_name: \"Linear\"\n  short_description: \"Manage   issues\"\n",
                "dependencies:\n  tools:\n",
                "    - type: \"mcp\"\n      value: \"linear\"\n      transport: \"streamable_http\"\n",
                "      url: \"https://mcp.linear.app/mcp\"\n",
                "    - type: builtin\n      value: code_context\n",
                "    - type: weird\n      value: x\n",
                "    - value: no-type\n",
            ),
        )]);
        assert_eq!(
            meta.interface.unwrap().short_description.as_deref(),
            Some("Manage issues")
        );
        assert_eq!(meta.dependencies.len(), 2);
        assert_eq!(meta.dependencies[0].kind, DependencyKind::Mcp);
        assert_eq!(meta.dependencies[1].kind, DependencyKind::Builtin);
        assert_eq!(
            diags.codes(),
            [
                "skill/agent-dependency-invalid",
                "skill/agent-dependency-invalid"
            ]
        );
    }

    #[test]
    fn problems_are_warnings_only() {
        let (meta, diags) = read(&[(
            "agents/evoflux.yaml",
            "interface:\n  short_description: 5\n  brand_color: \"#123456\"\npolicy: yes\ndependencies: [1]\n",
        )]);
        assert_eq!(
            diags.codes(),
            [
                "skill/agent-interface-field-missing",
                "skill/agent-interface-field-invalid",
                "skill/agent-policy-invalid",
                "skill/agent-dependencies-invalid"
            ]
        );
        assert!(!diags.has_errors());
        assert_eq!(
            meta.interface.unwrap().brand_color.as_deref(),
            Some("#123456")
        );

        let (_, diags) = read(&[("agents/openai.yaml", "a: [unclosed\n")]);
        assert_eq!(diags.codes(), ["skill/agent-metadata-invalid"]);
        let big = format!("x: \"{}\"\n", "y".repeat(300 * 1024));
        let (_, diags) = read(&[("agents/openai.yaml", &big)]);
        assert_eq!(diags.codes(), ["skill/agent-metadata-too-large"]);
    }

    #[test]
    fn dependencies_are_truncated_at_64() {
        let mut yaml = String::from("dependencies:\n  tools:\n");
        for i in 0..70 {
            yaml.push_str(&format!("    - type: cli\n      value: t{i}\n"));
        }
        let (meta, diags) = read(&[("agents/evoflux.yaml", &yaml)]);
        assert_eq!(meta.dependencies.len(), 64);
        assert_eq!(diags.codes(), ["skill/agent-dependencies-truncated"]);
    }
}
