//! Provider errors: one closed taxonomy that drives recovery.
//!
//! The harness decides what to do from the variant alone: retry (the
//! provider layer already did, see [`crate::retry`]), compact the context
//! ([`ProviderError::ContextExceeded`]), or stop and tell the user what to
//! fix. Messages name the fix (the env var to set, the base URL to check)
//! because they are shown to a person, not parsed.

use std::path::PathBuf;
use std::time::Duration;

use evoflux_core::Diagnostic;
use evoflux_core::config::ProviderKind;

/// Why a model call failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProviderError {
    /// The key is missing or was refused.
    #[error("{provider}: authentication failed: {detail}; {}", auth_hint(.env_var.as_deref()))]
    Auth {
        provider: String,
        /// The env var the key is read from, when one is configured.
        env_var: Option<String>,
        detail: String,
    },
    /// Too many requests (HTTP 429); `retry_after` is the server's hint.
    #[error("{provider}: rate limited{}: {detail}", retry_hint(*.retry_after))]
    RateLimit {
        provider: String,
        retry_after: Option<Duration>,
        detail: String,
    },
    /// The conversation no longer fits the model's context window.
    #[error(
        "{provider}: the conversation exceeds the model's context window: {detail}; compact or shorten the conversation"
    )]
    ContextExceeded { provider: String, detail: String },
    /// The server could not be reached or the connection broke.
    #[error(
        "{provider}: cannot reach {url}: {detail}; check that the server is running and base_url is right"
    )]
    Transport {
        provider: String,
        url: String,
        detail: String,
    },
    /// The server rejected the request as invalid (4xx other than the above).
    #[error("{provider}: request rejected (HTTP {status}): {detail}")]
    BadRequest {
        provider: String,
        status: u16,
        detail: String,
    },
    /// The server failed (5xx, or an overloaded/api error event).
    #[error("{provider}: server error{}: {detail}; try again later", status_suffix(*.status))]
    Server {
        provider: String,
        status: Option<u16>,
        detail: String,
    },
    /// The server answered something that does not follow its wire protocol.
    #[error("{provider}: protocol error: {detail}")]
    Protocol { provider: String, detail: String },
    /// The scripted provider's conversation left its script.
    #[error(transparent)]
    Script(#[from] ScriptError),
}

fn auth_hint(env_var: Option<&str>) -> String {
    match env_var {
        Some(var) => format!("set the environment variable {var} to a valid API key"),
        None => {
            "set api_key_env for this provider in config.toml and export that variable".to_owned()
        }
    }
}

fn retry_hint(after: Option<Duration>) -> String {
    match after {
        Some(d) => format!(" (server asks to retry after {:.1}s)", d.as_secs_f64()),
        None => String::new(),
    }
}

fn status_suffix(status: Option<u16>) -> String {
    match status {
        Some(s) => format!(" (HTTP {s})"),
        None => String::new(),
    }
}

impl ProviderError {
    /// Stable diagnostic code (`model/...`), for tests and machine output.
    pub const fn code(&self) -> &'static str {
        match self {
            ProviderError::Auth { .. } => "model/auth",
            ProviderError::RateLimit { .. } => "model/rate-limited",
            ProviderError::ContextExceeded { .. } => "model/context-exceeded",
            ProviderError::Transport { .. } => "model/transport",
            ProviderError::BadRequest { .. } => "model/bad-request",
            ProviderError::Server { .. } => "model/server",
            ProviderError::Protocol { .. } => "model/protocol",
            ProviderError::Script(e) => e.code(),
        }
    }

    /// Whether trying the same request again may succeed.
    pub const fn is_retryable(&self) -> bool {
        match self {
            ProviderError::RateLimit { .. }
            | ProviderError::Transport { .. }
            | ProviderError::Server { .. } => true,
            ProviderError::Auth { .. }
            | ProviderError::ContextExceeded { .. }
            | ProviderError::BadRequest { .. }
            | ProviderError::Protocol { .. }
            | ProviderError::Script(_) => false,
        }
    }

    /// The server's retry hint, if any.
    pub const fn retry_after(&self) -> Option<Duration> {
        match self {
            ProviderError::RateLimit { retry_after, .. } => *retry_after,
            _ => None,
        }
    }

    pub fn to_diagnostic(&self) -> Diagnostic {
        Diagnostic::error(self.code(), self.to_string())
    }
}

/// How a scripted conversation went wrong. Turns are numbered from 1.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ScriptError {
    #[error(
        "script {}: turn {turn} expected {expected}, but the conversation has {actual}",
        .script.display()
    )]
    Diverged {
        script: PathBuf,
        turn: usize,
        expected: String,
        actual: String,
    },
    #[error(
        "script {}: ran out after {turns} turn(s); the conversation asked for turn {}",
        .script.display(),
        .turns + 1
    )]
    Exhausted { script: PathBuf, turns: usize },
}

impl ScriptError {
    pub const fn code(&self) -> &'static str {
        match self {
            ScriptError::Diverged { .. } => "model/script-diverged",
            ScriptError::Exhausted { .. } => "model/script-exhausted",
        }
    }
}

/// Why a provider could not be built from its configuration.
#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    #[error(
        "provider `{name}` is not defined: add [providers.{name}] to config.toml or use one of {known}"
    )]
    UnknownProvider { name: String, known: String },
    #[error("provider `{name}` of kind `{kind}` is not available in this build yet")]
    NotAvailable { name: String, kind: ProviderKind },
    #[error("provider `{name}` of kind `{kind}` needs base_url in [providers.{name}]")]
    BaseUrlMissing { name: String, kind: ProviderKind },
    #[error("provider `{name}` needs a script file: use the model `{name}:<path/to/script.yaml>`")]
    ScriptMissing { name: String },
    #[error("cannot read script {}: {source}", .path.display())]
    ScriptUnreadable {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("invalid script {}{}: {message}", .path.display(), line_suffix(*.line))]
    ScriptInvalid {
        path: PathBuf,
        line: Option<u32>,
        message: String,
    },
    #[error("cannot build the HTTP client: {detail}")]
    HttpClient { detail: String },
}

fn line_suffix(line: Option<u32>) -> String {
    match line {
        Some(l) => format!(":{l}"),
        None => String::new(),
    }
}

impl SetupError {
    pub const fn code(&self) -> &'static str {
        match self {
            SetupError::UnknownProvider { .. } => "model/provider-unknown",
            SetupError::NotAvailable { .. } => "model/provider-not-available",
            SetupError::BaseUrlMissing { .. } => "model/base-url-missing",
            SetupError::ScriptMissing { .. } => "model/script-missing",
            SetupError::ScriptUnreadable { .. } => "model/script-unreadable",
            SetupError::ScriptInvalid { .. } => "model/script-invalid",
            SetupError::HttpClient { .. } => "model/http-client",
        }
    }

    pub fn to_diagnostic(&self) -> Diagnostic {
        let d = Diagnostic::error(self.code(), self.to_string());
        match self {
            SetupError::ScriptUnreadable { path, .. } => d.with_file(path),
            SetupError::ScriptInvalid { path, line, .. } => match line {
                Some(l) => d.with_file(path).with_line(*l),
                None => d.with_file(path),
            },
            SetupError::UnknownProvider { .. }
            | SetupError::NotAvailable { .. }
            | SetupError::BaseUrlMissing { .. }
            | SetupError::ScriptMissing { .. }
            | SetupError::HttpClient { .. } => d,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auth_message_names_the_env_var() {
        let e = ProviderError::Auth {
            provider: "openai".into(),
            env_var: Some("OPENAI_API_KEY".into()),
            detail: "HTTP 401".into(),
        };
        assert!(e.to_string().contains("OPENAI_API_KEY"), "{e}");
        assert_eq!(e.code(), "model/auth");
        assert!(!e.is_retryable());
        assert_eq!(e.to_diagnostic().code, "model/auth");
    }

    #[test]
    fn retryable_kinds() {
        let p = || "p".to_owned();
        assert!(
            ProviderError::Server {
                provider: p(),
                status: Some(503),
                detail: String::new()
            }
            .is_retryable()
        );
        assert!(
            !ProviderError::Protocol {
                provider: p(),
                detail: String::new()
            }
            .is_retryable()
        );
    }
}
