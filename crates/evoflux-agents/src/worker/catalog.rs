//! The worker catalog: framework workers plus the graph's worker winners,
//! merged by the audience rules.
//!
//! The graph picks one file per `workers/<id>` slot by layer. This module
//! parses that winner strictly, checks it against the framework worker of
//! the same id, and decides:
//!
//! * a framework recipe that does not parse, normalize or pass policy is a
//!   defect in evoflux: loading aborts ([`WorkerCatalogError`]);
//! * a file recipe that fails any check is quarantined with a diagnostic
//!   and never reaches the catalog, the roster or dispatch;
//! * ids `worker`, `delegate` and `auto` are reserved for dispatch routing;
//! * a user (or admin) recipe may replace a framework worker only when that
//!   worker's audience is `base`; a project or plugin recipe never replaces
//!   one.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use evoflux_core::{AppMode, Diagnostic, Diagnostics, Severity};
use evoflux_graph::{Binding, CompiledGraph, Layer, Slot, SlotKind};
use serde::{Deserialize, Serialize};

use super::policy::agent_spec_policy_errors;
use super::recipe::{Audience, RESERVED_CUSTOM_AGENT_IDS, RecipeSource, parse_recipe};
use super::spec::{AgentSpec, normalize_agent_spec};
use crate::tools::ToolCatalog;

/// The framework workers: id and recipe text, compiled into the binary.
pub const FRAMEWORK_WORKERS: [(&str, &str); 12] = [
    (
        "architect",
        include_str!("../../builtins/workers/architect.md"),
    ),
    ("coder", include_str!("../../builtins/workers/coder.md")),
    (
        "context-bootstrap",
        include_str!("../../builtins/workers/context-bootstrap.md"),
    ),
    (
        "debugger",
        include_str!("../../builtins/workers/debugger.md"),
    ),
    (
        "documenter",
        include_str!("../../builtins/workers/documenter.md"),
    ),
    (
        "git-master",
        include_str!("../../builtins/workers/git-master.md"),
    ),
    (
        "provenance",
        include_str!("../../builtins/workers/provenance.md"),
    ),
    (
        "researcher",
        include_str!("../../builtins/workers/researcher.md"),
    ),
    ("scout", include_str!("../../builtins/workers/scout.md")),
    ("tester", include_str!("../../builtins/workers/tester.md")),
    (
        "verifier",
        include_str!("../../builtins/workers/verifier.md"),
    ),
    (
        "wiki-writer",
        include_str!("../../builtins/workers/wiki-writer.md"),
    ),
];

/// A worker file as the graph selected it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkerFile {
    pub id: String,
    pub path: PathBuf,
    pub layer: Layer,
    pub text: String,
}

/// A file recipe kept out of the catalog.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct QuarantinedWorker {
    pub id: String,
    pub path: PathBuf,
    pub source: RecipeSource,
    pub diagnostics: Diagnostics,
}

/// Why a valid file recipe was not merged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum IgnoreReason {
    /// The id is reserved for dispatch routing.
    ReservedAgentId,
    /// A user recipe cannot replace a framework worker that is not `base`.
    ReservedShadow,
    /// A project or plugin recipe cannot replace a framework worker.
    ReservedBuiltin,
}

impl IgnoreReason {
    pub const fn as_str(self) -> &'static str {
        match self {
            IgnoreReason::ReservedAgentId => "reserved-agent-id",
            IgnoreReason::ReservedShadow => "reserved-shadow",
            IgnoreReason::ReservedBuiltin => "reserved-builtin",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IgnoredWorker {
    pub id: String,
    pub path: PathBuf,
    pub source: RecipeSource,
    pub reason: IgnoreReason,
}

/// Every dispatchable worker, sorted by id, plus what was kept out.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkerCatalog {
    pub specs: Vec<AgentSpec>,
    pub quarantined: Vec<QuarantinedWorker>,
    pub ignored: Vec<IgnoredWorker>,
}

/// A framework recipe is defective: a bug in evoflux, never a user error.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("framework worker `{id}` is defective: {}", diagnostics.iter().map(|d| d.message.as_str()).collect::<Vec<_>>().join("; "))]
pub struct WorkerCatalogError {
    pub id: String,
    pub diagnostics: Vec<Diagnostic>,
}

/// Parses, normalizes and policy-checks one recipe. All problems go to
/// the returned diagnostics.
pub fn load_spec(
    id: &str,
    source: RecipeSource,
    path: &Path,
    text: &str,
    tools: &ToolCatalog,
    skills: &BTreeSet<String>,
) -> Result<AgentSpec, Diagnostics> {
    let mut d = Diagnostics::new();
    let Some(recipe) = parse_recipe(id, source, path, text, &mut d) else {
        return Err(d);
    };
    if d.has_errors() {
        return Err(d);
    }
    let missing: Vec<&str> = recipe
        .spec
        .skills
        .iter()
        .filter(|s| !skills.contains(*s))
        .map(String::as_str)
        .collect();
    if !missing.is_empty() {
        d.push(
            Diagnostic::error(
                "worker/skill-unavailable",
                format!("bound skill(s) unavailable: {}", missing.join(", ")),
            )
            .with_file(path)
            .with_field("skills"),
        );
        return Err(d);
    }
    let spec = match normalize_agent_spec(&recipe, tools) {
        Ok(s) => s,
        Err(errors) => {
            d.extend(errors.into_iter().map(|e| {
                Diagnostic::error("worker/spec-invalid", e)
                    .with_file(path)
                    .with_field("tools")
            }));
            return Err(d);
        }
    };
    let policy = agent_spec_policy_errors(&spec, tools);
    if !policy.is_empty() {
        d.extend(
            policy
                .into_iter()
                .map(|e| Diagnostic::error("worker/policy-violation", e).with_file(path)),
        );
        return Err(d);
    }
    Ok(spec)
}

/// The framework workers as specs against `tools`.
pub fn framework_specs(tools: &ToolCatalog) -> Result<Vec<AgentSpec>, WorkerCatalogError> {
    FRAMEWORK_WORKERS
        .iter()
        .map(|(id, text)| {
            let path = PathBuf::from(format!("<framework>/workers/{id}.md"));
            load_spec(
                id,
                RecipeSource::Framework,
                &path,
                text,
                tools,
                &BTreeSet::new(),
            )
            .map_err(|d| WorkerCatalogError {
                id: (*id).to_owned(),
                diagnostics: d.into_vec(),
            })
        })
        .collect()
}

/// Merges file recipes into the framework workers.
pub fn build_catalog(
    files: Vec<WorkerFile>,
    tools: &ToolCatalog,
    skills: &BTreeSet<String>,
    diags: &mut Diagnostics,
) -> Result<WorkerCatalog, WorkerCatalogError> {
    let mut by_id: BTreeMap<String, AgentSpec> = framework_specs(tools)?
        .into_iter()
        .map(|s| (s.id.clone(), s))
        .collect();
    let framework_audience: BTreeMap<String, Audience> = by_id
        .iter()
        .map(|(id, s)| (id.clone(), s.audience))
        .collect();
    let mut catalog = WorkerCatalog::default();
    for f in files {
        let source = RecipeSource::from_layer(f.layer);
        let slot = Slot::new(SlotKind::Worker, &f.id);
        let spec = match load_spec(&f.id, source, &f.path, &f.text, tools, skills) {
            Ok(s) => s,
            Err(d) => {
                diags.extend(d.iter().cloned().map(|mut x| {
                    x.severity = x.severity.min(Severity::Warning);
                    x.with_slot(slot.clone())
                }));
                diags.push(
                    Diagnostic::warning(
                        "worker/quarantined",
                        format!(
                            "worker recipe `{}` is invalid and is quarantined; fix it to use it",
                            f.id
                        ),
                    )
                    .with_file(&f.path)
                    .with_slot(slot),
                );
                catalog.quarantined.push(QuarantinedWorker {
                    id: f.id,
                    path: f.path,
                    source,
                    diagnostics: d,
                });
                continue;
            }
        };
        let reason = if RESERVED_CUSTOM_AGENT_IDS.contains(&f.id.as_str()) {
            Some(IgnoreReason::ReservedAgentId)
        } else {
            match (framework_audience.get(&f.id), source) {
                (None, _) => None,
                (Some(_), RecipeSource::Framework) => None,
                (Some(Audience::Base), RecipeSource::User | RecipeSource::Admin) => None,
                (
                    Some(Audience::Shadow | Audience::Internal | Audience::Custom),
                    RecipeSource::User | RecipeSource::Admin,
                ) => Some(IgnoreReason::ReservedShadow),
                (Some(_), RecipeSource::Project | RecipeSource::Plugin) => {
                    Some(IgnoreReason::ReservedBuiltin)
                }
            }
        };
        match reason {
            Some(reason) => {
                diags.push(
                    Diagnostic::warning(
                        "worker/ignored",
                        format!(
                            "worker recipe `{}` from the {} layer is ignored ({}); the framework \
                             worker stays in effect",
                            f.id,
                            source.as_str(),
                            reason.as_str()
                        ),
                    )
                    .with_file(&f.path)
                    .with_slot(slot)
                    .with_field(reason.as_str()),
                );
                catalog.ignored.push(IgnoredWorker {
                    id: f.id,
                    path: f.path,
                    source,
                    reason,
                });
            }
            None => {
                by_id.insert(spec.id.clone(), spec);
            }
        }
    }
    catalog.specs = by_id.into_values().collect();
    Ok(catalog)
}

/// The worker winners of a compiled graph, read from their bindings.
pub fn worker_files(graph: &CompiledGraph, diags: &mut Diagnostics) -> Vec<WorkerFile> {
    let mut out = Vec::new();
    for node in graph
        .nodes
        .iter()
        .filter(|n| n.slot.kind == SlotKind::Worker)
    {
        let Some(bound) = graph.binding(&node.source_id) else {
            continue;
        };
        let path = match &bound.binding {
            Binding::File { path, .. } => path.clone(),
            // Framework workers are compiled into this crate, not the graph.
            Binding::Builtin { .. } => continue,
        };
        match std::fs::read_to_string(&path) {
            Ok(text) => out.push(WorkerFile {
                id: node.slot.name.clone(),
                path,
                layer: bound.layer,
                text,
            }),
            Err(e) => diags.push(
                Diagnostic::warning("worker/file-unreadable", format!("cannot read: {e}"))
                    .with_file(&path)
                    .with_slot(node.slot.clone()),
            ),
        }
    }
    out
}

/// Skill names the graph selected, for bound-skill resolution.
pub fn graph_skills(graph: &CompiledGraph) -> BTreeSet<String> {
    graph
        .nodes
        .iter()
        .filter(|n| n.slot.kind == SlotKind::Skill)
        .map(|n| n.slot.name.clone())
        .collect()
}

/// Loads the worker catalog of a compiled graph.
pub fn load_workers(
    graph: &CompiledGraph,
    tools: &ToolCatalog,
    diags: &mut Diagnostics,
) -> Result<WorkerCatalog, WorkerCatalogError> {
    let files = worker_files(graph, diags);
    build_catalog(files, tools, &graph_skills(graph), diags)
}

impl WorkerCatalog {
    pub fn get(&self, id: &str) -> Option<&AgentSpec> {
        self.specs.iter().find(|s| s.id == id)
    }

    /// Operator-facing specs (`base`, `custom`).
    pub fn user_visible(&self) -> impl Iterator<Item = &AgentSpec> {
        self.specs.iter().filter(|s| s.audience.is_user_visible())
    }

    /// The specs a lead of `mode` may dispatch: `base`, `custom` and
    /// `shadow` workers in Coding mode (`internal` ones only run inside
    /// evoflux), none in Work mode, whose leads hand work to members only.
    pub fn dispatchable(&self, mode: AppMode) -> impl Iterator<Item = &AgentSpec> {
        let coding = match mode {
            AppMode::Coding => true,
            AppMode::Work => false,
        };
        self.specs
            .iter()
            .filter(move |s| coding && is_dispatchable(s.audience))
    }
}

const fn is_dispatchable(audience: Audience) -> bool {
    match audience {
        Audience::Base | Audience::Custom | Audience::Shadow => true,
        Audience::Internal => false,
    }
}
