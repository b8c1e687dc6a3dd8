//! The provider trait and how a configured provider is built.

use std::fmt;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;

use evoflux_core::config::{HarnessConfig, ModelRef, ProviderConfig, ProviderKind, WireApi};
use futures_util::{Stream, StreamExt};

use crate::error::{ProviderError, SetupError};
use crate::event::{StopReason, StreamEvent, Usage};
use crate::message::{Message, ProviderItem, ProviderToolKind, Request, ToolCall};
use crate::retry::{RetryPolicy, Sleeper};
use crate::{anthropic, openai, responses, scripted};

/// The events of one model call. Boxed so [`Provider`] stays object safe.
pub type EventStream = Pin<Box<dyn Stream<Item = Result<StreamEvent, ProviderError>> + Send>>;

/// A stream that fails at once, for errors found before any request.
pub(crate) fn error_stream(error: ProviderError) -> EventStream {
    Box::pin(futures_util::stream::iter([Err(error)]))
}

/// A model backend. `stream` returns at once; the request is sent when the
/// stream is first polled, and retried inside it while nothing has been
/// yielded (see [`crate::retry`]).
pub trait Provider: Send + Sync + fmt::Debug {
    /// The configured provider name (the part before `:` in a model string).
    fn name(&self) -> &str;
    fn kind(&self) -> ProviderKind;
    /// The context window in tokens, from config or the provider's own
    /// metadata, when known.
    fn context_window(&self) -> Option<u64>;
    /// The tools this provider runs on its own side: a request may ask
    /// for these in [`Request::provider_tools`], and no others.
    fn provider_tools(&self) -> &[ProviderToolKind] {
        &[]
    }
    fn stream(&self, request: Request) -> EventStream;
}

/// Reads an environment variable. Injected so tests never touch the
/// process environment.
#[derive(Clone)]
pub struct EnvLookup(Arc<LookupFn>);

type LookupFn = dyn Fn(&str) -> Option<String> + Send + Sync;

impl EnvLookup {
    /// The real process environment.
    pub fn process() -> Self {
        EnvLookup(Arc::new(|k| std::env::var(k).ok()))
    }

    pub fn new(f: impl Fn(&str) -> Option<String> + Send + Sync + 'static) -> Self {
        EnvLookup(Arc::new(f))
    }

    /// A fixed set of variables, for tests.
    pub fn from_pairs<I, K, V>(pairs: I) -> Self
    where
        I: IntoIterator<Item = (K, V)>,
        K: Into<String>,
        V: Into<String>,
    {
        let map: std::collections::HashMap<String, String> = pairs
            .into_iter()
            .map(|(k, v)| (k.into(), v.into()))
            .collect();
        EnvLookup(Arc::new(move |k| map.get(k).cloned()))
    }

    pub fn get(&self, key: &str) -> Option<String> {
        (self.0)(key)
    }
}

impl Default for EnvLookup {
    fn default() -> Self {
        EnvLookup::process()
    }
}

impl fmt::Debug for EnvLookup {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("EnvLookup")
    }
}

/// Everything a provider needs besides its config table.
#[derive(Debug, Clone, Default)]
pub struct ProviderOptions {
    pub env: EnvLookup,
    pub retry: RetryPolicy,
    pub sleeper: Sleeper,
    /// The script a `scripted` provider replays. [`resolve`] sets it from
    /// the model string (`scripted:<path>`).
    pub script: Option<PathBuf>,
    /// The GGUF file a `local` provider runs when its config sets no
    /// `model_path`. [`resolve`] sets it from the model string
    /// (`local:<name>` is `<data>/models/<name>`).
    pub model_file: Option<PathBuf>,
    /// Where a `local` provider caches converted weights. When unset, the
    /// cache dir from `env` (`EVOFLUX_CACHE_DIR` or XDG); without one the
    /// conversion is redone on every load.
    pub cache_dir: Option<PathBuf>,
    /// Seed for providers that sample in-process (`local` with a
    /// temperature above zero); greedy decoding ignores it.
    pub seed: Option<u64>,
    /// Bounds of every call, over what the provider's config sets (tests
    /// of each failure use milliseconds).
    pub bounds: Option<crate::bounds::CallBounds>,
}

impl ProviderOptions {
    /// The evoflux directories as seen through `env`, if they resolve.
    fn dirs(&self) -> Option<evoflux_core::dirs::Dirs> {
        evoflux_core::dirs::Dirs::resolve(|k| self.env.get(k).map(std::ffi::OsString::from)).ok()
    }
}

/// Builds the provider configured as `[providers.<name>]`.
pub fn provider_for(
    name: &str,
    config: &ProviderConfig,
    options: &ProviderOptions,
) -> Result<Box<dyn Provider>, SetupError> {
    let base_url = || {
        config
            .base_url
            .clone()
            .ok_or_else(|| SetupError::BaseUrlMissing {
                name: name.to_owned(),
                kind: config.kind,
            })
    };
    match config.kind {
        ProviderKind::Openai => match config.wire_api.unwrap_or_default() {
            WireApi::ChatCompletions => Ok(Box::new(openai::OpenAiProvider::new(
                name,
                base_url()?,
                config,
                options,
            )?)),
            WireApi::Responses => Ok(Box::new(responses::ResponsesProvider::new(
                name,
                base_url()?,
                config,
                options,
            )?)),
        },
        ProviderKind::Anthropic => Ok(Box::new(anthropic::AnthropicProvider::new(
            name,
            base_url()?,
            config,
            options,
        )?)),
        ProviderKind::Local => local_provider(name, config, options),
        ProviderKind::Scripted => {
            let path = options
                .script
                .clone()
                .ok_or_else(|| SetupError::ScriptMissing {
                    name: name.to_owned(),
                })?;
            Ok(Box::new(scripted::ScriptedProvider::load(
                name, &path, config,
            )?))
        }
    }
}

/// The `local` provider: the configured `model_path`, else the file the
/// model name points at, loaded (or shared if already loaded).
#[cfg(feature = "local")]
fn local_provider(
    name: &str,
    config: &ProviderConfig,
    options: &ProviderOptions,
) -> Result<Box<dyn Provider>, SetupError> {
    let path = config
        .model_path
        .clone()
        .or_else(|| options.model_file.clone())
        .ok_or_else(|| crate::error::LocalError::NoModel {
            provider: name.to_owned(),
        })?;
    let cache_dir = options
        .cache_dir
        .clone()
        .or_else(|| options.dirs().map(|d| d.cache_dir().to_path_buf()));
    Ok(Box::new(crate::local::LocalProvider::load(
        name,
        &path,
        config,
        cache_dir.as_deref(),
        options.seed,
    )?))
}

/// Without the `local` feature the kind exists in config but cannot run.
#[cfg(not(feature = "local"))]
fn local_provider(
    name: &str,
    config: &ProviderConfig,
    _options: &ProviderOptions,
) -> Result<Box<dyn Provider>, SetupError> {
    Err(SetupError::NotAvailable {
        name: name.to_owned(),
        kind: config.kind,
    })
}

/// Builds the provider for a `provider:model` string from the harness
/// config. For a `scripted` provider the model part is the script path,
/// resolved against `base_dir` when relative.
pub fn resolve(
    model: &ModelRef,
    config: &HarnessConfig,
    base_dir: &std::path::Path,
    options: &ProviderOptions,
) -> Result<Box<dyn Provider>, SetupError> {
    let Some(provider) = config.providers.get(&model.provider) else {
        let known: Vec<&str> = config.providers.keys().map(String::as_str).collect();
        return Err(SetupError::UnknownProvider {
            name: model.provider.clone(),
            known: known.join(", "),
        });
    };
    let mut options = options.clone();
    match provider.kind {
        ProviderKind::Scripted => options.script = Some(base_dir.join(&model.model)),
        ProviderKind::Local => {
            if options.model_file.is_none()
                && let Some(dirs) = options.dirs()
            {
                options.model_file = Some(crate::local_models::model_file_for(
                    &dirs.data_dir().join("models"),
                    &model.model,
                ));
            }
        }
        ProviderKind::Openai | ProviderKind::Anthropic => {}
    }
    provider_for(&model.provider, provider, &options)
}

/// A finished model call, for callers that do not render deltas.
#[derive(Debug, Clone, PartialEq)]
pub struct Completion {
    /// The assistant message: all text deltas and completed tool calls.
    pub message: Message,
    pub usage: Option<Usage>,
    pub stop: StopReason,
}

/// Drains `stream` into a [`Completion`]. A stream that ends without
/// [`StreamEvent::Stop`] is a protocol error: the answer may be cut short.
pub async fn collect(mut stream: EventStream) -> Result<Completion, ProviderError> {
    let mut text = String::new();
    let mut calls: Vec<ToolCall> = Vec::new();
    let mut provider_items: Vec<ProviderItem> = Vec::new();
    let mut usage = None;
    let mut stop = None;
    while let Some(event) = stream.next().await {
        match event? {
            StreamEvent::TextDelta { text: t } => text.push_str(&t),
            StreamEvent::ToolCallDelta { .. } | StreamEvent::Done => {}
            // A side call has no one to correct a malformed call; it
            // keeps the call, with empty arguments, as the message has it.
            StreamEvent::ToolCall { call } | StreamEvent::InvalidToolCall { call, .. } => {
                calls.push(call)
            }
            StreamEvent::ProviderItem { item } => provider_items.push(item),
            StreamEvent::Usage { usage: u } => usage = Some(u),
            StreamEvent::Stop { reason } => stop = Some(reason),
        }
    }
    let stop = stop.ok_or_else(|| ProviderError::Protocol {
        provider: "stream".to_owned(),
        detail: "the stream ended without a stop reason".to_owned(),
    })?;
    Ok(Completion {
        message: Message::Assistant {
            content: text,
            tool_calls: calls,
            provider_items,
        },
        usage,
        stop,
    })
}
