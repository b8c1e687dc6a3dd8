//! One model call: the request assembled through the hook pipeline, the
//! provider's stream read, the answer and its usage recorded.

use evoflux_model::{Message, ProviderItem, Request, StreamEvent, ToolCall, ToolChoice};
use futures_util::StreamExt;
use serde_json::Value;

use super::Harness;
use crate::error::HarnessError;
use crate::events::Event;
use crate::hooks::ModelCall;
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

impl Harness {
    /// One model call: hooks, provider stream, persistence, usage.
    pub(super) async fn call_model(
        &mut self,
        terminal: Option<&TerminalOutput>,
    ) -> Result<ModelAnswer, HarnessError> {
        self.sync_skill_tools();
        let mut tools: Vec<evoflux_model::ToolDefinition> = self
            .tools
            .iter()
            .filter(|t| self.offered(t))
            .filter(|t| terminal.is_none() || t.definition.name != FINAL_OUTPUT)
            .filter_map(|t| t.function_definition())
            .collect();
        let provider_tools = self.tools.provider_tools(|t| self.offered(t));
        if let Some(t) = terminal {
            tools.push(t.tool_definition());
        }
        // A request the provider refuses as too long is assembled once more
        // with `context_exceeded` set, so the compaction owner compacts
        // before the one retry.
        let mut context_exceeded = false;
        let mut sent;
        let mut turn_input = None;
        // The speculative resolver's decision to load a skill, for the
        // attempt after the one it discarded.
        let mut decided = None;
        let (mut stream, stats) = loop {
            let mut call = ModelCall::new(
                Request {
                    // A turn that must end with final_output ends only
                    // through a tool call, so no call of it may end in text.
                    tool_choice: match terminal {
                        Some(_) => ToolChoice::Required,
                        None => ToolChoice::Auto,
                    },
                    ..Request::new(self.model.clone(), self.recorder.messages.clone())
                        .with_tools(tools.clone())
                        .with_provider_tools(provider_tools.clone())
                        .with_cache_key(self.session.id.to_string())
                },
                self.provider.clone(),
            );
            call.result_metadata = self.recorder.result_metadata.clone();
            // A compaction the user asked for forces the first call's.
            call.context_exceeded = context_exceeded || std::mem::take(&mut self.compact_next);
            call.turn_input = self.turn_input.take();
            call.decided_resolution = decided.take();
            if call.turn_input.is_some() {
                turn_input.clone_from(&call.turn_input);
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
            // Never send what clearly cannot fit: compact once more, then
            // refuse. (Tokens are estimated at 4 bytes, which over-counts
            // some text, so only a request half again past the window is
            // refused; the provider's own refusal covers the rest.)
            if let Some(window) = self.provider.context_window() {
                let estimate = crate::compaction::estimate_call_tokens(&call);
                if estimate > window.saturating_mul(3) / 2 {
                    if !context_exceeded {
                        context_exceeded = true;
                        continue;
                    }
                    return Err(HarnessError::RequestTooLarge { estimate, window });
                }
            }
            // A hook's activation may have turned tools on for this call.
            self.sync_skill_tools();
            let system: Vec<&str> = call
                .system
                .iter()
                .map(|s| s.text.as_str())
                .filter(|t| !t.is_empty())
                .collect();
            let pending = call.pending_resolution.take();
            let mut request = call.request;
            // What this call is given beyond the transcript, recorded once
            // the reply is in: the session can then be exported as a
            // script and replayed (`crate::replay`).
            sent = evoflux_store::RequestParts {
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
                turn_output_schema: turn_input
                    .as_ref()
                    .and(terminal)
                    .map(|t| t.schema().clone()),
                turn_input: turn_input.clone(),
                shaping: self.prompt_shaping(resolved),
            };
            if !system.is_empty() {
                request
                    .messages
                    .insert(0, Message::system(system.join("\n\n")));
            }
            let mut stream = self.provider.stream(request);
            if let Some(pending) = pending {
                use crate::skills::resolution::{Held, hold};
                match hold(stream, pending).await {
                    Held::Release(verdict, held) => {
                        self.record_side_calls(verdict.side_calls).await?;
                        stream = held;
                    }
                    Held::Discard(verdict) => {
                        self.record_side_calls(verdict.side_calls).await?;
                        decided = Some(verdict.resolution);
                        self.turn_input.clone_from(&turn_input);
                        continue;
                    }
                }
            }
            let first = stream.next().await;
            match first {
                Some(Err(evoflux_model::ProviderError::ContextExceeded { .. }))
                    if !context_exceeded =>
                {
                    context_exceeded = true;
                }
                first => break (futures_util::stream::iter(first).chain(stream), call.stats),
            }
        };
        let mut answer = ModelAnswer::default();
        let mut provider_items = Vec::new();
        let mut usage = None;
        let mut stop = evoflux_model::StopReason::EndTurn;
        while let Some(event) = stream.next().await {
            let event = match event {
                Ok(event) => event,
                Err(e) => {
                    // A call that failed after its usage came (an empty
                    // reply) was still served and billed: count it.
                    if let Some(u) = usage {
                        let call_usage = self.call_usage(u, &stats, self.price.as_ref());
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
        answer.paused = stop == evoflux_model::StopReason::Paused;
        self.pipeline.after_model(&self.ctx(), &completion);
        let call_usage = self.call_usage(usage.unwrap_or_default(), &stats, self.price.as_ref());
        // The reply, what the request carried (for export and replay) and
        // the call's usage are stored together.
        self.recorder
            .record_reply(message, &sent, call_usage)
            .await?;
        self.usage.recorded(&call_usage);
        self.emit(&Event::ModelCallCompleted {
            model: self.model.clone(),
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
                    .unwrap_or_else(|| self.model.clone()),
            ),
            context_window: self.provider.context_window(),
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
                None => (self.model.clone(), self.price),
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

    /// One call's usage as the store keeps it: its tokens and what they
    /// cost at `price`.
    fn call_usage(
        &self,
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
