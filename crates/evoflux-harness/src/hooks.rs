//! The `HookPipeline`: every piece of per-run context the model sees comes
//! from a registered hook, never from a special case in the loop.
//!
//! A registration is one ordered [`HookStage`], one semantic owner name and
//! one hook. Owners are unique across the pipeline — registering a second
//! hook for an owner is a wiring bug, so construction fails at once rather
//! than letting two hooks fight over one concern. Hooks run in stage order,
//! and in registration order within a stage.
//!
//! A hook can contribute system sections and messages before each model
//! call ([`Hook::before_model`], which may await, e.g. to ask the provider
//! something), see the completion after it (together: a wrap of the
//! provider call), and observe or hold back tool calls
//! ([`Hook::before_tool`], [`Hook::after_tool`]).

use std::collections::HashMap;

use crate::metadata::ResultMetadata;
use std::fmt;
use std::future::Future;
use std::path::Path;
use std::pin::Pin;
use std::sync::Arc;

use evoflux_agents::team::EffectiveAgentConfig;
use evoflux_core::AppMode;
use evoflux_graph::tool::ToolDefinition;
use evoflux_model::{Completion, Provider, Request, ToolCall};
use evoflux_store::Session;

use crate::clock::Clock;
use crate::events::ToolResult;

/// The ordered stages of a run's hooks. The order is the order of the
/// prompt: stable identity first, per-request context last, so prompt
/// caches keep the longest possible prefix.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum HookStage {
    BaseContext,
    SessionContext,
    Capability,
    Ingress,
    Workspace,
    Lifecycle,
    PromptFinalization,
    ContextControl,
}

impl HookStage {
    pub const fn as_str(self) -> &'static str {
        match self {
            HookStage::BaseContext => "base-context",
            HookStage::SessionContext => "session-context",
            HookStage::Capability => "capability",
            HookStage::Ingress => "ingress",
            HookStage::Workspace => "workspace",
            HookStage::Lifecycle => "lifecycle",
            HookStage::PromptFinalization => "prompt-finalization",
            HookStage::ContextControl => "context-control",
        }
    }
}

impl fmt::Display for HookStage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What every hook may read about the run.
#[derive(Debug, Clone, Copy)]
pub struct HookContext<'a> {
    pub session: &'a Session,
    pub agent: &'a EffectiveAgentConfig,
    pub clock: &'a dyn Clock,
    /// The model string sent to the provider.
    pub model: &'a str,
    /// The provider's context window in tokens, when known.
    pub context_window: Option<u64>,
    /// What the model's tokens cost (`None`: unpriced), for the context
    /// owners' cost model.
    pub price: Option<&'a evoflux_core::price::Price>,
    /// Where this session's artifacts go (`<data>/artifacts/<session>`);
    /// created on first use by whoever writes there.
    pub artifacts_dir: &'a Path,
    /// The session's workspace: hooks resolve path arguments exactly as
    /// the tools do.
    pub workspace: &'a evoflux_tools::Workspace,
    /// The session's prepared tools, to find the definition (and so the
    /// typed behavior) of the tool an old call named.
    pub tools: &'a crate::prepared::PreparedTools,
    /// The session's event sink, for warnings a user must see.
    pub events: &'a dyn crate::events::EventSink,
}

impl HookContext<'_> {
    pub fn mode(&self) -> AppMode {
        self.session.mode()
    }

    /// Tells the user about something that went wrong without stopping
    /// the turn (a file that could not be read or written): a
    /// [`crate::events::Event::Warning`] (the front end shows it; the log
    /// gets it at debug level, so it is not printed twice).
    pub fn warn(&self, code: &'static str, message: String) {
        tracing::debug!(code, "{message}");
        self.events.emit(&crate::events::Event::Warning {
            code: code.to_owned(),
            message,
        });
    }
}

/// One titled block of the system prompt, tagged with the owner that
/// contributed it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SystemSection {
    pub owner: &'static str,
    pub text: String,
}

/// A model call being assembled: hooks add system sections and may adjust
/// the request (its messages and tools) before it is sent.
#[derive(Debug)]
pub struct ModelCall {
    pub system: Vec<SystemSection>,
    pub request: Request,
    /// The provider the call goes to, for hooks that need a pre-model
    /// decision from the same runtime provider.
    pub provider: Arc<dyn Provider>,
    /// Metadata stored beside tool results (artifact locators, sizes), by
    /// tool call id: the same values as the transcript's artifact column.
    pub result_metadata: Arc<HashMap<String, ResultMetadata>>,
    /// Context-control figures of this call, added to the session's usage.
    pub stats: ContextStats,
    /// This is the one retry after the provider refused the previous
    /// attempt as exceeding its context window.
    pub context_exceeded: bool,
    /// Set by the compaction owner when it compacted for this call.
    pub compacted: Option<crate::compaction::Compacted>,
    /// The user message that opened the turn — set on the turn's first
    /// model call only (not when the turn answers a question or continues
    /// an interrupted one), for per-turn stages such as skill selection.
    pub turn_input: Option<String>,
    /// Messages hooks add to the durable transcript (e.g. synthetic skill
    /// activation pairs); the loop persists them, in order, before the
    /// call is sent. Add them with [`ModelCall::append_durable`].
    pub durable: Vec<DurableMessage>,
    /// Model calls hooks made for this call (the skill resolver's), whose
    /// tokens the session pays for like its own.
    pub side_calls: Vec<SideCall>,
    /// The speculative skill resolver's decision, still under way while
    /// this call is sent: the loop holds the reply back until it settles.
    pub pending_resolution: Option<crate::skills::resolution::PendingResolution>,
    /// A decision a held attempt of this call was discarded for: the
    /// resolver stage applies it instead of asking again.
    pub decided_resolution: Option<evoflux_skills::resolver::Resolution>,
}

/// A model call a pre-model stage made, counted with the session's usage.
#[derive(Debug, Clone, PartialEq)]
pub struct SideCall {
    pub purpose: CallPurpose,
    pub usage: evoflux_model::Usage,
    /// The model that answered when it is not the session's, with its
    /// price (`None` when unknown).
    pub other_model: Option<(String, Option<evoflux_core::price::Price>)>,
}

pub use evoflux_protocol::events::CallPurpose;

/// A message a hook adds to the conversation for good: persisted like any
/// message (with its metadata beside it), so it survives a restart.
#[derive(Debug, Clone, PartialEq)]
pub struct DurableMessage {
    pub message: evoflux_model::Message,
    pub metadata: Option<ResultMetadata>,
}

impl ModelCall {
    pub fn new(request: Request, provider: Arc<dyn Provider>) -> ModelCall {
        ModelCall {
            system: Vec::new(),
            request,
            provider,
            result_metadata: Arc::default(),
            stats: ContextStats::default(),
            context_exceeded: false,
            compacted: None,
            turn_input: None,
            durable: Vec::new(),
            side_calls: Vec::new(),
            pending_resolution: None,
            decided_resolution: None,
        }
    }

    /// Appends `message` to this call's messages and to the durable
    /// transcript.
    pub fn append_durable(&mut self, message: DurableMessage) {
        self.request.messages.push(message.message.clone());
        self.durable.push(message);
    }
}

/// Context-control figures of one model call.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ContextStats {
    /// Old tool results replaced by receipts in this request.
    pub projected_results: u64,
    /// Characters those receipts saved.
    pub projection_saved_chars: u64,
}

/// What a hook decides about a tool call before it runs.
#[derive(Debug, Clone, PartialEq)]
pub enum ToolGate {
    Proceed,
    /// Do not run the call; the text goes back to the model as the call's
    /// error result (e.g. new instructions it must read first).
    HoldBack {
        reason: String,
    },
    /// Do not run the call; this is its result (e.g. a receipt naming an
    /// earlier identical observation).
    Respond(ToolResult),
}

/// Why a hook failed.
#[derive(Debug, thiserror::Error)]
#[error("hook `{owner}` failed: {message}")]
pub struct HookFailure {
    pub owner: &'static str,
    pub message: String,
}

pub type HookFuture<'a> = Pin<Box<dyn Future<Output = Result<(), HookFailure>> + Send + 'a>>;

/// A runtime hook. Every method has a do-nothing default.
pub trait Hook: Send + Sync + fmt::Debug {
    /// Contributes to the model call about to be made.
    fn before_model<'a>(
        &'a self,
        _ctx: &'a HookContext<'a>,
        _call: &'a mut ModelCall,
    ) -> HookFuture<'a> {
        Box::pin(async { Ok(()) })
    }

    /// Sees the finished model call.
    fn after_model(&self, _ctx: &HookContext<'_>, _completion: &Completion) {}

    /// Decides whether a tool call runs. `tool` is the called tool's
    /// compiled definition: hooks decide by its metadata, never its name.
    fn before_tool(
        &self,
        _ctx: &HookContext<'_>,
        _call: &ToolCall,
        _tool: &ToolDefinition,
    ) -> ToolGate {
        ToolGate::Proceed
    }

    /// Observes (and may rewrite, e.g. offload to an artifact) a tool
    /// result before it is recorded.
    fn after_tool(
        &self,
        _ctx: &HookContext<'_>,
        _call: &ToolCall,
        _tool: &ToolDefinition,
        _result: &mut ToolResult,
    ) {
    }
}

/// Wiring errors of the pipeline.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HookError {
    #[error("runtime hook owner `{owner}` registered twice (stages {first} and {second})")]
    DuplicateOwner {
        owner: &'static str,
        first: HookStage,
        second: HookStage,
    },
}

impl HookError {
    pub fn code(&self) -> &'static str {
        match self {
            HookError::DuplicateOwner { .. } => "hook/duplicate-owner",
        }
    }
}

#[derive(Debug)]
struct Registration {
    stage: HookStage,
    owner: &'static str,
    hook: Box<dyn Hook>,
}

/// The ordered hooks of one run.
#[derive(Debug, Default)]
pub struct HookPipeline {
    hooks: Vec<Registration>,
}

impl HookPipeline {
    pub fn new() -> HookPipeline {
        HookPipeline::default()
    }

    /// Registers `hook` as the one owner of `owner`. A second registration
    /// of the same owner fails immediately.
    pub fn add(
        &mut self,
        stage: HookStage,
        owner: &'static str,
        hook: impl Hook + 'static,
    ) -> Result<&mut Self, HookError> {
        if let Some(first) = self.hooks.iter().find(|r| r.owner == owner) {
            return Err(HookError::DuplicateOwner {
                owner,
                first: first.stage,
                second: stage,
            });
        }
        // Stable insertion keeps registration order within a stage.
        let at = self.hooks.partition_point(|r| r.stage <= stage);
        self.hooks.insert(
            at,
            Registration {
                stage,
                owner,
                hook: Box::new(hook),
            },
        );
        Ok(self)
    }

    /// `(stage, owner)` in run order, for inspection and tests.
    pub fn owners(&self) -> Vec<(HookStage, &'static str)> {
        self.hooks.iter().map(|r| (r.stage, r.owner)).collect()
    }

    pub async fn before_model(
        &self,
        ctx: &HookContext<'_>,
        call: &mut ModelCall,
    ) -> Result<(), HookFailure> {
        for r in &self.hooks {
            r.hook.before_model(ctx, call).await?;
        }
        Ok(())
    }

    pub fn after_model(&self, ctx: &HookContext<'_>, completion: &Completion) {
        for r in &self.hooks {
            r.hook.after_model(ctx, completion);
        }
    }

    /// The first hook that does not proceed decides; later hooks are not
    /// asked.
    pub fn before_tool(
        &self,
        ctx: &HookContext<'_>,
        call: &ToolCall,
        tool: &ToolDefinition,
    ) -> ToolGate {
        for r in &self.hooks {
            let gate = r.hook.before_tool(ctx, call, tool);
            if gate != ToolGate::Proceed {
                return gate;
            }
        }
        ToolGate::Proceed
    }

    pub fn after_tool(
        &self,
        ctx: &HookContext<'_>,
        call: &ToolCall,
        tool: &ToolDefinition,
        result: &mut ToolResult,
    ) {
        for r in &self.hooks {
            r.hook.after_tool(ctx, call, tool, result);
        }
    }
}

/// BASE_CONTEXT `agent-prompt`: the effective agent prompt, first and
/// byte-stable for the whole session.
#[derive(Debug, Default)]
pub struct AgentPromptHook;

impl Hook for AgentPromptHook {
    fn before_model<'a>(
        &'a self,
        ctx: &'a HookContext<'a>,
        call: &'a mut ModelCall,
    ) -> HookFuture<'a> {
        call.system.push(SystemSection {
            owner: "agent-prompt",
            text: ctx.agent.prompt.trim().to_owned(),
        });
        Box::pin(async { Ok(()) })
    }
}

/// BASE_CONTEXT `clock`: today's date. Only the date, so the prompt
/// stays identical (and cacheable) for a whole day.
#[derive(Debug, Default)]
pub struct ClockHook;

impl Hook for ClockHook {
    fn before_model<'a>(
        &'a self,
        ctx: &'a HookContext<'a>,
        call: &'a mut ModelCall,
    ) -> HookFuture<'a> {
        call.system.push(SystemSection {
            owner: "clock",
            text: format!("Today is {} (UTC).", ctx.clock.today()),
        });
        Box::pin(async { Ok(()) })
    }
}

/// SESSION_CONTEXT `environment`: the mode, the workspace the tools work
/// in, and the platform. Coding repositories and their instruction files
/// belong to the `workspace-context` owner, not to this one.
#[derive(Debug, Default)]
pub struct EnvironmentHook;

impl Hook for EnvironmentHook {
    fn before_model<'a>(
        &'a self,
        ctx: &'a HookContext<'a>,
        call: &'a mut ModelCall,
    ) -> HookFuture<'a> {
        let roots = ctx.session.workspace.roots();
        let mut text = String::from("# Environment\n");
        match ctx.mode() {
            AppMode::Work => {
                text.push_str("Mode: work. Your workspace is this session's folder: ");
                text.push_str(
                    &roots
                        .first()
                        .map(|r| r.display().to_string())
                        .unwrap_or_default(),
                );
                text.push_str(
                    "\nRelative paths resolve inside it; files outside it are not accessible.",
                );
            }
            AppMode::Coding => {
                // The repositories and their instructions have one owner,
                // `workspace-context`; this section only names the mode.
                text.push_str("Mode: coding. You work in the user's repositories, listed under Available Repositories.");
            }
        }
        text.push_str(&format!(
            "\nPlatform: {} ({}).",
            std::env::consts::OS,
            std::env::consts::ARCH
        ));
        call.system.push(SystemSection {
            owner: "environment",
            text,
        });
        Box::pin(async { Ok(()) })
    }
}

/// The base registrations every run has.
pub fn base_pipeline() -> Result<HookPipeline, HookError> {
    let mut p = HookPipeline::new();
    p.add(HookStage::BaseContext, "agent-prompt", AgentPromptHook)?
        .add(HookStage::BaseContext, "clock", ClockHook)?
        .add(HookStage::SessionContext, "environment", EnvironmentHook)?;
    Ok(p)
}

/// What decides which owners a session's pipeline has.
#[derive(Debug, Clone)]
pub struct PipelineOptions {
    pub mode: AppMode,
    /// Told about every compaction (e.g. the skill runtime, to clear the
    /// loaded markers of activations the compaction dropped).
    pub on_compacted: Option<crate::compaction::CompactionListener>,
    /// The session's skill runtime (the same one given to
    /// [`crate::RunSetup::skills`]); `None` registers no skill owners.
    pub skills: Option<Arc<crate::skills::SkillRuntime>>,
    /// The lead's rendered roster ([`crate::team_roster::render`]); `None`
    /// (a member, a child) adds no roster section.
    pub roster: Option<String>,
    /// Which files instruct a Coding workspace's directories.
    pub instructions: crate::workspace_instructions::InstructionFiles,
    /// The user's own instruction files, before the repositories'.
    pub user_instructions: crate::workspace_instructions::UserFiles,
}

impl PipelineOptions {
    pub fn new(mode: AppMode) -> PipelineOptions {
        PipelineOptions {
            mode,
            on_compacted: None,
            skills: None,
            roster: None,
            instructions: Default::default(),
            user_instructions: Default::default(),
        }
    }
}

/// The full pipeline of a session: the base owners plus every context
/// owner that applies to its mode. The one place owners are assembled, so
/// the CLI, the server and tests run the same hooks.
pub fn standard_pipeline(options: PipelineOptions) -> Result<HookPipeline, HookError> {
    let mut p = base_pipeline()?;
    match options.mode {
        AppMode::Work => {}
        AppMode::Coding => {
            p.add(
                HookStage::Workspace,
                crate::workspace_instructions::OWNER,
                crate::workspace_instructions::WorkspaceInstructionsHook::reading(
                    options.instructions,
                )
                .with_user_files(options.user_instructions),
            )?;
        }
    }
    if let Some(rt) = &options.skills {
        crate::skills::register(&mut p, rt)?;
    }
    if let Some(roster) = options.roster {
        crate::team_roster::register(&mut p, roster)?;
    }
    // Context control, in this order: large results are journalled as they
    // arrive; compaction decides the model's view (summary plus recent
    // turns); projection shrinks old results in what remains; receipts
    // look last, at exactly what the provider will see.
    p.add(
        HookStage::ContextControl,
        crate::offload::OWNER,
        crate::offload::ToolResultOffloadHook,
    )?
    .add(
        HookStage::ContextControl,
        crate::compaction::OWNER,
        crate::compaction::CompactionHook::new(options.on_compacted),
    )?
    .add(
        HookStage::ContextControl,
        crate::projection::OWNER,
        crate::projection::ToolContextProjectionHook::default(),
    )?
    .add(
        HookStage::ContextControl,
        crate::receipts::OWNER,
        crate::receipts::ObservationReceiptsHook::new(),
    )?;
    Ok(p)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug)]
    struct Nop;
    impl Hook for Nop {}

    #[test]
    fn duplicate_owner_fails_at_construction() {
        let mut p = HookPipeline::new();
        p.add(HookStage::Workspace, "workspace-context", Nop)
            .unwrap();
        let err = p
            .add(HookStage::ContextControl, "workspace-context", Nop)
            .unwrap_err();
        assert_eq!(err.code(), "hook/duplicate-owner");
        assert_eq!(p.owners().len(), 1);
    }

    #[test]
    fn hooks_run_in_stage_then_registration_order() {
        let mut p = HookPipeline::new();
        p.add(HookStage::ContextControl, "projection", Nop).unwrap();
        p.add(HookStage::BaseContext, "clock", Nop).unwrap();
        p.add(HookStage::Workspace, "workspace", Nop).unwrap();
        p.add(HookStage::BaseContext, "agent-prompt", Nop).unwrap();
        let owners: Vec<&str> = p.owners().into_iter().map(|(_, o)| o).collect();
        assert_eq!(owners, ["clock", "agent-prompt", "workspace", "projection"]);
    }

    #[test]
    fn base_pipeline_registers_prompt_clock_environment() {
        let p = base_pipeline().unwrap();
        assert_eq!(
            p.owners(),
            [
                (HookStage::BaseContext, "agent-prompt"),
                (HookStage::BaseContext, "clock"),
                (HookStage::SessionContext, "environment"),
            ]
        );
    }
}
