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
    /// Reported once the retries are spent, or at once when the server asks
    /// for a longer wait than the retry policy waits.
    #[error(
        "{provider}: rate limited by the server{}: {detail}; {}",
        retry_hint(*.retry_after),
        retry_advice(*.retry_after)
    )]
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
    /// A bound of the call ran out ([`crate::bounds::CallBounds`]).
    #[error("{provider}: {}; the limits are [providers.{provider}.limits] in config.toml", .phase.describe(*.after, url))]
    Timeout {
        provider: String,
        url: String,
        phase: TimeoutPhase,
        after: Duration,
    },
    /// The reply grew past the largest one accepted; the call was stopped.
    #[error(
        "{provider}: the reply is larger than {} MiB and was stopped; raise max_response_mib in [providers.{provider}.limits] if this model really answers that much",
        .limit / (1024 * 1024)
    )]
    ResponseTooLarge { provider: String, limit: u64 },
    /// A successful answer that is not an event stream (an HTML page, a
    /// JSON document): almost always a wrong `base_url`.
    #[error(
        "{provider}: the server answered {content_type}, not an event stream: is base_url right? It said: {excerpt}"
    )]
    NotEventStream {
        provider: String,
        content_type: String,
        excerpt: String,
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
    /// The reply ended with no text and no tool call: nothing to show the
    /// user and nothing to run. Not retried: the call was served (and
    /// billed), and the same request tends to get the same nothing.
    #[error(
        "{provider}: the model's reply was empty (no text and no tool call; it stopped with `{}`); try again, and if it stays empty check the model name, max_tokens and the server's chat template",
        .stop.as_str()
    )]
    EmptyReply {
        provider: String,
        stop: crate::event::StopReason,
    },
    /// The server answered something that does not follow its wire protocol.
    #[error("{provider}: protocol error: {detail}")]
    Protocol { provider: String, detail: String },
    /// The scripted provider's conversation left its script.
    #[error(transparent)]
    Script(#[from] ScriptError),
    /// The in-process model failed while generating (a tensor operation or
    /// the constraint engine); the request is not worth repeating as is.
    #[error("{provider}: local model failed: {detail}")]
    Local { provider: String, detail: String },
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
        Some(d) => format!(" (it asks to wait {} before the next request)", wait(d)),
        None => String::new(),
    }
}

fn retry_advice(after: Option<Duration>) -> String {
    match after {
        Some(d) => format!(
            "try again in {}, or check the account's rate limits with the provider",
            wait(d)
        ),
        None => "try again later, or check the account's rate limits with the provider".to_owned(),
    }
}

/// A wait as people read it: seconds below two minutes, else minutes or
/// hours (a daily quota's `retry-after` runs to tens of thousands).
fn wait(d: Duration) -> String {
    let secs = d.as_secs_f64();
    if secs < 120.0 {
        format!("{secs:.0} s")
    } else if secs < 7200.0 {
        format!("{:.0} min", secs / 60.0)
    } else {
        format!("{:.1} h", secs / 3600.0)
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
            ProviderError::Timeout { phase, .. } => phase.code(),
            ProviderError::ResponseTooLarge { .. } => "model/response-too-large",
            ProviderError::NotEventStream { .. } => "model/not-an-event-stream",
            ProviderError::BadRequest { .. } => "model/bad-request",
            ProviderError::Server { .. } => "model/server",
            ProviderError::EmptyReply { .. } => "model/empty-reply",
            ProviderError::Protocol { .. } => "model/protocol",
            ProviderError::Script(e) => e.code(),
            ProviderError::Local { .. } => "model/local-inference",
        }
    }

    /// Whether trying the same request again may succeed.
    pub const fn is_retryable(&self) -> bool {
        match self {
            ProviderError::RateLimit { .. }
            | ProviderError::Transport { .. }
            | ProviderError::Server { .. } => true,
            // A silent server may answer the next attempt; the call's own
            // deadline bounds them all.
            ProviderError::Timeout { phase, .. } => match phase {
                TimeoutPhase::Connect | TimeoutPhase::FirstByte | TimeoutPhase::Idle => true,
                TimeoutPhase::Call => false,
            },
            ProviderError::ResponseTooLarge { .. } | ProviderError::NotEventStream { .. } => false,
            ProviderError::Auth { .. }
            | ProviderError::ContextExceeded { .. }
            | ProviderError::BadRequest { .. }
            | ProviderError::EmptyReply { .. }
            | ProviderError::Protocol { .. }
            | ProviderError::Script(_)
            | ProviderError::Local { .. } => false,
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

/// Which bound of a model call ran out. Closed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeoutPhase {
    /// No connection (TCP and TLS) in time.
    Connect,
    /// Connected and sent, but no answer began.
    FirstByte,
    /// The reply began and then stalled.
    Idle,
    /// The whole call, retries included, took too long.
    Call,
}

impl TimeoutPhase {
    pub const fn code(self) -> &'static str {
        match self {
            TimeoutPhase::Connect => "model/connect-timeout",
            TimeoutPhase::FirstByte => "model/first-byte-timeout",
            TimeoutPhase::Idle => "model/stream-stalled",
            TimeoutPhase::Call => "model/call-timeout",
        }
    }

    /// The `[providers.<name>.limits]` key that sets this bound.
    pub const fn limit_key(self) -> &'static str {
        match self {
            TimeoutPhase::Connect => "connect_timeout_secs",
            TimeoutPhase::FirstByte => "first_byte_timeout_secs",
            TimeoutPhase::Idle => "idle_timeout_secs",
            TimeoutPhase::Call => "call_timeout_secs",
        }
    }

    fn describe(self, after: Duration, url: &str) -> String {
        let secs = after.as_secs_f64();
        let key = self.limit_key();
        match self {
            TimeoutPhase::Connect => {
                format!(
                    "could not connect to {url} within {secs:.0} s ({key}); check that the server is running and base_url is right"
                )
            }
            // Said of the call, not of one connection: the window covers
            // every attempt, and the last may have been cut while it was
            // still connecting.
            TimeoutPhase::FirstByte => format!(
                "the server at {url} did not begin to answer within {secs:.0} s, retries included ({key}); it may be overloaded or still loading the model"
            ),
            TimeoutPhase::Idle => format!(
                "the reply from {url} stalled: no data for {secs:.0} s in the middle of the stream ({key})"
            ),
            TimeoutPhase::Call => {
                format!("the model call to {url} took longer than its {secs:.0} s deadline ({key})")
            }
        }
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
        /// What part of the request left the script.
        part: crate::scripted::ScriptPart,
        expected: String,
        actual: String,
        /// The whole of that part as sent (placeholders substituted), for a
        /// diff against the script's recorded text.
        actual_text: Option<String>,
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
        /// `model/script-invalid`, or the code of the nesting guard
        /// (`yaml/too-deep`, `yaml/too-many-aliases`) that refused the
        /// script before parsing.
        code: &'static str,
    },
    #[error("cannot build the HTTP client: {detail}")]
    HttpClient { detail: String },
    /// A `local` provider could not load its model.
    #[error(transparent)]
    Local(#[from] LocalError),
}

/// The three ways to get a model, for messages shown when none is usable.
pub const MODEL_SETUP_HINT: &str = "get a model one of three ways: (1) a local GGUF file: run \
     scripts/fetch-local-model.sh for the embedded default, or set model_path in \
     [providers.local]; (2) an OpenAI-compatible server (Ollama, llama.cpp, vLLM): add a provider \
     of kind \"openai\" with its base_url; (3) an API key: export OPENAI_API_KEY or \
     ANTHROPIC_API_KEY and pick openai:<model> or anthropic:<model>";

/// Why a `local` provider could not load its GGUF model. Checked in the
/// order a user fixes them: configured, present, GGUF, runnable.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LocalError {
    #[error("provider `{provider}` has no model file: {MODEL_SETUP_HINT}")]
    NoModel { provider: String },
    #[error("model file {} does not exist; {MODEL_SETUP_HINT}", .path.display())]
    FileMissing { path: PathBuf },
    #[error("cannot read model file {}: {detail}", .path.display())]
    Unreadable { path: PathBuf, detail: String },
    #[error("{} is not a GGUF model file: {detail}", .path.display())]
    NotGguf { path: PathBuf, detail: String },
    #[error(
        "{} uses the `{architecture}` architecture, which the local provider cannot run; use a \
         llama-architecture GGUF (Llama, SmolLM, TinyLlama, Mistral exports) or serve this model \
         through an OpenAI-compatible server",
        .path.display()
    )]
    ArchitectureUnsupported { path: PathBuf, architecture: String },
    #[error(
        "{} uses the `{tokenizer}` tokenizer; the local provider supports byte-level BPE (`gpt2`) \
         vocabularies",
        .path.display()
    )]
    TokenizerUnsupported { path: PathBuf, tokenizer: String },
    #[error("model file {} is damaged or incomplete: {detail}", .path.display())]
    Invalid { path: PathBuf, detail: String },
    #[error("cannot convert the model for fast CPU inference: {detail}")]
    Cache { detail: String },
}

impl LocalError {
    pub const fn code(&self) -> &'static str {
        match self {
            LocalError::NoModel { .. } => "model/local-model-unset",
            LocalError::FileMissing { .. } => "model/local-file-missing",
            LocalError::Unreadable { .. } => "model/local-file-unreadable",
            LocalError::NotGguf { .. } => "model/local-not-gguf",
            LocalError::ArchitectureUnsupported { .. } => "model/local-architecture-unsupported",
            LocalError::TokenizerUnsupported { .. } => "model/local-tokenizer-unsupported",
            LocalError::Invalid { .. } => "model/local-model-invalid",
            LocalError::Cache { .. } => "model/local-cache",
        }
    }

    /// The file the error is about, when there is one.
    pub fn path(&self) -> Option<&std::path::Path> {
        match self {
            LocalError::FileMissing { path }
            | LocalError::Unreadable { path, .. }
            | LocalError::NotGguf { path, .. }
            | LocalError::ArchitectureUnsupported { path, .. }
            | LocalError::TokenizerUnsupported { path, .. }
            | LocalError::Invalid { path, .. } => Some(path),
            LocalError::NoModel { .. } | LocalError::Cache { .. } => None,
        }
    }
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
            SetupError::ScriptInvalid { code, .. } => code,
            SetupError::HttpClient { .. } => "model/http-client",
            SetupError::Local(e) => e.code(),
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
            SetupError::Local(e) => match e.path() {
                Some(p) => d.with_file(p),
                None => d,
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
