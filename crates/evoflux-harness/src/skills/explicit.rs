//! INGRESS `explicit-skill-selection`: `$name` and `/skill:name` in the
//! user's message activate those skills right after the message.
//!
//! Parsing and eligibility (valid, user-invocable, in the mode; unknown
//! names ignored) are `evoflux_skills::invocation`'s. A manual-only skill
//! (implicit invocation off) is addressable here. Any pick — even of a
//! skill already loaded — suppresses the implicit resolver for the turn.

use std::sync::Arc;

use evoflux_skills::invocation::select_explicit;

use super::{ActivationSource, SkillRuntime};
use crate::hooks::{Hook, HookContext, HookFuture, ModelCall};

/// The owner name of the explicit-selection registration.
pub const OWNER: &str = "explicit-skill-selection";

#[derive(Debug)]
pub struct ExplicitSkillSelectionHook {
    runtime: Arc<SkillRuntime>,
}

impl ExplicitSkillSelectionHook {
    pub fn new(runtime: Arc<SkillRuntime>) -> Self {
        ExplicitSkillSelectionHook { runtime }
    }
}

impl Hook for ExplicitSkillSelectionHook {
    fn before_model<'a>(
        &'a self,
        ctx: &'a HookContext<'a>,
        call: &'a mut ModelCall,
    ) -> HookFuture<'a> {
        let rt = &self.runtime;
        if let Some(input) = call.turn_input.clone() {
            rt.note_request(&input);
            let records = rt.records();
            let selection = select_explicit(&input, &records, ctx.mode());
            rt.set_explicit_this_turn(selection.suppresses_resolver());
            for (record, _) in selection.skills {
                if !rt.is_loaded(&record.name) {
                    let _ = rt.inject(call, record, ActivationSource::Explicit);
                }
            }
        }
        Box::pin(async { Ok(()) })
    }
}
