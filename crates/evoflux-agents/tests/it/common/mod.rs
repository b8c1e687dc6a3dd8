//! Shared helpers for the integration tests.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use evoflux_agents::ToolCatalog;
use evoflux_agents::worker::{AgentSpec, RecipeSource, normalize_agent_spec, parse_recipe};
use evoflux_core::{AppMode, Diagnostics};
use evoflux_graph::tool::{
    ActionClass, FRAMEWORK_TOOLS, Handling, Presentation, ToolBehavior, ToolDefinition,
    framework_tool,
};

/// A user-defined tool with a declared action class, as a `tools/<name>.toml`
/// command tool would compile.
pub fn tool(name: &str, class: ActionClass) -> ToolDefinition {
    ToolDefinition {
        name: name.into(),
        description: format!("{name} tool"),
        input_schema: serde_json::json!({"type": "object"}),
        behavior: ToolBehavior {
            availability: vec![],
            handling: Handling::None,
            presentation: Presentation::None,
            action_class: class,
            modes: AppMode::ALL.to_vec(),
            lead_only: false,
            on_request: false,
            requested_in: vec![],
            observation: None,
        },
        executor: None,
    }
}

/// The framework tools plus a `find` reader, as a project could add it.
pub fn catalog_with_extras() -> ToolCatalog {
    ToolCatalog::from_definitions(
        FRAMEWORK_TOOLS
            .iter()
            .filter_map(|n| framework_tool(n))
            .chain([tool("find", ActionClass::Read)]),
    )
}

pub fn recipe_text(front: &str, body: &str) -> String {
    format!("---\n{front}---\n{body}")
}

/// Parses and normalizes; panics with the diagnostics on failure.
pub fn spec_from(id: &str, source: RecipeSource, text: &str, tools: &ToolCatalog) -> AgentSpec {
    let mut d = Diagnostics::new();
    let recipe = parse_recipe(id, source, Path::new(&format!("{id}.md")), text, &mut d)
        .unwrap_or_else(|| panic!("{}", d.render_human()));
    normalize_agent_spec(&recipe, tools).unwrap()
}

/// A recipe front matter with every key, overridable by line.
pub fn front(overrides: &[(&str, &str)]) -> String {
    let mut keys: Vec<(String, String)> = [
        ("version", "1"),
        ("name", "Checker"),
        ("description", "Checks things."),
        ("tools", "{required: [read], optional: [grep]}"),
        ("skills", "[]"),
        ("audience", "custom"),
        ("category", "quality"),
        ("capabilityClass", "read-only"),
        ("latencyClass", "fast"),
        ("projectContextTier", "none"),
        ("budget", "{toolCalls: 8, readReserve: 2, synthesis: true}"),
        ("resultContract", "{kind: scout-report}"),
        ("tags", "[a]"),
    ]
    .iter()
    .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
    .collect();
    for (k, v) in overrides {
        match keys.iter_mut().find(|(key, _)| key == k) {
            Some(entry) if v.is_empty() => entry.1 = String::from("\u{0}"),
            Some(entry) => entry.1 = (*v).to_owned(),
            None => keys.push(((*k).to_owned(), (*v).to_owned())),
        }
    }
    keys.iter()
        .filter(|(_, v)| v != "\u{0}")
        .map(|(k, v)| format!("{k}: {v}\n"))
        .collect()
}
