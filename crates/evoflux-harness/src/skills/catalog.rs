//! PROMPT_FINALIZATION `skill-catalog-finalizer`: the Tier-1 catalog,
//! appended once per model call after every stable prompt section.
//!
//! The catalog is metadata only (names and descriptions of the
//! implicit-eligible skills, never a body or a path), bounded by
//! [`evoflux_skills::catalog::budget_for`] the model's context window,
//! ranked by the session's first request, then the agent's assigned
//! skills, then alphabetically. It is built once per session and sent
//! byte-identical on every later call, so the system prompt — the start
//! of every request's cached prefix — never changes under the session;
//! only a change of what it is built from (the model's window, the mode,
//! the assigned skills) builds it again. It comes last among the system
//! sections all the same.

use std::sync::{Arc, Mutex};

use evoflux_core::AppMode;
use evoflux_skills::catalog::{CatalogRequest, build_catalog};

use super::{SkillRuntime, latest_user_text};
use crate::hooks::{Hook, HookContext, HookFuture, ModelCall, SystemSection};

/// The owner name of the catalog registration.
pub const OWNER: &str = "skill-catalog-finalizer";

#[derive(Debug)]
pub struct SkillCatalogHook {
    runtime: Arc<SkillRuntime>,
    /// The session's catalog and what it was built for.
    fixed: Mutex<Option<Fixed>>,
}

/// A catalog kept for the session (its report is the runtime's
/// [`SkillRuntime::last_catalog`]).
#[derive(Debug)]
struct Fixed {
    built_for: (AppMode, Option<u64>, Vec<String>),
    text: String,
}

impl SkillCatalogHook {
    pub fn new(runtime: Arc<SkillRuntime>) -> Self {
        SkillCatalogHook {
            runtime,
            fixed: Mutex::new(None),
        }
    }
}

impl Hook for SkillCatalogHook {
    fn before_model<'a>(
        &'a self,
        ctx: &'a HookContext<'a>,
        call: &'a mut ModelCall,
    ) -> HookFuture<'a> {
        let rt = &self.runtime;
        let built_for = (ctx.mode(), ctx.context_window, ctx.agent.skills.clone());
        let Ok(mut fixed) = self.fixed.lock() else {
            return Box::pin(async { Ok(()) });
        };
        if fixed.as_ref().is_none_or(|f| f.built_for != built_for) {
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
            rt.set_last_catalog(catalog.report);
            *fixed = Some(Fixed {
                built_for,
                text: catalog.text,
            });
        }
        if let Some(f) = fixed.as_ref()
            && !f.text.is_empty()
        {
            call.system.push(SystemSection {
                owner: OWNER,
                text: f.text.clone(),
            });
        }
        Box::pin(async { Ok(()) })
    }
}
