//! Activation: the exact, structured Tier-2 load of one skill.
//!
//! Activation re-reads SKILL.md (bounded), checks that the bundle is still
//! valid, checks every declared built-in tool dependency against the tools
//! the agent was granted (all or nothing: a skill never runs half-equipped)
//! and returns the bundle directory, the revision, the exact instructions
//! with placeholders expanded, and a manifest of task-resource paths and
//! sizes. Resource contents are never included; `read_resource` reads one
//! on demand under the path rules of [`crate::resources`].

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::path::PathBuf;

use evoflux_core::{Diagnostic, frontmatter};
use serde::Serialize;

use crate::bundle::{SkillRecord, revision_of};
use crate::bundled;
use crate::origin::SkillSource;
use crate::placeholder::{PlaceholderDirs, expand};
use crate::resources::{MAX_MANIFEST_ENTRIES, ResourceEntry, list_resources};
use crate::validate::read_skill_file;

/// Largest rendered body, and largest whole activation, in UTF-8 bytes.
pub const MAX_ACTIVATION_BYTES: usize = 95_000;

/// The tools an activation requires and activates.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct RuntimeContract {
    /// Built-in tools the skill declared; all were granted.
    pub required_tools: Vec<String>,
}

/// A loaded skill.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Activation {
    pub name: String,
    pub bundle_dir: PathBuf,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub plugin_root: Option<PathBuf>,
    /// First 16 hex digits of SHA-256 of SKILL.md as re-read now.
    pub revision: String,
    /// The body, placeholders expanded, otherwise exactly as written.
    pub instructions: String,
    /// Task resources (at most [`MAX_MANIFEST_ENTRIES`]).
    pub resources: Vec<ResourceEntry>,
    /// Resources not listed because of the entry cap.
    pub resources_omitted: usize,
    pub contract: RuntimeContract,
}

/// Why a skill could not be activated. Nothing is applied in any case.
#[derive(Debug, thiserror::Error)]
pub enum ActivationError {
    #[error("skill `{name}` is invalid: {reasons}")]
    Invalid { name: String, reasons: String },
    #[error("skill `{name}` needs tools this agent was not granted: {}", missing.join(", "))]
    MissingDependencies { name: String, missing: Vec<String> },
    #[error(
        "skill `{name}` is too large to load ({bytes} bytes; the model-context limit is {MAX_ACTIVATION_BYTES})"
    )]
    TooLarge { name: String, bytes: usize },
}

impl ActivationError {
    pub fn code(&self) -> &'static str {
        match self {
            ActivationError::Invalid { .. } => "skill/activation-invalid",
            ActivationError::MissingDependencies { .. } => "skill/dependency-missing",
            ActivationError::TooLarge { .. } => "skill/activation-too-large",
        }
    }
}

/// Activates `record` for an agent granted `granted_tools`.
pub fn activate(
    record: &SkillRecord,
    placeholders: &PlaceholderDirs,
    granted_tools: &BTreeSet<String>,
) -> Result<Activation, ActivationError> {
    let invalid = |reasons: String| ActivationError::Invalid {
        name: record.name.clone(),
        reasons,
    };
    if !record.valid {
        let reasons: Vec<String> = record
            .diagnostics
            .iter()
            .filter(|d| d.is_error())
            .map(|d| format!("[{}] {}", d.code, d.message))
            .collect();
        return Err(invalid(reasons.join("; ")));
    }
    let text = current_text(record).map_err(|d| invalid(d.message))?;
    let doc = frontmatter::parse_file(&record.skill_file, &text).map_err(|d| invalid(d.message))?;
    if doc.body.trim().is_empty() {
        return Err(invalid("SKILL.md has no instructions".to_owned()));
    }

    let required = record.required_builtin_tools();
    let missing: Vec<String> = required
        .iter()
        .filter(|t| !granted_tools.contains(*t))
        .cloned()
        .collect();
    if !missing.is_empty() {
        return Err(ActivationError::MissingDependencies {
            name: record.name.clone(),
            missing,
        });
    }

    let instructions = expand(doc.body, placeholders, &record.bundle_dir);
    if instructions.len() > MAX_ACTIVATION_BYTES {
        return Err(ActivationError::TooLarge {
            name: record.name.clone(),
            bytes: instructions.len(),
        });
    }
    let mut resources = match &record.origin.source {
        // A bundled skill's folder is virtual: it ships no task resources.
        SkillSource::Bundled { .. } => Vec::new(),
        SkillSource::Project(_)
        | SkillSource::User(_)
        | SkillSource::Admin
        | SkillSource::Plugin { .. }
        | SkillSource::Custom => list_resources(&record.bundle_dir),
    };
    let resources_omitted = resources.len().saturating_sub(MAX_MANIFEST_ENTRIES);
    resources.truncate(MAX_MANIFEST_ENTRIES);
    let activation = Activation {
        name: record.name.clone(),
        bundle_dir: record.bundle_dir.clone(),
        plugin_root: record.origin.plugin_root.clone(),
        revision: revision_of(&text),
        instructions,
        resources,
        resources_omitted,
        contract: RuntimeContract {
            required_tools: required,
        },
    };
    let bytes = activation.render().len();
    if bytes > MAX_ACTIVATION_BYTES {
        return Err(ActivationError::TooLarge {
            name: record.name.clone(),
            bytes,
        });
    }
    Ok(activation)
}

/// The SKILL.md text of `record` as it is now: a bundled skill's text is
/// compiled into the binary (its folder is virtual), every other bundle is
/// re-read from disk, bounded, so an edit since discovery is what loads.
pub fn current_text(record: &SkillRecord) -> Result<String, Diagnostic> {
    match &record.origin.source {
        SkillSource::Bundled { .. } => {
            let stem = record.bundle.stem();
            bundled::bundled()
                .iter()
                .find(|b| b.name == stem)
                .map(|b| b.skill_md.to_owned())
                .ok_or_else(|| {
                    Diagnostic::error(
                        "skill/file-unreadable",
                        format!("`{stem}` is not a skill shipped with this build"),
                    )
                })
        }
        SkillSource::Project(_)
        | SkillSource::User(_)
        | SkillSource::Admin
        | SkillSource::Plugin { .. }
        | SkillSource::Custom => read_skill_file(&record.skill_file),
    }
}

impl Activation {
    /// The canonical wrapper the model sees; the same text is used for
    /// rehydration and survives compaction unchanged.
    pub fn render(&self) -> String {
        let mut out = String::with_capacity(self.instructions.len() + 512);
        let _ = writeln!(
            out,
            "<skill_content name=\"{}\" revision=\"{}\">",
            escape_attr(&self.name),
            self.revision
        );
        let _ = writeln!(out, "Skill directory: {}", self.bundle_dir.display());
        if let Some(root) = &self.plugin_root {
            let _ = writeln!(out, "Plugin root: {}", root.display());
            out.push_str(
                "This skill belongs to a plugin; paths the instructions give relative to the \
                 plugin refer to the plugin root.\n",
            );
        }
        out.push_str(
            "Relative paths in these instructions are relative to the skill directory. Read a \
             listed resource with the `skill` tool's `read_resource` action only when the \
             instructions call for it.\n",
        );
        out.push_str("<instructions>\n");
        out.push_str(&self.instructions);
        if !self.instructions.ends_with('\n') {
            out.push('\n');
        }
        out.push_str("</instructions>\n<skill_resources>\n");
        if self.resources.is_empty() {
            out.push_str("(none)\n");
        }
        for r in &self.resources {
            let _ = writeln!(out, "- {} ({} bytes)", r.path, r.size);
        }
        if self.resources_omitted > 0 {
            let _ = writeln!(out, "({} more resources omitted)", self.resources_omitted);
        }
        out.push_str("</skill_resources>\n</skill_content>");
        out
    }
}

/// Escapes text for an XML attribute value.
pub fn escape_attr(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bundle::{LoadOptions, load_embedded};
    use crate::name::BundleName;
    use crate::origin::SkillOrigin;
    use crate::scan::BundleDir;

    #[test]
    fn a_bundled_skill_activates_from_the_binary_with_no_resources() {
        let entry = bundled::bundled()[0];
        let dir = PathBuf::from(bundled::VIRTUAL_ROOT).join(entry.name);
        let origin = SkillOrigin::new(
            SkillSource::Bundled { modes: entry.modes },
            PathBuf::from(bundled::VIRTUAL_ROOT),
        );
        let found = BundleDir {
            dir,
            name: BundleName::single(entry.name).unwrap(),
            symlinked: false,
        };
        let placeholders = PlaceholderDirs::from_config_dir("/cfg");
        let record = load_embedded(
            &found,
            &origin,
            &LoadOptions::new(placeholders.clone()),
            entry.skill_md,
        );
        let act = activate(&record, &placeholders, &BTreeSet::new()).unwrap();
        assert_eq!(act.name, entry.name);
        assert_eq!(act.revision, revision_of(entry.skill_md));
        assert!(act.resources.is_empty());
        assert!(act.render().contains("<skill_resources>\n(none)\n"));
        let body = frontmatter::split(entry.skill_md).unwrap().body;
        assert!(act.instructions.contains(body.trim()));
    }
}
