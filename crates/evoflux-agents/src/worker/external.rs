//! External agents as specs: an `[agents.external.<name>]` declaration
//! becomes an [`AgentSpec`] so a remote agent goes through the same
//! admission, tool-compatibility check and result contract (with the same
//! repair rounds) as a recipe. It declares no tools of evoflux's: its
//! tools are its own, on the other side of the protocol.

use std::collections::BTreeMap;
use std::path::Path;

use evoflux_core::config::ConfigOrigin;
use evoflux_core::external_agent::{ExternalAgentConfig, ExternalCwd};

use super::recipe::{
    Audience, Budget, CapabilityClass, Category, LatencyClass, ProjectContextTier, RecipeSource,
    ToolRequirements,
};
use super::spec::{AGENT_SPEC_VERSION, AgentSpec};
use crate::contract::kind::parse_result_contract;
use crate::contract::{ResultContract, ResultContractKind};

/// The tags every external agent's spec carries.
pub const EXTERNAL_AGENT_TAGS: [&str; 2] = ["delegation", "acp"];

/// The spec of external agent `name`, declared in a file of `origin`.
/// `Err` says what is wrong with its `result_contract`.
pub fn external_agent_spec(
    name: &str,
    agent: &ExternalAgentConfig,
    origin: ConfigOrigin,
    file: Option<&Path>,
) -> Result<AgentSpec, String> {
    let result_contract = match &agent.result_contract {
        Some(value) => parse_result_contract(value)?,
        None => ResultContract::new(ResultContractKind::ExternalDelegation),
    };
    let command = agent.command.join(" ");
    Ok(AgentSpec {
        version: AGENT_SPEC_VERSION,
        id: name.to_owned(),
        name: name.to_owned(),
        description: agent
            .description
            .clone()
            .unwrap_or_else(|| format!("External ACP agent: {command}")),
        tools: Vec::new(),
        tool_requirements: ToolRequirements::default(),
        skills: Vec::new(),
        audience: Audience::Custom,
        category: Category::Explore,
        // What it may do to the workspace follows where it runs: in the
        // workspace it can change it; in a scratch folder it cannot, so
        // admission refuses it a task that must change files.
        capability_class: match agent.cwd {
            ExternalCwd::Workspace => CapabilityClass::WorkspaceEdit,
            ExternalCwd::Scratch => CapabilityClass::ReadOnly,
        },
        latency_class: LatencyClass::Deep,
        project_context_tier: ProjectContextTier::None,
        budget: Budget {
            tool_calls: 1,
            read_reserve: 0,
            synthesis: false,
            maximum: None,
        },
        result_contract,
        tags: EXTERNAL_AGENT_TAGS
            .iter()
            .map(|t| (*t).to_owned())
            .collect(),
        product: None,
        source: match origin {
            ConfigOrigin::Embedded => RecipeSource::Framework,
            ConfigOrigin::Admin => RecipeSource::Admin,
            ConfigOrigin::User => RecipeSource::User,
            ConfigOrigin::Project => RecipeSource::Project,
        },
        path: file.map(Path::to_path_buf),
        tool_classes: BTreeMap::new(),
        body: format!("External ACP agent `{name}`: {command}"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn declared(contract: Option<serde_json::Value>, cwd: ExternalCwd) -> ExternalAgentConfig {
        ExternalAgentConfig {
            command: vec!["evoflux".into(), "acp".into()],
            env: Vec::new(),
            cwd,
            description: None,
            result_contract: contract,
            start_timeout_secs: evoflux_core::external_agent::DEFAULT_START_TIMEOUT_SECS,
            idle_timeout_secs: evoflux_core::external_agent::DEFAULT_IDLE_TIMEOUT_SECS,
        }
    }

    #[test]
    fn an_external_agent_is_a_custom_spec_with_its_declared_contract() {
        let spec = external_agent_spec(
            "helper",
            &declared(
                Some(json!({"kind": "scout-report"})),
                ExternalCwd::Workspace,
            ),
            ConfigOrigin::User,
            Some(Path::new("/home/u/.config/evoflux/config.toml")),
        )
        .expect("spec");
        assert_eq!(spec.result_contract.kind, ResultContractKind::ScoutReport);
        assert_eq!(spec.audience, Audience::Custom);
        assert_eq!(spec.source, RecipeSource::User);
        assert_eq!(spec.capability_class, CapabilityClass::WorkspaceEdit);
        assert!(spec.tools.is_empty());
        assert_eq!(spec.description, "External ACP agent: evoflux acp");

        let default = external_agent_spec(
            "helper",
            &declared(None, ExternalCwd::Scratch),
            ConfigOrigin::Admin,
            None,
        )
        .expect("spec");
        assert_eq!(
            default.result_contract.kind,
            ResultContractKind::ExternalDelegation
        );
        assert_eq!(default.capability_class, CapabilityClass::ReadOnly);
    }

    #[test]
    fn a_contract_only_the_runner_may_author_is_refused() {
        let err = external_agent_spec(
            "helper",
            &declared(Some(json!({"kind": "code-report"})), ExternalCwd::Workspace),
            ConfigOrigin::User,
            None,
        )
        .expect_err("refused");
        assert!(err.contains("code-report"), "{err}");
    }
}
