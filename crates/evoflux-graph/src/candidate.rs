//! Candidates: one possible source for one slot, with explicit provenance.
//!
//! Ownership is a typed field set where the candidate is constructed;
//! nothing downstream infers an owner from a path prefix or a source id.
//! Source ids are opaque: compared, printed and used as keys, never parsed.

use std::fmt;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use evoflux_core::trust::Trust;

use crate::layer::{Form, Layer};
use crate::slot::{FileFormat, Slot};

/// An opaque, unique identity of one candidate source.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct SourceId(pub String);

impl SourceId {
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for SourceId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Which application root a file came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AppRoot {
    Admin,
    User,
    Project,
}

/// The folder convention of an application root: evoflux's own
/// (`.evoflux/`, the config dir, the admin dir) or a cross-client skill
/// folder.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AppFolder {
    Evoflux,
    /// `.agents/skills`.
    Agents,
    /// `.claude/skills`, `.claude/agents` and Claude Code's MCP files.
    Claude,
    /// `.opencode/skills`, `~/.config/opencode/skills`.
    Opencode,
    /// codex's `~/.codex/config.toml` (its MCP servers).
    Codex,
    /// VS Code's `.vscode/mcp.json`.
    Vscode,
    /// Cursor's `.cursor/mcp.json` and `~/.cursor/mcp.json`.
    Cursor,
}

fn is_evoflux_format(format: &crate::mcp_format::McpFormat) -> bool {
    *format == crate::mcp_format::McpFormat::Evoflux
}

/// Who owns a source.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Owner {
    /// Compiled into evoflux; `feature` names the framework feature.
    Framework { feature: String },
    /// An installed, linked or bundled plugin.
    Plugin { installation: String, name: String },
    /// The user's own files in an admin, user or project root.
    Application {
        root: AppRoot,
        folder: AppFolder,
        path: PathBuf,
    },
}

/// How to load a candidate. Recorded at construction so that loading never
/// guesses from a path.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Backing {
    /// A module of a builtin registry compiled into the binary.
    Builtin { registry: String, module: String },
    /// A file holding exactly this definition.
    File { path: PathBuf, format: FileFormat },
    /// One named entry of a file that holds several (an `mcp.json`
    /// server, read as `format`: evoflux's own, or another harness's; or
    /// a `config.toml`'s `[agents.external.<name>]` table, always
    /// evoflux's own). The slot's kind says which.
    FileEntry {
        path: PathBuf,
        /// The entry's name as the file writes it.
        entry: String,
        #[serde(default, skip_serializing_if = "is_evoflux_format")]
        format: crate::mcp_format::McpFormat,
    },
    /// Instantiated by a template of `registry` from other selected
    /// sources (a derived slot): nothing is read from disk.
    Derived {
        registry: String,
        derivation: crate::derive::Derivation,
    },
}

/// One candidate for one slot.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Candidate {
    pub slot: Slot,
    /// Path inside its root, such as `tools/shell.toml`; canonicalizes to
    /// `slot`.
    pub logical_path: String,
    pub layer: Layer,
    pub form: Form,
    pub owner: Owner,
    pub source_id: SourceId,
    pub backing: Backing,
    /// Position in discovery order; decides same-layer ties for kinds whose
    /// policy resolves them by order (skills).
    pub order: u32,
    /// Whether the source may act for the user: only a repository the user
    /// has not trusted is untrusted.
    pub trust: Trust,
}

/// The self-contained description of a candidate kept in the composition
/// report (everything but the discovery order).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SourceDescriptor {
    pub slot: String,
    pub logical_path: String,
    pub layer: Layer,
    pub form: Form,
    pub owner: Owner,
    pub source_id: SourceId,
    pub backing: Backing,
}

impl From<&Candidate> for SourceDescriptor {
    fn from(c: &Candidate) -> Self {
        SourceDescriptor {
            slot: c.slot.to_string(),
            logical_path: c.logical_path.clone(),
            layer: c.layer,
            form: c.form,
            owner: c.owner.clone(),
            source_id: c.source_id.clone(),
            backing: c.backing.clone(),
        }
    }
}

impl SourceDescriptor {
    /// The file the source was read from, if any.
    pub fn file(&self) -> Option<&std::path::Path> {
        match &self.backing {
            Backing::Builtin { .. } | Backing::Derived { .. } => None,
            Backing::File { path, .. } | Backing::FileEntry { path, .. } => Some(path),
        }
    }
}

impl Candidate {
    /// The file a diagnostic about this candidate should point at, if any.
    pub fn file(&self) -> Option<&std::path::Path> {
        match &self.backing {
            Backing::Builtin { .. } | Backing::Derived { .. } => None,
            Backing::File { path, .. } | Backing::FileEntry { path, .. } => Some(path),
        }
    }
}
