//! The capability-to-tool policy.
//!
//! A worker's capability class bounds the action classes of the tools it
//! declares. The rules are evaluated on each tool's declared
//! [`ActionClass`] in the compiled graph (recorded on the spec as
//! `tool_classes`), never on tool names: a command tool that replaces
//! `tools/grep` with a writer is judged as a writer.
//!
//! * workspace-edit must require a read tool and a group of write tools;
//! * verification must require a verify-class tool (`verify`, which runs
//!   the registered check commands) and must not request write, artifact,
//!   dispatch or execute-class (shell) tools;
//! * artifact-write must require an artifact-class tool, must declare a
//!   result contract that names an artifact, and must not request write,
//!   execute, verify or dispatch tools: its only way to write is `artifact`;
//! * read-only may request only read-class tools: no network, no writes,
//!   and an unknown tool is refused (its class cannot be proven);
//! * only orchestration may expose dispatch, and must require it when it
//!   declares it;
//! * no worker may expose an ask tool (only a lead talks to the user);
//! * bound skills require the skill loader (identified by presentation).

use std::collections::BTreeMap;

use evoflux_graph::tool::ActionClass;

use super::recipe::{CapabilityClass, ToolRequirement};
use super::spec::AgentSpec;
use crate::tools::ToolCatalog;

/// Display name of an action class in policy messages.
pub fn class_name(c: Option<ActionClass>) -> &'static str {
    match c {
        Some(ActionClass::Read) => "read",
        Some(ActionClass::Write) => "write",
        Some(ActionClass::Execute) => "execute",
        Some(ActionClass::Verify) => "verify",
        Some(ActionClass::Dispatch) => "dispatch",
        Some(ActionClass::Ask) => "ask",
        Some(ActionClass::Network) => "network",
        Some(ActionClass::Artifact) => "artifact",
        None => "unknown",
    }
}

/// Whether the read-only rule itself reports a tool of class `c`. Ask and
/// dispatch tools are refused too, but once, by their own rules below, so
/// a read-only agent is not told twice; an unknown class is refused because
/// it cannot be proven to read only.
fn read_only_refuses(c: Option<ActionClass>) -> bool {
    match c {
        Some(ActionClass::Read | ActionClass::Ask | ActionClass::Dispatch) => false,
        Some(
            ActionClass::Write
            | ActionClass::Execute
            | ActionClass::Verify
            | ActionClass::Network
            | ActionClass::Artifact,
        )
        | None => true,
    }
}

fn class_of(spec: &AgentSpec, tool: &str) -> Option<ActionClass> {
    spec.tool_classes.get(tool).copied().flatten()
}

/// Whether some required group consists only of tools whose class passes
/// `pred`.
fn requires(spec: &AgentSpec, pred: impl Fn(Option<ActionClass>) -> bool) -> bool {
    spec.tool_requirements.required.iter().any(|r| {
        let members = r.members();
        !members.is_empty() && members.iter().all(|t| pred(class_of(spec, t)))
    })
}

fn required_names(spec: &AgentSpec) -> Vec<&str> {
    spec.tool_requirements
        .required
        .iter()
        .flat_map(ToolRequirement::members)
        .map(String::as_str)
        .collect()
}

/// Every policy violation of `spec`; empty when it may enter a catalog.
pub fn agent_spec_policy_errors(spec: &AgentSpec, tools: &ToolCatalog) -> Vec<String> {
    let id = &spec.id;
    let mut errors = Vec::new();
    let is = |c: ActionClass| move |x: Option<ActionClass>| x == Some(c);
    match spec.capability_class {
        CapabilityClass::WorkspaceEdit => {
            if !requires(spec, is(ActionClass::Read)) || !requires(spec, is(ActionClass::Write)) {
                errors.push(format!(
                    "workspace-edit agent '{id}' must require read and write|edit"
                ));
            }
        }
        CapabilityClass::Verification => {
            if !requires(spec, is(ActionClass::Verify)) {
                errors.push(format!("verification agent '{id}' must require verify"));
            }
            for t in &spec.tools {
                let c = class_of(spec, t);
                match c {
                    Some(ActionClass::Execute) => errors.push(format!(
                        "verification agent '{id}' must use typed validation tools, not shell \
                         ('{t}' is an execute tool)"
                    )),
                    Some(ActionClass::Write | ActionClass::Artifact | ActionClass::Dispatch) => {
                        errors.push(format!(
                            "verification agent '{id}' must not request {} tool '{t}'",
                            class_name(c)
                        ))
                    }
                    Some(
                        ActionClass::Read
                        | ActionClass::Verify
                        | ActionClass::Ask
                        | ActionClass::Network,
                    )
                    | None => {}
                }
            }
        }
        CapabilityClass::ArtifactWrite => {
            if !requires(spec, is(ActionClass::Artifact)) {
                errors.push(format!("artifact-write agent '{id}' must require artifact"));
            }
            if !spec.result_contract.kind.names_artifact() {
                errors.push(format!(
                    "artifact-write agent '{id}' can only write terminal artifacts; got result \
                     contract '{}'",
                    spec.result_contract.kind
                ));
            }
            for t in &spec.tools {
                let c = class_of(spec, t);
                match c {
                    Some(ActionClass::Write) => errors.push(format!(
                        "artifact-write agent '{id}' can only write terminal artifacts; got '{t}'"
                    )),
                    Some(ActionClass::Execute | ActionClass::Verify | ActionClass::Dispatch) => {
                        errors.push(format!(
                            "artifact-write agent '{id}' requests {} tool '{t}'",
                            class_name(c)
                        ))
                    }
                    Some(
                        ActionClass::Read
                        | ActionClass::Artifact
                        | ActionClass::Ask
                        | ActionClass::Network,
                    )
                    | None => {}
                }
            }
        }
        CapabilityClass::ReadOnly => {
            let mut offending: BTreeMap<Option<ActionClass>, Vec<&str>> = BTreeMap::new();
            for t in &spec.tools {
                let c = class_of(spec, t);
                if read_only_refuses(c) {
                    offending.entry(c).or_default().push(t);
                }
            }
            // One message per class, in the order of the classes' display
            // names, so a user sees the same list on every run.
            let mut groups: Vec<_> = offending.into_iter().collect();
            groups.sort_by_key(|(c, _)| class_name(*c));
            for (c, names) in groups {
                errors.push(format!(
                    "read-only agent '{id}' requests {} tools ({})",
                    class_name(c),
                    names.join(", ")
                ));
            }
        }
        CapabilityClass::Orchestration | CapabilityClass::Internal => {}
    }
    let dispatch: Vec<&String> = spec
        .tools
        .iter()
        .filter(|t| class_of(spec, t) == Some(ActionClass::Dispatch))
        .collect();
    if !dispatch.is_empty() {
        match spec.capability_class {
            CapabilityClass::Orchestration => {
                let required = required_names(spec);
                if dispatch.iter().any(|t| !required.contains(&t.as_str())) {
                    errors.push(format!(
                        "orchestration agent '{id}' must require dispatch when it is declared"
                    ));
                }
            }
            CapabilityClass::ReadOnly
            | CapabilityClass::ArtifactWrite
            | CapabilityClass::WorkspaceEdit
            | CapabilityClass::Verification
            | CapabilityClass::Internal => errors.push(format!(
                "agent '{id}' exposes dispatch without orchestration capability"
            )),
        }
    }
    for t in &spec.tools {
        if class_of(spec, t) == Some(ActionClass::Ask) {
            errors.push(format!(
                "agent '{id}' exposes {t}, which is only available to the orchestrator"
            ));
        }
    }
    if !spec.skills.is_empty() {
        let exposes = spec.tools.iter().any(|t| tools.loads_skills(t));
        let required = required_names(spec)
            .into_iter()
            .any(|t| tools.loads_skills(t));
        if !exposes {
            errors.push(format!(
                "agent '{id}' declares skills but does not expose context (the skill loader)"
            ));
        } else if !required {
            errors.push(format!(
                "agent '{id}' must require context for bound skills"
            ));
        }
    }
    errors
}

/// Why a spec may not enter a catalog.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("agent policy violation:\n- {}", .0.join("\n- "))]
pub struct PolicyViolation(pub Vec<String>);

pub fn assert_agent_spec_policy(
    spec: &AgentSpec,
    tools: &ToolCatalog,
) -> Result<(), PolicyViolation> {
    let errors = agent_spec_policy_errors(spec, tools);
    if errors.is_empty() {
        Ok(())
    } else {
        Err(PolicyViolation(errors))
    }
}
