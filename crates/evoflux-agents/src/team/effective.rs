//! `compile_agent_config`: the only merge of an agent file with its
//! profile and the tool registry.
//!
//! The runtime, the CLI and the HTTP API all call [`compile_agent_config`],
//! so an agent's effective configuration is the same wherever it is shown
//! or run. It is a pure function of the raw file, the code-owned profile and
//! the graph's tools.

use evoflux_core::{AppMode, Diagnostic, Diagnostics};
use serde::{Deserialize, Serialize};

use super::agent_file::{AgentSource, RawAgentConfig, Role};
use super::profile::{DEFAULT_PROMPT, merge_prompt, profile_for};
use crate::tools::{ToolCatalog, is_skill_loader};

/// What an agent runs with.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EffectiveAgentConfig {
    pub name: String,
    pub mode: AppMode,
    pub role: Role,
    /// The lead a member is bound to by `lead:`; `None` for leads and for
    /// members of the default lead.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lead: Option<String>,
    pub description: String,
    /// `provider:model`; `None` uses the harness default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fallback_model: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thinking_level: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub responses_api: Option<bool>,
    pub prompt: String,
    pub tools: Vec<String>,
    pub skills: Vec<String>,
    pub mcp: Vec<String>,
    /// Whether a code-owned profile was applied.
    pub builtin_profile: bool,
    pub source: AgentSource,
}

/// Tools every agent of `role` gets and cannot opt out of: the skill
/// loader (identified by its presentation) when it exists in `mode`.
pub fn implicit_tools(tools: &ToolCatalog, mode: AppMode) -> Vec<String> {
    tools
        .in_mode(mode)
        .filter(|t| is_skill_loader(&t.behavior.presentation))
        .map(|t| t.name.clone())
        .collect()
}

/// The mode tier for a role: every tool that exists in `mode`, minus
/// lead-only tools for members, minus implicit tools and tools only given
/// on request; sorted by name.
pub fn tier_tools(tools: &ToolCatalog, mode: AppMode, role: Role) -> Vec<String> {
    tools
        .in_mode(mode)
        .filter(|t| {
            !is_skill_loader(&t.behavior.presentation)
                && !t.behavior.on_request
                && !t.behavior.requested_in.contains(&mode)
        })
        .filter(|t| match role {
            Role::Lead => true,
            Role::Member => !t.behavior.lead_only,
        })
        .map(|t| t.name.clone())
        .collect()
}

fn dedupe(items: impl IntoIterator<Item = String>) -> Vec<String> {
    let mut seen = std::collections::HashSet::new();
    items
        .into_iter()
        .filter(|i| seen.insert(i.clone()))
        .collect()
}

/// Compiles one agent:
///
/// 1. the raw file was loaded without side effects (by the caller);
/// 2. the matching code-owned profile supplies the description fallback and
///    the base prompt;
/// 3. the tools: a non-empty `tools:` is exactly the agent's tools (it
///    restricts, as Claude Code's `tools:` does); without one the agent has
///    its mode tier; `tools_add` adds to either (an unknown tool, a tool of
///    another mode, or a lead-only tool asked for by a member is skipped
///    with a warning); assigned skills, MCP servers and prompt text are
///    added;
/// 4. `tools_opt_out` removes any of them;
/// 5. implicit tools are put first, and every list is deduplicated.
pub fn compile_agent_config(
    raw: &RawAgentConfig,
    source: AgentSource,
    tools: &ToolCatalog,
    diags: &mut Diagnostics,
) -> EffectiveAgentConfig {
    let profile = profile_for(raw.mode, raw.role, &raw.name);
    let description = raw
        .description
        .clone()
        .or_else(|| profile.map(|p| p.description.to_owned()))
        .unwrap_or_default();
    let prompt = match profile {
        Some(p) => merge_prompt(p.prompt, &raw.extra_prompt),
        None if raw.extra_prompt.is_empty() => DEFAULT_PROMPT.to_owned(),
        None => raw.extra_prompt.clone(),
    };
    let warn = |code: &'static str, msg: String| {
        let d = Diagnostic::warning(code, msg).with_field("tools");
        match &source {
            AgentSource::File { path, .. } => d.with_file(path),
            AgentSource::Builtin => d,
        }
    };
    let mut effective = if raw.tools.is_empty() {
        tier_tools(tools, raw.mode, raw.role)
    } else {
        Vec::new()
    };
    for extra in raw.tools.iter().chain(&raw.tools_add) {
        match tools.get(extra) {
            None => diags.push(warn(
                "agent/tool-unknown",
                format!("agent `{}` lists tool `{extra}`, which does not exist; it is skipped", raw.name),
            )),
            Some(t) if !t.behavior.modes.contains(&raw.mode) => diags.push(warn(
                "agent/tool-mode",
                format!(
                    "agent `{}` lists tool `{extra}`, which does not exist in {} mode; it is skipped",
                    raw.name, raw.mode
                ),
            )),
            Some(t) if t.behavior.lead_only && raw.role == Role::Member => diags.push(warn(
                "agent/tool-lead-only",
                format!(
                    "member `{}` lists `{extra}`, which only a lead may use; it is skipped",
                    raw.name
                ),
            )),
            Some(_) => effective.push(extra.clone()),
        }
    }
    let implicit = implicit_tools(tools, raw.mode);
    for out in &raw.tools_opt_out {
        if implicit.contains(out) {
            diags.push(warn(
                "agent/opt-out-implicit",
                format!(
                    "agent `{}` opts out of `{out}`, which every agent has; the opt-out is ignored",
                    raw.name
                ),
            ));
        }
    }
    effective.retain(|t| !raw.tools_opt_out.contains(t));
    let tools_out = dedupe(implicit.into_iter().chain(effective));
    EffectiveAgentConfig {
        name: raw.name.clone(),
        mode: raw.mode,
        role: raw.role,
        lead: match raw.role {
            Role::Member => raw.lead.clone(),
            Role::Lead => None,
        },
        description,
        model: raw
            .model
            .as_ref()
            .and_then(|m| m.model())
            .map(ToString::to_string),
        fallback_model: raw
            .fallback_model
            .as_ref()
            .and_then(|m| m.model())
            .map(ToString::to_string),
        thinking_level: raw.thinking_level.clone(),
        responses_api: raw.responses_api,
        prompt,
        tools: tools_out,
        skills: dedupe(raw.skills.iter().cloned()),
        mcp: dedupe(raw.mcp.iter().flatten().cloned()),
        builtin_profile: profile.is_some(),
        source,
    }
}

/// The effective configuration a worker recipe runs with in `mode`: the
/// recipe's own tools (those of the mode; a worker gets exactly what its
/// recipe declares, never a tier), skills and body as its prompt. Recipes
/// were normalized against the same tool catalog when the worker catalog
/// was built, so this adds no diagnostics.
pub fn worker_agent_config(
    spec: &crate::worker::spec::AgentSpec,
    mode: AppMode,
    tools: &ToolCatalog,
) -> EffectiveAgentConfig {
    let mut effective: Vec<String> = spec
        .tools
        .iter()
        .filter(|t| {
            tools
                .get(t)
                .is_some_and(|d| d.behavior.modes.contains(&mode) && !d.behavior.lead_only)
        })
        .cloned()
        .collect();
    for implicit in implicit_tools(tools, mode) {
        if !effective.contains(&implicit) {
            effective.push(implicit);
        }
    }
    EffectiveAgentConfig {
        name: spec.id.clone(),
        mode,
        role: Role::Member,
        lead: None,
        description: spec.description.clone(),
        model: None,
        fallback_model: None,
        thinking_level: None,
        responses_api: None,
        prompt: spec.body.clone(),
        tools: effective,
        skills: spec.skills.clone(),
        mcp: Vec::new(),
        builtin_profile: false,
        source: match &spec.path {
            Some(path) => AgentSource::File {
                path: path.clone(),
                layer: match spec.source {
                    crate::worker::recipe::RecipeSource::Framework => {
                        evoflux_graph::Layer::Framework
                    }
                    crate::worker::recipe::RecipeSource::Plugin => evoflux_graph::Layer::Plugin,
                    crate::worker::recipe::RecipeSource::Admin => evoflux_graph::Layer::Admin,
                    crate::worker::recipe::RecipeSource::User => evoflux_graph::Layer::User,
                    crate::worker::recipe::RecipeSource::Project => evoflux_graph::Layer::Project,
                },
            },
            None => AgentSource::Builtin,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(name: &str, mode: AppMode, role: Role) -> RawAgentConfig {
        RawAgentConfig {
            name: name.into(),
            mode,
            role,
            description: None,
            model: None,
            fallback_model: None,
            thinking_level: None,
            responses_api: None,
            tools: vec![],
            tools_add: vec![],
            tools_opt_out: vec![],
            skills: vec![],
            mcp: None,
            lead: None,
            extra_prompt: String::new(),
        }
    }

    #[test]
    fn member_tier_excludes_lead_only_and_other_modes() {
        let tools = ToolCatalog::framework();
        let work = tier_tools(&tools, AppMode::Work, Role::Member);
        assert!(!work.iter().any(|t| t == "code_context"));
        for t in &work {
            assert!(!tools.get(t).unwrap().behavior.lead_only, "{t}");
        }
        let lead = tier_tools(&tools, AppMode::Coding, Role::Lead);
        assert!(
            lead.iter()
                .any(|t| tools.get(t).unwrap().behavior.lead_only)
        );
        assert!(lead.iter().any(|t| t == "code_context"));
        let mut sorted = lead.clone();
        sorted.sort();
        assert_eq!(lead, sorted);
    }

    #[test]
    fn the_browser_is_work_s_and_coding_s_only_on_request() {
        let tools = ToolCatalog::framework();
        assert!(tier_tools(&tools, AppMode::Work, Role::Lead).contains(&"browser".to_owned()));
        assert!(!tier_tools(&tools, AppMode::Coding, Role::Lead).contains(&"browser".to_owned()));
        let mut r = raw("tester", AppMode::Coding, Role::Lead);
        r.tools_add = vec!["browser".into()];
        let mut d = Diagnostics::new();
        let e = compile_agent_config(&r, AgentSource::Builtin, &tools, &mut d);
        assert!(d.is_empty(), "{d:?}");
        assert!(e.tools.contains(&"browser".to_owned()));
    }

    #[test]
    fn merge_steps() {
        let tools = ToolCatalog::framework();
        let mut r = raw("coder", AppMode::Coding, Role::Member);
        r.tools = vec!["ask_user".into(), "nope".into(), "read".into()];
        r.tools_opt_out = vec!["shell".into(), "skill".into()];
        r.skills = vec!["a".into(), "b".into(), "a".into()];
        r.extra_prompt = "Prefer small diffs.".into();
        let mut d = Diagnostics::new();
        let e = compile_agent_config(&r, AgentSource::Builtin, &tools, &mut d);
        assert_eq!(
            d.codes(),
            [
                "agent/tool-lead-only",
                "agent/tool-unknown",
                "agent/opt-out-implicit"
            ]
        );
        assert_eq!(e.tools[0], "skill", "implicit first and kept");
        assert!(!e.tools.iter().any(|t| t == "shell"));
        assert!(!e.tools.iter().any(|t| t == "ask_user"));
        assert_eq!(e.tools.iter().filter(|t| *t == "read").count(), 1);
        assert_eq!(e.skills, ["a", "b"]);
        assert!(e.builtin_profile);
        assert!(
            e.prompt
                .ends_with("## User extra prompt\n\nPrefer small diffs.")
        );
        assert!(!e.description.is_empty());
    }

    #[test]
    fn a_listed_tools_restricts_and_tools_add_extends() {
        let tools = ToolCatalog::framework();
        let compile = |r: &RawAgentConfig| {
            compile_agent_config(r, AgentSource::Builtin, &tools, &mut Diagnostics::new()).tools
        };
        let mut r = raw("reviewer", AppMode::Coding, Role::Member);
        r.tools = vec!["read".into(), "ls".into()];
        assert_eq!(
            compile(&r),
            ["skill", "read", "ls"],
            "implicit + exactly the list"
        );
        r.tools_opt_out = vec!["ls".into()];
        assert_eq!(compile(&r), ["skill", "read"]);

        let mut r = raw("reviewer", AppMode::Coding, Role::Member);
        let tier = compile(&r);
        assert!(tier.iter().any(|t| t == "shell"));
        r.tools_add = vec!["web_search".into()];
        let added = compile(&r);
        assert!(added.iter().any(|t| t == "shell"), "the tier is kept");
        assert!(added.iter().any(|t| t == "web_search"));
        r.tools = vec!["read".into()];
        assert_eq!(compile(&r), ["skill", "read", "web_search"]);
    }

    #[test]
    fn custom_agent_without_prompt_gets_the_default_sentence() {
        let e = compile_agent_config(
            &raw("helper", AppMode::Work, Role::Member),
            AgentSource::Builtin,
            &ToolCatalog::framework(),
            &mut Diagnostics::new(),
        );
        assert_eq!(e.prompt, DEFAULT_PROMPT);
        assert!(!e.builtin_profile);
        assert_eq!(e.description, "");
    }
}
