//! Skills in the loop: the session's skill runtime and the hook owners that
//! put skills in front of the model.
//!
//! [`SkillRuntime`] is the one piece of per-session skill state, shared (as
//! an `Arc`) by the hook owners and the `skill` tool executor:
//!
//! * the runtime projection of the compiled graph's skill slots for the
//!   session's mode (valid, in-mode, one record per name) and, for precise
//!   answers about the others, every candidate;
//! * the **loaded markers**: which skills have an exact activation pair the
//!   model can see. They are rebuilt from the durable transcript on resume
//!   (a successful call of the tool whose presentation is
//!   [`Presentation::Skill`], never a name match) and cleared by compaction
//!   through [`SkillRuntime::forget_loaded`] so a skill whose pair left the
//!   model's view can be loaded exactly again;
//! * the **runtime contract** of each activation: the built-in tools it
//!   declared. Loading validates all of them first and activates them all
//!   (a deferred or not-offered tool joins the session) or none.
//!
//! The owners, each in its own module: [`configured`] (assigned skills
//! preloaded before the session's first model call, the only
//! unconditional preload), [`explicit`] (`$name` / `/skill:name` right
//! after the user message), [`resolution`] (the implicit resolver as a
//! pre-model stage) and [`catalog`] (the Tier-1 catalog after the stable
//! prompt sections). The executor of the `skill` tool is [`tool`].
//!
//! Activations the hooks make are written to the durable transcript as an
//! assistant tool call of the skill tool plus its result — the same shape a
//! model-initiated load has — so they survive a restart and compaction can
//! recognize them.

pub mod catalog;
pub mod configured;
pub mod explicit;
pub mod resolution;
pub mod tool;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use evoflux_agents::ToolCatalog;
use evoflux_agents::tools::is_skill_loader;
use evoflux_core::AppMode;
pub use evoflux_core::config::ResolverMode;
use evoflux_core::hash::sha256_hex;
use evoflux_model::{Message, ToolCall};
use evoflux_skills::activation::{Activation, ActivationError, activate};
use evoflux_skills::catalog::CatalogReport;
use evoflux_skills::origin::SkillSource;
use evoflux_skills::projection::runtime_projection;
use evoflux_skills::resolver::Resolution;
use evoflux_skills::selection::SkillSlot;
use evoflux_skills::{PlaceholderDirs, SkillRecord};
use evoflux_store::TranscriptEntry;
use serde::Serialize;
use serde_json::json;

use crate::hooks::{DurableMessage, ModelCall};
use crate::prepared::PreparedTools;

/// Total bytes of assigned-skill activations preloaded in one session. A
/// skill that does not fit is skipped whole, never truncated.
pub const CONFIGURED_PRELOAD_BUDGET_BYTES: usize = 96_000;

/// The metadata key under which a successful activation's record is
/// stored beside its tool result (and shown in the `tool_ended` event).
pub use crate::metadata::ResultMetadata;

pub const ACTIVATION_METADATA_KEY: &str = "skill_activation";

/// How the session's implicit resolver runs (`[skills] resolver`) and
/// which model decides (`[skills] resolver_model`; `None` is the
/// session's own).
#[derive(Debug, Clone)]
pub struct ResolverPolicy {
    pub mode: ResolverMode,
    pub model: Option<ResolverModel>,
}

/// A model other than the session's that makes the resolver's decision.
#[derive(Debug, Clone)]
pub struct ResolverModel {
    pub provider: Arc<dyn evoflux_model::Provider>,
    pub model: String,
    /// What its tokens cost; `None` when unknown.
    pub price: Option<evoflux_core::price::Price>,
}

impl ResolverPolicy {
    /// Never asks (a scripted provider's script is the main conversation
    /// and has no answers to spare for a side call).
    pub fn off() -> Self {
        ResolverPolicy {
            mode: ResolverMode::Off,
            model: None,
        }
    }

    /// Asks the session's provider before the turn's first call.
    pub fn on() -> Self {
        ResolverPolicy {
            mode: ResolverMode::On,
            model: None,
        }
    }

    /// Asks the session's provider while the turn's first call is sent.
    pub fn speculative() -> Self {
        ResolverPolicy {
            mode: ResolverMode::Speculative,
            model: None,
        }
    }
}

pub use evoflux_protocol::metadata::{ActivationRecord, ActivationSource};

/// A skill whose exact activation the model can currently see.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LoadedSkill {
    /// The tool call whose result holds the visible activation.
    pub call_id: String,
    pub revision: String,
    pub source: ActivationSource,
    pub required_tools: Vec<String>,
}

/// How a tool of the session stands, for dependency activation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolState {
    /// Offered to the model from the start.
    Offered,
    /// The agent has it, hidden until something activates it.
    Deferred,
    /// Not granted to the agent but runnable in this session: a skill that
    /// declares it brings it in.
    Reserve,
}

#[derive(Debug, Clone)]
struct BoundTool {
    state: ToolState,
    definition: evoflux_model::ToolDefinition,
}

/// Why a skill did not load. Nothing is applied in any case.
#[derive(Debug, thiserror::Error)]
pub enum SkillLoadError {
    #[error(transparent)]
    Activation(#[from] ActivationError),
    #[error(
        "skill `{skill}` needs tools this session cannot offer: {}; nothing was loaded",
        missing.join(", ")
    )]
    ToolsUnavailable { skill: String, missing: Vec<String> },
}

impl SkillLoadError {
    pub fn code(&self) -> &'static str {
        match self {
            SkillLoadError::Activation(e) => e.code(),
            SkillLoadError::ToolsUnavailable { .. } => "skill/dependency-missing",
        }
    }
}

/// A durable activation found in the transcript that could not be
/// re-applied on resume (its skill is gone, changed or lost a tool).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RehydrationProblem {
    pub skill: String,
    pub code: &'static str,
    pub message: String,
}

#[derive(Debug, Default)]
struct State {
    loaded: BTreeMap<String, LoadedSkill>,
    tools: BTreeMap<String, BoundTool>,
    /// The model-visible name of the tool presented as the skill loader.
    skill_tool: Option<String>,
    /// Tools skill activations turned on for the rest of the session.
    activated_tools: BTreeSet<String>,
    /// Plugin installations whose MCP servers a load granted, not yet
    /// handed to the loop.
    plugin_grants: BTreeSet<String>,
    assigned: Vec<String>,
    configured_done: bool,
    explicit_this_turn: bool,
    latest_request: Option<String>,
    last_catalog: Option<CatalogReport>,
    last_resolution: Option<Resolution>,
    rehydration_problems: Vec<RehydrationProblem>,
    synthetic_calls: u64,
}

/// The session's skills: see the module docs.
#[derive(Debug)]
pub struct SkillRuntime {
    mode: AppMode,
    /// The runtime projection: valid, in-mode, one per name, sorted.
    records: Vec<SkillRecord>,
    /// Every loaded candidate of every slot, for answers about skills
    /// outside the projection (other mode, invalid).
    candidates: Vec<SkillRecord>,
    placeholders: PlaceholderDirs,
    resolver: ResolverPolicy,
    state: Mutex<State>,
}

impl SkillRuntime {
    /// The runtime for a session in `mode` from the graph's skill slots
    /// (`evoflux_skills::selection::skill_slots`).
    pub fn new(
        slots: &[SkillSlot],
        mode: AppMode,
        placeholders: PlaceholderDirs,
        resolver: ResolverPolicy,
    ) -> SkillRuntime {
        let (chosen, _) = runtime_projection(slots.iter().map(|s| s.candidates.as_slice()), mode);
        let records = chosen.into_iter().cloned().collect();
        let candidates = slots
            .iter()
            .flat_map(|s| s.candidates.iter().cloned())
            .collect();
        SkillRuntime {
            mode,
            records,
            candidates,
            placeholders,
            resolver,
            state: Mutex::new(State::default()),
        }
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub fn mode(&self) -> AppMode {
        self.mode
    }

    pub fn resolver_policy(&self) -> &ResolverPolicy {
        &self.resolver
    }

    /// The runtime projection (valid and available in the mode).
    pub fn records(&self) -> Vec<&SkillRecord> {
        self.records.iter().collect()
    }

    /// The runtime record named exactly `name`.
    pub fn record(&self, name: &str) -> Option<&SkillRecord> {
        self.records.iter().find(|r| r.name == name)
    }

    /// Every candidate named `name`, highest precedence first.
    pub(crate) fn candidates_named<'a>(
        &'a self,
        name: &'a str,
    ) -> impl Iterator<Item = &'a SkillRecord> + 'a {
        self.candidates.iter().filter(move |r| r.name == name)
    }

    pub(crate) fn all_names(&self) -> BTreeSet<&str> {
        self.candidates.iter().map(|r| r.name.as_str()).collect()
    }

    // ---- loaded markers -------------------------------------------------

    /// Whether `skill` has an exact activation the model can see.
    pub fn is_loaded(&self, skill: &str) -> bool {
        self.state().loaded.contains_key(skill)
    }

    /// The loaded skills and their contracts.
    pub fn loaded(&self) -> BTreeMap<String, LoadedSkill> {
        self.state().loaded.clone()
    }

    /// Clears the loaded marker of `skill`: its activation pair is no
    /// longer visible to the model (compaction dropped it), so the next
    /// load activates it exactly again instead of answering "already
    /// loaded". The tools its contract activated stay on. Returns whether
    /// a marker was cleared.
    pub fn forget_loaded(&self, skill: &str) -> bool {
        self.state().loaded.remove(skill).is_some()
    }

    /// Clears the loaded marker of every skill whose visible activation is
    /// one of `call_ids` (the activations a compaction dropped). A skill
    /// loaded again since, under another call, keeps its marker.
    pub fn forget_calls<'a>(&self, call_ids: impl IntoIterator<Item = &'a str>) -> Vec<String> {
        let ids: BTreeSet<&str> = call_ids.into_iter().collect();
        let mut st = self.state();
        let gone: Vec<String> = st
            .loaded
            .iter()
            .filter(|(_, l)| ids.contains(l.call_id.as_str()))
            .map(|(name, _)| name.clone())
            .collect();
        for name in &gone {
            st.loaded.remove(name);
        }
        gone
    }

    /// The listener the compaction owner calls: every activation it
    /// dropped from the model's view loses its loaded marker.
    pub fn compaction_listener(
        self: &std::sync::Arc<Self>,
    ) -> crate::compaction::CompactionListener {
        let rt = std::sync::Arc::clone(self);
        crate::compaction::CompactionListener(std::sync::Arc::new(move |c| {
            rt.forget_calls(c.dropped_skill_calls.iter().map(String::as_str));
        }))
    }

    // ---- session binding --------------------------------------------------

    /// Binds the runtime to a session: the tools it has (offered, deferred
    /// and the runnable reserve) and the durable activations of its
    /// transcript, whose contracts are re-applied now. `catalog` tells which
    /// tool is the skill loader (by presentation).
    pub fn attach(
        &self,
        catalog: &ToolCatalog,
        tools: &PreparedTools,
        reserve: &PreparedTools,
        assigned: &[String],
        transcript: &[TranscriptEntry],
    ) {
        {
            let mut st = self.state();
            st.assigned = assigned.to_vec();
            st.tools.clear();
            for (set, granted) in [(tools, true), (reserve, false)] {
                for t in set.iter() {
                    let state = match (granted, t.deferred) {
                        (true, false) => ToolState::Offered,
                        (true, true) => ToolState::Deferred,
                        (false, _) => ToolState::Reserve,
                    };
                    if granted
                        && st.skill_tool.is_none()
                        && is_skill_loader(&t.definition.behavior.presentation)
                    {
                        st.skill_tool = Some(t.definition.name.clone());
                    }
                    st.tools
                        .entry(t.definition.name.clone())
                        .or_insert(BoundTool {
                            state,
                            definition: t.model_definition(),
                        });
                }
            }
        }
        self.rehydrate(catalog, transcript);
    }

    /// Re-applies every durable activation of `transcript`: a successful
    /// result of a call to the skill-presented tool that carries an
    /// activation record. An activation whose skill is gone, changed
    /// revision or lost a tool is not marked loaded (the model can load
    /// it again and get the current contract or a clear error).
    fn rehydrate(&self, catalog: &ToolCatalog, transcript: &[TranscriptEntry]) {
        let mut skill_calls: BTreeSet<&str> = BTreeSet::new();
        for e in transcript {
            if let Message::Assistant { tool_calls, .. } = &e.message {
                for c in tool_calls {
                    if catalog
                        .get(&c.name)
                        .is_some_and(|d| is_skill_loader(&d.behavior.presentation))
                    {
                        skill_calls.insert(c.id.as_str());
                    }
                }
            }
        }
        for e in transcript {
            let Message::Tool {
                tool_call_id,
                is_error: false,
                ..
            } = &e.message
            else {
                continue;
            };
            if !skill_calls.contains(tool_call_id.as_str()) {
                continue;
            }
            let Some(record) = e
                .artifact
                .as_ref()
                .and_then(ResultMetadata::from_stored)
                .as_ref()
                .and_then(ActivationRecord::from_metadata)
            else {
                continue;
            };
            self.reapply(tool_call_id, &record);
        }
    }

    fn reapply(&self, call_id: &str, durable: &ActivationRecord) {
        let problem = |code: &'static str, message: String| RehydrationProblem {
            skill: durable.skill.clone(),
            code,
            message,
        };
        let Some(record) = self.record(&durable.skill) else {
            self.state().rehydration_problems.push(problem(
                "skill/rehydration-missing",
                format!(
                    "skill `{}` was loaded earlier but is not available in {} mode any more",
                    durable.skill, self.mode
                ),
            ));
            return;
        };
        if record.revision.as_deref() != Some(durable.revision.as_str()) {
            self.state().rehydration_problems.push(problem(
                "skill/rehydration-changed",
                format!(
                    "skill `{}` changed since it was loaded; it can be loaded again",
                    durable.skill
                ),
            ));
            return;
        }
        let required = record.required_builtin_tools();
        let mut st = self.state();
        let missing: Vec<String> = required
            .iter()
            .filter(|t| !st.tools.contains_key(*t))
            .cloned()
            .collect();
        if !missing.is_empty() {
            st.rehydration_problems.push(problem(
                "skill/dependency-missing",
                format!(
                    "skill `{}` needs tools this session cannot offer: {}",
                    durable.skill,
                    missing.join(", ")
                ),
            ));
            return;
        }
        apply_contract(&mut st, &required);
        if let Some(inst) = plugin_installation(record) {
            st.plugin_grants.insert(inst);
        }
        st.loaded.insert(
            durable.skill.clone(),
            LoadedSkill {
                call_id: call_id.to_owned(),
                revision: durable.revision.clone(),
                source: durable.source,
                required_tools: required,
            },
        );
    }

    /// Durable activations that could not be re-applied on resume.
    pub fn rehydration_problems(&self) -> Vec<RehydrationProblem> {
        self.state().rehydration_problems.clone()
    }

    // ---- activation -------------------------------------------------------

    /// Validates `record` and its whole runtime contract without applying
    /// anything.
    pub fn prepare(&self, record: &SkillRecord) -> Result<Activation, SkillLoadError> {
        let existing: BTreeSet<String> = self.state().tools.keys().cloned().collect();
        match activate(record, &self.placeholders, &existing) {
            Ok(a) => Ok(a),
            Err(ActivationError::MissingDependencies { name, missing }) => {
                Err(SkillLoadError::ToolsUnavailable {
                    skill: name,
                    missing,
                })
            }
            Err(e) => Err(e.into()),
        }
    }

    /// Applies a prepared activation: marks the skill loaded and turns on
    /// every tool of its contract. Returns the durable record.
    pub fn commit(
        &self,
        call_id: &str,
        record: &SkillRecord,
        activation: &Activation,
        source: ActivationSource,
        bytes: usize,
    ) -> ActivationRecord {
        let mut st = self.state();
        let activated = apply_contract(&mut st, &activation.contract.required_tools);
        let plugin = plugin_installation(record);
        if let Some(inst) = &plugin {
            st.plugin_grants.insert(inst.clone());
        }
        st.loaded.insert(
            activation.name.clone(),
            LoadedSkill {
                call_id: call_id.to_owned(),
                revision: activation.revision.clone(),
                source,
                required_tools: activation.contract.required_tools.clone(),
            },
        );
        ActivationRecord {
            skill: activation.name.clone(),
            revision: activation.revision.clone(),
            source,
            bundle_dir: activation.bundle_dir.display().to_string(),
            required_tools: activation.contract.required_tools.clone(),
            activated_tools: activated,
            plugin_installation: plugin,
            bytes,
        }
    }

    /// Tools skill activations turned on for this session.
    pub fn activated_tools(&self) -> BTreeSet<String> {
        self.state().activated_tools.clone()
    }

    /// Plugin installations whose MCP servers loads granted since the last
    /// call; the loop grants them.
    pub fn take_plugin_grants(&self) -> BTreeSet<String> {
        std::mem::take(&mut self.state().plugin_grants)
    }

    /// The model-visible definitions of the activated tools, for a model
    /// call whose tool list was built before a hook activated them.
    fn activated_definitions(&self) -> Vec<evoflux_model::ToolDefinition> {
        let st = self.state();
        st.activated_tools
            .iter()
            .filter_map(|n| st.tools.get(n))
            .map(|t| t.definition.clone())
            .collect()
    }

    /// Activates `record` from a hook and appends the synthetic pair to
    /// the call (and the durable transcript). Returns the bytes the model
    /// sees, or `None` when nothing was appended because the session has
    /// no skill tool. A failed activation is appended as an error result
    /// so the model and the user see why.
    pub(crate) fn inject(
        &self,
        call: &mut ModelCall,
        record: &SkillRecord,
        source: ActivationSource,
    ) -> Option<Result<usize, SkillLoadError>> {
        let tool_name = self.state().skill_tool.clone()?;
        let id = {
            let mut st = self.state();
            st.synthetic_calls += 1;
            let seed = format!(
                "{}\0{}\0{}\0{}",
                source.as_str(),
                record.name,
                call.request.messages.len(),
                st.synthetic_calls
            );
            let mut hex = sha256_hex(seed.as_bytes()).as_str().to_owned();
            hex.truncate(12);
            format!("{}_{hex}", source.as_str())
        };
        let (content, is_error, metadata, result) = match self.prepare(record) {
            Ok(activation) => {
                let text = activation.render();
                let bytes = text.len();
                let durable = self.commit(&id, record, &activation, source, bytes);
                (text, false, Some(durable.to_metadata()), Ok(bytes))
            }
            Err(e) => (format!("{e} [{}]", e.code()), true, None, Err(e)),
        };
        call.append_durable(DurableMessage {
            message: Message::Assistant {
                content: String::new(),
                provider_items: Vec::new(),
                tool_calls: vec![ToolCall {
                    id: id.clone(),
                    name: tool_name,
                    arguments: json!({"action": "load", "skill_name": record.name}),
                }],
            },
            metadata: None,
        });
        call.append_durable(DurableMessage {
            message: Message::Tool {
                tool_call_id: id,
                content,
                is_error,
                media: Vec::new(),
            },
            metadata,
        });
        // Tools the contract turned on are offered from this very call.
        for def in self.activated_definitions() {
            if !call.request.tools.iter().any(|t| t.name == def.name) {
                call.request.tools.push(def);
            }
        }
        Some(result)
    }

    // ---- per-turn state -----------------------------------------------------

    pub(crate) fn begin_configured(&self) -> bool {
        let mut st = self.state();
        !std::mem::replace(&mut st.configured_done, true)
    }

    pub(crate) fn set_explicit_this_turn(&self, selected: bool) {
        self.state().explicit_this_turn = selected;
    }

    pub(crate) fn explicit_this_turn(&self) -> bool {
        self.state().explicit_this_turn
    }

    pub(crate) fn note_request(&self, request: &str) {
        self.state().latest_request = Some(request.to_owned());
    }

    pub(crate) fn latest_request(&self) -> Option<String> {
        self.state().latest_request.clone()
    }

    pub(crate) fn assigned(&self) -> Vec<String> {
        self.state().assigned.clone()
    }

    /// What the last Tier-1 catalog included and cut.
    pub fn last_catalog(&self) -> Option<CatalogReport> {
        self.state().last_catalog.clone()
    }

    pub(crate) fn set_last_catalog(&self, report: CatalogReport) {
        self.state().last_catalog = Some(report);
    }

    /// The implicit resolver's last decision.
    pub fn last_resolution(&self) -> Option<Resolution> {
        self.state().last_resolution.clone()
    }

    pub(crate) fn set_last_resolution(&self, r: Resolution) {
        self.state().last_resolution = Some(r);
    }
}

/// Turns on every required tool that is not offered yet; returns the ones
/// this call turned on.
fn apply_contract(st: &mut State, required: &[String]) -> Vec<String> {
    let mut activated = Vec::new();
    for name in required {
        let Some(tool) = st.tools.get(name) else {
            continue;
        };
        match tool.state {
            ToolState::Offered => {}
            ToolState::Deferred | ToolState::Reserve => {
                if st.activated_tools.insert(name.clone()) {
                    activated.push(name.clone());
                }
            }
        }
    }
    activated
}

fn plugin_installation(record: &SkillRecord) -> Option<String> {
    match &record.origin.source {
        SkillSource::Plugin { installation_id } => Some(installation_id.clone()),
        SkillSource::Project(_)
        | SkillSource::User(_)
        | SkillSource::Admin
        | SkillSource::Bundled { .. }
        | SkillSource::Custom => None,
    }
}

/// The tools a skill runtime may bring into a session: every tool of the
/// graph in `mode` that the agent was not granted, prepared for this
/// session (tools it could not run are left out).
pub fn reserve_tools(
    catalog: &ToolCatalog,
    granted: &[String],
    mode: AppMode,
    caps: &crate::prepared::SessionCapabilities,
) -> PreparedTools {
    let names: Vec<String> = catalog
        .in_mode(mode)
        .filter(|t| !granted.contains(&t.name))
        .map(|t| t.name.clone())
        .collect();
    PreparedTools::prepare(catalog, &names, mode, caps)
}

/// Makes the tools skill activations turned on visible in the session's
/// prepared set: a deferred tool stops being deferred, a reserve tool
/// joins it.
pub fn apply_tool_activations(
    runtime: &SkillRuntime,
    tools: &mut PreparedTools,
    reserve: &mut PreparedTools,
) {
    for name in runtime.activated_tools() {
        if let Some(t) = tools.get_mut(&name) {
            t.deferred = false;
        } else if let Some(mut t) = reserve.take(&name) {
            t.deferred = false;
            tools.adopt(t);
        }
    }
}

/// The text of the latest user message of a request, for ranking.
pub(crate) fn latest_user_text(messages: &[Message]) -> Option<&str> {
    messages.iter().rev().find_map(|m| match m {
        Message::User { content, .. } => Some(content.as_str()),
        Message::System { .. } | Message::Assistant { .. } | Message::Tool { .. } => None,
    })
}

/// Registers the skill owners on `pipeline`: the preload, explicit
/// selection and resolver at INGRESS (in that order, so an explicit pick
/// suppresses the resolver and every activation pair precedes context
/// control), the catalog at PROMPT_FINALIZATION.
pub fn register(
    pipeline: &mut crate::hooks::HookPipeline,
    runtime: &std::sync::Arc<SkillRuntime>,
) -> Result<(), crate::hooks::HookError> {
    use crate::hooks::HookStage;
    pipeline
        .add(
            HookStage::Ingress,
            configured::OWNER,
            configured::ConfiguredSkillsHook::new(runtime.clone()),
        )?
        .add(
            HookStage::Ingress,
            explicit::OWNER,
            explicit::ExplicitSkillSelectionHook::new(runtime.clone()),
        )?
        .add(
            HookStage::Ingress,
            resolution::OWNER,
            resolution::SkillResolutionHook::new(runtime.clone()),
        )?
        .add(
            HookStage::PromptFinalization,
            catalog::OWNER,
            catalog::SkillCatalogHook::new(runtime.clone()),
        )?;
    Ok(())
}
