//! The tool registry as the agent domain sees it.
//!
//! Tool metadata (the modes a tool exists in, whether only a lead gets it,
//! its action class, whether it is the skill loader) is read from the
//! [`ToolDefinition`]s that won their slots in the compiled graph. This
//! module never keeps a list of tool names of its own: replacing
//! `tools/shell` with a command tool changes what every policy below sees.

use std::collections::BTreeMap;

use evoflux_core::AppMode;
use evoflux_graph::runnable::NotInBuild;
use evoflux_graph::tool::{ActionClass, Presentation, ToolDefinition};
use evoflux_graph::{CompiledGraph, Definition};

/// The selected tools of one compiled graph, by model-visible name.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ToolCatalog {
    tools: BTreeMap<String, ToolDefinition>,
}

impl ToolCatalog {
    /// Every `tools/<name>` node of the graph.
    pub fn from_graph(graph: &CompiledGraph) -> ToolCatalog {
        ToolCatalog::from_definitions(graph.nodes.iter().filter_map(|n| match &n.definition {
            Definition::Tool(t) => Some(t.clone()),
            Definition::Config(_)
            | Definition::Sandbox(_)
            | Definition::Channel(_)
            | Definition::Connection(_)
            | Definition::Schedule(_)
            | Definition::Eval(_)
            | Definition::RemoteAgent(_)
            | Definition::Document { .. } => None,
        }))
    }

    pub fn from_definitions(defs: impl IntoIterator<Item = ToolDefinition>) -> ToolCatalog {
        ToolCatalog {
            tools: defs.into_iter().map(|d| (d.name.clone(), d)).collect(),
        }
    }

    /// The graph's framework tools exactly as the framework registry builds
    /// them; what a graph with no user tool files selects.
    pub fn framework() -> ToolCatalog {
        ToolCatalog::from_definitions(
            evoflux_graph::tool::FRAMEWORK_TOOLS
                .iter()
                .filter_map(|n| evoflux_graph::tool::framework_tool(n)),
        )
    }

    pub fn get(&self, name: &str) -> Option<&ToolDefinition> {
        self.tools.get(name)
    }

    pub fn contains(&self, name: &str) -> bool {
        self.tools.contains_key(name)
    }

    /// The declared action class of a tool, `None` when the graph has no
    /// such tool.
    pub fn action_class(&self, name: &str) -> Option<ActionClass> {
        self.get(name).map(|t| t.behavior.action_class)
    }

    /// Whether a tool is the skill loader: calls are presented as skill
    /// activations. Every agent gets it implicitly and a worker that binds
    /// skills must require it.
    pub fn loads_skills(&self, name: &str) -> bool {
        self.get(name)
            .is_some_and(|t| is_skill_loader(&t.behavior.presentation))
    }

    /// Why this build cannot run the tool named `name`
    /// ([`ToolDefinition::not_in_build`]); `None` when it can or when the
    /// graph has no such tool.
    pub fn not_in_build(&self, name: &str) -> Option<NotInBuild> {
        self.get(name).and_then(ToolDefinition::not_in_build)
    }

    /// Names in sorted order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.tools.keys().map(String::as_str)
    }

    pub fn iter(&self) -> impl Iterator<Item = &ToolDefinition> {
        self.tools.values()
    }

    /// Tools that exist in `mode`.
    pub fn in_mode(&self, mode: AppMode) -> impl Iterator<Item = &ToolDefinition> {
        self.tools
            .values()
            .filter(move |t| t.behavior.modes.contains(&mode))
    }

    pub fn len(&self) -> usize {
        self.tools.len()
    }

    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }
}

/// The skill loader is identified by its presentation, never its name.
pub fn is_skill_loader(p: &Presentation) -> bool {
    match p {
        Presentation::Skill => true,
        Presentation::None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn framework_catalog_reads_graph_metadata() {
        let c = ToolCatalog::framework();
        assert_eq!(
            c.len(),
            evoflux_graph::tool::FRAMEWORK_TOOLS.len(),
            "every framework tool is built"
        );
        assert_eq!(c.action_class("read"), Some(ActionClass::Read));
        assert_eq!(c.action_class("nope"), None);
        assert!(c.loads_skills("skill"));
        assert!(!c.loads_skills("read"));
        assert_eq!(c.not_in_build("agent"), None);
        assert_eq!(c.not_in_build("task_cancel"), None);
        assert_eq!(c.not_in_build("read"), None);
        assert!(c.in_mode(AppMode::Coding).any(|t| t.name == "code_context"));
        assert!(!c.in_mode(AppMode::Work).any(|t| t.name == "code_context"));
    }
}
