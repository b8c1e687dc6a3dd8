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

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::diagnostic::{Diagnostic, Diagnostics};

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
}

/// Whether a tool call needs the user's approval first (`approval` of a
/// command tool, and `config.toml`'s `[approval]` table for any tool).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Approval {
    Never,
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
}

/// Where each part of the effective configuration came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ConfigOrigin {
    Embedded,
    File,
}

/// The effective configuration plus its provenance.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LoadedConfig {
    /// The file that was read, if it existed.
    pub file: Option<PathBuf>,
    pub config: HarnessConfig,
    pub model_origin: ConfigOrigin,
    pub provider_origins: BTreeMap<String, ConfigOrigin>,
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
        }
    }
}

/// Reads `path` (a missing file means the embedded defaults) and checks it.
/// Returns the effective configuration when there are no errors; all
/// problems found are pushed into `diags` together.
pub fn load(path: &Path, diags: &mut Diagnostics) -> Option<LoadedConfig> {
    match std::fs::read_to_string(path) {
        Ok(text) => parse(path, &text, diags),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Some(LoadedConfig::embedded()),
        Err(e) => {
            diags.push(
                Diagnostic::error("config/unreadable", format!("cannot read config: {e}"))
                    .with_file(path),
            );
            None
        }
    }
}

impl LoadedConfig {
    pub fn embedded() -> LoadedConfig {
        let config = HarnessConfig::embedded();
        LoadedConfig {
            file: None,
            provider_origins: config
                .providers
                .keys()
                .map(|k| (k.clone(), ConfigOrigin::Embedded))
                .collect(),
            model_origin: ConfigOrigin::Embedded,
            config,
        }
    }
}

/// Parses and checks config text that came from `path`.
pub fn parse(path: &Path, text: &str, diags: &mut Diagnostics) -> Option<LoadedConfig> {
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

    let mut loaded = LoadedConfig::embedded();
    loaded.file = Some(path.to_path_buf());
    if let Some(model) = file.model {
        loaded.config.model = model;
        loaded.model_origin = ConfigOrigin::File;
    }
    let base_dir = path.parent().unwrap_or_else(|| Path::new(""));
    for (name, mut provider) in file.providers {
        check_provider(path, &name, &provider, diags);
        if let Some(model_path) = provider.model_path.take() {
            provider.model_path = Some(base_dir.join(model_path));
        }
        loaded
            .provider_origins
            .insert(name.clone(), ConfigOrigin::File);
        loaded.config.providers.insert(name, provider);
    }
    loaded.config.approval = file.approval;
    let default = &loaded.config.model.default;
    if !loaded.config.providers.contains_key(&default.provider) {
        let known: Vec<&str> = loaded.config.providers.keys().map(String::as_str).collect();
        diags.push(
            Diagnostic::error(
                "config/provider-unknown",
                format!(
                    "model.default `{default}` names provider `{}`, which is not defined: add \
                     [providers.{}] or use one of {}",
                    default.provider,
                    default.provider,
                    known.join(", ")
                ),
            )
            .with_file(path)
            .with_field("model.default"),
        );
    }
    (diags.count(crate::Severity::Error) == errors_before).then_some(loaded)
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
        assert_eq!(loaded.file, None);
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
        assert_eq!(loaded.model_origin, ConfigOrigin::File);
        assert_eq!(loaded.provider_origins["ollama"], ConfigOrigin::File);
        assert_eq!(loaded.provider_origins["openai"], ConfigOrigin::Embedded);
        assert_eq!(
            loaded.config.providers["ollama"].context_window,
            Some(32768)
        );
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
