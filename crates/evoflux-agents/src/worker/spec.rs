//! `AgentSpec`: the normalized, policy-bearing form of a worker that
//! dispatch, fleets, the roster and the CLI consume.
//!
//! It is the one type of a worker's fields: a parsed recipe
//! ([`WorkerRecipe`]) holds one with its tools not yet resolved, and an
//! external agent's declaration becomes one directly.

use std::collections::BTreeMap;
use std::path::PathBuf;

use evoflux_core::hash::{ContentHash, content_hash, sha256_hex};
use evoflux_graph::tool::ActionClass;
use serde::{Deserialize, Serialize};

use super::recipe::{
    Audience, Budget, CapabilityClass, Category, LatencyClass, Product, ProjectContextTier,
    RecipeSource, ToolRequirement, ToolRequirements, WorkerRecipe,
};
use crate::contract::ResultContract;
use crate::tools::ToolCatalog;

/// The one spec version.
pub const AGENT_SPEC_VERSION: u32 = 1;

/// A worker: what its recipe (or external declaration) says, plus what
/// normalization resolved against the graph (`tool_classes`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentSpec {
    pub version: u32,
    pub id: String,
    pub name: String,
    pub description: String,
    /// Every declared tool, deduplicated, in declaration order.
    pub tools: Vec<String>,
    /// Required/optional semantics of `tools`.
    pub tool_requirements: ToolRequirements,
    pub skills: Vec<String>,
    pub audience: Audience,
    pub category: Category,
    pub capability_class: CapabilityClass,
    pub latency_class: LatencyClass,
    pub project_context_tier: ProjectContextTier,
    pub budget: Budget,
    pub result_contract: ResultContract,
    pub tags: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub product: Option<Product>,
    pub source: RecipeSource,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<PathBuf>,
    /// The action class each declared tool has in the compiled graph;
    /// `None` for a tool the graph does not define. Not identity: the same
    /// recipe in another graph keeps its fingerprint.
    pub tool_classes: BTreeMap<String, Option<ActionClass>>,
    pub body: String,
}

/// Normalizes a recipe against the graph's tools: resolves each declared
/// tool's action class. Errors name every inconsistency between `tools`
/// and its requirements.
pub fn normalize_agent_spec(
    recipe: &WorkerRecipe,
    tools: &ToolCatalog,
) -> Result<AgentSpec, Vec<String>> {
    let mut spec = recipe.spec.clone();
    let mut declared: Vec<String> = Vec::new();
    let mut errors = Vec::new();
    for t in &recipe.spec.tools {
        if t.trim().is_empty() {
            errors.push(format!(
                "agent recipe '{}' declares an invalid tool name",
                spec.id
            ));
        } else if !declared.contains(t) {
            declared.push(t.clone());
        }
    }
    spec.version = AGENT_SPEC_VERSION;
    spec.tool_classes = declared
        .iter()
        .map(|t| (t.clone(), tools.action_class(t)))
        .collect();
    spec.tools = declared;
    errors.extend(requirement_errors(&spec));
    if errors.is_empty() {
        Ok(spec)
    } else {
        Err(errors)
    }
}

/// Checks that `tools` and `tool_requirements` agree: every requirement
/// names a declared tool, none is repeated, and every declared tool is
/// required or optional.
pub fn requirement_errors(spec: &AgentSpec) -> Vec<String> {
    let mut errors = Vec::new();
    let flat = spec.tool_requirements.flatten();
    for t in &flat {
        if !spec.tools.contains(t) {
            errors.push(format!(
                "agent recipe '{}' requirement '{t}' is not declared",
                spec.id
            ));
        }
    }
    let mut seen = std::collections::HashSet::new();
    if !flat.iter().all(|t| seen.insert(t)) {
        errors.push(format!(
            "agent recipe '{}' contains duplicate tool requirements",
            spec.id
        ));
    }
    if spec.tools.iter().any(|t| !flat.contains(t)) {
        errors.push(format!(
            "agent recipe '{}' has declared tools without required/optional semantics",
            spec.id
        ));
    }
    errors
}

/// The identity a fingerprint hashes. Display-only fields (`name`,
/// `description`, `category`, `tags`, `source`, `path`) and the graph-
/// dependent `tool_classes` are left out on purpose, so editing how a worker
/// is shown never invalidates its measured history.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct FingerprintPayload<'a> {
    id: &'a str,
    tools: Vec<&'a str>,
    required: Vec<String>,
    optional: Vec<&'a str>,
    capability_class: CapabilityClass,
    latency_class: LatencyClass,
    project_context_tier: ProjectContextTier,
    audience: Audience,
    skills: Vec<&'a str>,
    result_contract: &'a ResultContract,
    budget: &'a Budget,
    body: String,
}

fn sorted(items: &[String]) -> Vec<&str> {
    let mut v: Vec<&str> = items.iter().map(String::as_str).collect();
    v.sort_unstable();
    v
}

/// The fingerprint of what a route to this worker means.
///
/// Canonical form: SHA-256 of the canonical JSON (object keys sorted by
/// UTF-8 bytes, no whitespace; [`evoflux_core::hash::content_hash`]) of
/// `{id, tools, required, optional, capabilityClass, latencyClass,
/// projectContextTier, audience, skills, resultContract, budget, body}`,
/// where `tools`, `optional` and `skills` are sorted, each required group is
/// rendered as its name or `anyOf(<members sorted, joined by |>)` and the
/// rendered list is sorted, `resultContract` and `budget` are their JSON
/// forms, and `body` is the SHA-256 hex of the persona body. This differs
/// from clio (insertion-order JSON) on purpose: evoflux has one canonical
/// JSON for every hash, so fingerprints are reproducible from any language.
pub fn agent_spec_fingerprint(spec: &AgentSpec) -> ContentHash {
    let mut required: Vec<String> = spec
        .tool_requirements
        .required
        .iter()
        .map(|r| match r {
            ToolRequirement::Tool(t) => t.clone(),
            ToolRequirement::AnyOf { any_of } => {
                let mut m: Vec<&str> = any_of.iter().map(String::as_str).collect();
                m.sort_unstable();
                format!("anyOf({})", m.join("|"))
            }
        })
        .collect();
    required.sort_unstable();
    let payload = FingerprintPayload {
        id: &spec.id,
        tools: sorted(&spec.tools),
        required,
        optional: sorted(&spec.tool_requirements.optional),
        capability_class: spec.capability_class,
        latency_class: spec.latency_class,
        project_context_tier: spec.project_context_tier,
        audience: spec.audience,
        skills: sorted(&spec.skills),
        result_contract: &spec.result_contract,
        budget: &spec.budget,
        body: sha256_hex(spec.body.as_bytes()).to_string(),
    };
    // The payload holds only strings, enums and plain structs, which always
    // serialize.
    content_hash(&payload).unwrap_or_else(|_| sha256_hex(b""))
}
