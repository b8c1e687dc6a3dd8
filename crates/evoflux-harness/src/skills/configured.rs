//! INGRESS `configured-skills`: the agent's assigned skills (`skills:`)
//! preloaded as exact activation pairs before the session's first model
//! call — the only unconditional preload.
//!
//! Each assigned skill that is valid in the mode and not loaded yet (a
//! resumed session already has its pairs) is activated with its runtime
//! contract and written to the transcript like any call. The total is
//! bounded by [`super::CONFIGURED_PRELOAD_BUDGET_BYTES`]; a skill that does
//! not fit is skipped whole, never truncated, and stays loadable on demand.

use std::sync::Arc;

use evoflux_skills::activation::Activation;

use super::{ActivationSource, CONFIGURED_PRELOAD_BUDGET_BYTES, SkillRuntime};
use crate::hooks::{Hook, HookContext, HookFuture, ModelCall};

/// The owner name of the preload registration.
pub const OWNER: &str = "configured-skills";

#[derive(Debug)]
pub struct ConfiguredSkillsHook {
    runtime: Arc<SkillRuntime>,
}

impl ConfiguredSkillsHook {
    pub fn new(runtime: Arc<SkillRuntime>) -> Self {
        ConfiguredSkillsHook { runtime }
    }
}

impl Hook for ConfiguredSkillsHook {
    fn before_model<'a>(
        &'a self,
        ctx: &'a HookContext<'a>,
        call: &'a mut ModelCall,
    ) -> HookFuture<'a> {
        let rt = &self.runtime;
        if rt.begin_configured() {
            let mut used = 0usize;
            for name in &ctx.agent.skills {
                let Some(record) = rt.record(name) else {
                    continue;
                };
                if rt.is_loaded(&record.name) {
                    continue;
                }
                // Measure before applying: an oversized skill is skipped
                // without touching the session.
                let fits = rt
                    .prepare(record)
                    .ok()
                    .map(|a: Activation| a.render().len())
                    .is_some_and(|bytes| used + bytes <= CONFIGURED_PRELOAD_BUDGET_BYTES);
                if !fits {
                    continue;
                }
                if let Some(Ok(bytes)) = rt.inject(call, record, ActivationSource::Configured) {
                    used += bytes;
                }
            }
        }
        Box::pin(async { Ok(()) })
    }
}
