//! One model call: the request assembled through the hook pipeline, the
//! provider's stream read, the answer and its usage recorded.

use std::sync::Arc;

use evoflux_core::price::Price;
use evoflux_model::{
    EventStream, Message, Provider, ProviderError, ProviderItem, ProviderToolKind, Request,
    StopReason, StreamEvent, ToolCall, ToolChoice, ToolDefinition,
};
use evoflux_skills::resolver::Resolution;
use evoflux_store::RequestParts;
use futures_util::{Stream, StreamExt};
use serde_json::Value;

use super::Harness;
use crate::error::HarnessError;
use crate::events::Event;
use crate::hooks::{ContextStats, ModelCall};
use crate::skills::resolution::PendingResolution;
use crate::terminal::{FINAL_OUTPUT, TerminalOutput};

/// What one model call answered.
#[derive(Debug, Default)]
pub(super) struct ModelAnswer {
    pub(super) text: String,
    /// Every call of the answer, in order, malformed ones included.
    pub(super) calls: Vec<ToolCall>,
    /// Calls whose argument text was not JSON, by call id: answered with
    /// an error the model sees instead of being run.
    pub(super) malformed: Vec<MalformedCall>,
    /// The provider paused its own tools' loop mid-answer: the turn goes
    /// on with another call that sends the answer so far back.
    pub(super) paused: bool,
}

/// A call whose arguments did not parse.
#[derive(Debug)]
pub(super) struct MalformedCall {
    pub(super) call_id: String,
    pub(super) raw_arguments: String,
    pub(super) error: String,
}

impl ModelAnswer {
    pub(super) fn malformed(&self, call_id: &str) -> Option<&MalformedCall> {
        self.malformed.iter().find(|m| m.call_id == call_id)
    }
}

/// The model a session calls: the provider, the model name sent to it,
/// and what its tokens cost (`None` when unknown: its calls are counted
/// as unpriced, never as free).
#[derive(Debug)]
pub(super) struct SessionModel {
    pub(super) provider: Arc<dyn Provider>,
    pub(super) name: String,
    pub(super) price: Option<Price>,
}

/// The tools a model call offers: the session's function tools (with the
/// turn's `final_output` when it must end with one) and the provider's
/// own tools.
struct Offered {
    tools: Vec<ToolDefinition>,
    provider_tools: Vec<ProviderToolKind>,
}

/// What carries from one attempt of a model call to the next: the call is
/// assembled again after a refusal as too long (compacting first) or
/// after the speculative skill resolver discarded a held reply.
#[derive(Default)]
struct Attempts {
    /// A request the provider refuses as too long is assembled once more
    /// with `context_exceeded` set, so the compaction owner compacts
    /// before the one retry.
    context_exceeded: bool,
    /// The turn's input as the first attempt took it, for the recorded
    /// request parts (and restored for an attempt after a discard).
    turn_input: Option<String>,
    /// The speculative resolver's decision to load a skill, for the
    /// attempt after the one it discarded.
    decided: Option<Resolution>,
}

/// An assembled call split into what goes to the provider and what is
/// recorded of it.
struct Outgoing {
    /// The request, the system prompt first.
    request: Request,
    /// What this call is given beyond the transcript.
    sent: RequestParts,
    /// The speculative resolver's decision, still under way.
    pending: Option<PendingResolution>,
    stats: ContextStats,
}

/// The provider's reply, as [`Harness::send`] leaves it: its first event
/// already read (to catch a refusal as too long), the rest still
/// streaming.
struct Reply {
    first: Option<Result<StreamEvent, ProviderError>>,
    rest: EventStream,
    stats: ContextStats,
    sent: RequestParts,
}

/// What the reply's stream held, read to its end.
struct Streamed {
    answer: ModelAnswer,
    provider_items: Vec<ProviderItem>,
    usage: Option<evoflux_model::Usage>,
    stop: StopReason,
}

impl Harness {
    /// One model call: hooks, provider stream, persistence, usage.
    ///
    /// The phases: the tools offered, the call sent (assembled through the
    /// hook pipeline, attempted again where it must be), its reply
    /// consumed, and the answer recorded.
    pub(super) async fn call_model(
        &mut self,
        terminal: Option<&TerminalOutput>,
    ) -> Result<ModelAnswer, HarnessError> {
        let offered = self.offered_definitions(terminal);
        let reply = self.send(terminal, &offered).await?;
        let stream = futures_util::stream::iter(reply.first).chain(reply.rest);
        let streamed = self.consume(stream, &reply.stats).await?;
        self.record_answer(streamed, &reply.stats, &reply.sent)
            .await
    }

    /// The tools this call offers, once the skill tools are in step: the
    /// session's offered function tools — without its own `final_output`
    /// when the turn's `terminal` one replaces it — and the provider's
    /// own offered tools.
    fn offered_definitions(&mut self, terminal: Option<&TerminalOutput>) -> Offered {
        self.sync_skill_tools();
        let mut tools: Vec<ToolDefinition> = self
            .tools
            .iter()
            .filter(|t| self.offered(t))
            .filter(|t| terminal.is_none() || t.definition.name != FINAL_OUTPUT)
            .filter_map(|t| t.function_definition())
            .collect();
        // Earlier-offered tools keep their places; new ones go last.
        for t in &tools {
            if !self.tool_order.contains(&t.name) {
                self.tool_order.push(t.name.clone());
            }
        }
        tools.sort_by_key(|t| {
            self.tool_order
                .iter()
                .position(|n| *n == t.name)
                .unwrap_or(usize::MAX)
        });
        let provider_tools = self.tools.provider_tools(|t| self.offered(t));
        if let Some(t) = terminal {
            tools.push(t.tool_definition());
        }
        Offered {
            tools,
            provider_tools,
        }
    }

    /// Sends the call, attempting it again until the provider takes it: a
    /// request that cannot fit, or that the provider refuses as too long,
    /// is compacted once and retried; a reply the skill resolver
    /// discards is asked for again with its decision applied.
    async fn send(
        &mut self,
        terminal: Option<&TerminalOutput>,
        offered: &Offered,
    ) -> Result<Reply, HarnessError> {
        let mut attempts = Attempts::default();
        loop {
            let (call, resolved) = self.assemble_call(terminal, offered, &mut attempts).await?;
            if !self.fits_window(&call, &mut attempts)? {
                continue;
            }
            // A hook's activation may have turned tools on for this call.
            self.sync_skill_tools();
            let outgoing = self.outgoing(call, terminal, &attempts, resolved);
            let mut stream = self.model.provider.stream(outgoing.request);
            if let Some(pending) = outgoing.pending {
                match self
                    .settle_resolution(stream, pending, &mut attempts)
                    .await?
                {
                    Some(held) => stream = held,
                    None => continue,
                }
            }
            let first = stream.next().await;
            match first {
                Some(Err(ProviderError::ContextExceeded { .. })) if !attempts.context_exceeded => {
                    attempts.context_exceeded = true;
                }
                first => {
                    break Ok(Reply {
                        first,
                        rest: stream,
                        stats: outgoing.stats,
                        sent: outgoing.sent,
                    });
                }
            }
        }
    }

    /// One attempt's call, assembled through the hook pipeline from the
    /// transcript and the offered tools (with the skill the resolver
    /// loaded for it, if any). What the hooks made durable is persisted,
    /// the calls they made are counted, and a compaction is reported.
    async fn assemble_call(
        &mut self,
        terminal: Option<&TerminalOutput>,
        offered: &Offered,
        attempts: &mut Attempts,
    ) -> Result<(ModelCall, Option<String>), HarnessError> {
        let mut call = ModelCall::new(
            Request {
                // A turn that must end with final_output ends only
                // through a tool call, so no call of it may end in text.
                tool_choice: match terminal {
                    Some(_) => ToolChoice::Required,
                    None => ToolChoice::Auto,
                },
                ..Request::new(self.model.name.clone(), self.recorder.messages.clone())
                    .with_tools(offered.tools.clone())
                    .with_provider_tools(offered.provider_tools.clone())
                    .with_cache_key(self.session.id.to_string())
            },
            self.model.provider.clone(),
        );
        call.result_metadata = self.recorder.result_metadata.clone();
        // A compaction the user asked for forces the first call's.
        call.context_exceeded =
            attempts.context_exceeded || std::mem::take(&mut self.turn.compact_next);
        call.turn_input = self.turn.input.take();
        call.decided_resolution = attempts.decided.take();
        if call.turn_input.is_some() {
            attempts.turn_input.clone_from(&call.turn_input);
        }
        let ctx = self.ctx();
        self.pipeline.before_model(&ctx, &mut call).await?;
        let durable = std::mem::take(&mut call.durable);
        let resolved = resolved_skill(&durable);
        self.recorder.persist_durable(durable).await?;
        self.record_side_calls(std::mem::take(&mut call.side_calls))
            .await?;
        if let Some(c) = call.compacted.take() {
            self.emit(&Event::ContextCompacted {
                reason: serde_json::to_value(c.reason).unwrap_or(Value::Null),
                covered_messages: c.covered_messages,
                dropped_skill_calls: c.dropped_skill_calls,
            });
        }
        Ok((call, resolved))
    }

    /// Whether `call` may be sent: never what clearly cannot fit — it is
    /// compacted once more (`false`: assemble it again), then refused.
    /// (Tokens are estimated at 4 bytes, which over-counts some text, so
    /// only a request half again past the window is refused; the
    /// provider's own refusal covers the rest.)
    fn fits_window(&self, call: &ModelCall, attempts: &mut Attempts) -> Result<bool, HarnessError> {
        let Some(window) = self.model.provider.context_window() else {
            return Ok(true);
        };
        let estimate = crate::compaction::estimate_call_tokens(call);
        if estimate <= window.saturating_mul(3) / 2 {
            return Ok(true);
        }
        if !attempts.context_exceeded {
            attempts.context_exceeded = true;
            return Ok(false);
        }
        Err(HarnessError::RequestTooLarge { estimate, window })
    }

    /// The assembled `call` as the provider gets it (the hooks' system
    /// sections joined into one system message, first) and as it is
    /// recorded once the reply is in: what it was given beyond the
    /// transcript, so the session can be exported as a script and
    /// replayed (`crate::replay`).
    fn outgoing(
        &self,
        mut call: ModelCall,
        terminal: Option<&TerminalOutput>,
        attempts: &Attempts,
        resolved: Option<String>,
    ) -> Outgoing {
        let system: Vec<&str> = call
            .system
            .iter()
            .map(|s| s.text.as_str())
            .filter(|t| !t.is_empty())
            .collect();
        let pending = call.pending_resolution.take();
        let mut request = call.request;
        let sent = RequestParts {
            day: self.clock.today(),
            system: call
                .system
                .iter()
                .filter(|s| !s.text.is_empty())
                .map(|s| evoflux_store::SystemPart {
                    owner: s.owner.to_owned(),
                    text: s.text.clone(),
                })
                .collect(),
            tools: request.tools.clone(),
            input: evoflux_model::scripted::trailing_input(&request.messages).to_vec(),
            turn_output_schema: attempts
                .turn_input
                .as_ref()
                .and(terminal)
                .map(|t| t.schema().clone()),
            turn_input: attempts.turn_input.clone(),
            shaping: self.prompt_shaping(resolved),
        };
        if !system.is_empty() {
            request
                .messages
                .insert(0, Message::system(system.join("\n\n")));
            if let Some(anchor) = &mut request.cache.anchor {
                *anchor += 1;
            }
        }
        Outgoing {
            request,
            sent,
            pending,
            stats: call.stats,
        }
    }

    /// Holds the reply back while the speculative skill resolver decides:
    /// released as the provider sent it, or (`None`) discarded so the call
    /// is made again with the resolver's decision — and the turn's input,
    /// which the next attempt's hooks take again. The resolver's own calls
    /// are counted either way.
    async fn settle_resolution(
        &mut self,
        stream: EventStream,
        pending: PendingResolution,
        attempts: &mut Attempts,
    ) -> Result<Option<EventStream>, HarnessError> {
        use crate::skills::resolution::{Held, hold};
        match hold(stream, pending).await {
            Held::Release(verdict, held) => {
                self.record_side_calls(verdict.side_calls).await?;
                Ok(Some(held))
            }
            Held::Discard(verdict) => {
                self.record_side_calls(verdict.side_calls).await?;
                attempts.decided = Some(verdict.resolution);
                self.turn.input.clone_from(&attempts.turn_input);
                Ok(None)
            }
        }
    }

    /// Reads the reply to its end: text streamed out as it comes, tool
    /// calls (a malformed one kept with its parse error), the provider's
    /// own items, the usage and the stop reason. A stream that fails after
    /// its usage came was still served and billed: its usage is counted
    /// before the error returns.
    async fn consume(
        &mut self,
        mut stream: impl Stream<Item = Result<StreamEvent, ProviderError>> + Unpin,
        stats: &ContextStats,
    ) -> Result<Streamed, HarnessError> {
        let mut answer = ModelAnswer::default();
        let mut provider_items = Vec::new();
        let mut usage = None;
        let mut stop = StopReason::EndTurn;
        while let Some(event) = stream.next().await {
            let event = match event {
                Ok(event) => event,
                Err(e) => {
                    // A call that failed after its usage came (an empty
                    // reply) was still served and billed: count it.
                    if let Some(u) = usage {
                        let call_usage = self.call_usage(u, stats, self.model.price.as_ref());
                        if let Err(store) = self.count_usage(call_usage).await {
                            tracing::warn!(error = %store, "cannot count a failed call's usage");
                        }
                    }
                    return Err(e.into());
                }
            };
            match event {
                StreamEvent::TextDelta { text: delta } => {
                    self.emit(&Event::MessageDelta {
                        text: delta.clone(),
                    });
                    answer.text.push_str(&delta);
                }
                StreamEvent::ToolCallDelta { .. } => {}
                StreamEvent::ToolCall { call } => answer.calls.push(call),
                StreamEvent::InvalidToolCall {
                    call,
                    raw_arguments,
                    error,
                } => {
                    answer.malformed.push(MalformedCall {
                        call_id: call.id.clone(),
                        raw_arguments,
                        error,
                    });
                    answer.calls.push(call);
                }
                StreamEvent::ProviderItem { item } => {
                    match &item {
                        ProviderItem::WebSearch(search) => self.emit(&Event::WebSearch {
                            search: search.clone(),
                        }),
                        ProviderItem::Citation(citation) => self.emit(&Event::Citation {
                            citation: citation.clone(),
                        }),
                        ProviderItem::Reasoning { .. } | ProviderItem::AnthropicBlock { .. } => {}
                    }
                    provider_items.push(item);
                }
                StreamEvent::Usage { usage: u } => usage = Some(u),
                StreamEvent::Stop { reason } => stop = reason,
                StreamEvent::Done => break,
            }
        }
        Ok(Streamed {
            answer,
            provider_items,
            usage,
            stop,
        })
    }

    /// Records the answer: the pipeline's after-model hooks see it, and the
    /// reply, what the request carried (for export and replay) and the
    /// call's usage are stored together, then counted and reported.
    async fn record_answer(
        &mut self,
        streamed: Streamed,
        stats: &ContextStats,
        sent: &RequestParts,
    ) -> Result<ModelAnswer, HarnessError> {
        let Streamed {
            mut answer,
            provider_items,
            usage,
            stop,
        } = streamed;
        let message = Message::Assistant {
            content: answer.text.clone(),
            tool_calls: answer.calls.clone(),
            provider_items,
        };
        let completion = evoflux_model::Completion {
            message: message.clone(),
            usage,
            stop,
        };
        answer.paused = stop == StopReason::Paused;
        self.pipeline.after_model(&self.ctx(), &completion);
        let call_usage =
            self.call_usage(usage.unwrap_or_default(), stats, self.model.price.as_ref());
        // The reply, what the request carried (for export and replay) and
        // the call's usage are stored together.
        self.recorder
            .record_reply(message, sent, call_usage)
            .await?;
        self.usage.recorded(&call_usage);
        self.emit(&Event::ModelCallCompleted {
            model: self.model.name.clone(),
            purpose: crate::hooks::CallPurpose::Turn,
            usage: call_usage,
        });
        Ok(answer)
    }

    /// What shaped this call's prompt beyond its parts, recorded with them
    /// so a replay can set each again (`resolved`: the skill the resolver
    /// loaded for this call).
    fn prompt_shaping(&self, resolved: Option<String>) -> evoflux_store::PromptShaping {
        let skills = self.skills.as_deref();
        evoflux_store::PromptShaping {
            model: Some(
                self.session
                    .model
                    .clone()
                    .unwrap_or_else(|| self.model.name.clone()),
            ),
            context_window: self.model.provider.context_window(),
            catalog_budget_bytes: skills
                .and_then(crate::skills::SkillRuntime::last_catalog)
                .map(|c| u64::try_from(c.budget_bytes).unwrap_or(u64::MAX)),
            resolver: skills.map(|s| s.resolver_policy().mode),
            resolved,
        }
    }

    /// Adds one call's usage to the session's stored total and to the
    /// turn's ledger.
    async fn count_usage(&mut self, usage: evoflux_store::Usage) -> Result<(), HarnessError> {
        self.recorder
            .store
            .add_usage(self.session.id, usage)
            .await?;
        self.usage.recorded(&usage);
        Ok(())
    }

    /// Counts calls a pre-model stage made (the skill resolver's) with the
    /// session's usage, each at its own model's price.
    async fn record_side_calls(
        &mut self,
        calls: Vec<crate::hooks::SideCall>,
    ) -> Result<(), HarnessError> {
        for call in calls {
            let (model, price) = match call.other_model {
                Some((model, price)) => (model, price),
                None => (self.model.name.clone(), self.model.price),
            };
            let usage = self.call_usage(
                call.usage,
                &crate::hooks::ContextStats::default(),
                price.as_ref(),
            );
            self.count_usage(usage).await?;
            self.emit(&Event::ModelCallCompleted {
                model,
                purpose: call.purpose,
                usage,
            });
        }
        Ok(())
    }

    /// One call's usage as the store keeps it ([`call_usage`]).
    fn call_usage(
        &self,
        u: evoflux_model::Usage,
        stats: &crate::hooks::ContextStats,
        price: Option<&evoflux_core::price::Price>,
    ) -> evoflux_store::Usage {
        call_usage(u, stats, price)
    }
}

/// The skill the implicit resolver loaded among `durable` (the messages a
/// call's hooks added), by the activation record beside its result.
fn resolved_skill(durable: &[crate::hooks::DurableMessage]) -> Option<String> {
    durable.iter().find_map(|d| {
        let record = d.metadata.as_ref()?.skill_activation.as_deref()?;
        match record.source {
            crate::skills::ActivationSource::Resolved => Some(record.skill.clone()),
            crate::skills::ActivationSource::Configured
            | crate::skills::ActivationSource::Explicit
            | crate::skills::ActivationSource::Tool => None,
        }
    })
}

/// One call's usage as the store keeps it: its tokens and what they
/// cost at `price`.
pub(super) fn call_usage(
    u: evoflux_model::Usage,
    stats: &crate::hooks::ContextStats,
    price: Option<&evoflux_core::price::Price>,
) -> evoflux_store::Usage {
    let tokens = evoflux_store::Usage {
        requests: 1,
        input_tokens: u.input_tokens,
        output_tokens: u.output_tokens,
        cache_read_tokens: u.cached_input_tokens,
        cache_write_tokens: u.cache_write_input_tokens,
        projected_results: stats.projected_results,
        projection_saved_chars: stats.projection_saved_chars,
        ..evoflux_store::Usage::default()
    };
    match price {
        Some(price) => evoflux_store::Usage {
            cost_usd: price.cost(&evoflux_core::price::TokenCounts {
                web_searches: u.web_search_requests,
                ..tokens.tokens()
            }),
            ..tokens
        },
        None => evoflux_store::Usage {
            unpriced_requests: 1,
            ..tokens
        },
    }
}
