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

use std::sync::Arc;

use evoflux_model::{Message, Request, StreamEvent};
use evoflux_skills::resolver::{
    RESOLVER_SYSTEM_PROMPT, Resolution, ResolverRequest, evaluate_response,
};
use futures_util::StreamExt;

use super::{ActivationSource, ResolverPolicy, SkillRuntime};
use crate::hooks::{Hook, HookContext, HookFuture, ModelCall};

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
            match rt.resolver_policy() {
                ResolverPolicy::ActiveProvider => {}
                ResolverPolicy::Off => return Ok(()),
            }
            if rt.explicit_this_turn() {
                return Ok(());
            }
            let records = rt.records();
            let Some(request) = ResolverRequest::build(&input, ctx.mode(), &records) else {
                rt.set_last_resolution(Resolution::empty());
                return Ok(());
            };
            let mut stream = call.provider.stream(resolver_request(ctx.model, &request));
            let mut answer = String::new();
            let mut failure = None;
            while let Some(event) = stream.next().await {
                match event {
                    Ok(StreamEvent::TextDelta { text }) => answer.push_str(&text),
                    Ok(StreamEvent::Done) => break,
                    Ok(
                        StreamEvent::ToolCallDelta { .. }
                        | StreamEvent::ToolCall { .. }
                        | StreamEvent::InvalidToolCall { .. }
                        | StreamEvent::ProviderItem { .. }
                        | StreamEvent::Stop { .. },
                    ) => {}
                    Ok(StreamEvent::Usage { usage }) => call
                        .side_calls
                        .push((crate::hooks::CallPurpose::SkillResolution, usage)),
                    Err(e) => {
                        failure = Some(e.to_string());
                        break;
                    }
                }
            }
            let mut resolution = match failure {
                Some(why) => Resolution::error(why),
                None => evaluate_response(&request, &answer),
            };
            if let Some(name) = resolution.selected.clone()
                && let Some(record) = rt.record(&name)
                && !rt.is_loaded(&name)
                && let Some(Err(e)) = rt.inject(call, record, ActivationSource::Resolved)
            {
                resolution.detail = Some(format!("{e} [{}]", e.code()));
            }
            rt.set_last_resolution(resolution);
            Ok(())
        })
    }
}
