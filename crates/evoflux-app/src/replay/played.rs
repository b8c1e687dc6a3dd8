//! What a replay plays with besides the script: the facts recorded for
//! each step (its date, the provider's context window, the resolver's
//! decision), read by the replay's clock, provider and skill resolver as
//! the script reaches that step.

use std::sync::Arc;

use evoflux_core::config::{ProviderKind, ResolverMode};
use evoflux_model::scripted::ScriptedProvider;
use evoflux_model::{EventStream, Provider, ProviderError, ScriptError, StreamEvent};

use evoflux_harness::Clock;
use evoflux_harness::skills::{ResolverModel, ResolverPolicy};

use super::RecordedStep;

/// The recorded facts of the step the script plays next: the provider,
/// the clock and the resolver of a replay all read the same one, so each
/// call (the lead's or a child's) is shaped as its recorded one was.
#[derive(Debug)]
pub(super) struct Steps {
    pub(super) script: Arc<ScriptedProvider>,
    pub(super) calls: Vec<RecordedStep>,
    /// The day of a call past the recorded ones, or of every call of a
    /// script that recorded none.
    pub(super) date: String,
}

impl Steps {
    fn current(&self) -> Option<&RecordedStep> {
        self.calls.get(self.script.turns_played())
    }

    /// How the recording's resolver ran, replayed: off when it was off
    /// (or not recorded); otherwise asked before the call (a speculative
    /// decision that loads a skill makes the same request as one waited
    /// for) and answered by the recorded decisions.
    pub(super) fn resolver(self: &Arc<Self>) -> ResolverPolicy {
        match self.calls.iter().find_map(|c| c.resolver) {
            None | Some(ResolverMode::Off) => ResolverPolicy::off(),
            Some(ResolverMode::On | ResolverMode::Speculative) => ResolverPolicy {
                mode: ResolverMode::On,
                model: Some(ResolverModel {
                    provider: Arc::new(RecordedResolver {
                        steps: Arc::clone(self),
                    }),
                    model: "recorded".to_owned(),
                    price: None,
                }),
            },
        }
    }
}

/// The date the step being played carried (a session that crossed
/// midnight replays with both of its dates).
#[derive(Debug)]
pub(super) struct ReplayClock(pub(super) Arc<Steps>);

impl Clock for ReplayClock {
    fn today(&self) -> String {
        self.0
            .current()
            .map_or_else(|| self.0.date.clone(), |c| c.day.clone())
    }
}

/// The scripted provider with the context window each recorded call had,
/// which keeps the first divergence: a child's failed check does not
/// advance the script and reaches its lead only as a tool's error, so
/// whatever the lead sends next would be checked against the child's
/// turn. Once diverged, every call fails with that first divergence.
#[derive(Debug)]
pub(super) struct ReplayProvider {
    pub(super) steps: Arc<Steps>,
    pub(super) first: Arc<std::sync::Mutex<Option<ScriptError>>>,
}

impl ReplayProvider {
    pub(super) fn first_divergence(&self) -> Option<ScriptError> {
        self.first
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }
}

impl Provider for ReplayProvider {
    fn name(&self) -> &str {
        self.steps.script.name()
    }

    fn kind(&self) -> ProviderKind {
        self.steps.script.kind()
    }

    fn context_window(&self) -> Option<u64> {
        match self.steps.current() {
            Some(call) => call.context_window,
            None => self.steps.script.context_window(),
        }
    }

    fn provider_tools(&self) -> &[evoflux_model::ProviderToolKind] {
        self.steps.script.provider_tools()
    }

    fn stream(&self, request: evoflux_model::Request) -> EventStream {
        use futures_util::StreamExt as _;
        if let Some(first) = self.first_divergence() {
            return Box::pin(futures_util::stream::iter([Err(ProviderError::Script(
                first,
            ))]));
        }
        let first = Arc::clone(&self.first);
        Box::pin(self.steps.script.stream(request).inspect(move |event| {
            if let Err(ProviderError::Script(e)) = event {
                first
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .get_or_insert_with(|| e.clone());
            }
        }))
    }
}

/// The skill resolver of a replay: answers each question with the
/// decision recorded for the step being played (no skill where none was
/// loaded), so the same skill is loaded at the same call.
#[derive(Debug)]
struct RecordedResolver {
    steps: Arc<Steps>,
}

impl Provider for RecordedResolver {
    fn name(&self) -> &str {
        "recorded-resolver"
    }

    fn kind(&self) -> ProviderKind {
        ProviderKind::Scripted
    }

    fn context_window(&self) -> Option<u64> {
        None
    }

    fn stream(&self, _request: evoflux_model::Request) -> EventStream {
        let skill = self.steps.current().and_then(|c| c.resolved.clone());
        let decision = serde_json::json!({
            "skill_name": skill,
            "confidence": if skill.is_some() { 1.0 } else { 0.0 },
            "reason": "as recorded",
        });
        Box::pin(futures_util::stream::iter([
            Ok(StreamEvent::TextDelta {
                text: decision.to_string(),
            }),
            Ok(StreamEvent::Done),
        ]))
    }
}
