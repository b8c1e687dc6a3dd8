//! Whether this build can run a tool at all.
//!
//! A definition can declare a behavior that this build of evoflux has no
//! implementation for: an executor that is not compiled in, or a tool only
//! a model provider could execute. [`ToolDefinition::not_in_build`] is the one place that
//! says so, read by the runtime (such a tool is never offered to a model)
//! and by every inspection output (such a tool is marked, not listed as a
//! plain tool). It depends only on the definition: a tool replaced by a
//! command tool runs whatever its framework behavior was. Every builtin
//! executor is compiled in, and provider tools are materialized by the
//! provider wires that have them, so today nothing is missing; a provider
//! tool still depends on the session's provider, which
//! [`ToolDefinition::needs_provider`] names for inspection outputs.

use serde::Serialize;

use crate::tool::{DispatchAction, Handling, ProviderTool, ToolDefinition};

/// Why this build cannot run a tool, whatever the session. Closed, and
/// empty while every behavior a definition can declare is built: a future
/// executor left out by a cargo feature gets its variant here, and every
/// inspection output already reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum NotInBuild {}

impl NotInBuild {
    /// The stable code, `tool/<kebab-name>`.
    pub const fn code(self) -> &'static str {
        match self {}
    }

    /// The reason in words, for a person or a model.
    pub const fn message(self) -> &'static str {
        match self {}
    }
}

impl std::fmt::Display for NotInBuild {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.message())
    }
}

impl ToolDefinition {
    /// Why this build cannot run the tool; `None` when it can (session
    /// conditions such as a process runtime are decided per session).
    pub fn not_in_build(&self) -> Option<NotInBuild> {
        match (&self.behavior.handling, &self.executor) {
            (Handling::None, _) | (Handling::RequestInput { .. }, _) => None,
            (Handling::Dispatch { action }, _) => match action {
                DispatchAction::SelfAgent
                | DispatchAction::TaskUpdate
                | DispatchAction::TaskCancel => None,
            },
            // Materialized by the wires that have it; a session whose
            // provider does not leaves it out (see `needs_provider`).
            (Handling::ProviderTool { provider }, _) => match provider {
                ProviderTool::WebSearch => None,
            },
        }
    }

    /// What a provider tool needs of the session's provider, in words;
    /// `None` for every tool the harness runs itself.
    pub fn needs_provider(&self) -> Option<&'static str> {
        match &self.behavior.handling {
            Handling::None | Handling::RequestInput { .. } | Handling::Dispatch { .. } => None,
            Handling::ProviderTool { provider } => Some(provider.needs()),
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::tool::{FRAMEWORK_TOOLS, framework_tool};

    #[test]
    fn framework_tools_this_build_cannot_run() {
        let gaps: Vec<String> = FRAMEWORK_TOOLS
            .iter()
            .filter_map(|n| framework_tool(n))
            .filter_map(|t| t.not_in_build().map(|g| format!("{} {}", t.name, g.code())))
            .collect();
        assert!(gaps.is_empty(), "{gaps:?}");
        let needs: Vec<String> = FRAMEWORK_TOOLS
            .iter()
            .filter_map(|n| framework_tool(n))
            .filter(|t| t.needs_provider().is_some())
            .map(|t| t.name.clone())
            .collect();
        assert_eq!(needs, ["web_search"]);
    }
}
