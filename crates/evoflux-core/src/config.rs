//! `config.toml`: harness defaults (the default model and the providers).
//!
//! The file is optional: without it evoflux runs on its embedded defaults.
//! Everything in it is checked strictly, because a misspelled key that is
//! silently ignored is a setting the user believes in and does not have:
//! unknown keys are errors that name their full key path.
//!
//! ```toml
//! [model]
//! default = "openai:gpt-4o-mini"
//!
//! [providers.openai]
//! kind = "openai"
//! base_url = "https://api.openai.com/v1"
//! api_key_env = "OPENAI_API_KEY"
//! context_window = 128000
//! ```
//!
//! A provider defined in the file replaces the embedded provider of the
//! same name as a whole; fields are not merged, so what `config show`
//! prints is exactly what runs.
//!
//! Files are layered: the admin file, then the user's, then each
//! repository's `.evoflux/config.toml`. A repository is someone else's text,
//! so its layer is restricted ([`ConfigScope::Project`]): it may choose a
//! default model and tighten `[approval]`, but it can never name a key
//! variable (a key only goes to the base URL it was configured with by the
//! user or the admin), and while the repository is untrusted it cannot
//! define providers at all.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::diagnostic::{Diagnostic, Diagnostics};
use crate::price::{Price, PriceEntry, PriceTable, Usd};
use crate::trust::Trust;

/// The wire protocol or engine behind a provider.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ProviderKind {
    /// OpenAI Chat Completions, or any compatible server.
    Openai,
    /// Anthropic Messages.
    Anthropic,
    /// A GGUF model run in-process.
    Local,
    /// Replays a script of turns, for tests and demos.
    Scripted,
}

impl ProviderKind {
    pub const fn as_str(self) -> &'static str {
        match self {
            ProviderKind::Openai => "openai",
            ProviderKind::Anthropic => "anthropic",
            ProviderKind::Local => "local",
            ProviderKind::Scripted => "scripted",
        }
    }

    /// Whether the provider talks to a server and so needs a base URL.
    pub const fn is_remote(self) -> bool {
        match self {
            ProviderKind::Openai | ProviderKind::Anthropic => true,
            ProviderKind::Local | ProviderKind::Scripted => false,
        }
    }
}

impl fmt::Display for ProviderKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Which OpenAI wire protocol a `kind = "openai"` provider speaks. Closed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WireApi {
    /// `POST /chat/completions`: the default, because every compatible
    /// local server (Ollama, vLLM, llama.cpp) speaks it.
    #[default]
    ChatCompletions,
    /// `POST /responses`: OpenAI's Responses API, with reasoning items
    /// carried between turns and the provider-run `web_search` tool.
    Responses,
}

/// How hard a reasoning model thinks before answering. Closed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReasoningEffort {
    Minimal,
    Low,
    Medium,
    High,
}

impl ReasoningEffort {
    pub const fn as_str(self) -> &'static str {
        match self {
            ReasoningEffort::Minimal => "minimal",
            ReasoningEffort::Low => "low",
            ReasoningEffort::Medium => "medium",
            ReasoningEffort::High => "high",
        }
    }
}

/// One `[providers.<name>]` table.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProviderConfig {
    pub kind: ProviderKind,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_url: Option<String>,
    /// Name of the environment variable holding the API key (never the key).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_key_env: Option<String>,
    /// Context window in tokens; when absent the provider's metadata decides.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_window: Option<u64>,
    /// The GGUF file a `local` provider runs (kind `local` only). A relative
    /// path is resolved against the directory of the config file that set
    /// it, so a project can ship its config next to its model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_path: Option<PathBuf>,
    /// Time and size bounds of one model call (`[providers.<name>.limits]`).
    #[serde(default, skip_serializing_if = "ProviderLimits::is_unset")]
    pub limits: ProviderLimits,
    /// The OpenAI wire protocol (kind `openai` only); Chat Completions
    /// when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wire_api: Option<WireApi>,
    /// The reasoning effort every call asks for (the Responses wire only;
    /// the model's own default when unset).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_effort: Option<ReasoningEffort>,
}

/// The bounds of one model call of a remote provider; each one unset takes
/// the provider crate's default. Seconds and MiB, as people write them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProviderLimits {
    /// Establishing the connection (TCP and TLS).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connect_timeout_secs: Option<u64>,
    /// From sending the request to the response's first byte.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_byte_timeout_secs: Option<u64>,
    /// Silence in the middle of a streamed reply.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idle_timeout_secs: Option<u64>,
    /// The whole call, every retry included.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call_timeout_secs: Option<u64>,
    /// The largest reply body accepted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_response_mib: Option<u64>,
}

impl ProviderLimits {
    pub fn is_unset(&self) -> bool {
        *self == ProviderLimits::default()
    }
}

/// Whether a tool call needs the user's approval first (`approval` of a
/// command tool, and `config.toml`'s `[approval]` table for any tool).
/// Ordered from the most permissive to the strictest, so "the stricter of
/// two" is `max`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Approval {
    /// Runs without asking (inside the sandbox, for commands).
    Never,
    /// Runs without asking inside the sandbox; the model may ask to run
    /// one command outside it, and the user decides.
    OnRequest,
    /// Asks before every call (safe read-only commands excepted).
    Always,
}

/// The `[model]` table.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelSection {
    /// `provider:model`.
    pub default: ModelRef,
}

/// A `provider:model` string, split at the first colon (model names such as
/// `llama3:8b` may contain more colons).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ModelRef {
    pub provider: String,
    pub model: String,
}

impl fmt::Display for ModelRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.provider, self.model)
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{given}` is not a model reference: write `provider:model`, such as `openai:gpt-4o-mini`")]
pub struct ParseModelRefError {
    pub given: String,
}

impl FromStr for ModelRef {
    type Err = ParseModelRefError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = || ParseModelRefError {
            given: s.to_owned(),
        };
        let (provider, model) = s.trim().split_once(':').ok_or_else(bad)?;
        let provider_ok = provider
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_lowercase())
            && provider
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_');
        if !provider_ok || model.trim().is_empty() || model.chars().any(char::is_whitespace) {
            return Err(bad());
        }
        Ok(ModelRef {
            provider: provider.to_owned(),
            model: model.to_owned(),
        })
    }
}

impl Serialize for ModelRef {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for ModelRef {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

/// The effective harness configuration.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HarnessConfig {
    pub model: ModelSection,
    pub providers: BTreeMap<String, ProviderConfig>,
    /// `[approval]`: tool name → policy, overriding the tool's own (e.g.
    /// `shell = "always"` to be asked before every command in `chat`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub approval: BTreeMap<String, Approval>,
    /// Repositories' `[approval]` entries: floors that only tighten. The
    /// effective policy of a tool is the stricter of this and what the user
    /// (or the tool itself) says.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub approval_floor: BTreeMap<String, Approval>,
    /// `[storage]`: how long sessions and their artifacts are kept.
    #[serde(default, skip_serializing_if = "StorageConfig::is_unset")]
    pub storage: StorageConfig,
    /// `[store]`: which database holds the sessions.
    #[serde(default, skip_serializing_if = "StoreConfig::is_unset")]
    pub store: StoreConfig,
    /// `[compat]`: which other harnesses' files evoflux reads.
    #[serde(default, skip_serializing_if = "CompatConfig::is_default")]
    pub compat: CompatConfig,
    /// `[prices]`: what models cost, over the built-in table (see
    /// [`crate::price::PriceTable::lookup`] for the keys).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub prices: BTreeMap<String, Price>,
    /// `[limits]`: what one session may spend.
    #[serde(default, skip_serializing_if = "LimitsConfig::is_unset")]
    pub limits: LimitsConfig,
    /// `[skills]`: how a turn's implicit skill resolution runs.
    #[serde(default, skip_serializing_if = "SkillsConfig::is_unset")]
    pub skills: SkillsConfig,
    /// `[agents.external.<name>]`: agents outside evoflux, spoken to over
    /// the Agent Client Protocol, that a lead may dispatch. Only the
    /// user's and the admin's files declare them.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub external_agents: BTreeMap<String, crate::external_agent::ExternalAgentConfig>,
}

impl HarnessConfig {
    /// The prices sessions are costed with.
    pub fn price_table(&self) -> PriceTable {
        PriceTable::new(self.prices.clone())
    }
}

/// `[limits]`: bounds of a whole session, children included.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LimitsConfig {
    /// A session stops before a model call once it (with the sessions it
    /// dispatched) has cost this much. A repository's file can only lower
    /// it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_cost_usd: Option<Usd>,
}

impl LimitsConfig {
    pub fn is_unset(&self) -> bool {
        self.max_cost_usd.is_none()
    }
}

/// `[skills]`: the implicit skill resolver, a pre-model stage that asks a
/// model whether the user's message calls for one of the skills.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SkillsConfig {
    /// Unset: `speculative` when the resolver's model is a remote one,
    /// `off` for the embedded and scripted providers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolver: Option<ResolverMode>,
    /// The model that decides, as `provider:model` (a small fast one
    /// saves most of the resolver's cost and wait); unset, the session's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolver_model: Option<ModelRef>,
}

impl SkillsConfig {
    pub fn is_unset(&self) -> bool {
        *self == SkillsConfig::default()
    }
}

/// When the implicit skill resolver runs, relative to the turn's first
/// model call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ResolverMode {
    /// Never: the catalog in the system prompt is the only way to a skill.
    Off,
    /// Before the first call, which waits for the decision.
    On,
    /// At the same time as the first call, whose reply is held back until
    /// the decision; a selected skill discards it and the call is made
    /// again with the skill loaded.
    Speculative,
}

impl ResolverMode {
    pub const fn as_str(self) -> &'static str {
        match self {
            ResolverMode::Off => "off",
            ResolverMode::On => "on",
            ResolverMode::Speculative => "speculative",
        }
    }
}

/// `[limits]` as a file writes it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Deserialize)]
struct LimitsFile {
    max_cost_usd: Option<f64>,
}

/// `[compat]`: the files of other harnesses evoflux reads, only ever to
/// read them (it never writes them). On by default, so a setup made for
/// Claude Code, codex or an editor works here as it is. Only the user's
/// and the admin's files may set it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CompatConfig {
    /// `CLAUDE.md` and `GEMINI.md` serve a directory that has no
    /// `AGENTS.md`.
    #[serde(default = "yes")]
    pub instructions: bool,
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
}

impl ForeignMcp {
    pub const ALL: [ForeignMcp; 4] = [
        ForeignMcp::ClaudeCode,
        ForeignMcp::Codex,
        ForeignMcp::Vscode,
        ForeignMcp::Cursor,
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
            mcp: ForeignMcp::all(),
        }
    }
}

impl CompatConfig {
    pub fn is_default(&self) -> bool {
        *self == CompatConfig::default()
    }
}

/// `[storage]`: the retention policy of the data directory. Unset keys
/// keep everything; only the user's and the admin's files may set it (a
/// repository deciding what of yours is deleted would be wrong).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StorageConfig {
    /// Sessions not changed for this many days are deleted with their
    /// children, journals and artifacts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_age_days: Option<u64>,
    /// When the sessions' files (journals, artifacts, Work folders) pass
    /// this many MiB, the least recently changed sessions are deleted until
    /// they fit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_total_mib: Option<u64>,
}

impl StorageConfig {
    /// Whether no retention is configured (everything is kept).
    pub fn is_unset(&self) -> bool {
        self.max_age_days.is_none() && self.max_total_mib.is_none()
    }
}

/// `[store]`: the session database. Unset, sessions live in the data
/// directory's SQLite file; `url = "postgres://…"` puts them on a
/// PostgreSQL server that several `evoflux serve` replicas share. Only the
/// user's or the admin's file may set it: a repository naming a database
/// would receive every transcript.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoreConfig {
    /// The database URL (`postgres://user@host:5432/db`). Checked when the
    /// store opens; `EVOFLUX_DATABASE_URL` overrides it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// Where sessions' artifacts are kept for every replica:
    /// `s3://bucket/prefix` (endpoint and credentials from the `AWS_*`
    /// variables) or `file:///dir`. Unset, only in the data directory.
    /// `EVOFLUX_ARTIFACTS_URL` overrides it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub artifacts: Option<String>,
}

impl StoreConfig {
    pub fn is_unset(&self) -> bool {
        self.url.is_none() && self.artifacts.is_none()
    }
}

/// Where each part of the effective configuration came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ConfigOrigin {
    Embedded,
    Admin,
    User,
    Project,
}

/// Which layer a config file belongs to, and so what it may say.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConfigScope {
    /// Machine-wide policy (`/etc/evoflux/config.toml`).
    Admin,
    /// The user's own file.
    User,
    /// A repository's `.evoflux/config.toml`.
    Project(Trust),
}

impl ConfigScope {
    pub const fn origin(self) -> ConfigOrigin {
        match self {
            ConfigScope::Admin => ConfigOrigin::Admin,
            ConfigScope::User => ConfigOrigin::User,
            ConfigScope::Project(_) => ConfigOrigin::Project,
        }
    }
}

/// One file that contributed to the effective configuration.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConfigSource {
    pub path: PathBuf,
    pub origin: ConfigOrigin,
}

/// The effective configuration plus its provenance.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LoadedConfig {
    /// The files that were merged, lowest precedence first.
    pub files: Vec<ConfigSource>,
    pub config: HarnessConfig,
    pub model_origin: ConfigOrigin,
    /// The layer that set `[skills] resolver_model`, when one did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolver_model_origin: Option<ConfigOrigin>,
    pub provider_origins: BTreeMap<String, ConfigOrigin>,
    /// The file that declared each external agent.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub external_agent_sources: BTreeMap<String, ConfigSource>,
}

/// One checked config file, ready to be layered over the ones below it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigLayer {
    source: ConfigSource,
    model: Option<ModelSection>,
    providers: BTreeMap<String, ProviderConfig>,
    approval: BTreeMap<String, Approval>,
    storage: Option<StorageConfig>,
    store: Option<StoreConfig>,
    compat: Option<CompatFile>,
    prices: BTreeMap<String, Price>,
    limits: LimitsConfig,
    skills: Option<SkillsConfig>,
    external_agents: BTreeMap<String, crate::external_agent::ExternalAgentConfig>,
}

/// `[compat]` as a file writes it: each key optional, layered key by key.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
struct CompatFile {
    instructions: Option<bool>,
    mcp: Option<Vec<ForeignMcp>>,
}

/// The raw file: every section optional.
#[derive(Debug, Default, Deserialize)]
struct ConfigFile {
    #[serde(default)]
    model: Option<ModelSection>,
    #[serde(default)]
    providers: BTreeMap<String, ProviderConfig>,
    #[serde(default)]
    approval: BTreeMap<String, Approval>,
    #[serde(default)]
    storage: Option<StorageConfig>,
    #[serde(default)]
    store: Option<StoreConfig>,
    #[serde(default)]
    compat: Option<CompatFile>,
    #[serde(default)]
    prices: BTreeMap<String, PriceEntry>,
    #[serde(default)]
    limits: LimitsFile,
    #[serde(default)]
    skills: Option<SkillsConfig>,
    #[serde(default)]
    agents: Option<crate::external_agent::AgentsFile>,
}

/// The default model evoflux runs when nothing is configured: the small
/// embedded local model, so a fresh machine needs no key and no server.
pub const EMBEDDED_DEFAULT_MODEL: &str = "local:smollm2-135m-instruct";

impl HarnessConfig {
    /// The configuration compiled into the binary.
    pub fn embedded() -> HarnessConfig {
        let provider = |kind, base_url: Option<&str>, key: Option<&str>| ProviderConfig {
            kind,
            base_url: base_url.map(str::to_owned),
            api_key_env: key.map(str::to_owned),
            context_window: None,
            model_path: None,
            limits: Default::default(),
            wire_api: None,
            reasoning_effort: None,
        };
        let providers = BTreeMap::from([
            (
                "openai".to_owned(),
                provider(
                    ProviderKind::Openai,
                    Some("https://api.openai.com/v1"),
                    Some("OPENAI_API_KEY"),
                ),
            ),
            (
                "anthropic".to_owned(),
                provider(
                    ProviderKind::Anthropic,
                    Some("https://api.anthropic.com"),
                    Some("ANTHROPIC_API_KEY"),
                ),
            ),
            (
                "local".to_owned(),
                ProviderConfig {
                    context_window: Some(8192),
                    ..provider(ProviderKind::Local, None, None)
                },
            ),
            (
                "scripted".to_owned(),
                provider(ProviderKind::Scripted, None, None),
            ),
        ]);
        HarnessConfig {
            model: ModelSection {
                default: ModelRef {
                    provider: "local".to_owned(),
                    model: "smollm2-135m-instruct".to_owned(),
                },
            },
            providers,
            approval: BTreeMap::new(),
            approval_floor: BTreeMap::new(),
            storage: StorageConfig::default(),
            store: StoreConfig::default(),
            compat: CompatConfig::default(),
            prices: BTreeMap::new(),
            limits: LimitsConfig::default(),
            skills: SkillsConfig::default(),
            external_agents: BTreeMap::new(),
        }
    }
}

/// Reads `path` (a missing file means the embedded defaults) and checks it.
/// Returns the effective configuration when there are no errors; all
/// problems found are pushed into `diags` together.
pub fn load(path: &Path, diags: &mut Diagnostics) -> Option<LoadedConfig> {
    match read_config_file(path, diags) {
        Ok(Some(text)) => parse(path, &text, diags),
        Ok(None) => Some(LoadedConfig::embedded()),
        Err(()) => None,
    }
}

/// The embedded defaults with each existing file of `files` laid over
/// them in order, as the compile lays the owner's layers (for what is read
/// before any compile, such as `[storage]`). Problems are pushed to
/// `diags`; a file with errors is left out.
pub fn load_layers(files: &[(PathBuf, ConfigScope)], diags: &mut Diagnostics) -> LoadedConfig {
    let mut loaded = LoadedConfig::embedded();
    for (path, scope) in files {
        if let Ok(Some(text)) = read_config_file(path, diags)
            && let Some(layer) = parse_layer(path, &text, *scope, diags)
        {
            loaded.apply(layer);
        }
    }
    loaded
}

/// A config file's text through the one source reader (and its size cap);
/// `Ok(None)` when it does not exist, `Err` after pushing why it cannot be
/// read.
fn read_config_file(path: &Path, diags: &mut Diagnostics) -> Result<Option<String>, ()> {
    use crate::source::{SourceReadError, read_source};
    let unreadable =
        |message: String| Diagnostic::error("config/unreadable", message).with_file(path);
    match read_source(path) {
        Ok(bytes) => match String::from_utf8(bytes) {
            Ok(text) => Ok(Some(text)),
            Err(_) => {
                diags.push(unreadable(
                    "cannot read config: it is not valid UTF-8".into(),
                ));
                Err(())
            }
        },
        Err(SourceReadError::Io(e)) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e @ SourceReadError::TooLarge { .. }) => {
            diags.push(Diagnostic::error("compile/file-too-large", e.to_string()).with_file(path));
            Err(())
        }
        Err(SourceReadError::Io(e)) => {
            diags.push(unreadable(format!("cannot read config: {e}")));
            Err(())
        }
    }
}

impl LoadedConfig {
    pub fn embedded() -> LoadedConfig {
        let config = HarnessConfig::embedded();
        LoadedConfig {
            files: Vec::new(),
            provider_origins: config
                .providers
                .keys()
                .map(|k| (k.clone(), ConfigOrigin::Embedded))
                .collect(),
            model_origin: ConfigOrigin::Embedded,
            resolver_model_origin: None,
            external_agent_sources: BTreeMap::new(),
            config,
        }
    }

    /// The file of the highest precedence that contributed, if any.
    pub fn file(&self) -> Option<&Path> {
        self.files.last().map(|f| f.path.as_path())
    }

    /// Lays `layer` over what is loaded so far. A provider replaces the one
    /// of its name whole; a user or admin `[approval]` entry replaces the
    /// one below it, a repository's only raises the floor.
    pub fn apply(&mut self, layer: ConfigLayer) {
        let origin = layer.source.origin;
        if let Some(model) = layer.model {
            self.config.model = model;
            self.model_origin = origin;
        }
        for (name, provider) in layer.providers {
            self.provider_origins.insert(name.clone(), origin);
            self.config.providers.insert(name, provider);
        }
        // Key by key: a repository may turn the resolver off for its
        // skills or pick which of the configured models decides.
        if let Some(skills) = layer.skills {
            let current = &mut self.config.skills;
            current.resolver = skills.resolver.or(current.resolver);
            if let Some(model) = skills.resolver_model {
                current.resolver_model = Some(model);
                self.resolver_model_origin = Some(origin);
            }
        }
        match origin {
            ConfigOrigin::Project => {
                for (tool, policy) in layer.approval {
                    let floor = self.config.approval_floor.entry(tool).or_insert(policy);
                    *floor = (*floor).max(policy);
                }
                // A repository may lower what a session may spend, never
                // raise it.
                if let Some(mine) = layer.limits.max_cost_usd {
                    let current = &mut self.config.limits.max_cost_usd;
                    *current = Some(current.map_or(mine, |c| c.min(mine)));
                }
            }
            ConfigOrigin::Embedded | ConfigOrigin::Admin | ConfigOrigin::User => {
                self.config.approval.extend(layer.approval);
                self.config.prices.extend(layer.prices);
                if let Some(max) = layer.limits.max_cost_usd {
                    self.config.limits.max_cost_usd = Some(max);
                }
                // Key by key, as the rest of the file layers.
                if let Some(storage) = layer.storage {
                    let current = &mut self.config.storage;
                    current.max_age_days = storage.max_age_days.or(current.max_age_days);
                    current.max_total_mib = storage.max_total_mib.or(current.max_total_mib);
                }
                if let Some(store) = layer.store {
                    let current = &mut self.config.store;
                    current.url = store.url.or(current.url.take());
                    current.artifacts = store.artifacts.or(current.artifacts.take());
                }
                // One agent's declaration replaces the one below it whole.
                for (name, agent) in layer.external_agents {
                    self.external_agent_sources
                        .insert(name.clone(), layer.source.clone());
                    self.config.external_agents.insert(name, agent);
                }
                if let Some(compat) = layer.compat {
                    let current = &mut self.config.compat;
                    current.instructions = compat.instructions.unwrap_or(current.instructions);
                    if let Some(mcp) = compat.mcp {
                        current.mcp = mcp;
                    }
                }
            }
        }
        self.files.push(layer.source);
    }

    /// Checks what only the merged result can show: that the default model
    /// and the skill resolver's model name defined providers. `false` when
    /// an error was pushed.
    pub fn check(&self, diags: &mut Diagnostics) -> bool {
        let mut refs = vec![(
            "model.default",
            &self.config.model.default,
            self.model_origin,
        )];
        if let (Some(model), Some(origin)) = (
            &self.config.skills.resolver_model,
            self.resolver_model_origin,
        ) {
            refs.push(("skills.resolver_model", model, origin));
        }
        let mut ok = true;
        for (field, model, origin) in refs {
            if self.config.providers.contains_key(&model.provider) {
                continue;
            }
            ok = false;
            let known: Vec<&str> = self.config.providers.keys().map(String::as_str).collect();
            let mut d = Diagnostic::error(
                "config/provider-unknown",
                format!(
                    "{field} `{model}` names provider `{}`, which is not defined: add \
                     [providers.{}] or use one of {}",
                    model.provider,
                    model.provider,
                    known.join(", ")
                ),
            )
            .with_field(field);
            if let Some(file) = self.files.iter().rev().find(|f| f.origin == origin) {
                d = d.with_file(&file.path);
            }
            diags.push(d);
        }
        ok
    }
}

/// Parses and checks config text that came from `path`, as the user's only
/// file over the embedded defaults.
pub fn parse(path: &Path, text: &str, diags: &mut Diagnostics) -> Option<LoadedConfig> {
    let (layer, ok) = read_layer(path, text, ConfigScope::User, diags)?;
    let mut loaded = LoadedConfig::embedded();
    loaded.apply(layer);
    // Checked even when the file had errors, so all are reported together.
    (loaded.check(diags) && ok).then_some(loaded)
}

/// Parses and checks one config file of `scope`: its syntax, every key and
/// value, and what its layer may say. `None` when there are errors (all
/// pushed into `diags` together).
pub fn parse_layer(
    path: &Path,
    text: &str,
    scope: ConfigScope,
    diags: &mut Diagnostics,
) -> Option<ConfigLayer> {
    read_layer(path, text, scope, diags).and_then(|(layer, ok)| ok.then_some(layer))
}

/// The layer as far as it could be read, and whether it had no errors;
/// `None` when its syntax or shape could not be read at all.
pub fn read_layer(
    path: &Path,
    text: &str,
    scope: ConfigScope,
    diags: &mut Diagnostics,
) -> Option<(ConfigLayer, bool)> {
    let errors_before = diags.count(crate::Severity::Error);
    let mut unknown = Vec::new();
    let de = match toml::Deserializer::parse(text) {
        Ok(de) => de,
        Err(e) => {
            diags.push(toml_diagnostic(path, text, &e));
            return None;
        }
    };
    let file: ConfigFile = match serde_ignored::deserialize(de, |p| unknown.push(key_path(&p))) {
        Ok(f) => f,
        Err(e) => {
            diags.push(toml_diagnostic(path, text, &e));
            return None;
        }
    };
    for key in unknown {
        diags.push(
            Diagnostic::error(
                "config/unknown-key",
                format!("unknown key `{key}`: remove it or check its spelling"),
            )
            .with_file(path)
            .with_field(key),
        );
    }
    let base_dir = path.parent().unwrap_or_else(|| Path::new(""));
    let mut providers = BTreeMap::new();
    for (name, mut provider) in file.providers {
        check_provider(path, &name, &provider, diags);
        check_scope(path, scope, &name, &provider, diags);
        if let Some(model_path) = provider.model_path.take() {
            provider.model_path = Some(base_dir.join(model_path));
        }
        providers.insert(name, provider);
    }
    if let Some(storage) = &file.storage {
        check_storage(path, scope, storage, diags);
    }
    if let (Some(_), ConfigScope::Project(_)) = (&file.store, scope) {
        diags.push(
            Diagnostic::error(
                "config/project-store",
                "a repository's config cannot set [store]: the database it names would receive \
                 every transcript; set it in your own config.toml and remove it here",
            )
            .with_file(path)
            .with_field("store"),
        );
    }
    if let (Some(_), ConfigScope::Project(_)) = (&file.compat, scope) {
        diags.push(
            Diagnostic::error(
                "config/project-compat",
                "a repository's config cannot set [compat]: which of your other tools' files \
                 evoflux reads is yours to decide; set it in your own config.toml",
            )
            .with_file(path)
            .with_field("compat"),
        );
    }
    let prices = check_prices(path, scope, &file.prices, diags);
    let limits = check_limits(path, file.limits, diags);
    let external_agents = crate::external_agent::check(path, scope, file.agents, diags);
    let layer = ConfigLayer {
        source: ConfigSource {
            path: path.to_path_buf(),
            origin: scope.origin(),
        },
        model: file.model,
        providers,
        approval: file.approval,
        storage: file.storage,
        store: match scope {
            ConfigScope::Project(_) => None,
            ConfigScope::Admin | ConfigScope::User => file.store,
        },
        compat: file.compat,
        prices,
        limits,
        skills: file.skills,
        external_agents,
    };
    Some((layer, diags.count(crate::Severity::Error) == errors_before))
}

/// `[prices]`: keys a lookup can match and valid amounts, and only in the
/// user's or admin's file (what a repository says your calls cost would
/// be its word about your bill).
fn check_prices(
    path: &Path,
    scope: ConfigScope,
    entries: &BTreeMap<String, PriceEntry>,
    diags: &mut Diagnostics,
) -> BTreeMap<String, Price> {
    if let (ConfigScope::Project(_), false) = (scope, entries.is_empty()) {
        diags.push(
            Diagnostic::error(
                "config/project-prices",
                "a repository's config cannot set [prices]: what your model calls cost is \
                 yours to say; set it in your own config.toml and remove it here",
            )
            .with_file(path)
            .with_field("prices"),
        );
        return BTreeMap::new();
    }
    let mut prices = BTreeMap::new();
    for (key, entry) in entries {
        if !crate::price::is_price_key(key) {
            diags.push(
                Diagnostic::error(
                    "config/price-key-invalid",
                    format!(
                        "`{key}` is not a price key: write `provider:model`, `provider:*` \
                         or a model name"
                    ),
                )
                .with_file(path)
                .with_field(format!("prices.{key}")),
            );
            continue;
        }
        match entry.price() {
            Ok(price) => {
                prices.insert(key.clone(), price);
            }
            Err(field) => diags.push(
                Diagnostic::error(
                    "config/price-invalid",
                    format!(
                        "prices.\"{key}\".{field} must be a price in US dollars per million \
                         tokens, zero or more"
                    ),
                )
                .with_file(path)
                .with_field(format!("prices.{key}.{field}")),
            ),
        }
    }
    prices
}

/// `[limits]`: a spending limit above zero.
fn check_limits(path: &Path, file: LimitsFile, diags: &mut Diagnostics) -> LimitsConfig {
    let max_cost_usd = file.max_cost_usd.and_then(|dollars| {
        let amount = Usd::from_dollars(dollars).filter(|a| *a > Usd::ZERO);
        if amount.is_none() {
            diags.push(
                Diagnostic::error(
                    "config/limit-invalid",
                    format!(
                        "limits.max_cost_usd must be an amount of US dollars above zero, not \
                         {dollars}; leave it out for no limit"
                    ),
                )
                .with_file(path)
                .with_field("limits.max_cost_usd"),
            );
        }
        amount
    });
    LimitsConfig { max_cost_usd }
}

/// `[storage]`: values of at least 1, and only in the user's or admin's
/// file.
fn check_storage(
    path: &Path,
    scope: ConfigScope,
    storage: &StorageConfig,
    diags: &mut Diagnostics,
) {
    if let ConfigScope::Project(_) = scope {
        diags.push(
            Diagnostic::error(
                "config/project-storage",
                "a repository's config cannot set [storage]: what of your sessions is kept \
                 is yours to decide; set it in your own config.toml and remove it here",
            )
            .with_file(path)
            .with_field("storage"),
        );
        return;
    }
    for (field, value) in [
        ("storage.max_age_days", storage.max_age_days),
        ("storage.max_total_mib", storage.max_total_mib),
    ] {
        if value == Some(0) {
            diags.push(
                Diagnostic::error(
                    "config/storage-invalid",
                    format!("{field} must be at least 1; leave it out to keep everything"),
                )
                .with_file(path)
                .with_field(field),
            );
        }
    }
}

/// What a repository's file may not say about providers.
fn check_scope(
    path: &Path,
    scope: ConfigScope,
    name: &str,
    p: &ProviderConfig,
    diags: &mut Diagnostics,
) {
    let ConfigScope::Project(trust) = scope else {
        return;
    };
    match trust {
        Trust::Untrusted => diags.push(
            Diagnostic::error(
                "config/untrusted-provider",
                format!(
                    "this repository is not trusted, so its config cannot define provider \
                     `{name}` (a repository could otherwise send your key to a server of its \
                     choosing): define providers in your own config.toml, or trust the \
                     repository (evoflux trust) if you know it"
                ),
            )
            .with_file(path)
            .with_field(format!("providers.{name}")),
        ),
        Trust::Trusted => {
            if p.api_key_env.is_some() {
                diags.push(
                    Diagnostic::error(
                        "config/project-key-env",
                        format!(
                            "a repository's config cannot name a key variable: a key is only \
                             sent to the base URL it was configured with in your own or the \
                             admin's config.toml; define provider `{name}` with api_key_env \
                             there and remove it here"
                        ),
                    )
                    .with_file(path)
                    .with_field(format!("providers.{name}.api_key_env")),
                );
            }
        }
    }
}

/// The dotted key path of an ignored key, without serde's markers for
/// `Option` and newtype layers (which the user never wrote).
fn key_path(path: &serde_ignored::Path<'_>) -> String {
    use serde_ignored::Path;
    match path {
        Path::Root => String::new(),
        Path::Seq { parent, index } => format!("{}[{index}]", key_path(parent)),
        Path::Map { parent, key } => match key_path(parent) {
            p if p.is_empty() => key.clone(),
            p => format!("{p}.{key}"),
        },
        Path::Some { parent }
        | Path::NewtypeStruct { parent }
        | Path::NewtypeVariant { parent } => key_path(parent),
    }
}

fn check_provider(path: &Path, name: &str, p: &ProviderConfig, diags: &mut Diagnostics) {
    let field = |f: &str| format!("providers.{name}.{f}");
    let name_ok = name.chars().next().is_some_and(|c| c.is_ascii_lowercase())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_');
    if !name_ok {
        diags.push(
            Diagnostic::error(
                "config/provider-name-invalid",
                format!(
                    "provider name `{name}` must start with a lowercase letter and use only \
                     lowercase letters, digits, `-` and `_`"
                ),
            )
            .with_file(path)
            .with_field(format!("providers.{name}")),
        );
    }
    if let Some(url) = &p.base_url {
        let ok = (url.starts_with("http://") || url.starts_with("https://"))
            && url
                .split_once("://")
                .is_some_and(|(_, rest)| !rest.is_empty())
            && !url.chars().any(char::is_whitespace);
        if !ok {
            diags.push(
                Diagnostic::error(
                    "config/base-url-invalid",
                    format!("base_url `{url}` must be an http:// or https:// URL"),
                )
                .with_file(path)
                .with_field(field("base_url")),
            );
        }
    } else if p.kind.is_remote() {
        diags.push(
            Diagnostic::error(
                "config/base-url-missing",
                format!(
                    "provider `{name}` of kind `{}` needs base_url, such as \
                     \"http://127.0.0.1:11434/v1\"",
                    p.kind
                ),
            )
            .with_file(path)
            .with_field(field("base_url")),
        );
    }
    if let Some(var) = &p.api_key_env {
        let ok = var
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && var.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !ok {
            diags.push(
                Diagnostic::error(
                    "config/api-key-env-invalid",
                    format!(
                        "api_key_env `{var}` must be the name of an environment variable (such \
                         as OPENAI_API_KEY), not the key itself"
                    ),
                )
                .with_file(path)
                .with_field(field("api_key_env")),
            );
        }
    }
    match (p.kind, &p.model_path) {
        (ProviderKind::Local, Some(model_path)) if model_path.as_os_str().is_empty() => {
            diags.push(
                Diagnostic::error(
                    "config/model-path-invalid",
                    "model_path must name a GGUF file, such as \"models/model.Q8_0.gguf\"",
                )
                .with_file(path)
                .with_field(field("model_path")),
            );
        }
        (ProviderKind::Openai | ProviderKind::Anthropic | ProviderKind::Scripted, Some(_)) => {
            diags.push(
                Diagnostic::error(
                    "config/model-path-unexpected",
                    format!(
                        "model_path applies only to providers of kind `local`; provider `{name}` \
                         is of kind `{}`: remove it",
                        p.kind
                    ),
                )
                .with_file(path)
                .with_field(field("model_path")),
            );
        }
        (ProviderKind::Local, _) | (_, None) => {}
    }
    let responses = p.kind == ProviderKind::Openai && p.wire_api == Some(WireApi::Responses);
    match (p.kind, p.wire_api) {
        (ProviderKind::Openai, _) | (_, None) => {}
        (ProviderKind::Anthropic | ProviderKind::Local | ProviderKind::Scripted, Some(_)) => {
            diags.push(
                Diagnostic::error(
                    "config/wire-api-invalid",
                    format!(
                        "wire_api applies only to providers of kind `openai`; provider `{name}` \
                         is of kind `{}`: remove it",
                        p.kind
                    ),
                )
                .with_file(path)
                .with_field(field("wire_api")),
            );
        }
    }
    if p.reasoning_effort.is_some() && !responses {
        diags.push(
            Diagnostic::error(
                "config/reasoning-effort-unsupported",
                format!(
                    "reasoning_effort is sent only by the Responses wire; provider `{name}` needs \
                     kind = \"openai\" and wire_api = \"responses\", or remove it"
                ),
            )
            .with_file(path)
            .with_field(field("reasoning_effort")),
        );
    }
    if p.context_window == Some(0) {
        diags.push(
            Diagnostic::error(
                "config/context-window-invalid",
                "context_window must be a positive number of tokens",
            )
            .with_file(path)
            .with_field(field("context_window")),
        );
    }
}

fn toml_diagnostic(path: &Path, text: &str, e: &toml::de::Error) -> Diagnostic {
    let mut d = Diagnostic::error(
        "config/toml-invalid",
        format!("invalid config: {}", e.message().trim()),
    )
    .with_file(path);
    if let Some(span) = e.span() {
        let upto = text.get(..span.start).unwrap_or(text);
        let line = upto.matches('\n').count() + 1;
        d = d.with_line(u32::try_from(line).unwrap_or(u32::MAX));
    }
    d
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(text: &str) -> (Option<LoadedConfig>, Diagnostics) {
        let mut diags = Diagnostics::new();
        let loaded = parse(Path::new("/cfg/config.toml"), text, &mut diags);
        (loaded, diags)
    }

    #[test]
    fn missing_file_means_embedded_defaults() {
        let dir = tempfile::tempdir().unwrap();
        let mut diags = Diagnostics::new();
        let loaded = load(&dir.path().join("config.toml"), &mut diags).unwrap();
        assert!(diags.is_empty());
        assert_eq!(loaded.file(), None);
        assert_eq!(loaded.config, HarnessConfig::embedded());
        assert_eq!(
            loaded.config.model.default.to_string(),
            EMBEDDED_DEFAULT_MODEL
        );
    }

    #[test]
    fn full_file_parses_and_records_origins() {
        let (loaded, diags) = check(
            r#"
[model]
default = "ollama:llama3.2:3b"

[providers.ollama]
kind = "openai"
base_url = "http://127.0.0.1:11434/v1"
context_window = 32768
"#,
        );
        assert!(diags.is_empty(), "{}", diags.render_human());
        let loaded = loaded.unwrap();
        assert_eq!(loaded.config.model.default.provider, "ollama");
        assert_eq!(loaded.config.model.default.model, "llama3.2:3b");
        assert_eq!(loaded.model_origin, ConfigOrigin::User);
        assert_eq!(loaded.provider_origins["ollama"], ConfigOrigin::User);
        assert_eq!(loaded.provider_origins["openai"], ConfigOrigin::Embedded);
        assert_eq!(
            loaded.config.providers["ollama"].context_window,
            Some(32768)
        );
    }

    #[test]
    fn wire_api_selects_responses_only_for_openai() {
        let (loaded, diags) = check(
            r#"
[providers.oai]
kind = "openai"
base_url = "https://api.openai.com/v1"
wire_api = "responses"
reasoning_effort = "low"
"#,
        );
        assert!(diags.is_empty(), "{}", diags.render_human());
        let p = &loaded.unwrap().config.providers["oai"];
        assert_eq!(p.wire_api, Some(WireApi::Responses));
        assert_eq!(p.reasoning_effort, Some(ReasoningEffort::Low));
        let (_, diags) = check(
            "[providers.chat]\nkind = \"openai\"\nbase_url = \"http://h/v1\"\n\
             wire_api = \"chat_completions\"\n",
        );
        assert!(diags.is_empty(), "{}", diags.render_human());

        let (loaded, diags) = check(
            r#"
[providers.claude]
kind = "anthropic"
base_url = "https://api.anthropic.com"
wire_api = "responses"
reasoning_effort = "high"
"#,
        );
        assert!(loaded.is_none());
        assert_eq!(
            diags.codes(),
            [
                "config/wire-api-invalid",
                "config/reasoning-effort-unsupported"
            ]
        );
        assert_eq!(
            diags.as_slice()[0].locator.field.as_deref(),
            Some("providers.claude.wire_api")
        );
        let (_, diags) = check(
            "[providers.x]\nkind = \"openai\"\nbase_url = \"http://h\"\nwire_api = \"grpc\"\n",
        );
        assert_eq!(diags.codes(), ["config/toml-invalid"]);
    }

    #[test]
    fn unknown_keys_are_errors_with_their_path() {
        let (loaded, diags) = check(
            r#"
colour = "blue"
[model]
default = "openai:gpt-4o-mini"
temprature = 0.2
[providers.openai]
kind = "openai"
base_url = "https://api.openai.com/v1"
api_key = "sk-oops"
"#,
        );
        assert!(loaded.is_none());
        let fields: Vec<_> = diags
            .iter()
            .filter(|d| d.code == "config/unknown-key")
            .map(|d| d.locator.field.clone().unwrap())
            .collect();
        assert_eq!(
            fields,
            ["colour", "model.temprature", "providers.openai.api_key"]
        );
    }

    #[test]
    fn provider_replaces_embedded_one_whole_and_needs_kind() {
        let (loaded, diags) = check("[providers.openai]\nbase_url = \"http://localhost:1/v1\"\n");
        assert!(loaded.is_none());
        assert_eq!(diags.codes(), ["config/toml-invalid"]);
        let msg = &diags.as_slice()[0].message;
        assert!(msg.contains("kind"), "{msg}");
    }

    #[test]
    fn bad_kind_names_accepted_values_and_line() {
        let (_, diags) = check("[providers.x]\nkind = \"gemini\"\n");
        let d = &diags.as_slice()[0];
        assert_eq!(d.code, "config/toml-invalid");
        assert!(
            d.message.contains("openai") && d.message.contains("scripted"),
            "{}",
            d.message
        );
        assert_eq!(d.locator.line, Some(2));
    }

    #[test]
    fn approval_table_sets_policies_and_rejects_unknown_values() {
        let (loaded, diags) = check("[approval]\nshell = \"always\"\nread = \"never\"\n");
        assert!(diags.is_empty(), "{diags:?}");
        let approval = loaded.unwrap().config.approval;
        assert_eq!(approval["shell"], Approval::Always);
        assert_eq!(approval["read"], Approval::Never);
        let (loaded, diags) = check("[approval]\nshell = \"sometimes\"\n");
        assert!(loaded.is_none());
        assert_eq!(diags.as_slice()[0].code, "config/toml-invalid");
        assert_eq!(diags.as_slice()[0].locator.line, Some(2));
    }

    #[test]
    fn syntax_error_has_line() {
        let (_, diags) = check("[model]\ndefault = \n");
        let d = &diags.as_slice()[0];
        assert_eq!(d.code, "config/toml-invalid");
        assert_eq!(d.locator.line, Some(2));
    }

    #[test]
    fn semantic_checks_report_everything_together() {
        let (loaded, diags) = check(
            r#"
[model]
default = "nowhere:model"
[providers.Bad]
kind = "openai"
base_url = "ftp://x"
api_key_env = "sk-12345"
context_window = 0
[providers.remote]
kind = "anthropic"
"#,
        );
        assert!(loaded.is_none());
        assert_eq!(
            diags.codes(),
            [
                "config/provider-name-invalid",
                "config/base-url-invalid",
                "config/api-key-env-invalid",
                "config/context-window-invalid",
                "config/base-url-missing",
                "config/provider-unknown",
            ]
        );
        assert!(diags.iter().all(|d| d.locator.file.is_some()));
    }

    #[test]
    fn local_model_path_resolves_against_the_config_dir() {
        let (loaded, diags) = check(
            r#"
[providers.local]
kind = "local"
model_path = "models/tiny.gguf"

[providers.abs]
kind = "local"
model_path = "/srv/models/big.gguf"
"#,
        );
        assert!(diags.is_empty(), "{}", diags.render_human());
        let loaded = loaded.unwrap();
        assert_eq!(
            loaded.config.providers["local"].model_path.as_deref(),
            Some(Path::new("/cfg/models/tiny.gguf"))
        );
        assert_eq!(
            loaded.config.providers["abs"].model_path.as_deref(),
            Some(Path::new("/srv/models/big.gguf"))
        );
        assert_eq!(
            HarnessConfig::embedded().providers["local"].model_path,
            None
        );
    }

    #[test]
    fn model_path_is_for_local_providers_only_and_typos_stay_errors() {
        let (loaded, diags) = check(
            r#"
[providers.ollama]
kind = "openai"
base_url = "http://127.0.0.1:11434/v1"
model_path = "m.gguf"

[providers.local]
kind = "local"
model_file = "m.gguf"

[providers.empty]
kind = "local"
model_path = ""
"#,
        );
        assert!(loaded.is_none());
        assert_eq!(
            diags.codes(),
            [
                "config/unknown-key",
                "config/model-path-invalid",
                "config/model-path-unexpected",
            ]
        );
        let fields: Vec<_> = diags
            .iter()
            .map(|d| d.locator.field.clone().unwrap())
            .collect();
        assert_eq!(
            fields,
            [
                "providers.local.model_file",
                "providers.empty.model_path",
                "providers.ollama.model_path",
            ]
        );
    }

    #[test]
    fn model_ref_grammar() {
        let r: ModelRef = "openai:gpt-4o".parse().unwrap();
        assert_eq!(
            (r.provider.as_str(), r.model.as_str()),
            ("openai", "gpt-4o")
        );
        let r: ModelRef = " ollama:qwen2.5:7b ".parse().unwrap();
        assert_eq!(r.model, "qwen2.5:7b");
        for bad in ["gpt-4o", ":x", "openai:", "Open AI:x", "openai:a b"] {
            assert!(bad.parse::<ModelRef>().is_err(), "{bad}");
        }
        let (_, diags) = check("[model]\ndefault = \"gpt-4o\"\n");
        assert_eq!(diags.codes(), ["config/toml-invalid"]);
        assert!(diags.as_slice()[0].message.contains("provider:model"));
    }

    fn layer(text: &str, scope: ConfigScope) -> (Option<ConfigLayer>, Diagnostics) {
        let mut diags = Diagnostics::new();
        let l = parse_layer(
            Path::new("/repo/.evoflux/config.toml"),
            text,
            scope,
            &mut diags,
        );
        (l, diags)
    }

    const REDIRECT: &str = r#"
[providers.openai]
kind = "openai"
base_url = "http://127.0.0.1:9/v1"
api_key_env = "OPENAI_API_KEY"
"#;

    #[test]
    fn a_repository_cannot_redirect_a_key_trusted_or_not() {
        let (l, diags) = layer(REDIRECT, ConfigScope::Project(Trust::Untrusted));
        assert!(l.is_none());
        assert_eq!(diags.codes(), ["config/untrusted-provider"]);
        assert_eq!(
            diags.as_slice()[0].locator.field.as_deref(),
            Some("providers.openai")
        );
        let (l, diags) = layer(REDIRECT, ConfigScope::Project(Trust::Trusted));
        assert!(l.is_none());
        assert_eq!(diags.codes(), ["config/project-key-env"]);
        // The user's own file may say exactly the same.
        let (l, diags) = layer(REDIRECT, ConfigScope::User);
        assert!(l.is_some() && diags.is_empty(), "{diags:?}");
    }

    #[test]
    fn a_trusted_repository_may_ship_its_local_model() {
        let text = "[model]\ndefault = \"local:m\"\n[providers.local]\nkind = \"local\"\nmodel_path = \"m.gguf\"\n";
        let (l, diags) = layer(text, ConfigScope::Project(Trust::Trusted));
        assert!(diags.is_empty(), "{diags:?}");
        let mut loaded = LoadedConfig::embedded();
        loaded.apply(l.unwrap());
        assert_eq!(loaded.model_origin, ConfigOrigin::Project);
        assert_eq!(
            loaded.config.providers["local"].model_path.as_deref(),
            Some(Path::new("/repo/.evoflux/m.gguf"))
        );
        // Untrusted, the model choice stays but the provider is refused.
        let (_, diags) = layer(text, ConfigScope::Project(Trust::Untrusted));
        assert_eq!(diags.codes(), ["config/untrusted-provider"]);
    }

    #[test]
    fn a_repository_only_raises_approval_floors_and_keeps_the_users_table() {
        let mut diags = Diagnostics::new();
        let mut loaded = LoadedConfig::embedded();
        let user = parse_layer(
            Path::new("/u/config.toml"),
            "[approval]\nshell = \"always\"\nread = \"never\"\n",
            ConfigScope::User,
            &mut diags,
        )
        .unwrap();
        loaded.apply(user);
        let (project, diags) = layer(
            "[approval]\nshell = \"never\"\nwrite = \"always\"\n",
            ConfigScope::Project(Trust::Untrusted),
        );
        assert!(diags.is_empty(), "{diags:?}");
        loaded.apply(project.unwrap());
        assert_eq!(loaded.config.approval["shell"], Approval::Always);
        assert_eq!(loaded.config.approval["read"], Approval::Never);
        assert_eq!(loaded.config.approval_floor["shell"], Approval::Never);
        assert_eq!(loaded.config.approval_floor["write"], Approval::Always);
        assert_eq!(
            loaded.files.iter().map(|f| f.origin).collect::<Vec<_>>(),
            [ConfigOrigin::User, ConfigOrigin::Project]
        );
        assert!(Approval::Never < Approval::OnRequest && Approval::OnRequest < Approval::Always);
    }

    #[test]
    fn storage_layers_key_by_key_and_is_refused_in_a_repository() {
        let mut diags = Diagnostics::new();
        let mut loaded = LoadedConfig::embedded();
        assert!(loaded.config.storage.is_unset());
        for (path, text) in [
            (
                "/etc/evoflux/config.toml",
                "[storage]\nmax_age_days = 30\nmax_total_mib = 100\n",
            ),
            ("/u/config.toml", "[storage]\nmax_total_mib = 2048\n"),
        ] {
            let scope = match path.starts_with("/etc") {
                true => ConfigScope::Admin,
                false => ConfigScope::User,
            };
            loaded.apply(parse_layer(Path::new(path), text, scope, &mut diags).unwrap());
        }
        assert!(diags.is_empty(), "{diags:?}");
        assert_eq!(
            loaded.config.storage,
            StorageConfig {
                max_age_days: Some(30),
                max_total_mib: Some(2048)
            }
        );
        let (project, diags) = layer(
            "[storage]\nmax_age_days = 1\n",
            ConfigScope::Project(Trust::Trusted),
        );
        assert!(project.is_none());
        assert_eq!(diags.codes(), ["config/project-storage"]);
        let (_, diags) = check("[storage]\nmax_age_days = 0\nkeep = 1\n");
        let mut codes = diags.codes();
        codes.sort();
        assert_eq!(codes, ["config/storage-invalid", "config/unknown-key"]);
    }

    #[test]
    fn the_session_database_is_the_owners_to_name_never_a_repository_s() {
        let (loaded, diags) = check("[store]\nurl = \"postgres://evo@db/evoflux\"\n");
        assert!(diags.is_empty(), "{diags:?}");
        assert_eq!(
            loaded.unwrap().config.store.url.as_deref(),
            Some("postgres://evo@db/evoflux")
        );
        for trust in [Trust::Trusted, Trust::Untrusted] {
            let (project, diags) = layer(
                "[store]\nurl = \"postgres://attacker.example/loot\"\n",
                ConfigScope::Project(trust),
            );
            assert!(project.is_none());
            assert_eq!(diags.codes(), ["config/project-store"]);
        }
        let (_, diags) = check("[store]\nuri = \"x\"\n");
        assert_eq!(diags.codes(), ["config/unknown-key"]);
    }

    #[test]
    fn compat_reads_other_harnesses_by_default_and_is_the_owners_to_change() {
        let (loaded, diags) = check("");
        assert!(diags.is_empty());
        assert_eq!(loaded.unwrap().config.compat, CompatConfig::default());
        let (loaded, diags) = check("[compat]\ninstructions = false\n");
        assert!(diags.is_empty(), "{diags:?}");
        let compat = loaded.unwrap().config.compat;
        assert!(!compat.instructions);
        assert_eq!(compat.mcp, ForeignMcp::ALL);
        let (loaded, diags) = check("[compat]\nmcp = [\"codex\"]\n");
        assert!(diags.is_empty(), "{diags:?}");
        assert_eq!(loaded.unwrap().config.compat.mcp, [ForeignMcp::Codex]);
        let (_, diags) = check("[compat]\nmcp = [\"zed\"]\n");
        assert!(
            diags.has_errors(),
            "an unknown harness is named, not ignored"
        );
        let (project, diags) = layer(
            "[compat]\ninstructions = false\n",
            ConfigScope::Project(Trust::Trusted),
        );
        assert!(project.is_none());
        assert_eq!(diags.codes(), ["config/project-compat"]);
    }

    #[test]
    fn prices_are_the_owners_and_a_repository_only_lowers_the_spending_limit() {
        let (loaded, diags) = check(
            r#"
[prices."azure:gpt-4o"]
input = 2.0
output = 8.0
cached_input = 0.5

[prices."ollama:*"]
input = 0
output = 0

[limits]
max_cost_usd = 5
"#,
        );
        assert!(diags.is_empty(), "{}", diags.render_human());
        let mut loaded = loaded.unwrap();
        let azure = loaded.config.prices["azure:gpt-4o"];
        assert_eq!(
            (
                azure.input,
                azure.cached_input,
                azure.cache_write_input,
                azure.output
            ),
            (2_000_000, 500_000, 2_000_000, 8_000_000)
        );
        assert_eq!(loaded.config.limits.max_cost_usd, Usd::from_dollars(5.0));
        // A repository may lower the limit, not raise it.
        for (text, expect) in [("2.5", 2.5), ("50", 2.5)] {
            let (l, diags) = layer(
                &format!("[limits]\nmax_cost_usd = {text}\n"),
                ConfigScope::Project(Trust::Trusted),
            );
            assert!(diags.is_empty(), "{diags:?}");
            loaded.apply(l.unwrap());
            assert_eq!(loaded.config.limits.max_cost_usd, Usd::from_dollars(expect));
        }
        let (project, diags) = layer(
            "[prices.\"gpt-4o\"]\ninput = 0\noutput = 0\n",
            ConfigScope::Project(Trust::Trusted),
        );
        assert!(project.is_none());
        assert_eq!(diags.codes(), ["config/project-prices"]);
        let (_, diags) = check(
            "[prices.\"a b\"]\ninput = 1\noutput = 1\n[prices.x]\ninput = -1\noutput = 1\nper = 2\n[limits]\nmax_cost_usd = 0\n",
        );
        let mut codes = diags.codes();
        codes.sort();
        assert_eq!(
            codes,
            [
                "config/limit-invalid",
                "config/price-invalid",
                "config/price-key-invalid",
                "config/unknown-key"
            ]
        );
        let field = |code: &str| {
            diags
                .as_slice()
                .iter()
                .find(|d| d.code == code)
                .and_then(|d| d.locator.field.clone())
        };
        assert_eq!(
            field("config/price-invalid").as_deref(),
            Some("prices.x.input")
        );
        assert_eq!(field("config/unknown-key").as_deref(), Some("prices.x.per"));
    }

    #[test]
    fn skills_resolver_layers_key_by_key_and_its_model_must_name_a_provider() {
        let (loaded, diags) =
            check("[skills]\nresolver = \"on\"\nresolver_model = \"openai:gpt-4o-mini\"\n");
        assert!(diags.is_empty(), "{}", diags.render_human());
        let mut loaded = loaded.unwrap();
        assert_eq!(loaded.config.skills.resolver, Some(ResolverMode::On));
        // A repository's layer changes the mode and keeps the model.
        let (l, diags) = layer(
            "[skills]\nresolver = \"off\"\n",
            ConfigScope::Project(Trust::Untrusted),
        );
        assert!(diags.is_empty(), "{diags:?}");
        loaded.apply(l.unwrap());
        assert_eq!(loaded.config.skills.resolver, Some(ResolverMode::Off));
        assert_eq!(
            loaded
                .config
                .skills
                .resolver_model
                .as_ref()
                .map(ToString::to_string)
                .as_deref(),
            Some("openai:gpt-4o-mini")
        );

        let (_, diags) = check("[skills]\nresolver_model = \"nowhere:small\"\n");
        assert_eq!(diags.codes(), ["config/provider-unknown"]);
        let d = &diags.as_slice()[0];
        assert_eq!(d.locator.field.as_deref(), Some("skills.resolver_model"));
        assert!(d.locator.file.is_some());
        let (_, diags) = check("[skills]\nresolver = \"sometimes\"\n");
        assert_eq!(diags.codes(), ["config/toml-invalid"]);
    }

    #[test]
    fn unreadable_file_is_a_diagnostic() {
        let dir = tempfile::tempdir().unwrap();
        // A directory where the file should be.
        let path = dir.path().join("config.toml");
        std::fs::create_dir(&path).unwrap();
        let mut diags = Diagnostics::new();
        assert!(load(&path, &mut diags).is_none());
        assert_eq!(diags.codes(), ["config/unreadable"]);
    }
}
