//! The `local` provider: a GGUF model run in-process on the CPU.
//!
//! - [`gguf`] opens and checks the file (present, GGUF, llama architecture);
//! - [`requantize`] converts slow quantizations to Q8_0 once and caches them;
//! - [`tokenizer`] rebuilds the tokenizer from the file's metadata;
//! - [`chat_template`] renders the conversation as ChatML;
//! - [`constrain`] restricts output to an answer or one valid tool call;
//! - [`engine`] holds the weights and runs the token loop.
//!
//! Generation runs on its own thread and streams the same [`StreamEvent`]s
//! as the remote providers. A loaded model is shared by every provider
//! built for the same file in this process, and one generation runs at a
//! time per model.

pub mod chat_template;
pub mod constrain;
pub mod engine;
pub mod gguf;
pub mod requantize;
pub mod tokenizer;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};

use evoflux_core::config::{ProviderConfig, ProviderKind};
use futures_util::StreamExt;
use tokio::sync::mpsc;

pub use crate::error::LocalError;
use crate::error::ProviderError;
use crate::event::{StopReason, StreamEvent, Usage};
pub use crate::local_models::{
    DEFAULT_MODEL_FILE, DEFAULT_MODEL_NAME, InstalledModel, installed_models, model_file_for,
};
use crate::message::{Request, ToolCall};
use crate::provider::{EventStream, Provider};
use constrain::Output;
use engine::{Engine, Finish, GenerationStats, LoadReport, Sampler};

/// Generated tokens when the request sets no limit.
pub const DEFAULT_MAX_TOKENS: u32 = 1024;

/// A loaded model shared by providers, with what its load did.
#[derive(Debug)]
struct Shared {
    engine: Mutex<Engine>,
    report: LoadReport,
}

/// Models loaded in this process, by file, so building a provider twice
/// does not load twice; dropped with the last provider using them.
/// Keyed by canonical file and configured context cap.
type Registry = Mutex<HashMap<(PathBuf, Option<u64>), Weak<Shared>>>;

fn registry() -> &'static Registry {
    static MODELS: OnceLock<Registry> = OnceLock::new();
    MODELS.get_or_init(|| Mutex::new(HashMap::new()))
}

fn load_shared(
    path: &Path,
    cache_dir: Option<&Path>,
    cap: Option<u64>,
) -> Result<Arc<Shared>, LocalError> {
    let key = (
        path.canonicalize().unwrap_or_else(|_| path.to_path_buf()),
        cap,
    );
    let mut models = registry().lock().unwrap_or_else(|p| p.into_inner());
    if let Some(shared) = models.get(&key).and_then(Weak::upgrade) {
        return Ok(shared);
    }
    let (engine, report) = engine::load(path, cache_dir, cap)?;
    let shared = Arc::new(Shared {
        engine: Mutex::new(engine),
        report,
    });
    models.retain(|_, w| w.strong_count() > 0);
    models.insert(key, Arc::downgrade(&shared));
    Ok(shared)
}

/// A provider running one GGUF model.
#[derive(Debug, Clone)]
pub struct LocalProvider {
    name: String,
    shared: Arc<Shared>,
    seed: Option<u64>,
    calls: Arc<AtomicU64>,
}

impl LocalProvider {
    /// Loads the model at `path` (see [`engine::load`]).
    pub fn load(
        name: &str,
        path: &Path,
        config: &ProviderConfig,
        cache_dir: Option<&Path>,
        seed: Option<u64>,
    ) -> Result<LocalProvider, LocalError> {
        debug_assert_eq!(config.kind, ProviderKind::Local);
        let shared = load_shared(path, cache_dir, config.context_window)?;
        Ok(LocalProvider {
            name: name.to_owned(),
            shared,
            seed,
            calls: Arc::new(AtomicU64::new(0)),
        })
    }

    /// What loading the model did (weights used, context, time).
    pub fn load_report(&self) -> &LoadReport {
        &self.shared.report
    }

    /// Runs one request to the end on the calling thread, sending events
    /// to `tx`. Returns the stats for callers that measure.
    fn run(
        &self,
        request: &Request,
        tx: &mpsc::Sender<Result<StreamEvent, ProviderError>>,
    ) -> Result<Option<GenerationStats>, ProviderError> {
        let local_err = |detail: String| ProviderError::Local {
            provider: self.name.clone(),
            detail,
        };
        let mut engine = self.shared.engine.lock().unwrap_or_else(|p| p.into_inner());
        let parts = chat_template::render(&request.messages, &request.tools);
        let prompt = engine.encode_prompt(&parts).map_err(local_err)?;
        let context = usize::try_from(engine.context_window).unwrap_or(usize::MAX);
        if prompt.len() >= context {
            return Err(ProviderError::ContextExceeded {
                provider: self.name.clone(),
                detail: format!(
                    "the prompt is {} tokens; the context window is {context}",
                    prompt.len()
                ),
            });
        }
        let limit = request.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS);
        let max_new = usize::try_from(limit)
            .unwrap_or(usize::MAX)
            .min(context - prompt.len());
        let mut constraint = if request.tools.is_empty() {
            None
        } else {
            let grammar = constrain::tool_grammar(&request.tools, request.tool_choice);
            Some(
                engine
                    .constrainer()
                    .and_then(|c| c.matcher(grammar))
                    .map_err(|e| local_err(format!("tool grammar: {e}")))?,
            )
        };
        let mut sampler = Sampler::new(request.temperature, self.seed);
        let mut text = TextStream::new(constraint.is_some());
        let stats = engine
            .generate(
                &prompt,
                max_new,
                constraint.as_mut(),
                &mut sampler,
                &mut |bytes| match text.push(bytes) {
                    Some(delta) => tx
                        .blocking_send(Ok(StreamEvent::TextDelta { text: delta }))
                        .is_ok(),
                    None => !tx.is_closed(),
                },
            )
            .map_err(local_err)?;
        if stats.finish == Finish::Cancelled {
            return Ok(Some(stats));
        }
        let mut events = Vec::new();
        let (tail, held) = text.finish();
        if let Some(delta) = tail {
            events.push(StreamEvent::TextDelta { text: delta });
        }
        let mut stop = match stats.finish {
            Finish::MaxTokens => StopReason::MaxTokens,
            Finish::EndOfTurn | Finish::Cancelled => StopReason::EndTurn,
        };
        if let Some(call_text) = held {
            match (
                stats.finish,
                constrain::parse_output(&call_text, &request.tools),
            ) {
                (Finish::EndOfTurn, Ok(Output::Call { name, arguments })) => {
                    let n = self.calls.fetch_add(1, Ordering::Relaxed) + 1;
                    let call = ToolCall {
                        id: format!("call_local_{n}"),
                        name,
                        arguments,
                    };
                    events.push(StreamEvent::ToolCallDelta {
                        index: 0,
                        id: Some(call.id.clone()),
                        name: Some(call.name.clone()),
                        arguments: call.arguments.to_string(),
                    });
                    events.push(StreamEvent::ToolCall { call });
                    stop = StopReason::ToolUse;
                }
                (_, Ok(Output::Answer(t))) => events.push(StreamEvent::TextDelta { text: t }),
                (Finish::MaxTokens, Ok(Output::Call { .. }) | Err(_)) => {
                    // Cut off inside a call: show what there is, as text.
                    events.push(StreamEvent::TextDelta { text: call_text });
                }
                (Finish::EndOfTurn | Finish::Cancelled, Err(e)) => {
                    return Err(local_err(format!("constrained output: {e}")));
                }
                (Finish::Cancelled, Ok(Output::Call { .. })) => return Ok(Some(stats)),
            }
        }
        events.push(StreamEvent::Usage {
            usage: Usage {
                input_tokens: stats.prompt_tokens as u64,
                output_tokens: stats.generated_tokens as u64,
                cached_input_tokens: stats.reused_tokens as u64,
                cache_write_input_tokens: 0,
                web_search_requests: 0,
            },
        });
        events.push(StreamEvent::Stop { reason: stop });
        events.push(StreamEvent::Done);
        for e in events {
            if tx.blocking_send(Ok(e)).is_err() {
                break;
            }
        }
        Ok(Some(stats))
    }
}

impl Provider for LocalProvider {
    fn name(&self) -> &str {
        &self.name
    }

    fn kind(&self) -> ProviderKind {
        ProviderKind::Local
    }

    fn context_window(&self) -> Option<u64> {
        Some(self.shared.report.context_window)
    }

    /// Runs the conversation through this provider's model; `request.model`
    /// is not consulted (the model is chosen when the provider is built).
    fn stream(&self, request: Request) -> EventStream {
        // The local engine reads text only: media become placeholders.
        let request = crate::media::fit(request, crate::media::MediaSupport::NONE);
        let provider = self.clone();
        let name = self.name.clone();
        // Nothing runs until the stream is polled, like the remote providers.
        let start = futures_util::stream::once(async move {
            let (tx, rx) = mpsc::channel(64);
            let spawned = std::thread::Builder::new()
                .name("evoflux-local-model".to_owned())
                .spawn(move || {
                    if let Err(e) = provider.run(&request, &tx) {
                        let _ = tx.blocking_send(Err(e));
                    }
                });
            let first = match spawned {
                Ok(_) => None,
                Err(e) => Some(Err(ProviderError::Local {
                    provider: name,
                    detail: format!("cannot start the model thread: {e}"),
                })),
            };
            let rest = futures_util::stream::unfold(rx, |mut rx| async move {
                rx.recv().await.map(|item| (item, rx))
            });
            futures_util::stream::iter(first).chain(rest)
        });
        Box::pin(start.flatten())
    }
}

/// Turns generated bytes into text deltas on UTF-8 boundaries. Under the
/// tool grammar, output that starts with `{` is a call and is held back
/// whole instead of streamed.
#[derive(Debug)]
struct TextStream {
    pending: Vec<u8>,
    mode: Mode,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// Constrained and nothing generated yet: the first byte decides.
    Undecided,
    Text,
    Call,
}

impl TextStream {
    fn new(constrained: bool) -> TextStream {
        TextStream {
            pending: Vec::new(),
            mode: if constrained {
                Mode::Undecided
            } else {
                Mode::Text
            },
        }
    }

    /// Adds bytes; returns text ready to stream, if any.
    fn push(&mut self, bytes: &[u8]) -> Option<String> {
        self.pending.extend_from_slice(bytes);
        if self.mode == Mode::Undecided {
            match self.pending.first() {
                None => return None,
                Some(b'{') => self.mode = Mode::Call,
                Some(_) => self.mode = Mode::Text,
            }
        }
        match self.mode {
            Mode::Call | Mode::Undecided => None,
            Mode::Text => {
                let valid = match std::str::from_utf8(&self.pending) {
                    Ok(s) => s.len(),
                    Err(e) if e.error_len().is_none() => e.valid_up_to(),
                    // Invalid bytes mid-stream: pass them on replaced.
                    Err(_) => self.pending.len(),
                };
                if valid == 0 {
                    return None;
                }
                let rest = self.pending.split_off(valid);
                let ready = std::mem::replace(&mut self.pending, rest);
                Some(String::from_utf8_lossy(&ready).into_owned())
            }
        }
    }

    /// The text still pending and, for a call, the whole held output.
    fn finish(self) -> (Option<String>, Option<String>) {
        let s = String::from_utf8_lossy(&self.pending).into_owned();
        match self.mode {
            Mode::Call => (None, Some(s)),
            Mode::Text | Mode::Undecided => ((!s.is_empty()).then_some(s), None),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_stream_splits_on_utf8_boundaries() {
        let mut t = TextStream::new(false);
        let e = "é".as_bytes();
        assert_eq!(t.push(b"caf"), Some("caf".to_owned()));
        assert_eq!(t.push(&e[..1]), None);
        assert_eq!(t.push(&e[1..]), Some("é".to_owned()));
        assert_eq!(t.finish(), (None, None));
    }

    #[test]
    fn constrained_output_starting_with_a_brace_is_held() {
        let mut t = TextStream::new(true);
        assert_eq!(t.push(b""), None);
        assert_eq!(t.push(b"{\"tool\""), None);
        assert_eq!(t.push(b": 1}"), None);
        assert_eq!(t.finish(), (None, Some("{\"tool\": 1}".to_owned())));
        let mut t = TextStream::new(true);
        assert_eq!(t.push(b"Hi"), Some("Hi".to_owned()));
        assert_eq!(t.push(b" {x}"), Some(" {x}".to_owned()));
    }
}
