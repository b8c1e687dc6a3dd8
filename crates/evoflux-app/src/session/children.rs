//! What a session is opened with beyond its lead, kept for the children
//! its dispatches open: the models (the lead's, a member's own, the skill
//! resolver's) with their prices, and the skill runtime's inputs.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use evoflux_core::AppMode;
use evoflux_core::config::{self as core_config, ModelRef, ParseModelRefError, ProviderKind};
use evoflux_core::dirs::Dirs;
use evoflux_graph::CompiledGraph;
use evoflux_harness::hooks::{HookError, PipelineOptions, standard_pipeline};
use evoflux_harness::skills::{ResolverPolicy, SkillRuntime};
use evoflux_harness::{ChildFactory, ChildModel, HookPipeline};

use super::{ModelOrigin, SessionError};

/// Builds child sessions' models and pipelines from what the parent was
/// opened with.
#[derive(Debug)]
pub(super) struct BuilderChildren {
    pub(super) config: core_config::HarnessConfig,
    /// The user's own instruction files, which a child reads as its lead.
    pub(super) user_instructions: evoflux_harness::workspace_instructions::UserFiles,
    pub(super) cwd: PathBuf,
    pub(super) provider_options: evoflux_model::ProviderOptions,
    pub(super) parent: ChildModel,
    pub(super) skills: SkillInputs,
    /// The lead's: a child's skills are resolved the same way.
    pub(super) resolver: ResolverPolicy,
}

impl ChildFactory for BuilderChildren {
    fn model(
        &self,
        agent: &evoflux_agents::team::EffectiveAgentConfig,
    ) -> Result<ChildModel, String> {
        let Some(model) = &agent.model else {
            return Ok(self.parent.clone());
        };
        let model_ref: ModelRef = model
            .parse()
            .map_err(|e: ParseModelRefError| e.to_string())?;
        let provider =
            evoflux_model::resolve(&model_ref, &self.config, &self.cwd, &self.provider_options)
                .map_err(|e| e.to_string())?;
        let price = price_of(&self.config, &model_ref, provider.kind());
        Ok(ChildModel {
            provider: Arc::from(provider),
            model: model_ref.model.clone(),
            label: model_ref.to_string(),
            price,
        })
    }

    fn parts(&self, mode: AppMode) -> Result<(HookPipeline, Option<Arc<SkillRuntime>>), HookError> {
        let skills = self.skills.runtime(mode, self.resolver.clone());
        let pipeline = standard_pipeline(PipelineOptions {
            on_compacted: Some(skills.compaction_listener()),
            skills: Some(skills.clone()),
            instructions: evoflux_harness::workspace_instructions::InstructionFiles::from_compat(
                self.config.compat.instructions,
            ),
            user_instructions: self.user_instructions.clone(),
            ..PipelineOptions::new(mode)
        })?;
        Ok((pipeline, Some(skills)))
    }
}

/// The session's implicit skill resolver, from `[skills]`. Unset, it is
/// speculative when the model that decides is a remote one, and off for a
/// scripted provider (its script is the main conversation, with no answers
/// to spare for a side call) and the embedded local demo model (too small
/// for a reliable decision).
pub(super) fn resolver_policy(
    loaded: &core_config::LoadedConfig,
    session: ProviderKind,
    model_dir: &Path,
    provider_options: &evoflux_model::ProviderOptions,
) -> Result<ResolverPolicy, SessionError> {
    let skills = &loaded.config.skills;
    let model = match &skills.resolver_model {
        Some(model_ref) => {
            let provider: Arc<dyn evoflux_model::Provider> = Arc::from(
                evoflux_model::resolve(model_ref, &loaded.config, model_dir, provider_options)
                    .map_err(|source| SessionError::Provider {
                        model: model_ref.clone(),
                        origin: ModelOrigin::SkillResolver,
                        source,
                    })?,
            );
            Some(evoflux_harness::skills::ResolverModel {
                price: price_of(&loaded.config, model_ref, provider.kind()),
                provider,
                model: model_ref.model.clone(),
            })
        }
        None => None,
    };
    let decider = model.as_ref().map_or(session, |m| m.provider.kind());
    let mode = skills.resolver.unwrap_or(if decider.is_remote() {
        core_config::ResolverMode::Speculative
    } else {
        core_config::ResolverMode::Off
    });
    Ok(ResolverPolicy { mode, model })
}

/// What `model` costs by the configured and built-in prices.
pub(super) fn price_of(
    config: &core_config::HarnessConfig,
    model: &ModelRef,
    kind: evoflux_core::config::ProviderKind,
) -> Option<evoflux_core::price::Price> {
    config
        .price_table()
        .lookup(&model.provider, kind, &model.model)
        .map(|(price, _)| price)
}

/// What a session's skill runtime is built from: the graph's skill slots
/// with the user's preferences applied. Read once per opened session and
/// reused for every child it dispatches.
#[derive(Debug, Clone)]
pub(super) struct SkillInputs {
    slots: Vec<evoflux_skills::selection::SkillSlot>,
    placeholders: evoflux_skills::PlaceholderDirs,
}

impl SkillInputs {
    pub(super) fn read(dirs: &Dirs, graph: &CompiledGraph) -> SkillInputs {
        let overlay = evoflux_skills::SkillSettingsStore::in_config_dir(dirs.config_dir()).read();
        let options = evoflux_skills::LoadOptions::new(
            evoflux_skills::PlaceholderDirs::from_config_dir(dirs.config_dir()),
        );
        let (slots, _) = evoflux_skills::selection::skill_slots(
            graph,
            &options,
            &overlay,
            evoflux_skills::selection::Depth::Settled,
        );
        SkillInputs {
            slots,
            placeholders: options.placeholders,
        }
    }

    /// The runtime of one session.
    pub(super) fn runtime(&self, mode: AppMode, resolver: ResolverPolicy) -> Arc<SkillRuntime> {
        Arc::new(SkillRuntime::new(
            &self.slots,
            mode,
            self.placeholders.clone(),
            resolver,
        ))
    }
}
