//! Tool compatibility after runtime narrowing.

use evoflux_graph::tool::ActionClass;
use serde::{Deserialize, Serialize};

use super::recipe::ToolRequirement;
use super::spec::AgentSpec;

/// Whether a worker can run with the tools a runtime actually offers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolCompatibility {
    pub compatible: bool,
    /// Missing required entries: a tool name, or `anyOf(a|b)` in declared
    /// order, or `<tool>(runtime mediation unavailable)` for a dispatch
    /// tool the runtime cannot mediate.
    pub missing_required: Vec<String>,
    /// Optional tools the worker will run without.
    pub lost_optional: Vec<String>,
}

/// Checks `spec` against the tool names a runtime offers. A dispatch-class
/// tool (by the action class recorded on the spec) that is offered while
/// the runtime does not mediate dispatch makes the worker incompatible:
/// this is the one place that runtime mediation is checked.
pub fn resolve_tool_compatibility<S: AsRef<str>>(
    spec: &AgentSpec,
    available: &[S],
    mediates_dispatch: bool,
) -> ToolCompatibility {
    let has = |t: &str| available.iter().any(|a| a.as_ref() == t);
    let mut missing_required: Vec<String> = spec
        .tool_requirements
        .required
        .iter()
        .filter(|r| !r.members().iter().any(|m| has(m)))
        .map(ToolRequirement::render)
        .collect();
    if !mediates_dispatch {
        for t in &spec.tools {
            let dispatch =
                spec.tool_classes.get(t).copied().flatten() == Some(ActionClass::Dispatch);
            if dispatch && has(t) {
                missing_required.push(format!("{t}(runtime mediation unavailable)"));
            }
        }
    }
    let lost_optional = spec
        .tool_requirements
        .optional
        .iter()
        .filter(|t| !has(t))
        .cloned()
        .collect();
    ToolCompatibility {
        compatible: missing_required.is_empty(),
        missing_required,
        lost_optional,
    }
}
