//! Prepared tools: the one uniform descriptor the loop works with.
//!
//! Each tool the agent has is taken from the compiled graph with its
//! compiled behavior and turned into a [`PreparedTool`] whose
//! [`PreparedKind`] says how a call is handled. The loop switches
//! exhaustively on that kind; it never looks at a tool's name to decide
//! what the tool does. Availability is evaluated here, before anything is
//! materialized for the model, and every tool left out is reported with
//! its reason instead of silently dropped. A built-in tool's own gate, its
//! approval policy and whether it starts hidden are its handler's
//! ([`crate::tools`]), which this asks.

use std::path::PathBuf;

use evoflux_agents::ToolCatalog;
use evoflux_core::AppMode;
use evoflux_core::config::ProviderKind;
use evoflux_graph::tool::{
    ActionClass, Approval, Availability, BuiltinExecutor, CommandTool, DispatchAction, Handling,
    InputRequest, Presentation, ProviderTool, ToolBehavior, ToolDefinition, ToolExecutor,
};
use evoflux_mcp::McpToolDescriptor;
use evoflux_tools::Workspace;
use serde_json::Value;

use crate::events::UnavailableTool;
use crate::tools::Offering;

/// How a prepared tool's calls are handled.
#[derive(Debug, Clone, PartialEq)]
pub enum PreparedKind {
    /// Runs an executor.
    Ordinary(Executor),
    /// Ends the turn waiting for the user (`ask_user`).
    RequestInput(InputRequest),
    /// Hands the task to another agent, which runs as a child session: the
    /// targets this tool can reach, from the team the session runs
    /// (`PreparedTools::bind_team`), never from the tool's name.
    Dispatch(Vec<DispatchTarget>),
    /// Run by the model provider itself (`web_search`): materialized in
    /// the request next to the model call, never called as a function, so
    /// the loop has nothing to execute.
    Provider(ProviderTool),
}

/// Why a provider tool is left out: the session's provider has none.
pub const PROVIDER_LACKS_WEB_SEARCH: &str = "tool/provider-lacks-web-search";

/// Where a dispatch goes. Closed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DispatchTarget {
    /// A member of the lead's team, by name.
    SubagentCall { agent: String, description: String },
    /// A worker recipe, by id: admitted for the task first, its result
    /// checked against the recipe's contract after.
    WorkerCall { worker: String, description: String },
    /// An external agent (`[agents.external.<name>]`), by name: reached
    /// over the Agent Client Protocol, admitted and held to its result
    /// contract as a worker is.
    RemoteAgentCall { agent: String, description: String },
    /// A fresh copy of the session's own agent.
    SelfAgentCall,
    /// A task child tells its parent what it is doing.
    TaskUpdate,
    /// The lead stops background tasks.
    TaskCancel,
}

/// The executor of an ordinary tool.
#[derive(Debug, Clone, PartialEq)]
pub enum Executor {
    Builtin(BuiltinExecutor),
    Command(CommandTool),
    /// A tool of a ready MCP server, by its model-visible qualified name.
    Mcp {
        qualified_name: String,
    },
}

/// One tool as the loop knows it.
#[derive(Debug)]
pub struct PreparedTool {
    pub definition: ToolDefinition,
    pub kind: PreparedKind,
    /// Whether a call needs the user's approval first.
    pub approval: Approval,
    /// Hidden from the model until something activates it (the `process`
    /// executor after a command yields; [`crate::tools`]'s
    /// `Offering::Deferred`).
    pub deferred: bool,
    validator: Option<jsonschema::Validator>,
}

impl PreparedTool {
    /// The handler of a built-in tool ([`crate::tools`]); `None` for
    /// every other kind.
    pub(crate) fn builtin(&self) -> Option<&'static dyn crate::tools::BuiltinTool> {
        match &self.kind {
            PreparedKind::Ordinary(Executor::Builtin(executor)) => {
                Some(crate::tools::handler(*executor))
            }
            PreparedKind::Ordinary(Executor::Command(_) | Executor::Mcp { .. })
            | PreparedKind::RequestInput(_)
            | PreparedKind::Dispatch(_)
            | PreparedKind::Provider(_) => None,
        }
    }

    /// The absolute folder a call of this tool (with `arguments`) runs
    /// its command in, in the workspace `ws`: a built-in tool's handler
    /// says (`shell`'s `workdir`), a command tool runs in the primary
    /// root; `None` for a tool that runs no command.
    pub(crate) fn workdir(&self, arguments: &Value, ws: &Workspace) -> Option<PathBuf> {
        match &self.kind {
            PreparedKind::Ordinary(Executor::Builtin(executor)) => {
                crate::tools::handler(*executor).workdir(arguments, ws)
            }
            PreparedKind::Ordinary(Executor::Command(_)) => {
                Some(evoflux_tools::command_working_folder(ws))
            }
            PreparedKind::Ordinary(Executor::Mcp { .. })
            | PreparedKind::RequestInput(_)
            | PreparedKind::Dispatch(_)
            | PreparedKind::Provider(_) => None,
        }
    }

    /// The function definition the model is given; `None` for a
    /// provider tool, which the request carries apart
    /// ([`PreparedTool::provider_tool`]).
    pub fn function_definition(&self) -> Option<evoflux_model::ToolDefinition> {
        match &self.kind {
            PreparedKind::Provider(_) => None,
            PreparedKind::Ordinary(_)
            | PreparedKind::RequestInput(_)
            | PreparedKind::Dispatch(_) => Some(self.model_definition()),
        }
    }

    /// The provider tool this is, as the model crate names it.
    pub fn provider_tool(&self) -> Option<evoflux_model::ProviderToolKind> {
        match &self.kind {
            PreparedKind::Provider(tool) => Some(provider_tool_kind(*tool)),
            PreparedKind::Ordinary(_)
            | PreparedKind::RequestInput(_)
            | PreparedKind::Dispatch(_) => None,
        }
    }

    /// The model-visible definition.
    pub fn model_definition(&self) -> evoflux_model::ToolDefinition {
        evoflux_model::ToolDefinition {
            name: self.definition.name.clone(),
            description: self.definition.description.clone(),
            parameters: self.definition.input_schema.clone(),
        }
    }

    /// Checks call arguments against the tool's input schema; the errors
    /// are written for the model.
    pub fn check_arguments(&self, arguments: &Value) -> Result<(), String> {
        let Some(validator) = &self.validator else {
            return Ok(());
        };
        let errors = crate::schema_errors::schema_errors(validator, arguments, 5);
        if errors.is_empty() {
            Ok(())
        } else {
            Err(format!(
                "invalid arguments for `{}`: {}",
                self.definition.name,
                errors.join("; ")
            ))
        }
    }
}

/// What the session offers, for availability conditions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionCapabilities {
    /// A root session (not a delegated task child).
    pub root_session: bool,
    pub delegated_task_child: bool,
    /// The session can pause for user input and resume later.
    pub can_request_input: bool,
    /// A process runtime is attached (shell, process, command tools).
    pub processes: bool,
    /// The skill runtime is attached (`skill` presentation tools).
    pub skills: bool,
    /// Network tools may run.
    pub network: bool,
    /// A port a command listens on is reachable from evoflux: commands
    /// share the host's network (no sandbox, or one that allows the
    /// network). `preview` needs it.
    pub host_network: bool,
    /// Check commands are registered for `verify` to run.
    pub checks: bool,
    /// The user's schedules folder is known (`schedule_task`).
    pub schedules: bool,
    /// Why the session cannot run `browser` (Chromium missing, the
    /// network closed to it); `None` when it can.
    pub browser: Option<&'static str>,
    pub provider: ProviderKind,
    /// The tools the session's provider runs on its own side
    /// ([`evoflux_model::Provider::provider_tools`]).
    pub provider_tools: Vec<evoflux_model::ProviderToolKind>,
}

/// The model crate's name for a provider tool a definition declares: the
/// one mapping between the two, for preparing a tool and for the request.
const fn provider_tool_kind(tool: ProviderTool) -> evoflux_model::ProviderToolKind {
    match tool {
        ProviderTool::WebSearch => evoflux_model::ProviderToolKind::WebSearch,
    }
}

/// Why a tool that runs commands is left out of a session without a
/// process runtime, and what a command asked of one answers.
pub(crate) const NO_PROCESS_RUNTIME: &str = "no process runtime is attached to this session";

impl SessionCapabilities {
    /// Why a tool that runs commands (`shell`, `process`, `verify`, a
    /// command tool) cannot run in this session, if it cannot.
    pub(crate) fn process_gap(&self) -> Option<&'static str> {
        (!self.processes).then_some(NO_PROCESS_RUNTIME)
    }

    /// Why `preview` cannot run here beyond [`Self::process_gap`]: its
    /// server would listen inside the sandbox's own network namespace.
    pub(crate) fn preview_gap(&self) -> Option<&'static str> {
        (!self.host_network).then_some(evoflux_graph::tool::builtin::preview::NEEDS_HOST_NETWORK)
    }

    fn holds(&self, condition: Availability) -> bool {
        match condition {
            Availability::RootSession => self.root_session,
            Availability::DelegatedTaskChild => self.delegated_task_child,
            Availability::RequiresRequestInput => self.can_request_input,
        }
    }
}

/// The prepared tool set of one session.
#[derive(Debug, Default)]
pub struct PreparedTools {
    tools: Vec<PreparedTool>,
    pub unavailable: Vec<UnavailableTool>,
}

impl PreparedTools {
    /// Prepares the agent's tools (`names`, from its effective config) from
    /// the graph's definitions.
    pub fn prepare(
        catalog: &ToolCatalog,
        names: &[String],
        mode: AppMode,
        caps: &SessionCapabilities,
    ) -> PreparedTools {
        let mut out = PreparedTools::default();
        for name in names {
            let Some(def) = catalog.get(name) else {
                out.skip(name, "the tool is not in the compiled graph");
                continue;
            };
            if !def.behavior.modes.contains(&mode) {
                out.skip(name, &format!("the tool does not exist in {mode} mode"));
                continue;
            }
            // What this build cannot run is never offered, whatever the
            // session: a dispatch tool would only answer "not available".
            if let Some(gap) = def.not_in_build() {
                out.skip(name, &format!("not in this build: {gap}"));
                continue;
            }
            if let Some(c) = def.behavior.availability.iter().find(|c| !caps.holds(**c)) {
                let why = match c {
                    Availability::RootSession => "only root sessions have it",
                    Availability::DelegatedTaskChild => "only delegated task children have it",
                    Availability::RequiresRequestInput => "this session cannot ask the user",
                };
                out.skip(name, why);
                continue;
            }
            let kind = match (&def.behavior.handling, &def.executor) {
                (Handling::None, Some(ToolExecutor::Builtin { executor })) => {
                    if let Some(gap) = crate::tools::handler(*executor).gap(caps) {
                        out.skip(name, gap);
                        continue;
                    }
                    PreparedKind::Ordinary(Executor::Builtin(*executor))
                }
                (Handling::None, Some(ToolExecutor::Command(command))) => {
                    if let Some(gap) = caps.process_gap() {
                        out.skip(name, gap);
                        continue;
                    }
                    PreparedKind::Ordinary(Executor::Command(command.clone()))
                }
                (Handling::None, None) => {
                    out.skip(name, "the tool has neither an executor nor a handling");
                    continue;
                }
                (Handling::RequestInput { request }, _) => PreparedKind::RequestInput(*request),
                (Handling::Dispatch { action }, _) => match action {
                    DispatchAction::SelfAgent => {
                        PreparedKind::Dispatch(vec![DispatchTarget::SelfAgentCall])
                    }
                    DispatchAction::TaskUpdate => {
                        PreparedKind::Dispatch(vec![DispatchTarget::TaskUpdate])
                    }
                    DispatchAction::TaskCancel => {
                        PreparedKind::Dispatch(vec![DispatchTarget::TaskCancel])
                    }
                },
                (Handling::ProviderTool { provider }, _) => {
                    if !caps.provider_tools.contains(&provider_tool_kind(*provider)) {
                        let (code, lacks) = match provider {
                            ProviderTool::WebSearch => (PROVIDER_LACKS_WEB_SEARCH, "web search"),
                        };
                        out.skip_with_code(
                            name,
                            Some(code),
                            &format!(
                                "the session's provider ({}) has no {lacks}; it needs {}",
                                caps.provider,
                                provider.needs()
                            ),
                        );
                        continue;
                    }
                    // The provider fetches pages on the session's behalf.
                    match provider {
                        ProviderTool::WebSearch if !caps.network => {
                            out.skip(name, "network tools are turned off for this session");
                            continue;
                        }
                        ProviderTool::WebSearch => PreparedKind::Provider(*provider),
                    }
                }
            };
            let (approval, deferred) = match &kind {
                PreparedKind::Ordinary(Executor::Command(c)) => (c.approval, false),
                PreparedKind::Ordinary(Executor::Builtin(b)) => {
                    let handler = crate::tools::handler(*b);
                    let deferred = match handler.offering() {
                        Offering::Deferred => true,
                        Offering::Always
                        | Offering::WhileToolsHeldBack
                        | Offering::DeferredWithConnections => false,
                    };
                    (handler.approval(), deferred)
                }
                PreparedKind::Ordinary(Executor::Mcp { .. })
                | PreparedKind::RequestInput(_)
                | PreparedKind::Dispatch(_)
                | PreparedKind::Provider(_) => (Approval::Never, false),
            };
            out.tools.push(PreparedTool {
                validator: jsonschema::validator_for(&def.input_schema).ok(),
                definition: def.clone(),
                kind,
                approval,
                deferred,
            });
        }
        out
    }

    /// Replaces the MCP tools with the ready, granted ones. MCP servers
    /// come and go during a session, so this runs before every model call;
    /// a tool already prepared keeps its compiled validator.
    pub fn set_mcp<'a>(&mut self, ready: impl IntoIterator<Item = &'a McpToolDescriptor>) {
        let mut previous: Vec<PreparedTool> = Vec::new();
        let mut kept = Vec::with_capacity(self.tools.len());
        for t in self.tools.drain(..) {
            match &t.kind {
                PreparedKind::Ordinary(Executor::Mcp { .. }) => previous.push(t),
                PreparedKind::Ordinary(Executor::Builtin(_) | Executor::Command(_))
                | PreparedKind::RequestInput(_)
                | PreparedKind::Dispatch(_)
                | PreparedKind::Provider(_) => kept.push(t),
            }
        }
        self.tools = kept;
        for d in ready {
            let same = previous.iter().position(|p| {
                p.definition.name == d.qualified_name
                    && p.definition.description == d.description
                    && p.definition.input_schema == d.input_schema
            });
            match same {
                Some(i) => self.tools.push(previous.swap_remove(i)),
                None => self.tools.push(PreparedTool {
                    validator: jsonschema::validator_for(&d.input_schema).ok(),
                    definition: ToolDefinition {
                        name: d.qualified_name.clone(),
                        description: d.description.clone(),
                        input_schema: d.input_schema.clone(),
                        behavior: ToolBehavior {
                            availability: Vec::new(),
                            handling: Handling::None,
                            presentation: Presentation::None,
                            // A remote server can do anything; treat its
                            // tools as executing actions.
                            action_class: ActionClass::Execute,
                            modes: vec![AppMode::Work, AppMode::Coding],
                            lead_only: false,
                            on_request: false,
                            requested_in: Vec::new(),
                            observation: None,
                        },
                        executor: None,
                    },
                    kind: PreparedKind::Ordinary(Executor::Mcp {
                        qualified_name: d.qualified_name.clone(),
                    }),
                    approval: Approval::Never,
                    deferred: false,
                }),
            }
        }
    }

    /// Names the registered check commands (`id`, what it runs) in the
    /// schema of every tool that runs them (its handler says,
    /// `BuiltinTool::runs_checks` in [`crate::tools`]), so the model can
    /// only ask for a command that exists.
    pub fn bind_checks(&mut self, commands: &[(String, String)]) {
        for tool in &mut self.tools {
            if !tool.builtin().is_some_and(|h| h.runs_checks()) {
                continue;
            }
            if crate::tools::bind_commands(&mut tool.definition.input_schema, commands) {
                tool.validator = jsonschema::validator_for(&tool.definition.input_schema).ok();
            }
        }
    }

    /// Points the session's dispatch tools at the members of its team
    /// (`members`: name and description, in roster order) and the workers
    /// it may dispatch, local (`workers`) and remote (`remote`): each becomes
    /// a target, the tool's `agent_id` is an enum of exactly those names (the roster itself is a prompt section,
    /// [`crate::team_roster`]). Without any, `agent_id` is gone and the tool reaches only a
    /// fresh copy of the agent itself. Only the session the user started
    /// may run a fresh copy of itself (`self_copy`, the self-delegated
    /// root); below it `agent_id` is required.
    pub fn bind_team(
        &mut self,
        members: &[(String, String)],
        workers: &[(String, String)],
        remote: &[(String, String)],
        self_copy: bool,
    ) {
        for tool in &mut self.tools {
            let PreparedKind::Dispatch(targets) = &mut tool.kind else {
                continue;
            };
            // Only the delegation tool reaches agents; task controls keep
            // their own target.
            if targets
                .iter()
                .all(|t| matches!(t, DispatchTarget::TaskUpdate | DispatchTarget::TaskCancel))
            {
                continue;
            }
            *targets =
                std::iter::once(DispatchTarget::SelfAgentCall)
                    .filter(|_| self_copy)
                    .chain(members.iter().map(|(agent, description)| {
                        DispatchTarget::SubagentCall {
                            agent: agent.clone(),
                            description: description.clone(),
                        }
                    }))
                    .chain(
                        workers
                            .iter()
                            .map(|(worker, description)| DispatchTarget::WorkerCall {
                                worker: worker.clone(),
                                description: description.clone(),
                            }),
                    )
                    .chain(remote.iter().map(|(agent, description)| {
                        DispatchTarget::RemoteAgentCall {
                            agent: agent.clone(),
                            description: description.clone(),
                        }
                    }))
                    .collect();
            let names: Vec<&str> = members
                .iter()
                .chain(workers)
                .chain(remote)
                .map(|(n, _)| n.as_str())
                .collect();
            let schema = &mut tool.definition.input_schema;
            if let Some(props) = schema.get_mut("properties").and_then(Value::as_object_mut) {
                match names.is_empty() {
                    true => {
                        props.remove("agent_id");
                    }
                    false => {
                        props.insert(
                            "agent_id".to_owned(),
                            serde_json::json!({
                                "type": "string",
                                "enum": names,
                                "description": if self_copy {
                                    "The member to hand the task to; leave it out for a fresh copy of yourself."
                                } else {
                                    "The member to hand the task to."
                                }
                            }),
                        );
                    }
                }
            }
            if !self_copy
                && let Some(required) = schema.get_mut("required").and_then(Value::as_array_mut)
                && !required.iter().any(|r| r == "agent_id")
            {
                required.push(Value::from("agent_id"));
            }
            tool.validator = jsonschema::validator_for(&tool.definition.input_schema).ok();
        }
    }

    /// Leaves the dispatch tools out of a session that cannot open child
    /// sessions, reporting why (with a code when a client may act on it).
    pub fn drop_dispatch(&mut self, reason: &str, code: Option<&'static str>) {
        let (dropped, kept): (Vec<PreparedTool>, Vec<PreparedTool>) =
            self.tools.drain(..).partition(|t| match &t.kind {
                // Task updates go to the parent, which a task child has;
                // everything else hands tasks down (or stops them).
                PreparedKind::Dispatch(targets) => targets
                    .iter()
                    .any(|t| !matches!(t, DispatchTarget::TaskUpdate)),
                PreparedKind::Ordinary(_)
                | PreparedKind::RequestInput(_)
                | PreparedKind::Provider(_) => false,
            });
        self.tools = kept;
        for t in dropped {
            self.skip_with_code(&t.definition.name, code, reason);
        }
    }

    /// Names of the tools that are not MCP tools, which MCP names must not
    /// collide with.
    pub fn reserved_names(&self) -> std::collections::BTreeSet<String> {
        self.tools
            .iter()
            .filter(|t| !matches!(t.kind, PreparedKind::Ordinary(Executor::Mcp { .. })))
            .map(|t| t.definition.name.clone())
            .collect()
    }

    fn skip(&mut self, tool: &str, reason: &str) {
        self.skip_with_code(tool, None, reason);
    }

    fn skip_with_code(&mut self, tool: &str, code: Option<&'static str>, reason: &str) {
        self.unavailable.push(UnavailableTool {
            tool: tool.to_owned(),
            reason: reason.to_owned(),
            code,
        });
    }

    /// The provider tools to materialize in a model call, of those
    /// `offered`.
    pub fn provider_tools(
        &self,
        offered: impl Fn(&PreparedTool) -> bool,
    ) -> Vec<evoflux_model::ProviderToolKind> {
        self.tools
            .iter()
            .filter(|t| offered(t))
            .filter_map(PreparedTool::provider_tool)
            .collect()
    }

    pub fn iter(&self) -> impl Iterator<Item = &PreparedTool> {
        self.tools.iter()
    }

    /// The prepared tool a model-visible name refers to.
    pub fn get(&self, name: &str) -> Option<&PreparedTool> {
        self.tools.iter().find(|t| t.definition.name == name)
    }

    /// The prepared tool named `name`, to change its offering (a skill
    /// activation un-defers a tool its contract needs).
    pub fn get_mut(&mut self, name: &str) -> Option<&mut PreparedTool> {
        self.tools.iter_mut().find(|t| t.definition.name == name)
    }

    /// The first tool `matches` picks, to change its offering.
    pub fn find_mut(
        &mut self,
        matches: impl Fn(&PreparedTool) -> bool,
    ) -> Option<&mut PreparedTool> {
        self.tools.iter_mut().find(|t| matches(t))
    }

    /// Removes and returns the tool named `name`.
    pub fn take(&mut self, name: &str) -> Option<PreparedTool> {
        let i = self.tools.iter().position(|t| t.definition.name == name)?;
        Some(self.tools.remove(i))
    }

    /// Adds a tool prepared for this session elsewhere (a reserve tool a
    /// skill activation brought in).
    pub fn adopt(&mut self, tool: PreparedTool) {
        if self.get(&tool.definition.name).is_none() {
            self.tools.push(tool);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn caps() -> SessionCapabilities {
        SessionCapabilities {
            root_session: true,
            delegated_task_child: false,
            can_request_input: true,
            processes: false,
            skills: false,
            network: true,
            host_network: true,
            checks: true,
            schedules: true,
            browser: None,
            provider: ProviderKind::Scripted,
            provider_tools: Vec::new(),
        }
    }

    fn all_names(catalog: &ToolCatalog) -> Vec<String> {
        catalog.names().map(str::to_owned).collect()
    }

    #[test]
    fn verify_needs_registered_checks_and_names_exactly_them() {
        let catalog = ToolCatalog::framework();
        let names = vec!["verify".to_owned()];
        let without = SessionCapabilities {
            processes: true,
            checks: false,
            ..caps()
        };
        let tools = PreparedTools::prepare(&catalog, &names, AppMode::Coding, &without);
        assert!(tools.get("verify").is_none());
        assert!(
            tools.unavailable[0].reason.contains("fleets/commands.yaml"),
            "{:?}",
            tools.unavailable
        );
        let with = SessionCapabilities {
            processes: true,
            ..caps()
        };
        let mut tools = PreparedTools::prepare(&catalog, &names, AppMode::Coding, &with);
        tools.bind_checks(&[("test".into(), "cargo test".into())]);
        let verify = tools.get("verify").unwrap();
        assert_eq!(
            verify.definition.input_schema["properties"]["command"]["enum"],
            serde_json::json!(["test"])
        );
        assert!(
            verify
                .check_arguments(&serde_json::json!({"command": "test"}))
                .is_ok()
        );
        assert!(
            verify
                .check_arguments(&serde_json::json!({"command": "rm"}))
                .is_err()
        );
    }

    #[test]
    fn handling_comes_from_behavior_and_gaps_are_reported() {
        let catalog = ToolCatalog::framework();
        let tools =
            PreparedTools::prepare(&catalog, &all_names(&catalog), AppMode::Coding, &caps());
        let kind = |n: &str| tools.get(n).map(|t| t.kind.clone());
        assert_eq!(
            kind("read"),
            Some(PreparedKind::Ordinary(Executor::Builtin(
                BuiltinExecutor::Read
            )))
        );
        assert_eq!(
            kind("ask_user"),
            Some(PreparedKind::RequestInput(InputRequest::Question))
        );
        // `agent` dispatches (to itself until a team is bound) and
        // `task_cancel` stops tasks in a root session; `task_update` is for
        // task children; the scripted provider has no web search; shell
        // needs a process runtime.
        assert_eq!(
            kind("agent"),
            Some(PreparedKind::Dispatch(vec![DispatchTarget::SelfAgentCall]))
        );
        assert_eq!(
            kind("task_cancel"),
            Some(PreparedKind::Dispatch(vec![DispatchTarget::TaskCancel]))
        );
        let skipped: Vec<&str> = tools.unavailable.iter().map(|u| u.tool.as_str()).collect();
        for t in ["task_update", "web_search", "shell", "process"] {
            assert!(
                skipped.contains(&t),
                "{t} should be unavailable: {skipped:?}"
            );
            assert!(tools.get(t).is_none());
        }
    }

    #[test]
    fn below_the_root_the_delegation_tool_names_an_agent_and_the_last_level_has_none() {
        let catalog = ToolCatalog::framework();
        let names = vec!["agent".to_owned(), "task_cancel".to_owned()];
        let child = SessionCapabilities {
            root_session: false,
            ..caps()
        };
        let members = [("coder".to_owned(), "Writes code.".to_owned())];
        let mut tools = PreparedTools::prepare(&catalog, &names, AppMode::Coding, &child);
        tools.bind_team(&members, &[], &[], false);
        let agent = tools.get("agent").unwrap();
        assert_eq!(
            agent.kind,
            PreparedKind::Dispatch(vec![DispatchTarget::SubagentCall {
                agent: "coder".into(),
                description: "Writes code.".into(),
            }])
        );
        // No fresh copy of itself: `agent_id` is required.
        assert!(
            agent
                .check_arguments(&serde_json::json!({"message": "do it"}))
                .is_err()
        );
        assert!(
            agent
                .check_arguments(&serde_json::json!({"message": "do it", "agent_id": "coder"}))
                .is_ok()
        );
        // The root keeps its fresh copy.
        let mut root = PreparedTools::prepare(&catalog, &names, AppMode::Coding, &caps());
        root.bind_team(&members, &[], &[], true);
        let agent = root.get("agent").unwrap();
        assert!(
            agent
                .check_arguments(&serde_json::json!({"message": "do it"}))
                .is_ok()
        );
        // At the last level both dispatch tools are left out, with the code.
        tools.drop_dispatch("too deep", Some(crate::session::lineage::DEPTH_LIMIT));
        assert!(tools.get("agent").is_none() && tools.get("task_cancel").is_none());
        let codes: Vec<_> = tools
            .unavailable
            .iter()
            .map(|u| (u.tool.as_str(), u.code))
            .collect();
        assert_eq!(
            codes,
            [
                ("agent", Some(crate::session::lineage::DEPTH_LIMIT)),
                ("task_cancel", Some(crate::session::lineage::DEPTH_LIMIT))
            ]
        );
    }

    #[test]
    fn what_the_session_cannot_run_is_unavailable_with_its_reason() {
        let catalog = ToolCatalog::framework();
        // A delegated task child reports with `task_update`; whether it
        // dispatches further is its team's lineage (`drop_dispatch`), not a
        // capability. Even with every other capability it gets no provider
        // tool: the reason is its provider.
        let c = SessionCapabilities {
            root_session: false,
            delegated_task_child: true,
            processes: true,
            skills: true,
            ..caps()
        };
        let tools = PreparedTools::prepare(&catalog, &all_names(&catalog), AppMode::Coding, &c);
        assert_eq!(
            tools.get("task_update").map(|t| t.kind.clone()),
            Some(PreparedKind::Dispatch(vec![DispatchTarget::TaskUpdate]))
        );
        assert!(tools.get("agent").is_some() && tools.get("task_cancel").is_some());
        assert!(tools.iter().all(|t| !matches!(
            t.definition.behavior.handling,
            Handling::ProviderTool { .. }
        )));
        let u = tools.unavailable.iter().find(|u| u.tool == "web_search");
        assert_eq!(u.and_then(|u| u.code), Some(PROVIDER_LACKS_WEB_SEARCH));
        assert!(
            u.is_some_and(|u| u.reason.contains("has no web search")),
            "{u:?}"
        );
        assert!(tools.get("shell").is_some());
        assert!(
            tools.get("code_context").is_some(),
            "code navigation is built"
        );
    }

    #[test]
    fn web_search_is_a_provider_tool_where_the_provider_has_one() {
        let catalog = ToolCatalog::framework();
        let names = vec!["web_search".to_owned(), "read".to_owned()];
        let with = SessionCapabilities {
            provider: ProviderKind::Anthropic,
            provider_tools: vec![evoflux_model::ProviderToolKind::WebSearch],
            ..caps()
        };
        let tools = PreparedTools::prepare(&catalog, &names, AppMode::Work, &with);
        let search = tools.get("web_search").unwrap();
        assert_eq!(
            search.kind,
            PreparedKind::Provider(evoflux_graph::tool::ProviderTool::WebSearch)
        );
        assert!(tools.unavailable.is_empty(), "{:?}", tools.unavailable);
        // Materialized by the provider, never offered as a function.
        assert!(search.function_definition().is_none());
        assert!(tools.get("read").unwrap().function_definition().is_some());
        assert_eq!(
            tools.provider_tools(|_| true),
            [evoflux_model::ProviderToolKind::WebSearch]
        );

        let without = SessionCapabilities {
            provider: ProviderKind::Openai,
            ..caps()
        };
        let tools = PreparedTools::prepare(&catalog, &names, AppMode::Work, &without);
        assert!(tools.get("web_search").is_none());
        assert!(tools.provider_tools(|_| true).is_empty());
        assert_eq!(tools.unavailable[0].code, Some(PROVIDER_LACKS_WEB_SEARCH));
        assert!(
            tools.unavailable[0]
                .reason
                .contains("(openai) has no web search"),
            "{:?}",
            tools.unavailable
        );

        // The provider fetches pages for the session: no network, no search.
        let offline = SessionCapabilities {
            network: false,
            ..with
        };
        let tools = PreparedTools::prepare(&catalog, &names, AppMode::Work, &offline);
        assert!(tools.get("web_search").is_none());
        assert_eq!(tools.unavailable[0].code, None);
    }

    #[test]
    fn request_input_needs_a_session_that_can_ask() {
        let catalog = ToolCatalog::framework();
        let c = SessionCapabilities {
            can_request_input: false,
            ..caps()
        };
        let tools = PreparedTools::prepare(&catalog, &all_names(&catalog), AppMode::Work, &c);
        assert!(tools.get("ask_user").is_none());
        assert!(tools.unavailable.iter().any(|u| u.tool == "ask_user"));
    }

    #[test]
    fn arguments_are_checked_against_the_schema() {
        let catalog = ToolCatalog::framework();
        let tools = PreparedTools::prepare(&catalog, &all_names(&catalog), AppMode::Work, &caps());
        let read = tools.get("read").unwrap();
        assert!(
            read.check_arguments(&serde_json::json!({"path": "a"}))
                .is_ok()
        );
        let err = read
            .check_arguments(&serde_json::json!({"path": 3}))
            .unwrap_err();
        assert!(err.contains("/path"), "{err}");
    }
}
