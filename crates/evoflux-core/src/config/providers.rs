//! `[providers.<name>]`: the model providers — which wire or engine each
//! one is ([`ProviderKind`], [`WireApi`]), where it is, which variable holds
//! its key, the bounds of one call — and the checks of one provider's
//! table, with what a repository's file may not say about providers.

use std::fmt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::layer::ConfigScope;
use crate::diagnostic::{Diagnostic, Diagnostics};
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
    /// Whether the model accepts images; the wire's default when unset
    /// (`images = false` for a text-only model behind a compatible
    /// server). Media a model does not accept reach it as a placeholder.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub images: Option<bool>,
    /// Whether the model accepts audio (Chat Completions' `input_audio`,
    /// e.g. `gpt-4o-audio-preview`); off unless set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub audio: Option<bool>,
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

/// What a repository's file may not say about providers.
pub(super) fn check_scope(
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

/// The checks of one `[providers.<name>]` table: its name, base URL, key
/// variable, model file, wire and reasoning effort, context window.
pub(super) fn check_provider(path: &Path, name: &str, p: &ProviderConfig, diags: &mut Diagnostics) {
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
    // Only Chat Completions carries audio, and the local model reads text
    // only: asking more of a wire than it carries would be ignored.
    let chat = p.kind == ProviderKind::Openai
        && p.wire_api.unwrap_or_default() == WireApi::ChatCompletions;
    for (key, set, carried) in [
        ("images", p.images, p.kind != ProviderKind::Local),
        ("audio", p.audio, chat || p.kind == ProviderKind::Scripted),
    ] {
        if set == Some(true) && !carried {
            diags.push(
                Diagnostic::warning(
                    "config/media-unsupported",
                    format!(
                        "provider `{name}` (kind `{}`) cannot send {key} to its model, so                          `{key} = true` has no effect: {key} reach it as a text placeholder;                          remove the key",
                        p.kind
                    ),
                )
                .with_file(path)
                .with_field(field(key)),
            );
        }
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
