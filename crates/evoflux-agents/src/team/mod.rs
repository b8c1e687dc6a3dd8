//! Team agents: the EvoFlux dialect, code-owned profiles, the Form
//! serializer, `compile_agent_config`, and team construction.
//!
//! Agent files are slots of the source graph (`agents/<name>` for Work,
//! `agents/coding/<name>` for Coding); the graph picks one winner per slot
//! and rejects any other folder. This module reads each winner from its
//! binding, adds the code-owned built-ins that no file overrides, and
//! checks the team rules that span files: names unique regardless of case,
//! at least one lead, every `lead:` naming a lead of the same mode.
//! Loading never writes: materializing seed files is [`seed::init_seeds`].

pub mod agent_file;
pub mod claude;
pub mod effective;
pub mod form;
pub mod listing;
pub mod profile;
pub mod seed;
pub mod shadowing;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use evoflux_core::{AppMode, Diagnostic, Diagnostics};
use evoflux_graph::{Binding, CompiledGraph, SlotKind};
use serde::{Deserialize, Serialize};

pub use agent_file::{AgentKey, AgentSource, ModelSetting, RawAgentConfig, Role, parse_agent};
pub use effective::{
    EffectiveAgentConfig, compile_agent_config, implicit_tools, tier_tools, worker_agent_config,
};
pub use form::{AgentForm, FormError, read_form, write_form};
pub use profile::{BUILTIN_LEAD, Profile, profile_for, profiles};
pub use shadowing::{MEMBER_SHADOWS_WORKER, members_shadowing_workers};

use crate::tools::ToolCatalog;

/// The graph slot kind of a mode's agents.
pub const fn agent_slot_kind(mode: AppMode) -> SlotKind {
    match mode {
        AppMode::Work => SlotKind::WorkAgent,
        AppMode::Coding => SlotKind::CodingAgent,
    }
}

/// The name an agent is addressed by across modes: `<name>` for Work,
/// `coding/<name>` for Coding.
pub fn qualified_name(mode: AppMode, name: &str) -> String {
    match mode {
        AppMode::Work => name.to_owned(),
        AppMode::Coding => format!("coding/{name}"),
    }
}

/// One agent of a mode.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentEntry {
    pub name: String,
    pub source: AgentSource,
    /// `None` when the file is malformed; its diagnostics say why.
    pub raw: Option<RawAgentConfig>,
    pub diagnostics: Diagnostics,
}

impl AgentEntry {
    pub fn is_valid(&self) -> bool {
        self.raw.is_some() && !self.diagnostics.has_errors()
    }

    pub fn role(&self) -> Option<Role> {
        self.raw.as_ref().map(|r| r.role)
    }
}

/// Every agent of one mode, sorted by name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentDirectory {
    pub mode: AppMode,
    pub agents: Vec<AgentEntry>,
    /// The lead a member without `lead:` belongs to.
    pub default_lead: Option<String>,
}

/// A lead and the members bound to it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Team {
    pub mode: AppMode,
    pub lead: String,
    pub members: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TeamError {
    #[error("{mode} mode has no lead agent: give one agent `role: lead`")]
    NoLead { mode: AppMode },
    /// `leads` are the valid leads of the mode, by name.
    #[error("`{name}` is not a lead agent of {mode} mode; its leads are: {}", leads.join(", "))]
    NotALead {
        mode: AppMode,
        name: String,
        leads: Vec<String>,
    },
    /// A qualified name of another mode's agent (`coding/<name>` asked of
    /// a Work team).
    #[error("`{name}` is a {agent_mode} agent, not one of {mode} mode")]
    OtherMode {
        mode: AppMode,
        name: String,
        agent_mode: AppMode,
    },
}

impl TeamError {
    /// The stable code of this error.
    pub const fn code(&self) -> &'static str {
        match self {
            TeamError::NoLead { .. } => "team/no-lead",
            TeamError::NotALead { .. } => "team/not-a-lead",
            TeamError::OtherMode { .. } => "team/other-mode",
        }
    }
}

fn builtin_entry(p: &Profile) -> AgentEntry {
    let mut diags = Diagnostics::new();
    let raw = parse_agent(
        Path::new("<builtin>"),
        p.name,
        p.mode,
        &profile::seed_markdown(p),
        &mut diags,
    );
    AgentEntry {
        name: p.name.to_owned(),
        source: AgentSource::Builtin,
        raw,
        diagnostics: diags,
    }
}

/// Loads the agents of `mode` from the graph's winners and the code-owned
/// built-ins. Pure: reads the selected files and nothing else. Every
/// problem is pushed to `diags` as well as kept on its entry.
pub fn load_agents(
    graph: &CompiledGraph,
    mode: AppMode,
    diags: &mut Diagnostics,
) -> AgentDirectory {
    let kind = agent_slot_kind(mode);
    let mut by_name: BTreeMap<String, AgentEntry> = BTreeMap::new();
    for node in graph.nodes.iter().filter(|n| n.slot.kind == kind) {
        let Some(bound) = graph.binding(&node.source_id) else {
            continue;
        };
        let path = match &bound.binding {
            Binding::File { path, .. } => path.clone(),
            // Agents have no framework modules: built-ins come from profiles.
            Binding::Builtin { .. } => continue,
        };
        let mut local = Diagnostics::new();
        let raw = match std::fs::read_to_string(&path) {
            Ok(text) => parse_agent(&path, &node.slot.name, mode, &text, &mut local),
            Err(e) => {
                local.push(
                    Diagnostic::error("agent/file-unreadable", format!("cannot read: {e}"))
                        .with_file(&path),
                );
                None
            }
        };
        let local: Diagnostics = local
            .into_iter()
            .map(|d| d.with_slot(node.slot.clone()))
            .collect();
        by_name.insert(
            node.slot.name.clone(),
            AgentEntry {
                name: node.slot.name.clone(),
                source: AgentSource::File {
                    path,
                    layer: bound.layer,
                },
                raw,
                diagnostics: local,
            },
        );
    }
    for p in profiles(mode) {
        by_name
            .entry(p.name.to_owned())
            .or_insert_with(|| builtin_entry(p));
    }
    let mut agents: Vec<AgentEntry> = by_name.into_values().collect();
    check_team_rules(mode, &mut agents);
    for a in &agents {
        diags.extend(a.diagnostics.iter().cloned());
    }
    let default_lead = default_lead(&agents);
    if default_lead.is_none() {
        diags.push(Diagnostic::error(
            "agent/lead-missing",
            format!("{mode} mode has no lead agent: give one agent `role: lead`"),
        ));
    }
    AgentDirectory {
        mode,
        agents,
        default_lead,
    }
}

/// The deterministic default lead: the built-in lead's name when it is a
/// valid lead, otherwise the first valid lead by name.
fn default_lead(agents: &[AgentEntry]) -> Option<String> {
    let leads: Vec<&AgentEntry> = agents
        .iter()
        .filter(|a| a.is_valid() && a.role() == Some(Role::Lead))
        .collect();
    leads
        .iter()
        .find(|a| a.name == BUILTIN_LEAD)
        .or_else(|| leads.first())
        .map(|a| a.name.clone())
}

fn entry_diag(a: &AgentEntry, d: Diagnostic) -> Diagnostic {
    match &a.source {
        AgentSource::File { path, .. } => d.with_file(path),
        AgentSource::Builtin => d,
    }
}

/// Rules that span files, recorded on the offending entries.
fn check_team_rules(mode: AppMode, agents: &mut [AgentEntry]) {
    // Names differing only in case would be one agent on a case-folding
    // file system and two here.
    let mut folded: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for (i, a) in agents.iter().enumerate() {
        folded
            .entry(a.name.to_ascii_lowercase())
            .or_default()
            .push(i);
    }
    for group in folded.values().filter(|g| g.len() > 1) {
        let names: Vec<String> = group.iter().map(|i| agents[*i].name.clone()).collect();
        for i in group {
            let d = Diagnostic::error(
                "agent/name-duplicate",
                format!(
                    "agent names must differ by more than letter case: {}",
                    names.join(", ")
                ),
            );
            let d = entry_diag(&agents[*i], d);
            agents[*i].diagnostics.push(d);
        }
    }
    let leads: Vec<String> = agents
        .iter()
        .filter(|a| a.raw.is_some() && a.role() == Some(Role::Lead))
        .map(|a| a.name.clone())
        .collect();
    for a in agents.iter_mut() {
        let Some(raw) = &a.raw else { continue };
        let Some(lead) = raw.lead.clone() else {
            continue;
        };
        let d = match raw.role {
            Role::Lead => Diagnostic::warning(
                "agent/lead-ignored",
                format!("`lead: {lead}` is ignored on a lead; only members belong to a lead"),
            ),
            Role::Member if leads.contains(&lead) => continue,
            Role::Member => Diagnostic::error(
                "agent/lead-unknown",
                format!(
                    "`lead: {lead}` names no lead agent of {mode} mode; leads: {}",
                    if leads.is_empty() {
                        "none".to_owned()
                    } else {
                        leads.join(", ")
                    }
                ),
            ),
        };
        let d = entry_diag(a, d.with_field("lead"));
        a.diagnostics.push(d);
    }
}

impl AgentDirectory {
    pub fn get(&self, name: &str) -> Option<&AgentEntry> {
        self.agents.iter().find(|a| a.name == name)
    }

    /// Valid leads, by name.
    pub fn leads(&self) -> Vec<&str> {
        self.agents
            .iter()
            .filter(|a| a.is_valid() && a.role() == Some(Role::Lead))
            .map(|a| a.name.as_str())
            .collect()
    }

    /// The team of `lead` (default: the mode's default lead): the lead and
    /// the valid members bound to it. A member with `lead: X` belongs only
    /// to X; a member without `lead:` belongs only to the default lead.
    ///
    /// `lead` is addressed as `agents show` addresses an agent: `<name>`,
    /// or `coding/<name>` for a Coding agent ([`parse_qualified_name`]).
    pub fn team(&self, lead: Option<&str>) -> Result<Team, TeamError> {
        let default = self
            .default_lead
            .as_deref()
            .ok_or(TeamError::NoLead { mode: self.mode })?;
        let asked;
        let lead = match lead {
            None => default,
            Some(name) => {
                asked = self.lead_name(name)?;
                asked.as_str()
            }
        };
        if !self.leads().contains(&lead) {
            return Err(TeamError::NotALead {
                mode: self.mode,
                name: lead.to_owned(),
                leads: self.leads().into_iter().map(str::to_owned).collect(),
            });
        }
        let members = self
            .agents
            .iter()
            .filter(|a| a.is_valid())
            .filter_map(|a| a.raw.as_ref())
            .filter(|r| r.role == Role::Member)
            .filter(|r| match &r.lead {
                Some(l) => l == lead,
                None => lead == default,
            })
            .map(|r| r.name.clone())
            .collect();
        Ok(Team {
            mode: self.mode,
            lead: lead.to_owned(),
            members,
        })
    }

    /// The bare name an addressed lead refers to in this mode. A bare
    /// name is looked up in the directory's own mode; `coding/<name>` only
    /// in Coding mode. A name that is no agent name at all stays as it is
    /// and is refused as no lead.
    fn lead_name(&self, asked: &str) -> Result<String, TeamError> {
        let Ok((agent_mode, name)) = parse_qualified_name(asked) else {
            return Ok(asked.to_owned());
        };
        match (agent_mode, self.mode) {
            (AppMode::Work, _) | (AppMode::Coding, AppMode::Coding) => Ok(name),
            (AppMode::Coding, AppMode::Work) => Err(TeamError::OtherMode {
                mode: self.mode,
                name: asked.to_owned(),
                agent_mode,
            }),
        }
    }

    /// Compiles every valid agent.
    pub fn compile_all(
        &self,
        tools: &ToolCatalog,
        diags: &mut Diagnostics,
    ) -> Vec<EffectiveAgentConfig> {
        self.agents
            .iter()
            .filter(|a| a.is_valid())
            .filter_map(|a| {
                a.raw
                    .as_ref()
                    .map(|r| compile_agent_config(r, a.source.clone(), tools, diags))
            })
            .collect()
    }

    /// Every diagnostic of every entry.
    pub fn diagnostics(&self) -> Diagnostics {
        let mut d: Diagnostics = self
            .agents
            .iter()
            .flat_map(|a| a.diagnostics.iter().cloned())
            .collect();
        if self.default_lead.is_none() {
            d.push(Diagnostic::error(
                "agent/lead-missing",
                format!(
                    "{} mode has no lead agent: give one agent `role: lead`",
                    self.mode
                ),
            ));
        }
        d
    }
}

/// Validates one agent's text for `mode` the way a save would, without
/// touching the disk: what an editor calls before writing.
pub fn validate_agent_text(mode: AppMode, name: &str, path: &Path, text: &str) -> Diagnostics {
    let mut d = Diagnostics::new();
    if !crate::name::is_valid_agent_name(name) {
        d.push(
            Diagnostic::error(
                "agent/name-invalid",
                format!("agent name `{name}` must match ^[a-zA-Z0-9][a-zA-Z0-9._-]{{0,63}}$"),
            )
            .with_file(path),
        );
        return d;
    }
    parse_agent(path, name, mode, text, &mut d);
    d
}

/// Splits an addressed name (`<name>` or `coding/<name>`) into its mode and
/// name. Any other folder is refused, as the graph refuses it on disk.
pub fn parse_qualified_name(q: &str) -> Result<(AppMode, String), Diagnostic> {
    let refuse = || {
        Diagnostic::error(
            "agent/path-invalid",
            format!(
                "`{q}` is not an agent: use `<name>` for a Work agent or `coding/<name>` for a \
                 Coding agent"
            ),
        )
    };
    if q.contains('\\') {
        return Err(refuse());
    }
    let (mode, name) = match q.split_once('/') {
        None => (AppMode::Work, q),
        Some(("coding", rest)) => (AppMode::Coding, rest),
        Some(_) => return Err(refuse()),
    };
    if crate::name::is_valid_agent_name(name) {
        Ok((mode, name.to_owned()))
    } else {
        Err(refuse())
    }
}

/// Where an agent's file lives inside a root such as the user config dir.
pub fn agent_file_path(root: &Path, mode: AppMode, name: &str) -> PathBuf {
    match mode {
        AppMode::Work => root.join("agents").join(format!("{name}.md")),
        AppMode::Coding => root
            .join("agents")
            .join("coding")
            .join(format!("{name}.md")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn qualified_names() {
        assert_eq!(
            parse_qualified_name("coding/coder").unwrap(),
            (AppMode::Coding, "coder".to_owned())
        );
        assert_eq!(
            parse_qualified_name("executor").unwrap(),
            (AppMode::Work, "executor".to_owned())
        );
        for bad in ["aim/x", "coding/a/b", "coding\\x", "", "coding/", "a b"] {
            assert_eq!(
                parse_qualified_name(bad).unwrap_err().code,
                "agent/path-invalid",
                "{bad}"
            );
        }
        assert_eq!(qualified_name(AppMode::Coding, "x"), "coding/x");
    }
}
