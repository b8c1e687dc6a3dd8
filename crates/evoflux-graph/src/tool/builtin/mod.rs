//! The framework tools' definitions: one module per tool, and the one list
//! of them (`TOOLS`).
//!
//! Each module holds what the model and the graph know of one tool: its
//! description, its input schema, its typed behavior and the limits its
//! schema states. Its handler — when a session can run it, how a call is
//! approved, how it runs and what it leaves as evidence — is the module of
//! the same name in `evoflux-harness/src/tools/`, which the harness finds by
//! the definition's [`BuiltinExecutor`]. The natively handled tools
//! (`ask_user`, `agent`, `task_update`, `task_cancel`, `web_search`) have
//! no handler: the harness acts on their [`Handling`].
//!
//! The definitions live here, below the engine, because the layers under
//! it need them without an engine: the composer builds a framework tool
//! only when it wins its slot ([`crate::BuiltinRegistry::framework`]),
//! `evoflux-agents` checks teams and worker recipes against the framework
//! catalog, and `evoflux-tools` (which enforces the limits) compares its
//! parsers with these schemas in its tests. A crate never depends on one
//! above it, so the definitions cannot live with their handlers in the
//! harness.
//!
//! Every bound and default a schema states is a constant of the tool's
//! module, which the executors in `evoflux-tools` enforce: the model learns
//! a bound from the schema and the executor holds it to the same value, so
//! the two cannot drift apart. Changing a value changes the schema, and
//! therefore the builtin definition's hash: that is intended, since the
//! model-visible contract changed.
//!
//! Adding a framework tool is a module here and one line in `TOOLS` (and,
//! for a tool the harness runs, a [`BuiltinExecutor`] variant and its
//! handler module).

use serde_json::{Value, json};

use super::{
    ActionClass, Availability, BOTH, BuiltinExecutor, Handling, ObservationKind, Presentation,
    ToolBehavior, ToolDefinition, ToolExecutor,
};
use evoflux_core::AppMode;

pub mod agent;
pub mod artifact;
pub mod ask_user;
pub mod browser;
pub mod code_context;
pub mod connection_search;
pub mod edit;
pub mod glob;
pub mod grep;
pub mod ls;
pub mod preview;
pub mod process;
pub mod read;
pub mod schedule_task;
pub mod shell;
pub mod skill;
pub mod task_cancel;
pub mod task_update;
pub mod todo;
pub mod verify;
pub mod web_fetch;
pub mod web_search;
pub mod write;

/// The framework tools, in registry order: each tool's module and nothing
/// else names it.
const TOOLS: &[Framework] = &[
    shell::TOOL,
    process::TOOL,
    preview::TOOL,
    read::TOOL,
    write::TOOL,
    edit::TOOL,
    ls::TOOL,
    glob::TOOL,
    grep::TOOL,
    todo::TOOL,
    web_fetch::TOOL,
    browser::TOOL,
    skill::TOOL,
    code_context::TOOL,
    verify::TOOL,
    artifact::TOOL,
    ask_user::TOOL,
    agent::TOOL,
    task_update::TOOL,
    task_cancel::TOOL,
    web_search::TOOL,
    schedule_task::TOOL,
    connection_search::TOOL,
];

/// The framework tool identities, in registry order.
pub const FRAMEWORK_TOOLS: &[&str] = &{
    let mut names = [""; TOOLS.len()];
    let mut i = 0;
    while i < TOOLS.len() {
        names[i] = TOOLS[i].name;
        i += 1;
    }
    names
};

/// Builds the framework definition of one tool. Called only for a
/// framework tool that won its slot.
pub fn framework_tool(name: &str) -> Option<ToolDefinition> {
    let tool = TOOLS.iter().find(|t| t.name == name)?;
    Some((tool.spec)().build(tool.name))
}

/// One framework tool: its identity (the model-visible name, which is its
/// slot) and the builder of its definition.
struct Framework {
    name: &'static str,
    spec: fn() -> Spec,
}

/// A JSON schema object with exactly `properties`, `required` among them.
fn object(properties: Value, required: &[&str]) -> Value {
    json!({
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": false,
    })
}

/// A string property the model reads `description` of.
fn string(description: &str) -> Value {
    json!({"type": "string", "description": description})
}

/// What a framework tool's module declares; built into its
/// [`ToolDefinition`] under its name.
struct Spec {
    description: String,
    schema: Value,
    action_class: ActionClass,
    availability: &'static [Availability],
    handling: Handling,
    presentation: Presentation,
    modes: &'static [AppMode],
    lead_only: bool,
    on_request: bool,
    requested_in: &'static [AppMode],
    observation: Option<ObservationKind>,
    executor: Option<BuiltinExecutor>,
}

impl Spec {
    /// A tool an executor runs, in both modes.
    fn ordinary(
        executor: BuiltinExecutor,
        action_class: ActionClass,
        description: impl Into<String>,
        schema: Value,
    ) -> Spec {
        Spec {
            description: description.into(),
            schema,
            action_class,
            availability: &[],
            handling: Handling::None,
            presentation: Presentation::None,
            modes: BOTH,
            lead_only: false,
            on_request: false,
            requested_in: &[],
            observation: None,
            executor: Some(executor),
        }
    }

    /// A tool the harness handles natively (`handling`), with no executor.
    fn native(
        handling: Handling,
        action_class: ActionClass,
        availability: &'static [Availability],
        description: impl Into<String>,
        schema: Value,
    ) -> Spec {
        Spec {
            description: description.into(),
            schema,
            action_class,
            availability,
            handling,
            presentation: Presentation::None,
            modes: BOTH,
            lead_only: false,
            on_request: false,
            requested_in: &[],
            observation: None,
            executor: None,
        }
    }

    /// Declares what the tool observes (see [`ObservationKind`]).
    fn observes(mut self, kind: ObservationKind) -> Spec {
        self.observation = Some(kind);
        self
    }

    fn build(self, name: &str) -> ToolDefinition {
        ToolDefinition {
            name: name.to_owned(),
            description: self.description,
            input_schema: self.schema,
            behavior: ToolBehavior {
                availability: self.availability.to_vec(),
                handling: self.handling,
                presentation: self.presentation,
                action_class: self.action_class,
                modes: self.modes.to_vec(),
                lead_only: self.lead_only,
                on_request: self.on_request,
                requested_in: self.requested_in.to_vec(),
                observation: self.observation,
            },
            executor: self
                .executor
                .map(|executor| ToolExecutor::Builtin { executor }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_framework_tool_has_a_valid_schema_and_truthful_executor() {
        for name in FRAMEWORK_TOOLS {
            let def = framework_tool(name).unwrap();
            assert_eq!(def.name, *name);
            assert!(
                jsonschema::meta::is_valid(&def.input_schema),
                "{name}: invalid schema"
            );
            // Natively handled tools have no executor; ordinary ones do.
            match def.behavior.handling {
                Handling::None => assert!(def.executor.is_some(), "{name}"),
                Handling::RequestInput { .. }
                | Handling::Dispatch { .. }
                | Handling::ProviderTool { .. } => assert!(def.executor.is_none(), "{name}"),
            }
        }
        assert!(framework_tool("nope").is_none());
        // One module per name.
        let mut names = FRAMEWORK_TOOLS.to_vec();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), FRAMEWORK_TOOLS.len());
    }

    #[test]
    fn observation_kinds_are_declared_on_the_definition() {
        let kind = |n: &str| framework_tool(n).unwrap().behavior.observation;
        assert_eq!(kind("read"), Some(ObservationKind::Source));
        for n in ["ls", "glob", "grep"] {
            assert_eq!(kind(n), Some(ObservationKind::Discovery), "{n}");
        }
        assert_eq!(kind("code_context"), Some(ObservationKind::Retrieval));
        assert_eq!(kind("shell"), None);
        // Unset kinds stay out of the serialized definition.
        let shell = serde_json::to_value(framework_tool("shell").unwrap()).unwrap();
        assert!(shell["behavior"].get("observation").is_none());
        let read = serde_json::to_value(framework_tool("read").unwrap()).unwrap();
        assert_eq!(read["behavior"]["observation"], "source");
    }

    #[test]
    fn code_context_is_coding_only() {
        assert_eq!(
            framework_tool("code_context").unwrap().behavior.modes,
            [AppMode::Coding]
        );
        assert_eq!(framework_tool("shell").unwrap().behavior.modes, BOTH);
    }
}
