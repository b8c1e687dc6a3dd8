//! PROMPT_FINALIZATION `skill-catalog-finalizer`: the Tier-1 catalog,
//! appended once per model call after every stable prompt section.
//!
//! The catalog is metadata only (names and descriptions of the
//! implicit-eligible skills, never a body or a path), bounded by
//! [`evoflux_skills::catalog::budget_for`] the model's context window,
//! ranked by the latest user request, then the agent's assigned skills,
//! then alphabetically. It comes last among the system sections because it
//! depends on the request: everything before it stays cacheable.

use std::sync::Arc;

use evoflux_skills::catalog::{CatalogRequest, build_catalog};

use super::{SkillRuntime, latest_user_text};
use crate::hooks::{Hook, HookContext, HookFuture, ModelCall, SystemSection};

/// The owner name of the catalog registration.
pub const OWNER: &str = "skill-catalog-finalizer";

#[derive(Debug)]
pub struct SkillCatalogHook {
    runtime: Arc<SkillRuntime>,
}

impl SkillCatalogHook {
    pub fn new(runtime: Arc<SkillRuntime>) -> Self {
        SkillCatalogHook { runtime }
    }
}

impl Hook for SkillCatalogHook {
    fn before_model<'a>(
        &'a self,
        ctx: &'a HookContext<'a>,
        call: &'a mut ModelCall,
    ) -> HookFuture<'a> {
        let rt = &self.runtime;
        let latest = rt
            .latest_request()
            .or_else(|| latest_user_text(&call.request.messages).map(str::to_owned));
        let records = rt.records();
        let catalog = build_catalog(
            &records,
            &CatalogRequest {
                mode: ctx.mode(),
                context_window_tokens: ctx.context_window,
                latest_request: latest.as_deref(),
                assigned: &ctx.agent.skills,
            },
        );
        if !catalog.text.is_empty() {
            call.system.push(SystemSection {
                owner: OWNER,
                text: catalog.text,
            });
        }
        rt.set_last_catalog(catalog.report);
        Box::pin(async { Ok(()) })
    }
}
