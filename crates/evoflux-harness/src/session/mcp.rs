//! The session's MCP tools: which servers the session is granted, their
//! state changes as events, and the ready tools joined to each model call.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use evoflux_core::Diagnostic;
use evoflux_mcp::{McpRuntime, McpToolDescriptor, ServerOwner, ServerState, ToolSet, WebBridge};
use evoflux_model::ToolCall;
use evoflux_store::{ConnectionTool, SessionSurface};
use serde_json::{Value, json};

use super::Harness;
use crate::error::HarnessError;
use crate::events::{Event, McpServerState, ToolResult};
use crate::prepared::PreparedTool;
use crate::tools::Offering;
use crate::tools::connection_search::{self as search, Deferrable, Reach, SearchCall};

/// The session's view of the application's MCP servers.
#[derive(Debug)]
pub(crate) struct SessionMcp {
    pub(crate) runtime: Option<McpRuntime>,
    pub(crate) call_timeout: Duration,
    /// The MCP tools offered in the current model call.
    pub(crate) tools: ToolSet,
    /// Plugin installations whose MCP tools this session may use.
    pub(crate) installations: BTreeSet<String>,
    /// Last reported state and error per MCP server, to report changes once.
    pub(crate) states: BTreeMap<(String, String), (ServerState, Option<String>)>,
    /// The tools `connection_search` activated, as the store records them.
    pub(crate) activated: BTreeSet<ConnectionTool>,
    /// Tools of the session's deferrable catalog (granted MCP tools and
    /// built-ins offered `DeferredWithConnections`) held back from the
    /// model's tool list now (too many to send, not activated), by
    /// model-visible name. Empty while the catalog fits the budget or the
    /// session has no `connection_search`.
    pub(crate) held_back: BTreeSet<String>,
    /// What `connection_search`'s description lists, to rebind it only
    /// when that changes.
    bound: Reach,
    /// `connection_search`'s compiled description, before binding.
    search_description: Option<String>,
    /// A skill granted a plugin's servers during the turn: the next model
    /// call of the turn waits for them and takes their tools (the one
    /// change to the tool list a turn makes on its own, because the model
    /// asked for it by loading the skill).
    pub(crate) granted_mid_turn: bool,
}

impl SessionMcp {
    pub(crate) fn new(
        runtime: Option<McpRuntime>,
        call_timeout: Duration,
        activated: Vec<ConnectionTool>,
    ) -> SessionMcp {
        SessionMcp {
            runtime,
            call_timeout,
            tools: ToolSet::default(),
            installations: BTreeSet::new(),
            states: BTreeMap::new(),
            activated: activated.into_iter().collect(),
            held_back: BTreeSet::new(),
            bound: Reach::default(),
            search_description: None,
            granted_mid_turn: false,
        }
    }
}

/// Whether a prepared tool is the session's way to held-back MCP tools
/// (`connection_search`): its handler says so
/// ([`Offering::WhileToolsHeldBack`]), never its name.
pub(super) fn is_search(tool: &PreparedTool) -> bool {
    tool.builtin()
        .is_some_and(|h| h.offering() == Offering::WhileToolsHeldBack)
}

impl Harness {
    /// Whether this session is offered `server` of `owner` (see
    /// [`McpOffer::offers`]).
    pub(super) fn mcp_granted(
        &self,
        owner: &ServerOwner,
        server: &str,
        webbridge: WebBridge,
    ) -> bool {
        self.mcp_offer().offers(owner, server, webbridge)
    }

    fn mcp_offer(&self) -> McpOffer<'_> {
        McpOffer {
            named: &self.agent.mcp,
            installations: &self.mcp.installations,
            surface: self.session.surface,
        }
    }

    /// The granted MCP servers this session's surface hides, each with why
    /// (`mcp/webbridge-hidden`): empty in a standard conversation.
    pub fn mcp_hidden(&self) -> Vec<Diagnostic> {
        let Some(rt) = &self.mcp.runtime else {
            return Vec::new();
        };
        let offer = self.mcp_offer();
        rt.statuses()
            .into_iter()
            .filter(|s| offer.granted(&s.owner, &s.name) && !offer.surface_allows(s.webbridge))
            .filter_map(|s| s.webbridge.hidden_diagnostic(&s.owner, &s.name))
            .collect()
    }

    /// Tags this session for `surface`, kept for every later resume: in a
    /// WebBridge conversation only `webbridge-safe` MCP servers are
    /// offered, from the next model call on.
    pub async fn set_surface(
        &mut self,
        surface: SessionSurface,
    ) -> Result<(), evoflux_store::StoreError> {
        self.session = self
            .recorder
            .store
            .set_surface(self.session.id, surface)
            .await?;
        self.refresh_mcp();
        Ok(())
    }

    /// Starts the MCP servers the agent's `mcp:` list grants; they
    /// come up in the background and join the tools when ready. A name
    /// that no server has is reported, not ignored.
    pub(super) fn start_granted_mcp(&mut self) {
        let Some(rt) = &self.mcp.runtime else {
            for name in &self.agent.mcp {
                self.emit(&Event::McpServer {
                    server: name.clone(),
                    owner: "global".into(),
                    state: McpServerState::Missing,
                    error: Some("no MCP runtime is attached to this session".into()),
                });
            }
            return;
        };
        for name in &self.agent.mcp {
            if let Err(e) = rt.start_ref(name) {
                self.emit(&Event::McpServer {
                    server: name.clone(),
                    owner: "global".into(),
                    state: McpServerState::Missing,
                    error: Some(e.to_string()),
                });
            }
        }
    }

    /// Grants (and starts) the MCP servers of one plugin installation for
    /// the rest of this session — called when a skill that the
    /// installation contributed is loaded. Installation alone grants
    /// nothing.
    pub fn grant_plugin_mcp(&mut self, installation: &str) {
        if !self.mcp.installations.insert(installation.to_owned()) {
            return;
        }
        if let Some(manager) = self
            .mcp
            .runtime
            .as_ref()
            .and_then(|rt| rt.plugin(installation))
        {
            manager.start_all();
            self.mcp.granted_mid_turn = true;
        }
    }

    /// Refreshes the MCP tools offered to the next model call and reports
    /// every server whose state changed (a failed or slow server is shown,
    /// never dropped silently).
    pub(super) fn refresh_mcp(&mut self) {
        for e in self.mcp_quiet() {
            self.emit(&e);
        }
    }

    /// [`Harness::refresh_mcp`], returning the state changes to report
    /// instead of emitting them.
    pub(super) fn mcp_quiet(&mut self) -> Vec<Event> {
        let Some(rt) = &self.mcp.runtime else {
            return Vec::new();
        };
        let offer = McpOffer {
            named: &self.agent.mcp,
            installations: &self.mcp.installations,
            surface: self.session.surface,
        };
        let mut changes = Vec::new();
        for status in rt.statuses() {
            if !offer.offers(&status.owner, &status.name, status.webbridge) {
                continue;
            }
            let key = (status.owner.label(), status.name.clone());
            let error = status
                .last_error
                .map(|e| format!("{}: {}", e.code, e.message));
            let now = (status.state, error);
            if self.mcp.states.get(&key) != Some(&now) {
                changes.push(Event::McpServer {
                    server: status.name.clone(),
                    owner: status.owner.label(),
                    state: state_of(status.state),
                    error: now.1.clone(),
                });
                self.mcp.states.insert(key, now);
            }
        }
        let set = rt.tool_set(&self.tools.reserved_names());
        self.tools.set_mcp(
            set.tools()
                .iter()
                .filter(|d| offer.offers(&d.owner, &d.server, d.webbridge)),
        );
        self.mcp.tools = set;
        self.hold_back_mcp();
        changes
    }

    /// The granted MCP tools of the current set.
    fn granted_mcp(&self) -> Vec<&McpToolDescriptor> {
        let offer = self.mcp_offer();
        self.mcp
            .tools
            .tools()
            .iter()
            .filter(|d| offer.offers(&d.owner, &d.server, d.webbridge))
            .collect()
    }

    /// The catalog of tools the session may hold back: the granted MCP
    /// tools of the current set, then the session's built-in tools whose
    /// handler joins them ([`Offering::DeferredWithConnections`]).
    fn deferrable(&self) -> Vec<Deferrable<'_>> {
        let builtins = self.tools.iter().filter(|t| {
            t.builtin()
                .is_some_and(|h| h.offering() == Offering::DeferredWithConnections)
        });
        self.granted_mcp()
            .into_iter()
            .map(Deferrable::mcp)
            .chain(builtins.map(|t| Deferrable::builtin(&t.definition)))
            .collect()
    }

    /// Decides which tools of the deferrable catalog the model does not
    /// see: none while the catalog fits the budget (or the session has no
    /// `connection_search`), else every one neither activated nor already
    /// offered. A tool once offered stays in the list (a stable prefix,
    /// [`Harness::offered`]), so it stays callable too: holding it back
    /// would refuse a tool the model is shown. Binds
    /// `connection_search`'s description to what it reaches.
    fn hold_back_mcp(&mut self) {
        let has_search = self.tools.iter().any(is_search);
        let catalog = self.deferrable();
        let held: BTreeSet<String> = match has_search && search::over_budget(&catalog) {
            true => catalog
                .iter()
                .filter(|d| !self.mcp.activated.contains(&d.identity()))
                .filter(|d| !self.tool_order.iter().any(|n| n == d.name))
                .map(|d| d.name.to_owned())
                .collect(),
            false => BTreeSet::new(),
        };
        let reach = Reach::of(&catalog);
        self.mcp.held_back = held;
        if reach == self.mcp.bound {
            return;
        }
        let Some(tool) = self.tools.find_mut(is_search) else {
            return;
        };
        let base = self
            .mcp
            .search_description
            .get_or_insert_with(|| tool.definition.description.clone());
        tool.definition.description = search::bound_description(base, &reach);
        self.mcp.bound = reach;
    }

    /// What a call of a held-back tool gets: how to turn it on.
    pub(super) fn held_back_call(&self, name: &str) -> String {
        let search = self
            .tools
            .iter()
            .find(|t| is_search(t))
            .map_or("connection_search", |t| t.definition.name.as_str());
        format!(
            "`{name}` is held back from your tool list (the connected tools are too many to \
             send) and not turned on yet; call {search} with {{\"activate\": [\"{name}\"]}} \
             first, then call it."
        )
    }

    /// Runs a `connection_search` call: activates the named tools, then
    /// searches; either part may be left out.
    pub(crate) async fn connection_search(
        &mut self,
        call: &ToolCall,
    ) -> Result<ToolResult, HarnessError> {
        let request = match SearchCall::parse(&call.arguments) {
            Ok(r) => r,
            Err(e) => return Ok(ToolResult::error(e)),
        };
        let mut out = serde_json::Map::new();
        if !request.activate.is_empty() {
            let catalog = self.deferrable();
            let mut chosen: Vec<Deferrable<'_>> = Vec::new();
            let mut unknown: Vec<String> = Vec::new();
            for name in &request.activate {
                match catalog.iter().find(|d| d.name == name) {
                    Some(d) => chosen.push(*d),
                    None => unknown.push(name.clone()),
                }
            }
            if !unknown.is_empty() {
                let suggestions: Vec<String> = unknown
                    .iter()
                    .flat_map(|n| search::search(&catalog, n, 3))
                    .map(|d| d.name.to_owned())
                    .collect::<BTreeSet<_>>()
                    .into_iter()
                    .collect();
                let mut message = format!(
                    "no connected tool is named {}; nothing was activated. Use names exactly as \
                     connection_search returns them",
                    unknown
                        .iter()
                        .map(|n| format!("`{n}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                );
                if !suggestions.is_empty() {
                    message.push_str(&format!(" (close: {})", suggestions.join(", ")));
                }
                return Ok(ToolResult::error(format!("{message}.")));
            }
            let new: Vec<(ConnectionTool, String)> = chosen
                .iter()
                .map(|d| (d.identity(), d.name.to_owned()))
                .filter(|(key, _)| !self.mcp.activated.contains(key))
                .collect();
            let names: Vec<String> = chosen.iter().map(|d| d.name.to_owned()).collect();
            if !new.is_empty() {
                let keys: Vec<ConnectionTool> = new.iter().map(|(k, _)| k.clone()).collect();
                self.recorder
                    .store
                    .activate_connection_tools(self.session.id, &keys)
                    .await?;
                self.mcp.activated.extend(keys);
                self.hold_back_mcp();
                self.emit(&Event::ToolsActivated {
                    tools: new.into_iter().map(|(_, n)| n).collect(),
                });
            }
            out.insert("activated".into(), json!(names));
            out.insert(
                "note".into(),
                Value::from("activated tools are callable from your next step"),
            );
        }
        if let Some(query) = &request.query {
            let catalog = self.deferrable();
            let scope: Vec<Deferrable<'_>> = match &request.server {
                Some(server) => catalog
                    .iter()
                    .copied()
                    .filter(|d| d.server() == Some(server.as_str()))
                    .collect(),
                None => catalog.clone(),
            };
            if let Some(server) = &request.server
                && scope.is_empty()
            {
                let mut servers: Vec<&str> = catalog.iter().filter_map(|d| d.server()).collect();
                servers.dedup();
                return Ok(ToolResult::error(format!(
                    "no connected server is named `{server}`; the servers are: {}",
                    servers.join(", ")
                )));
            }
            let matches: Vec<Value> = search::search(&scope, query, request.limit())
                .into_iter()
                .map(|d| search::result_entry(&d, !self.mcp.held_back.contains(d.name)))
                .collect();
            out.insert("matches".into(), Value::Array(matches));
            out.insert("searched".into(), Value::from(scope.len()));
        }
        Ok(ToolResult::ok(Value::Object(out).to_string()))
    }

    /// Waits, in parallel, for the granted MCP servers that are still
    /// starting, each at most its startup timeout: a session's first model
    /// call has the tools of every server that comes up in time, and one
    /// that does not is reported (`mcp_server`, failed with
    /// `mcp/startup-timeout`) and left out. Returns at once when none is
    /// starting.
    pub(super) async fn await_granted_mcp(&self) {
        let Some(rt) = &self.mcp.runtime else {
            return;
        };
        // The manager fails a server at its startup timeout; the margin
        // only covers the report of that failure.
        let wait = rt.startup_timeout() + Duration::from_secs(1);
        let starting = rt.managers().into_iter().filter(|m| {
            m.statuses().into_iter().any(|s| {
                s.state == ServerState::Starting && self.mcp_granted(&s.owner, &s.name, s.webbridge)
            })
        });
        futures_util::future::join_all(starting.map(|m| m.wait_settled(wait))).await;
    }

    /// The MCP tools a turn offers, fixed for the turn: granted servers
    /// still starting are awaited first, then the ready tools are taken and
    /// every server whose state changed is reported. Servers that become
    /// ready later, `tools/list_changed` and the hold-back budget take
    /// effect at the next turn; the model's prompt keeps its tools (and its
    /// cache prefix) for the whole turn.
    pub(super) async fn mcp_for_turn(&mut self) {
        self.mcp.granted_mid_turn = false;
        self.await_granted_mcp().await;
        self.refresh_mcp();
    }

    /// A skill loaded in this turn granted a plugin's servers: they are
    /// awaited and their tools join before the next model call.
    pub(super) async fn mcp_granted_by_skill(&mut self) {
        if self.mcp.granted_mid_turn {
            self.mcp_for_turn().await;
        }
    }
}

/// Which MCP servers a session is offered: the one rule, apart from `self`
/// so callers can borrow the session's other fields meanwhile.
struct McpOffer<'a> {
    /// The agent's `mcp:` list.
    named: &'a [String],
    /// Plugin installations a loaded skill granted.
    installations: &'a BTreeSet<String>,
    surface: SessionSurface,
}

impl McpOffer<'_> {
    /// Whether the session may use `server` of `owner`: the agent's `mcp:`
    /// list names it (`name`, or `<plugin>/<name>` for a plugin's server),
    /// or a loaded skill granted its plugin installation.
    fn granted(&self, owner: &ServerOwner, server: &str) -> bool {
        let listed = || {
            let r = owner.server_ref(server);
            self.named.contains(&r)
        };
        match owner {
            ServerOwner::Global { .. } => listed(),
            ServerOwner::Plugin { installation, .. } => {
                self.installations.contains(installation) || listed()
            }
        }
    }

    /// Whether the session's surface lets a server be offered: every one
    /// in a standard conversation, only a `webbridge-safe` one in a
    /// WebBridge conversation (the plugins spec).
    fn surface_allows(&self, webbridge: WebBridge) -> bool {
        match (self.surface, webbridge) {
            (SessionSurface::Standard, _) => true,
            (SessionSurface::WebBridge, WebBridge::Safe) => true,
            (SessionSurface::WebBridge, WebBridge::Undeclared) => false,
        }
    }

    /// Granted, and allowed by the surface.
    fn offers(&self, owner: &ServerOwner, server: &str, webbridge: WebBridge) -> bool {
        self.granted(owner, server) && self.surface_allows(webbridge)
    }
}

/// A server's lifecycle state as the event protocol names it.
fn state_of(state: ServerState) -> McpServerState {
    use ServerState as S;
    match state {
        S::Starting => McpServerState::Starting,
        S::Ready => McpServerState::Ready,
        S::Failed => McpServerState::Failed,
        S::Stopped => McpServerState::Stopped,
        S::Skipped => McpServerState::Skipped,
        S::NeedsCredentials => McpServerState::NeedsCredentials,
        S::NeedsLogin => McpServerState::NeedsLogin,
    }
}
