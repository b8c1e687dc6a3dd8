//! (v5) Delegation plans: a plan step's architect answers a plan of tasks
//! over its roster; a valid plan is spliced into the run as agent nodes.
//!
//! [`parse_delegation_plan`] holds a plan to its step: every agent in the
//! roster, at most `maxTasks` tasks, ids unique and usable as node ids,
//! dependencies among the plan's own tasks and without a cycle, and every
//! task's `writes` inside the step's boundary. One reason per refusal,
//! each with its code (`fleet/delegation-plan-…`), so the plan step fails
//! with it and nothing is spliced. [`delegated_nodes`] turns the tasks
//! into plan nodes: `<plan node>.<task id>`, each after the plan node and
//! the tasks it names, working within its own `writes` (read-only when it
//! names none).

use std::collections::{BTreeMap, BTreeSet};

use serde::Deserialize;

use crate::boundary::{WriteBoundary, normalize_write_boundary, write_boundary_covers};
use crate::contract::Scope;
use crate::plan::{NodeRole, NodeWork, PlanNode};

/// One task of a delegation plan.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DelegationTask {
    pub id: String,
    pub agent: String,
    pub description: String,
    #[serde(default)]
    pub depends_on: Vec<String>,
    #[serde(default)]
    pub writes: Vec<String>,
    /// `sequential` or `parallel`: advisory; the executor's `maxWorkers`
    /// and dependencies decide.
    #[serde(default)]
    pub mode: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Plan {
    tasks: Vec<DelegationTask>,
}

/// Why a delegation plan is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DelegationError {
    #[error("the answer is not a delegation plan: {0}")]
    Shape(String),
    #[error("the delegation plan has no tasks")]
    Empty,
    #[error("the delegation plan has {count} tasks; the step allows at most {max}")]
    OverMaxTasks { count: usize, max: u32 },
    #[error("task '{task}' names agent '{agent}', which is not in the step's roster ({roster})")]
    RosterViolation {
        task: String,
        agent: String,
        roster: String,
    },
    #[error(
        "task id '{0}' must be 1-64 characters of [a-z0-9._-], starting with a letter or digit"
    )]
    BadId(String),
    #[error("task id '{0}' is used twice")]
    DuplicateId(String),
    #[error("task '{task}' depends on '{dependency}', which is not a task of the plan")]
    UnknownDependency { task: String, dependency: String },
    #[error("the tasks depend on each other in a cycle: {}", .0.join(" -> "))]
    DependencyCycle(Vec<String>),
    #[error("task '{task}' writes '{path}', outside the step's boundary ({boundary})")]
    WritesOutsideBoundary {
        task: String,
        path: String,
        boundary: String,
    },
    #[error("task '{task}' writes: {reason}")]
    BadWrites { task: String, reason: String },
}

impl DelegationError {
    pub fn code(&self) -> &'static str {
        match self {
            DelegationError::Shape(_) | DelegationError::Empty | DelegationError::BadId(_) => {
                "fleet/delegation-plan-invalid"
            }
            DelegationError::OverMaxTasks { .. } => "fleet/delegation-plan-over-max-tasks",
            DelegationError::RosterViolation { .. } => "fleet/delegation-plan-roster-violation",
            DelegationError::DuplicateId(_) => "fleet/delegation-plan-duplicate-id",
            DelegationError::UnknownDependency { .. } => "fleet/delegation-plan-unknown-dependency",
            DelegationError::DependencyCycle(_) => "fleet/delegation-plan-dependency-cycle",
            DelegationError::WritesOutsideBoundary { .. } | DelegationError::BadWrites { .. } => {
                "fleet/delegation-plan-writes-outside-boundary"
            }
        }
    }
}

fn id_ok(id: &str) -> bool {
    let mut chars = id.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
        && id.len() <= 64
        && chars
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '.' | '_' | '-'))
}

/// The tasks of `answer` (a JSON delegation plan), held to plan node
/// `node`'s roster, task bound and boundary.
pub fn parse_delegation_plan(
    answer: &str,
    node: &PlanNode,
) -> Result<Vec<DelegationTask>, DelegationError> {
    let NodeWork::Plan {
        roster, max_tasks, ..
    } = &node.work
    else {
        return Err(DelegationError::Shape(format!(
            "node '{}' is not a plan step",
            node.id
        )));
    };
    let plan: Plan =
        serde_json::from_str(answer.trim()).map_err(|e| DelegationError::Shape(e.to_string()))?;
    let tasks = plan.tasks;
    if tasks.is_empty() {
        return Err(DelegationError::Empty);
    }
    if tasks.len() > *max_tasks as usize {
        return Err(DelegationError::OverMaxTasks {
            count: tasks.len(),
            max: *max_tasks,
        });
    }
    let mut seen = BTreeSet::new();
    for t in &tasks {
        if !id_ok(&t.id) {
            return Err(DelegationError::BadId(t.id.clone()));
        }
        if !seen.insert(t.id.as_str()) {
            return Err(DelegationError::DuplicateId(t.id.clone()));
        }
        if !roster.contains(&t.agent) {
            return Err(DelegationError::RosterViolation {
                task: t.id.clone(),
                agent: t.agent.clone(),
                roster: roster.join(", "),
            });
        }
    }
    for t in &tasks {
        if let Some(d) = t.depends_on.iter().find(|d| !seen.contains(d.as_str())) {
            return Err(DelegationError::UnknownDependency {
                task: t.id.clone(),
                dependency: d.clone(),
            });
        }
        let writes =
            normalize_write_boundary(&t.writes).map_err(|e| DelegationError::BadWrites {
                task: t.id.clone(),
                reason: e.to_string(),
            })?;
        if let Some(boundary) = &node.writes {
            for path in writes.entries() {
                if !within(boundary, path) {
                    return Err(DelegationError::WritesOutsideBoundary {
                        task: t.id.clone(),
                        path: path.clone(),
                        boundary: boundary.to_string(),
                    });
                }
            }
        }
    }
    if let Some(cycle) = cycle(&tasks) {
        return Err(DelegationError::DependencyCycle(cycle));
    }
    Ok(tasks)
}

/// Whether boundary entry `path` (a file, or a folder ending in `/`) lies
/// inside `boundary`.
fn within(boundary: &WriteBoundary, path: &str) -> bool {
    // A folder is inside when a folder entry of the boundary is it or
    // one of its parents.
    match path.strip_suffix('/') {
        Some(dir) => boundary.entries().iter().any(|e| {
            e.strip_suffix('/')
                .is_some_and(|e| dir == e || dir.starts_with(&format!("{e}/")))
        }),
        None => write_boundary_covers(boundary, path),
    }
}

/// A dependency cycle among the tasks, as the ids along it, if any.
fn cycle(tasks: &[DelegationTask]) -> Option<Vec<String>> {
    let deps: BTreeMap<&str, &[String]> = tasks
        .iter()
        .map(|t| (t.id.as_str(), t.depends_on.as_slice()))
        .collect();
    // Kahn: what cannot be ordered is on or behind a cycle.
    let mut remaining: BTreeMap<&str, usize> = deps.iter().map(|(id, d)| (*id, d.len())).collect();
    let mut ready: Vec<&str> = remaining
        .iter()
        .filter(|(_, n)| **n == 0)
        .map(|(id, _)| *id)
        .collect();
    while let Some(done) = ready.pop() {
        remaining.remove(done);
        for (id, d) in &deps {
            if d.iter().any(|x| x == done)
                && let Some(n) = remaining.get_mut(id)
            {
                *n -= 1;
                if *n == 0 {
                    ready.push(id);
                }
            }
        }
    }
    if remaining.is_empty() {
        return None;
    }
    let mut stuck: Vec<String> = remaining.keys().map(|s| (*s).to_owned()).collect();
    stuck.sort();
    Some(stuck)
}

/// The plan nodes of `tasks`, spliced after plan node `plan`.
pub fn delegated_nodes(plan: &PlanNode, tasks: &[DelegationTask]) -> Vec<PlanNode> {
    let route = match &plan.work {
        NodeWork::Plan { route, .. } => route.clone(),
        NodeWork::Agent { .. }
        | NodeWork::Code { .. }
        | NodeWork::GateAuthor { .. }
        | NodeWork::GateCheck { .. } => None,
    };
    tasks
        .iter()
        .map(|t| {
            let id = format!("{}.{}", plan.id, t.id);
            let writes = normalize_write_boundary(&t.writes).unwrap_or_default();
            PlanNode {
                position: id.clone(),
                id,
                step: plan.step.clone(),
                role: NodeRole::Step,
                attempt: None,
                scope: if writes.is_empty() {
                    Scope::Readonly
                } else {
                    Scope::Workspace
                },
                dependencies: std::iter::once(plan.id.clone())
                    .chain(t.depends_on.iter().map(|d| format!("{}.{d}", plan.id)))
                    .collect(),
                writes: Some(writes),
                work: NodeWork::Agent {
                    agent: t.agent.clone(),
                    route: route.clone(),
                },
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan_node(writes: &[&str]) -> PlanNode {
        PlanNode {
            id: "split".into(),
            step: "split".into(),
            position: "split".into(),
            role: NodeRole::Step,
            attempt: None,
            scope: Scope::Workspace,
            dependencies: vec![],
            writes: Some(normalize_write_boundary(writes).unwrap()),
            work: NodeWork::Plan {
                agent: "architect".into(),
                roster: vec!["coder".into(), "tester".into()],
                max_tasks: 3,
                proposals: false,
                route: None,
            },
        }
    }

    fn task(id: &str, agent: &str, deps: &[&str], writes: &[&str]) -> serde_json::Value {
        serde_json::json!({"id": id, "agent": agent, "description": format!("do {id}"),
                           "depends_on": deps, "writes": writes})
    }

    fn code(tasks: Vec<serde_json::Value>) -> Result<Vec<DelegationTask>, &'static str> {
        let answer = serde_json::json!({ "tasks": tasks }).to_string();
        parse_delegation_plan(&answer, &plan_node(&["src/", "tests/"])).map_err(|e| e.code())
    }

    #[test]
    fn a_plan_is_held_to_its_step() {
        let ok = code(vec![
            task("a", "coder", &[], &["src/a.rs"]),
            task("b", "tester", &["a"], &["tests/"]),
        ])
        .unwrap();
        let nodes = delegated_nodes(&plan_node(&["src/"]), &ok);
        assert_eq!(nodes[1].id, "split.b");
        assert_eq!(nodes[1].dependencies, ["split", "split.a"]);
        assert_eq!(nodes[1].scope, Scope::Workspace);
        assert_eq!(
            code(vec![task("a", "coder", &[], &[])])
                .map(|t| delegated_nodes(&plan_node(&[]), &t)[0].scope),
            Ok(Scope::Readonly)
        );
        assert_eq!(
            code(vec![task("a", "oracle", &[], &[])]),
            Err("fleet/delegation-plan-roster-violation")
        );
        assert_eq!(
            code(vec![
                task("a", "coder", &[], &[]),
                task("b", "coder", &[], &[]),
                task("c", "coder", &[], &[]),
                task("d", "coder", &[], &[]),
            ]),
            Err("fleet/delegation-plan-over-max-tasks")
        );
        assert_eq!(
            code(vec![
                task("a", "coder", &[], &[]),
                task("a", "coder", &[], &[])
            ]),
            Err("fleet/delegation-plan-duplicate-id")
        );
        assert_eq!(
            code(vec![task("a", "coder", &["z"], &[])]),
            Err("fleet/delegation-plan-unknown-dependency")
        );
        assert_eq!(
            code(vec![
                task("a", "coder", &["b"], &[]),
                task("b", "coder", &["a"], &[])
            ]),
            Err("fleet/delegation-plan-dependency-cycle")
        );
        assert_eq!(
            code(vec![task("a", "coder", &[], &["docs/x.md"])]),
            Err("fleet/delegation-plan-writes-outside-boundary")
        );
        assert_eq!(
            code(vec![task("a", "coder", &[], &["/etc/passwd"])]),
            Err("fleet/delegation-plan-writes-outside-boundary")
        );
        assert_eq!(
            code(vec![task("A b", "coder", &[], &[])]),
            Err("fleet/delegation-plan-invalid")
        );
        assert_eq!(code(vec![]), Err("fleet/delegation-plan-invalid"));
        let wrapped = parse_delegation_plan("not json", &plan_node(&["src/"]));
        assert_eq!(
            wrapped.map_err(|e| e.code()),
            Err("fleet/delegation-plan-invalid")
        );
    }
}
