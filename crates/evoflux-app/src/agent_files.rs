//! Creating, replacing and deleting team agent files (the user's layer:
//! `<config>/agents/<name>.md` for Work, `<config>/agents/coding/<name>.md`
//! for Coding), for front ends that edit agents (`/api/agents`).
//!
//! A change is checked before it is kept: the file must parse (its name
//! agreeing with its path), and the whole team of its mode is compiled
//! again afterwards; a change that leaves the mode without a lead, or
//! whose file the compiled team reports errors for, is rolled back and
//! refused with the diagnostics. Reading never writes anything.

use std::path::{Path, PathBuf};

use evoflux_agents::ToolCatalog;
use evoflux_agents::team::{load_agents, parse_agent, parse_qualified_name, qualified_name};
use evoflux_core::atomic::{AtomicOptions, write_atomic};
use evoflux_core::{AppMode, Diagnostic, Diagnostics};

use crate::{AppContext, SessionError};

/// What to do to one agent file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AgentChange {
    /// A new file; refused when the user already has one.
    Create { content: String },
    /// Replace the user's file.
    Replace { content: String },
    /// Remove the user's file.
    Delete,
}

/// An agent as an editor sees it: its file's text and what it compiles to.
#[derive(Debug, Clone, serde::Serialize)]
pub struct AgentDetail {
    pub qualified_name: String,
    pub mode: AppMode,
    /// The file that defines it; `None` for a code-owned builtin.
    pub path: Option<PathBuf>,
    /// The file's text, byte for byte.
    pub content: Option<String>,
    pub valid: bool,
    /// Whether `PUT`/`DELETE` act on it: it is the user's own file.
    pub editable: bool,
    /// A Claude Code subagent (`.claude/agents/<name>.md`): Claude Code's
    /// file, read-only here, and an editor offers no copy to save over it
    /// (the user edits it where Claude Code keeps it).
    pub claude: bool,
    pub effective: Option<evoflux_agents::team::EffectiveAgentConfig>,
    pub diagnostics: Diagnostics,
}

/// Why a change was refused (nothing was changed).
#[derive(Debug, thiserror::Error)]
pub enum AgentEditError {
    #[error("{}", .0.message)]
    Name(Diagnostic),
    #[error("`{0}` already exists; replace it instead")]
    Exists(String),
    #[error("no agent `{0}`")]
    NotFound(String),
    #[error(
        "`{name}` is not the user's file ({reason}); create a user file of that name to override it"
    )]
    NotEditable { name: String, reason: String },
    #[error("the agent file has errors")]
    Invalid { diagnostics: Diagnostics },
    #[error("the change would break the {mode} team: {reason}; nothing was changed")]
    TeamBroken {
        mode: AppMode,
        reason: String,
        diagnostics: Diagnostics,
    },
    #[error("cannot write {}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(transparent)]
    Session(#[from] SessionError),
}

impl AgentEditError {
    pub fn code(&self) -> &'static str {
        match self {
            AgentEditError::Name(_) => "agent/path-invalid",
            AgentEditError::Exists(_) => "agent/exists",
            AgentEditError::NotFound(_) => "agent/not-found",
            AgentEditError::NotEditable { .. } => "agent/not-editable",
            AgentEditError::Invalid { .. } => "agent/invalid",
            AgentEditError::TeamBroken { .. } => "agent/team-invalid",
            AgentEditError::Io { .. } => "agent/io",
            AgentEditError::Session(e) => e.code(),
        }
    }

    pub fn diagnostics(&self) -> Option<&Diagnostics> {
        match self {
            AgentEditError::Invalid { diagnostics }
            | AgentEditError::TeamBroken { diagnostics, .. } => Some(diagnostics),
            AgentEditError::Name(_)
            | AgentEditError::Exists(_)
            | AgentEditError::NotFound(_)
            | AgentEditError::NotEditable { .. }
            | AgentEditError::Io { .. }
            | AgentEditError::Session(_) => None,
        }
    }
}

impl AppContext {
    /// The user's file for the agent `qualified` (`name` or `coding/name`).
    pub fn agent_file(
        &self,
        qualified: &str,
    ) -> Result<(AppMode, String, PathBuf), AgentEditError> {
        let (mode, name) = parse_qualified_name(qualified).map_err(AgentEditError::Name)?;
        let dir = self.dirs.config_dir().join("agents");
        let path = match mode {
            AppMode::Work => dir.join(format!("{name}.md")),
            AppMode::Coding => dir.join("coding").join(format!("{name}.md")),
        };
        Ok((mode, name, path))
    }

    /// The agent `qualified` as the graph of `workspaces` selects it.
    pub fn agent_detail(
        &self,
        workspaces: &[PathBuf],
        qualified: &str,
    ) -> Result<AgentDetail, AgentEditError> {
        let graph = self.compile(workspaces)?;
        self.detail_in(&graph, qualified)
    }

    /// The agent `qualified` as `graph` selects it.
    fn detail_in(
        &self,
        graph: &evoflux_graph::CompiledGraph,
        qualified: &str,
    ) -> Result<AgentDetail, AgentEditError> {
        let (mode, name, user_file) = self.agent_file(qualified)?;
        let tools = ToolCatalog::from_graph(graph);
        let mut diags = Diagnostics::new();
        let dir = load_agents(graph, mode, &mut diags);
        let entry = dir
            .get(&name)
            .ok_or_else(|| AgentEditError::NotFound(qualified.to_owned()))?;
        let path = match &entry.source {
            evoflux_agents::team::AgentSource::File { path, .. } => Some(path.clone()),
            evoflux_agents::team::AgentSource::Builtin => None,
        };
        let content = path.as_ref().and_then(|p| std::fs::read_to_string(p).ok());
        let mut own = entry.diagnostics.clone();
        let effective = entry.raw.as_ref().map(|raw| {
            evoflux_agents::team::compile_agent_config(raw, entry.source.clone(), &tools, &mut own)
        });
        // Claude's file: its binding's owner is a `.claude/agents` root.
        let claude = path.as_deref().is_some_and(|p| {
            graph
                .nodes
                .iter()
                .filter_map(|n| graph.binding(&n.source_id))
                .any(|b| match &b.owner {
                    evoflux_graph::candidate::Owner::Application {
                        folder, path: dir, ..
                    } => {
                        *folder == evoflux_graph::candidate::AppFolder::Claude
                            && p.parent() == Some(dir.as_path())
                    }
                    evoflux_graph::candidate::Owner::Framework { .. }
                    | evoflux_graph::candidate::Owner::Plugin { .. } => false,
                })
        });
        Ok(AgentDetail {
            qualified_name: qualified_name(mode, &name),
            mode,
            claude,
            editable: path.as_deref().is_some_and(|p| same_file(p, &user_file)),
            valid: entry.is_valid(),
            path,
            content,
            effective,
            diagnostics: own,
        })
    }

    /// Applies `change` to the user's file of `qualified`, keeping it only
    /// when the team of its mode (compiled with `workspaces`) still holds.
    pub fn change_agent(
        &self,
        workspaces: &[PathBuf],
        qualified: &str,
        change: AgentChange,
    ) -> Result<AgentDetail, AgentEditError> {
        let (mode, name, path) = self.agent_file(qualified)?;
        let before = match std::fs::read(&path) {
            Ok(bytes) => Some(bytes),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(source) => return Err(AgentEditError::Io { path, source }),
        };
        // The graph before the change: whether the mode has a lead, and
        // whether an agent without a user file exists at all.
        let graph_before = self.compile(workspaces)?;
        let had_lead = has_lead(&graph_before, mode);
        let content = match (&change, &before) {
            (AgentChange::Create { .. }, Some(_)) => {
                return Err(AgentEditError::Exists(qualified.to_owned()));
            }
            (AgentChange::Replace { .. } | AgentChange::Delete, None) => {
                let known = self.detail_in(&graph_before, qualified).is_ok();
                return Err(match known {
                    true => AgentEditError::NotEditable {
                        name: qualified.to_owned(),
                        reason: "it is built in or defined by another layer".to_owned(),
                    },
                    false => AgentEditError::NotFound(qualified.to_owned()),
                });
            }
            (AgentChange::Create { content } | AgentChange::Replace { content }, _) => {
                let mut diags = Diagnostics::new();
                let parsed = parse_agent(&path, &name, mode, content, &mut diags);
                if parsed.is_none() || diags.has_errors() {
                    return Err(AgentEditError::Invalid {
                        diagnostics: diags.errors(),
                    });
                }
                Some(content.clone())
            }
            (AgentChange::Delete, Some(_)) => None,
        };
        let io = |source| AgentEditError::Io {
            path: path.clone(),
            source,
        };
        match &content {
            Some(text) => {
                if let Some(parent) = path.parent() {
                    std::fs::create_dir_all(parent).map_err(io)?;
                }
                write_atomic(&path, text.as_bytes(), AtomicOptions::default())
                    .map_err(|e| io(e.source))?;
            }
            None => std::fs::remove_file(&path).map_err(io)?,
        }
        let restore = || -> Result<(), AgentEditError> {
            match &before {
                Some(bytes) => {
                    write_atomic(&path, bytes, AtomicOptions::default()).map_err(|e| io(e.source))
                }
                None => std::fs::remove_file(&path).map_err(io),
            }
        };
        // The whole team again, with the change in place.
        let graph = match self.check_team(workspaces, mode, &path, had_lead) {
            Ok(graph) => graph,
            Err(e) => {
                restore()?;
                return Err(e);
            }
        };
        match content {
            Some(_) => self.detail_in(&graph, qualified),
            None => Ok(AgentDetail {
                qualified_name: qualified_name(mode, &name),
                mode,
                path: None,
                content: None,
                valid: false,
                editable: false,
                claude: false,
                effective: None,
                diagnostics: Diagnostics::new(),
            }),
        }
    }

    fn check_team(
        &self,
        workspaces: &[PathBuf],
        mode: AppMode,
        file: &Path,
        had_lead: bool,
    ) -> Result<evoflux_graph::CompiledGraph, AgentEditError> {
        let graph = self.compile(workspaces)?;
        let tools = ToolCatalog::from_graph(&graph);
        let mut diags = Diagnostics::new();
        let dir = load_agents(&graph, mode, &mut diags);
        dir.compile_all(&tools, &mut diags);
        let mine: Diagnostics = diags
            .iter()
            .chain(graph.diagnostics.iter())
            .filter(|d| d.severity == evoflux_core::Severity::Error)
            .filter(|d| {
                d.locator
                    .file
                    .as_deref()
                    .is_some_and(|f| same_file(f, file))
            })
            .cloned()
            .collect();
        if !mine.is_empty() {
            return Err(AgentEditError::TeamBroken {
                mode,
                reason: "the team reports errors for this file".to_owned(),
                diagnostics: mine,
            });
        }
        if had_lead && let Err(e) = dir.team(None) {
            return Err(AgentEditError::TeamBroken {
                mode,
                reason: e.to_string(),
                diagnostics: diags.errors(),
            });
        }
        Ok(graph)
    }
}

/// Whether `mode` has a lead in `graph`.
fn has_lead(graph: &evoflux_graph::CompiledGraph, mode: AppMode) -> bool {
    load_agents(graph, mode, &mut Diagnostics::new())
        .team(None)
        .is_ok()
}

fn same_file(a: &Path, b: &Path) -> bool {
    a == b
        || matches!(
            (std::fs::canonicalize(a), std::fs::canonicalize(b)),
            (Ok(x), Ok(y)) if x == y
        )
}
