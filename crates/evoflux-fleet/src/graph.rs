//! `validate_fleet_graph`: whether a contract's declared steps form a DAG
//! that can execute.
//!
//! A cycle among steps is the "mutually looping" declaration the loop
//! construct exists to replace: loops are bounded and unrolled, an edge
//! that comes back around is not, so it is refused here rather than found
//! later as a scheduling deadlock. Every problem is its own diagnostic with
//! a stable code, the step id in the message and the field in the locator.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use evoflux_core::{Diagnostic, Diagnostics};

use crate::contract::{
    FleetContract, FleetStep, LoopCheck, loop_attempts_allowed, loop_attempts_message,
    loop_check_id, loop_repair_id,
};

/// The diagnostic codes of graph validation, one per kind of problem.
pub mod codes {
    /// Two steps declare the same id.
    pub const DUPLICATE_ID: &str = "fleet/duplicate-id";
    /// A loop's `maxAttempts` is outside 1..=`FLEET_LOOP_MAX_ATTEMPTS`.
    pub const LOOP_ATTEMPTS_INVALID: &str = "fleet/loop-attempts-invalid";
    /// A declared id equals one a loop generates (`<loop>.check.<n>`,
    /// `<loop>.repair.<n>`).
    pub const ID_COLLISION: &str = "fleet/id-collision";
    /// A loop's `check: {kind: gate}` names no declared gate step.
    pub const UNKNOWN_GATE: &str = "fleet/unknown-gate";
    /// A step lists itself among its dependencies.
    pub const SELF_DEPENDENCY: &str = "fleet/self-dependency";
    /// A dependency names no declared step.
    pub const UNKNOWN_DEPENDENCY: &str = "fleet/unknown-dependency";
    /// Declared dependencies come back around.
    pub const DEPENDENCY_CYCLE: &str = "fleet/dependency-cycle";
    /// A `commitFrom` source names no declared step.
    pub const COMMIT_SOURCE_UNKNOWN: &str = "fleet/commit-source-unknown";
    /// A `commitFrom` source is a code step, which authors no message.
    pub const COMMIT_SOURCE_CODE: &str = "fleet/commit-source-code";
    /// The commit step does not (transitively) depend on its source.
    pub const COMMIT_SOURCE_NOT_DEPENDENCY: &str = "fleet/commit-source-not-dependency";
}

fn step_field(id: &str, key: &str) -> String {
    format!("steps.{id}.{key}")
}

/// Every id a loop occupies in the compiled plan besides its own.
pub fn loop_generated_ids(loop_id: &str, max_attempts: u32) -> Vec<String> {
    let mut out = Vec::new();
    for attempt in 1..=max_attempts {
        out.push(loop_check_id(loop_id, attempt));
        if attempt < max_attempts {
            out.push(loop_repair_id(loop_id, attempt));
        }
    }
    out
}

/// Validates the graph of `contract`; empty when it can execute.
pub fn validate_fleet_graph(contract: &FleetContract) -> Diagnostics {
    let mut diags = Diagnostics::new();
    let mut err = |code: &'static str, field: String, message: String| {
        diags.push(
            Diagnostic::error(code, message)
                .with_file(&contract.path)
                .with_field(field),
        );
    };

    // 1. Declared ids are unique; the first declaration owns an id.
    let mut by_id: HashMap<&str, &FleetStep> = HashMap::new();
    for step in &contract.steps {
        if by_id.contains_key(step.id()) {
            err(
                codes::DUPLICATE_ID,
                step_field(step.id(), "id"),
                format!("duplicate step id '{}'", step.id()),
            );
        } else {
            by_id.insert(step.id(), step);
        }
    }

    // 2. Loops are bounded (the parser refuses an unbounded one; a contract
    // built by hand is checked here, before anything is unrolled), and the
    // ids they generate do not collide with declared ones.
    for step in &contract.steps {
        let FleetStep::Loop(l) = step else { continue };
        if !loop_attempts_allowed(u64::from(l.max_attempts)) {
            err(
                codes::LOOP_ATTEMPTS_INVALID,
                step_field(&l.id, "maxAttempts"),
                loop_attempts_message(),
            );
            continue;
        }
        for generated in loop_generated_ids(&l.id, l.max_attempts) {
            if by_id.contains_key(generated.as_str()) {
                err(
                    codes::ID_COLLISION,
                    step_field(&generated, "id"),
                    format!(
                        "step id '{generated}' collides with an id loop '{}' generates",
                        l.id
                    ),
                );
            }
        }
    }

    // 3. Gate-checked loops name a gate; 4. dependencies are declared and
    // not the step itself.
    for step in &contract.steps {
        if let FleetStep::Loop(l) = step
            && let LoopCheck::Gate { gate } = &l.check
            && !matches!(by_id.get(gate.as_str()), Some(FleetStep::Gate(_)))
        {
            err(
                codes::UNKNOWN_GATE,
                step_field(&l.id, "check.gate"),
                format!("loop '{}' names unknown gate '{gate}'", l.id),
            );
        }
        for dep in step.dependencies() {
            if dep == step.id() {
                err(
                    codes::SELF_DEPENDENCY,
                    step_field(step.id(), "dependencies"),
                    format!("step '{}' depends on itself", step.id()),
                );
            } else if !by_id.contains_key(dep.as_str()) {
                err(
                    codes::UNKNOWN_DEPENDENCY,
                    step_field(step.id(), "dependencies"),
                    format!("step '{}' has unknown dependency '{dep}'", step.id()),
                );
            }
        }
    }

    // 5. Kahn over declared steps. Edges already reported (to itself, to
    // nothing) are left out so one mistake is one diagnostic.
    let edges = declared_edges(&by_id);
    let cycles = cycles(&edges);
    for cycle in &cycles {
        let ids: Vec<&str> = cycle.iter().map(String::as_str).collect();
        // A cycle has at least two members: self edges are not in `edges`.
        let first = ids.first().copied().unwrap_or_default();
        err(
            codes::DEPENDENCY_CYCLE,
            step_field(first, "dependencies"),
            format!(
                "dependency cycle among steps {}; a step that must run again is a bounded \
                 `kind: loop`, not an edge back",
                ids.join(", ")
            ),
        );
    }

    // 6. Commit sources exist, author a message, and are waited for.
    // Ancestry is only meaningful on an acyclic graph.
    let acyclic = cycles.is_empty();
    for step in &contract.steps {
        let FleetStep::Code(code) = step else {
            continue;
        };
        let Some(sources) = &code.commit_from else {
            continue;
        };
        for source in sources {
            match by_id.get(source.as_str()) {
                None => err(
                    codes::COMMIT_SOURCE_UNKNOWN,
                    step_field(&code.id, "commitFrom"),
                    format!("commit step '{}' names unknown source '{source}'", code.id),
                ),
                Some(FleetStep::Code(_)) => err(
                    codes::COMMIT_SOURCE_CODE,
                    step_field(&code.id, "commitFrom"),
                    format!(
                        "commit step '{}' source '{source}' is a code step and authors no \
                         commit message",
                        code.id
                    ),
                ),
                Some(
                    FleetStep::Agent(_)
                    | FleetStep::Loop(_)
                    | FleetStep::Gate(_)
                    | FleetStep::Plan(_),
                ) => {
                    if acyclic && !depends_on(&edges, &code.id, source) {
                        err(
                            codes::COMMIT_SOURCE_NOT_DEPENDENCY,
                            step_field(&code.id, "commitFrom"),
                            format!(
                                "commit step '{}' must depend on its message source '{source}'",
                                code.id
                            ),
                        );
                    }
                }
            }
        }
    }
    diags
}

/// Declared step id -> the declared, distinct, non-self dependencies.
fn declared_edges<'a>(
    by_id: &HashMap<&'a str, &'a FleetStep>,
) -> BTreeMap<&'a str, BTreeSet<&'a str>> {
    let mut edges: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for (id, step) in by_id {
        let deps = step
            .dependencies()
            .iter()
            .map(String::as_str)
            .filter(|d| d != id && by_id.contains_key(d))
            .collect();
        edges.insert(id, deps);
    }
    edges
}

/// The cycles among declared steps, each as its sorted members, in order of
/// their first member. Kahn's algorithm finds the steps that cannot settle;
/// among those, the strongly connected components of more than one step
/// are the cycles, so a step that only waits on a cycle (or sits between
/// two) is not named as part of one, and two separate cycles are two
/// problems. Linear in steps and edges.
fn cycles(edges: &BTreeMap<&str, BTreeSet<&str>>) -> Vec<BTreeSet<String>> {
    // Kahn: a step settles once everything it depends on has.
    let mut waiting: HashMap<&str, usize> = edges.iter().map(|(id, d)| (*id, d.len())).collect();
    let mut dependents: HashMap<&str, Vec<&str>> = HashMap::new();
    for (id, deps) in edges {
        for dep in deps {
            dependents.entry(dep).or_default().push(id);
        }
    }
    let mut ready: Vec<&str> = waiting
        .iter()
        .filter(|(_, n)| **n == 0)
        .map(|(id, _)| *id)
        .collect();
    let mut remaining: BTreeSet<&str> = edges.keys().copied().collect();
    while let Some(id) = ready.pop() {
        remaining.remove(id);
        for dependent in dependents.get(id).into_iter().flatten() {
            if let Some(n) = waiting.get_mut(dependent) {
                *n -= 1;
                if *n == 0 {
                    ready.push(dependent);
                }
            }
        }
    }
    // Kosaraju over what is left: finish order along dependency edges,
    // then components along the reversed edges in reverse finish order.
    let deps_of = |id: &str| -> Vec<&str> {
        edges
            .get(id)
            .into_iter()
            .flatten()
            .copied()
            .filter(|d| remaining.contains(d))
            .collect()
    };
    let mut finished: Vec<&str> = Vec::with_capacity(remaining.len());
    let mut seen: HashSet<&str> = HashSet::new();
    for &root in &remaining {
        if !seen.insert(root) {
            continue;
        }
        let mut stack: Vec<(&str, Vec<&str>)> = vec![(root, deps_of(root))];
        while let Some((id, next)) = stack.last_mut() {
            match next.pop() {
                Some(dep) => {
                    if seen.insert(dep) {
                        let deps = deps_of(dep);
                        stack.push((dep, deps));
                    }
                }
                None => {
                    finished.push(*id);
                    stack.pop();
                }
            }
        }
    }
    let mut assigned: HashSet<&str> = HashSet::new();
    let mut out = Vec::new();
    for &root in finished.iter().rev() {
        if !assigned.insert(root) {
            continue;
        }
        let mut component = BTreeSet::new();
        let mut stack = vec![root];
        while let Some(id) = stack.pop() {
            component.insert(id.to_owned());
            for dependent in dependents.get(id).into_iter().flatten() {
                if remaining.contains(dependent) && assigned.insert(dependent) {
                    stack.push(dependent);
                }
            }
        }
        if component.len() > 1 {
            out.push(component);
        }
    }
    out.sort();
    out
}

/// Whether `ancestor` is reachable from `id` along dependency edges (the
/// graph is acyclic here, but the walk would terminate anyway).
fn depends_on(edges: &BTreeMap<&str, BTreeSet<&str>>, id: &str, ancestor: &str) -> bool {
    let mut seen: HashSet<&str> = HashSet::new();
    let mut stack: Vec<&str> = edges.get(id).into_iter().flatten().copied().collect();
    while let Some(next) = stack.pop() {
        if next == ancestor {
            return true;
        }
        if seen.insert(next) {
            stack.extend(edges.get(next).into_iter().flatten().copied());
        }
    }
    false
}
