//! `[agents.external.<name>]`: agents that live outside evoflux and speak
//! the Agent Client Protocol over stdio (another harness, or evoflux
//! itself), which a team's lead may hand tasks to as remote workers.
//!
//! Declaring one names a program evoflux will start and the variables of
//! your environment it may see, so only the user's and the admin's
//! `config.toml` may: a repository's file that could would run a program
//! of its choosing with your keys.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::config::ConfigScope;
use crate::diagnostic::{Diagnostic, Diagnostics};

/// Where an external agent's process runs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ExternalCwd {
    /// In the dispatching session's workspace (its first root): the agent
    /// works on the same files as the lead.
    #[default]
    Workspace,
    /// In a fresh empty folder of its own for each dispatch: the agent
    /// answers from what the task says and never sees the workspace.
    Scratch,
}

impl ExternalCwd {
    pub const fn as_str(self) -> &'static str {
        match self {
            ExternalCwd::Workspace => "workspace",
            ExternalCwd::Scratch => "scratch",
        }
    }
}

/// One declared external agent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExternalAgentConfig {
    /// The program and its arguments (argv; no shell).
    pub command: Vec<String>,
    /// Names of variables of evoflux's environment the agent gets (its
    /// key, say); it gets no others beyond `PATH`, `HOME` and the locale.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub env: Vec<String>,
    #[serde(default)]
    pub cwd: ExternalCwd,
    /// What the lead's roster says it is for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The result contract its final message must meet (as a recipe's
    /// `resultContract`: `{ kind = "scout-report" }`); unset, any final
    /// text (`external-delegation`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_contract: Option<Value>,
    /// Seconds the agent has to answer `initialize` and `session/new`
    /// before it is stopped (`acp/start-timeout`).
    #[serde(default = "default_start_timeout")]
    pub start_timeout_secs: u64,
    /// Seconds the agent may stay silent (no message of any kind) while it
    /// works on a prompt before it is stopped (`acp/idle-timeout`); time
    /// its permission requests wait for an answer does not count.
    #[serde(default = "default_idle_timeout")]
    pub idle_timeout_secs: u64,
}

/// `start_timeout_secs` when unset.
pub const DEFAULT_START_TIMEOUT_SECS: u64 = 30;
/// `idle_timeout_secs` when unset.
pub const DEFAULT_IDLE_TIMEOUT_SECS: u64 = 300;
/// The most `start_timeout_secs` may be: an agent that needs longer than
/// ten minutes to answer `initialize` is not starting.
pub const MAX_START_TIMEOUT_SECS: u64 = 600;
/// The most `idle_timeout_secs` may be: a day of silence.
pub const MAX_IDLE_TIMEOUT_SECS: u64 = 86_400;

const fn default_start_timeout() -> u64 {
    DEFAULT_START_TIMEOUT_SECS
}

const fn default_idle_timeout() -> u64 {
    DEFAULT_IDLE_TIMEOUT_SECS
}

/// `[agents]` as a file writes it.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub(crate) struct AgentsFile {
    #[serde(default)]
    pub external: BTreeMap<String, ExternalAgentConfig>,
}

/// Whether `name` may name an agent: what a dispatch's `agent_id` and a
/// node id carry.
pub fn is_agent_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_')
        && name.len() <= 64
}

fn is_env_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Checks one file's `[agents.external]`: refused in a repository's file;
/// otherwise each entry's name, command and variable names. Returns the
/// entries that passed.
pub(crate) fn check(
    path: &Path,
    scope: ConfigScope,
    file: Option<AgentsFile>,
    diags: &mut Diagnostics,
) -> BTreeMap<String, ExternalAgentConfig> {
    let Some(file) = file else {
        return BTreeMap::new();
    };
    if file.external.is_empty() {
        return BTreeMap::new();
    }
    if let ConfigScope::Project(_) = scope {
        diags.push(
            Diagnostic::error(
                "config/project-external-agents",
                "a repository's config cannot declare [agents.external]: that would start a \
                 program of the repository's choosing with your environment; declare the agent \
                 in your own config.toml and remove it here",
            )
            .with_file(path)
            .with_field("agents.external"),
        );
        return BTreeMap::new();
    }
    let mut kept = BTreeMap::new();
    for (name, agent) in file.external {
        let field = |f: &str| format!("agents.external.{name}.{f}");
        let mut ok = true;
        let mut error = |code: &'static str, message: String, field: String| {
            ok = false;
            diags.push(
                Diagnostic::error(code, message)
                    .with_file(path)
                    .with_field(field),
            );
        };
        if !is_agent_name(&name) {
            error(
                "config/external-agent-name",
                format!(
                    "`{name}` cannot name an agent: use lowercase letters, digits, `-` and `_`, \
                     starting with a letter or digit, at most 64 characters"
                ),
                format!("agents.external.{name}"),
            );
        }
        if agent.command.first().is_none_or(|p| p.trim().is_empty()) {
            error(
                "config/external-agent-command",
                "command must be the program and its arguments, e.g. [\"evoflux\", \"acp\"]"
                    .to_owned(),
                field("command"),
            );
        }
        for var in &agent.env {
            if !is_env_name(var) {
                error(
                    "config/external-agent-env",
                    format!(
                        "`{var}` is not an environment variable name: list the names of the \
                         variables the agent gets, not their values"
                    ),
                    field("env"),
                );
            }
        }
        if let Some(contract) = &agent.result_contract
            && !contract.is_object()
        {
            error(
                "config/external-agent-contract",
                "result_contract must be a table with a `kind`, e.g. { kind = \"scout-report\" }"
                    .to_owned(),
                field("result_contract"),
            );
        }
        for (key, value, max) in [
            (
                "start_timeout_secs",
                agent.start_timeout_secs,
                MAX_START_TIMEOUT_SECS,
            ),
            (
                "idle_timeout_secs",
                agent.idle_timeout_secs,
                MAX_IDLE_TIMEOUT_SECS,
            ),
        ] {
            if value == 0 || value > max {
                error(
                    "config/external-agent-timeout",
                    format!(
                        "{key} = {value} is out of range: give the seconds the agent may take, \
                         from 1 to {max}, or remove the key for its default"
                    ),
                    field(key),
                );
            }
        }
        if ok {
            kept.insert(name, agent);
        }
    }
    kept
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trust::Trust;

    fn read(
        text: &str,
        scope: ConfigScope,
    ) -> (BTreeMap<String, ExternalAgentConfig>, Vec<String>) {
        let mut diags = Diagnostics::new();
        let file: AgentsFile = toml::from_str(text).expect("toml");
        let kept = check(Path::new("/c/config.toml"), scope, Some(file), &mut diags);
        let codes = diags.iter().map(|d| d.code.to_string()).collect();
        (kept, codes)
    }

    #[test]
    fn an_external_agent_is_read_with_its_defaults() {
        let (kept, codes) = read(
            "[external.helper]\ncommand = [\"evoflux\", \"acp\"]\nenv = [\"OPENAI_API_KEY\"]\n",
            ConfigScope::User,
        );
        assert!(codes.is_empty(), "{codes:?}");
        let helper = &kept["helper"];
        assert_eq!(helper.command, ["evoflux", "acp"]);
        assert_eq!(helper.cwd, ExternalCwd::Workspace);
        assert_eq!(helper.env, ["OPENAI_API_KEY"]);
        assert_eq!(helper.result_contract, None);
        assert_eq!(helper.start_timeout_secs, DEFAULT_START_TIMEOUT_SECS);
        assert_eq!(helper.idle_timeout_secs, DEFAULT_IDLE_TIMEOUT_SECS);
    }

    #[test]
    fn a_timeout_of_zero_or_beyond_its_bound_is_named_and_the_entry_left_out() {
        let mut diags = Diagnostics::new();
        let file: AgentsFile = toml::from_str(
            "[external.never]\ncommand = [\"x\"]\nstart_timeout_secs = 0\n\
             [external.forever]\ncommand = [\"x\"]\nidle_timeout_secs = 99999999999\n\
             [external.quick]\ncommand = [\"x\"]\nstart_timeout_secs = 1\nidle_timeout_secs = 86400\n",
        )
        .expect("toml");
        let kept = check(
            Path::new("/c/config.toml"),
            ConfigScope::User,
            Some(file),
            &mut diags,
        );
        let found: Vec<(String, Option<String>)> = diags
            .iter()
            .map(|d| (d.code.to_string(), d.locator.field.clone()))
            .collect();
        assert_eq!(
            found,
            [
                (
                    "config/external-agent-timeout".to_owned(),
                    Some("agents.external.forever.idle_timeout_secs".to_owned())
                ),
                (
                    "config/external-agent-timeout".to_owned(),
                    Some("agents.external.never.start_timeout_secs".to_owned())
                ),
            ]
        );
        assert!(diags.iter().all(|d| d.locator.file.is_some()));
        assert_eq!(kept.keys().collect::<Vec<_>>(), ["quick"]);
        assert_eq!(kept["quick"].start_timeout_secs, 1);
        assert_eq!(kept["quick"].idle_timeout_secs, 86_400);
    }

    #[test]
    fn bad_entries_are_named_and_left_out() {
        let (kept, codes) = read(
            "[external.Bad]\ncommand = [\"x\"]\n\
             [external.empty]\ncommand = []\n\
             [external.leaky]\ncommand = [\"x\"]\nenv = [\"KEY=secret\"]\n\
             [external.contract]\ncommand = [\"x\"]\nresult_contract = \"scout-report\"\n\
             [external.good]\ncommand = [\"x\"]\ncwd = \"scratch\"\n",
            ConfigScope::Admin,
        );
        assert_eq!(
            codes,
            [
                "config/external-agent-name",
                "config/external-agent-contract",
                "config/external-agent-command",
                "config/external-agent-env",
            ]
        );
        assert_eq!(kept.keys().collect::<Vec<_>>(), ["good"]);
        assert_eq!(kept["good"].cwd, ExternalCwd::Scratch);
    }

    #[test]
    fn a_repository_cannot_declare_one_trusted_or_not() {
        for trust in [Trust::Trusted, Trust::Untrusted] {
            let (kept, codes) = read(
                "[external.helper]\ncommand = [\"sh\"]\n",
                ConfigScope::Project(trust),
            );
            assert!(kept.is_empty());
            assert_eq!(codes, ["config/project-external-agents"]);
        }
    }
}
