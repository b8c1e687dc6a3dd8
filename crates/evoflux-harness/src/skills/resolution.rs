//! INGRESS `skill-resolution`: the implicit resolver as a pre-model stage.
//!
//! On the first model call of a user turn (and only when no skill was
//! named explicitly) it sends the active provider exactly the latest user
//! request, the mode and the eligible Tier-1 metadata
//! ([`evoflux_skills::resolver::ResolverRequest`]) — never a skill body,
//! never repository or tool output, no tools — and accepts one validated
//! decision. A selected skill not yet loaded is activated with its runtime
//! contract and injected as a `resolved_` pair. Every failure (provider
//! error, unparseable answer, unknown name, low confidence) is recorded
//! and non-fatal: the catalog still lists the skills.
//!
//! `[skills] resolver` decides when: `on` waits for the decision before the
//! turn's first call; `speculative` sends that call at the same time and
//! leaves a [`PendingResolution`] on it, which the loop settles with
//! [`hold`]: "no skill" (the common case) releases the held reply, costing
//! no wait; a skill to load discards the reply unseen, and the call is
//! assembled again with the decision in [`ModelCall::decided_resolution`],
//! so the model answers with the skill loaded, as if it had waited.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use evoflux_core::config::ResolverMode;
use evoflux_model::{EventStream, Message, Provider, Request};
use evoflux_skills::resolver::{
    RESOLVER_SYSTEM_PROMPT, Resolution, ResolverRequest, evaluate_response,
};
use futures_util::StreamExt;

use super::{ActivationSource, SkillRuntime};
use crate::hooks::{CallPurpose, Hook, HookContext, HookFuture, ModelCall, SideCall};

/// The owner name of the resolver registration.
pub const OWNER: &str = "skill-resolution";

#[derive(Debug)]
pub struct SkillResolutionHook {
    runtime: Arc<SkillRuntime>,
}

impl SkillResolutionHook {
    pub fn new(runtime: Arc<SkillRuntime>) -> Self {
        SkillResolutionHook { runtime }
    }
}

/// The provider request of the resolver stage: its system prompt and one
/// user message with the compact JSON input, no tools.
pub fn resolver_request(model: &str, input: &ResolverRequest) -> Request {
    Request::new(
        model,
        vec![
            Message::system(RESOLVER_SYSTEM_PROMPT),
            Message::user(input.user_message()),
        ],
    )
}

/// What the resolver decided, with the calls it made.
#[derive(Debug)]
pub struct Verdict {
    pub resolution: Resolution,
    pub side_calls: Vec<SideCall>,
    /// The decision loads a skill, so a reply made without it is void.
    pub activates: bool,
}

/// A speculative decision still under way. (In a mutex only so the call
/// that carries it can be shared with hooks; nothing locks it twice.)
pub struct PendingResolution(std::sync::Mutex<Pin<Box<dyn Future<Output = Verdict> + Send>>>);

impl std::fmt::Debug for PendingResolution {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PendingResolution")
    }
}

/// How a held reply ended.
pub(crate) enum Held {
    /// The decision needs nothing: the reply as the provider sent it.
    Release(Verdict, EventStream),
    /// The decision loads a skill: the reply is dropped unseen (and its
    /// request cancelled) and the call is made again.
    Discard(Verdict),
}

/// Reads `stream` into a buffer while `pending` decides, so the main
/// request is on the wire during the resolver's round trip.
pub(crate) async fn hold(mut stream: EventStream, pending: PendingResolution) -> Held {
    let mut held = Vec::new();
    let mut ended = false;
    let mut pending = pending
        .0
        .into_inner()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let verdict = loop {
        tokio::select! {
            biased;
            verdict = &mut pending => break verdict,
            event = stream.next(), if !ended => match event {
                Some(event) => held.push(event),
                None => ended = true,
            },
        }
    };
    if verdict.activates {
        return Held::Discard(verdict);
    }
    let held = futures_util::stream::iter(held);
    let rest: EventStream = if ended {
        Box::pin(held)
    } else {
        Box::pin(held.chain(stream))
    };
    Held::Release(verdict, rest)
}

/// Asks `provider` once and evaluates its answer; every failure is a
/// recorded resolution, never an error. The request is made here, before
/// the future is first polled, so it goes out ahead of the turn's call.
fn ask(
    provider: &dyn Provider,
    model: &str,
    other_model: Option<(String, Option<evoflux_core::price::Price>)>,
    input: ResolverRequest,
) -> impl Future<Output = (Resolution, Vec<SideCall>)> + Send + 'static {
    let stream = provider.stream(resolver_request(model, &input));
    async move {
        let answer = crate::side_call::collect(stream).await;
        let side_calls = answer
            .usage
            .into_iter()
            .map(|usage| SideCall {
                purpose: CallPurpose::SkillResolution,
                usage,
                other_model: other_model.clone(),
            })
            .collect();
        let resolution = match answer.failure {
            Some(why) => Resolution::error(why.to_string()),
            None => evaluate_response(&input, &answer.text),
        };
        (resolution, side_calls)
    }
}

/// Whether `resolution` loads a skill this session has not loaded.
fn activates(rt: &SkillRuntime, resolution: &Resolution) -> bool {
    resolution
        .selected
        .as_deref()
        .is_some_and(|name| rt.record(name).is_some() && !rt.is_loaded(name))
}

/// Loads what `resolution` selected into `call` and records the decision.
fn apply(rt: &SkillRuntime, call: &mut ModelCall, mut resolution: Resolution) {
    if let Some(name) = resolution.selected.clone()
        && let Some(record) = rt.record(&name)
        && !rt.is_loaded(&name)
        && let Some(Err(e)) = rt.inject(call, record, ActivationSource::Resolved)
    {
        resolution.detail = Some(format!("{e} [{}]", e.code()));
    }
    rt.set_last_resolution(resolution);
}

impl Hook for SkillResolutionHook {
    fn before_model<'a>(
        &'a self,
        ctx: &'a HookContext<'a>,
        call: &'a mut ModelCall,
    ) -> HookFuture<'a> {
        Box::pin(async move {
            let rt = &self.runtime;
            let Some(input) = call.turn_input.clone() else {
                return Ok(());
            };
            if let Some(decided) = call.decided_resolution.take() {
                apply(rt, call, decided);
                return Ok(());
            }
            let policy = rt.resolver_policy();
            match policy.mode {
                ResolverMode::Off => return Ok(()),
                ResolverMode::On | ResolverMode::Speculative => {}
            }
            if rt.explicit_this_turn() {
                return Ok(());
            }
            let records = rt.records();
            let Some(request) = ResolverRequest::build(&input, ctx.mode(), &records) else {
                rt.set_last_resolution(Resolution::empty());
                return Ok(());
            };
            let asked = match &policy.model {
                Some(m) => ask(
                    m.provider.as_ref(),
                    &m.model,
                    Some((m.model.clone(), m.price)),
                    request,
                ),
                None => ask(call.provider.as_ref(), ctx.model, None, request),
            };
            match policy.mode {
                ResolverMode::Off => {}
                ResolverMode::On => {
                    let (resolution, side_calls) = asked.await;
                    call.side_calls.extend(side_calls);
                    apply(rt, call, resolution);
                }
                ResolverMode::Speculative => {
                    let rt = Arc::clone(&self.runtime);
                    call.pending_resolution = Some(PendingResolution(std::sync::Mutex::new(
                        Box::pin(async move {
                            let (resolution, side_calls) = asked.await;
                            let activates = activates(&rt, &resolution);
                            if !activates {
                                rt.set_last_resolution(resolution.clone());
                            }
                            Verdict {
                                resolution,
                                side_calls,
                                activates,
                            }
                        }),
                    )));
                }
            }
            Ok(())
        })
    }
}
