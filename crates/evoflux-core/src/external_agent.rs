//! `[agents.external.<name>]`: agents that live outside evoflux and speak
//! the Agent Client Protocol over stdio (another harness, or evoflux
//! itself), which a team's lead may hand tasks to as remote workers.
//!
//! Each table is a source of its own in the source graph: the candidate
//! `remote-agents/<name>` of its file's layer, composed like any slot (a
//! repository's declaration shadows the user's of that name, and
//! `disable = true` alone removes a lower one). Declaring one names a
//! program evoflux will start and the variables of your environment it may
//! see, so a repository's declaration acts for the user: it waits until the
//! repository is trusted, like its MCP servers, and the graph never passes
//! it a variable that holds a key. This module is the one reader of a
//! table ([`entries`] finds them, [`parse_entry`] reads one).

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::Value;

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

/// `[agents]` as a config file writes it. The config reader checks the
/// section for unknown keys only; each `[agents.external.<name>]` table is
/// kept as written, because it is not part of the layered configuration:
/// it is the source graph's candidate `remote-agents/<name>`, found by
/// [`entries`] and read, for the winner only, by [`parse_entry`].
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub(crate) struct AgentsFile {
    #[serde(default)]
    pub external: BTreeMap<String, toml::Value>,
}

/// Just the `[agents]` section of a config file, for [`entries`].
#[derive(Deserialize)]
struct AgentsOnly {
    #[serde(default)]
    agents: Option<AgentsFile>,
}

/// The `[agents.external.<name>]` tables of a config file's `text`, each as
/// written (a JSON value, whose canonical form is the entry's content
/// identity), in name order. `None` when the text is not TOML: the config
/// reader reports that, once.
pub fn entries(text: &str) -> Option<Vec<(String, Value)>> {
    let file: AgentsOnly = toml::from_str(text).ok()?;
    let external = file.agents.map(|a| a.external).unwrap_or_default();
    Some(
        external
            .into_iter()
            .map(|(name, table)| {
                // A TOML value always has a JSON form.
                let value = serde_json::to_value(&table).unwrap_or(Value::Null);
                (name, value)
            })
            .collect(),
    )
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

/// What a declaration whose name breaks [`is_agent_name`] is told.
pub fn name_diagnostic(path: &Path, name: &str) -> Diagnostic {
    Diagnostic::error(
        "config/external-agent-name",
        format!(
            "`{name}` cannot name an agent: use lowercase letters, digits, `-` and `_`, \
             starting with a letter or digit, at most 64 characters"
        ),
    )
    .with_file(path)
    .with_field(format!("agents.external.{name}"))
}

fn is_env_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Reads the `[agents.external.<name>]` table `value` of the config file
/// at `path`: every key known (an unknown one is an error naming its full
/// path, as everywhere in `config.toml`), the command, the variable names,
/// the result contract's shape and the timeouts. `None` when it has
/// errors, all pushed together.
pub fn parse_entry(
    path: &Path,
    name: &str,
    value: Value,
    diags: &mut Diagnostics,
) -> Option<ExternalAgentConfig> {
    let field = |f: &str| format!("agents.external.{name}.{f}");
    let mut unknown = Vec::new();
    let agent: ExternalAgentConfig =
        match serde_ignored::deserialize(value, |p| unknown.push(p.to_string())) {
            Ok(agent) => agent,
            Err(e) => {
                diags.push(
                    Diagnostic::error(
                        "config/external-agent-invalid",
                        format!("external agent `{name}`: {e}"),
                    )
                    .with_file(path)
                    .with_field(format!("agents.external.{name}")),
                );
                return None;
            }
        };
    let mut ok = true;
    let mut error = |code: &'static str, message: String, field: String| {
        ok = false;
        diags.push(
            Diagnostic::error(code, message)
                .with_file(path)
                .with_field(field),
        );
    };
    for key in unknown {
        error(
            "config/unknown-key",
            format!("unknown key `agents.external.{name}.{key}`: remove it or check its spelling"),
            field(&key),
        );
    }
    if agent.command.first().is_none_or(|p| p.trim().is_empty()) {
        error(
            "config/external-agent-command",
            "command must be the program and its arguments, e.g. [\"evoflux\", \"acp\"]".to_owned(),
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
    ok.then_some(agent)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each entry of `text` (a config file) read as the graph reads a
    /// winner: the entries that passed, and every code.
    fn read(text: &str) -> (BTreeMap<String, ExternalAgentConfig>, Vec<String>) {
        let mut diags = Diagnostics::new();
        let path = Path::new("/c/config.toml");
        let mut kept = BTreeMap::new();
        for (name, value) in entries(text).expect("toml") {
            if !is_agent_name(&name) {
                diags.push(name_diagnostic(path, &name));
                continue;
            }
            if let Some(agent) = parse_entry(path, &name, value, &mut diags) {
                kept.insert(name, agent);
            }
        }
        assert!(diags.iter().all(|d| d.locator.file.is_some()));
        let codes = diags.iter().map(|d| d.code.to_string()).collect();
        (kept, codes)
    }

    #[test]
    fn an_external_agent_is_read_with_its_defaults() {
        let (kept, codes) = read(
            "[model]\ndefault = \"x:y\"\n\
             [agents.external.helper]\ncommand = [\"evoflux\", \"acp\"]\nenv = [\"OPENAI_API_KEY\"]\n",
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
    fn a_file_without_agents_has_no_entries_and_broken_toml_is_left_to_the_config_reader() {
        assert_eq!(entries("[model]\ndefault = \"x:y\"\n"), Some(Vec::new()));
        assert_eq!(entries("[agents\n"), None);
    }

    #[test]
    fn a_timeout_of_zero_or_beyond_its_bound_is_named_and_the_entry_left_out() {
        let mut diags = Diagnostics::new();
        let mut kept = BTreeMap::new();
        for (name, value) in entries(
            "[agents.external.never]\ncommand = [\"x\"]\nstart_timeout_secs = 0\n\
             [agents.external.forever]\ncommand = [\"x\"]\nidle_timeout_secs = 99999999999\n\
             [agents.external.quick]\ncommand = [\"x\"]\nstart_timeout_secs = 1\nidle_timeout_secs = 86400\n",
        )
        .expect("toml")
        {
            if let Some(agent) = parse_entry(Path::new("/c/config.toml"), &name, value, &mut diags)
            {
                kept.insert(name, agent);
            }
        }
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
            "[agents.external.Bad]\ncommand = [\"x\"]\n\
             [agents.external.empty]\ncommand = []\n\
             [agents.external.leaky]\ncommand = [\"x\"]\nenv = [\"KEY=secret\"]\n\
             [agents.external.contract]\ncommand = [\"x\"]\nresult_contract = \"scout-report\"\n\
             [agents.external.typo]\ncommand = [\"x\"]\ncomand = [\"y\"]\n\
             [agents.external.shape]\ncommand = \"x\"\n\
             [agents.external.good]\ncommand = [\"x\"]\ncwd = \"scratch\"\n",
        );
        assert_eq!(
            codes,
            [
                "config/external-agent-name",
                "config/external-agent-contract",
                "config/external-agent-command",
                "config/external-agent-env",
                "config/external-agent-invalid",
                "config/unknown-key",
            ]
        );
        assert_eq!(kept.keys().collect::<Vec<_>>(), ["good"]);
        assert_eq!(kept["good"].cwd, ExternalCwd::Scratch);
    }
}
