//! `[compat]`: which other harnesses' files (instructions, MCP servers,
//! Claude Code's permission rules) evoflux reads, only ever to read them. On by default; only the user's
//! and the admin's files may change it.

use serde::{Deserialize, Serialize};

/// `[compat]`: the files of other harnesses evoflux reads, only ever to
/// read them (it never writes them). On by default, so a setup made for
/// Claude Code, codex or an editor works here as it is. Only the user's
/// and the admin's files may set it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CompatConfig {
    /// `CLAUDE.md` and `GEMINI.md` serve a directory that has no
    /// `AGENTS.md`, and the user's `~/.codex/AGENTS.md` and
    /// `~/.claude/CLAUDE.md` join the instructions.
    #[serde(default = "yes")]
    pub instructions: bool,
    /// Claude Code's `permissions` (`allow`, `ask`, `deny` of
    /// `.claude/settings.json`, `.claude/settings.local.json` and
    /// `~/.claude/settings.json`) join the approval rules.
    #[serde(default = "yes")]
    pub permissions: bool,
    /// Whose MCP server files join the user and project layers besides
    /// evoflux's own `mcp.json` (`mcp = []` reads none).
    #[serde(default = "ForeignMcp::all")]
    pub mcp: Vec<ForeignMcp>,
}

/// Another harness whose MCP server configuration evoflux can read.
/// Closed: each has one adapter in the graph crate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ForeignMcp {
    /// A repository's `.mcp.json`, and `~/.claude.json` (the user's
    /// servers and those Claude Code keeps for one project).
    ClaudeCode,
    /// `[mcp_servers]` of `~/.codex/config.toml`.
    Codex,
    /// A repository's `.vscode/mcp.json`.
    Vscode,
    /// A repository's `.cursor/mcp.json` and `~/.cursor/mcp.json`.
    Cursor,
    /// `mcp` of a repository's `opencode.json` and of
    /// `~/.config/opencode/opencode.json`.
    Opencode,
}

impl ForeignMcp {
    pub const ALL: [ForeignMcp; 5] = [
        ForeignMcp::ClaudeCode,
        ForeignMcp::Codex,
        ForeignMcp::Vscode,
        ForeignMcp::Cursor,
        ForeignMcp::Opencode,
    ];

    fn all() -> Vec<ForeignMcp> {
        Self::ALL.to_vec()
    }

    pub const fn as_str(self) -> &'static str {
        match self {
            ForeignMcp::ClaudeCode => "claude-code",
            ForeignMcp::Codex => "codex",
            ForeignMcp::Vscode => "vscode",
            ForeignMcp::Cursor => "cursor",
            ForeignMcp::Opencode => "opencode",
        }
    }
}

fn yes() -> bool {
    true
}

impl Default for CompatConfig {
    fn default() -> Self {
        CompatConfig {
            instructions: true,
            permissions: true,
            mcp: ForeignMcp::all(),
        }
    }
}

impl CompatConfig {
    pub fn is_default(&self) -> bool {
        *self == CompatConfig::default()
    }
}

/// `[compat]` as a file writes it: each key optional, layered key by key.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub(super) struct CompatFile {
    pub(super) instructions: Option<bool>,
    pub(super) permissions: Option<bool>,
    pub(super) mcp: Option<Vec<ForeignMcp>>,
}
