//! Remote agents: agents that live outside evoflux (another harness, or
//! evoflux itself in another process) and speak the Agent Client Protocol,
//! declared in `[agents.external.<name>]` and selected by the source graph
//! as `remote-agents/<name>` nodes.
//!
//! The harness owns what a remote dispatch *means* — admission, the
//! result contract and its repair rounds, the parent's events — and talks
//! to the agent through [`RemoteAgents`], which `evoflux-acp` implements
//! over the protocol. A front end hands the implementation to the
//! application's session builder (`evoflux_app::AppContext`'s
//! `remote_agents`); a session opened without one has no remote agents in
//! its team.

use std::fmt;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::Arc;

use evoflux_agents::team::EffectiveAgentConfig;
use evoflux_agents::worker::external::external_agent_spec;
use evoflux_agents::worker::spec::AgentSpec;
use evoflux_core::config::ConfigOrigin;
use evoflux_core::diagnostic::{Diagnostic, Diagnostics};
use evoflux_core::external_agent::ExternalAgentConfig;
use evoflux_graph::{Binding, CompiledGraph, Definition, Layer};

use crate::events::EventSink;

/// A declared external agent, ready to dispatch: its spec (for admission,
/// the roster and the contract) and how to start it.
#[derive(Debug, Clone, PartialEq)]
pub struct RemoteAgent {
    pub spec: AgentSpec,
    pub launch: ExternalAgentConfig,
    /// The config file that declared it.
    pub file: Option<PathBuf>,
    /// The layer of that file.
    pub origin: ConfigOrigin,
}

/// Why a remote agent could not do what it was asked.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct RemoteError {
    /// A stable `area/kebab-name` code (`acp/…`).
    pub code: &'static str,
    pub message: String,
}

/// How a remote agent's prompt ended, as the protocol says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RemoteStop {
    EndTurn,
    MaxTokens,
    MaxTurnRequests,
    Refusal,
    Cancelled,
}

/// One prompt's end: the agent's final message (the text it streamed).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemoteTurn {
    pub text: String,
    pub stop: RemoteStop,
}

pub type RemoteFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, RemoteError>> + Send + 'a>>;

/// Starts remote agents.
pub trait RemoteAgents: Send + Sync + fmt::Debug {
    /// Starts `agent`'s process in `cwd` and opens a session on it; what
    /// it streams reaches `events` as the session's own events
    /// (message deltas, tool calls), and the permissions it asks for go
    /// to `approver`, the dispatching session's.
    fn open<'a>(
        &'a self,
        agent: &'a RemoteAgent,
        cwd: &'a Path,
        events: Arc<dyn EventSink>,
        approver: Arc<dyn crate::approval::Approver>,
    ) -> RemoteFuture<'a, Box<dyn RemoteSession>>;
}

/// An open session on a remote agent. Dropping it stops the agent's
/// process.
pub trait RemoteSession: Send + fmt::Debug {
    /// The agent's id for the session.
    fn id(&self) -> &str;
    /// Sends one prompt and waits for its end.
    fn prompt<'a>(&'a mut self, text: &'a str) -> RemoteFuture<'a, RemoteTurn>;
}

/// The remote agents of `graph` a lead may dispatch, as specs: each
/// `remote-agents/<name>` node (the winner of its slot, so a repository's
/// declaration has already shadowed the user's, and an untrusted one is
/// awaiting trust), in slot order. One name reaches one agent, so a remote
/// agent named like a member or a worker recipe is left out with
/// `team/agent-name-collision`, and one whose result contract cannot be
/// read with `config/external-agent-contract`.
pub fn remote_agents(
    graph: &CompiledGraph,
    members: &[EffectiveAgentConfig],
    workers: &[AgentSpec],
    diags: &mut Diagnostics,
) -> Vec<RemoteAgent> {
    let mut agents = Vec::new();
    for node in &graph.nodes {
        let Definition::RemoteAgent(launch) = &node.definition else {
            continue;
        };
        let name = &node.slot.name;
        let bound = graph.binding(&node.source_id);
        let file = bound.and_then(|b| match &b.binding {
            Binding::File { path, .. } => Some(path.clone()),
            Binding::Builtin { .. } => None,
        });
        let located = |d: Diagnostic| {
            let d = d
                .with_slot(node.slot.clone())
                .with_source_id(node.source_id.as_str());
            match &file {
                Some(f) => d.with_file(f),
                None => d,
            }
        };
        let local = if members.iter().any(|m| &m.name == name) {
            Some("member")
        } else if workers.iter().any(|w| &w.id == name) {
            Some("worker recipe")
        } else {
            None
        };
        if let Some(local) = local {
            diags.push(located(
                Diagnostic::error(
                    "team/agent-name-collision",
                    format!(
                        "external agent `{name}` and the {local} `{name}` share one name, which \
                         reaches one agent: the {local} is kept; rename the external agent"
                    ),
                )
                .with_field(format!("agents.external.{name}")),
            ));
            continue;
        }
        let origin = bound.map_or(ConfigOrigin::User, |b| config_origin(b.layer));
        match external_agent_spec(name, launch, origin, file.as_deref()) {
            Ok(spec) => agents.push(RemoteAgent {
                spec,
                launch: launch.clone(),
                file,
                origin,
            }),
            Err(e) => diags.push(located(
                Diagnostic::error(
                    "config/external-agent-contract",
                    format!("external agent `{name}`: result_contract: {e}"),
                )
                .with_field(format!("agents.external.{name}.result_contract")),
            )),
        }
    }
    agents
}

/// The config layer a remote agent's declaring file belongs to. Only
/// config files declare remote agents; nothing compiled in does.
fn config_origin(layer: Layer) -> ConfigOrigin {
    match layer {
        Layer::Framework | Layer::BundledPlugin | Layer::Plugin => ConfigOrigin::Embedded,
        Layer::Admin => ConfigOrigin::Admin,
        Layer::User => ConfigOrigin::User,
        Layer::Project => ConfigOrigin::Project,
    }
}
