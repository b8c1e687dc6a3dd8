//! What trusting a repository grants, shown before it is granted: every
//! source of the repository whose meaning trust changes (command tools with
//! their argv, MCP servers with their command or URL, channels, schedules,
//! check commands, evals, the providers of its config, its sandbox), read
//! from a compile of the source graph that treats the repository as
//! trusted, with what each source's grant records. `evoflux trust` lists a
//! review and asks; [`AppContext::grant`] records exactly what was listed.

use std::path::{Path, PathBuf};

use evoflux_core::trust::{Grant, TrustedRepository};
use evoflux_core::{Diagnostic, Diagnostics};
use evoflux_graph::grants::TrustGrants;
use serde::Serialize;

use crate::{AppContext, SessionError};

/// One source of a [`TrustReview`], and what it runs once trusted.
pub use evoflux_graph::grants::{ReviewItem, Runs};

/// A repository as trusting it would let it act.
#[derive(Debug, Clone, Serialize)]
pub struct TrustReview {
    /// The repository root (canonical).
    pub repository: PathBuf,
    /// Its `origin` remote, recorded with the trust.
    pub remote: Option<String>,
    /// Every source trust grants, in discovery order.
    pub items: Vec<ReviewItem>,
    /// What is wrong with those sources: each one with errors does not
    /// run, and an MCP server that refers to a key variable is never
    /// started (`mcp/project-secret-expansion`).
    pub diagnostics: Diagnostics,
    /// Whether the repository is trusted now (its items' `status` is then
    /// against what it was granted).
    pub trusted: bool,
    /// What recording this review grants.
    #[serde(skip)]
    pub grants: Vec<Grant>,
}

impl TrustReview {
    /// Whether trusting it grants anything that was not granted before.
    pub fn grants_anything_new(&self) -> bool {
        self.items
            .iter()
            .any(|i| i.status != evoflux_core::trust::GrantStatus::Granted)
    }
}

impl AppContext {
    /// What trusting the repository that holds `dir` (a canonical
    /// directory) would let it do now: its sources a session in `dir` reads
    /// (from `dir` up to the repository root).
    pub fn trust_review(&self, dir: &Path) -> Result<TrustReview, SessionError> {
        let repository = &evoflux_core::trust::repository_root(dir);
        let mut opts = self.root_options(&[dir.to_path_buf()])?;
        if !opts.trusted.iter().any(|r| r == repository) {
            opts.trusted.push(repository.to_path_buf());
        }
        // Every other trusted repository stays held to its grants; this one
        // is compiled as it is, to be reviewed.
        let others: Vec<PathBuf> = opts
            .trusted
            .iter()
            .filter(|r| *r != repository)
            .cloned()
            .collect();
        let mut trust = self.trust_grants(&others)?;
        trust.review(repository.to_path_buf());
        let (graph, reviewed) = compile(&opts, &trust)?;
        let list = self.trust_list()?;
        let previous = list.granted(repository);
        let mut items = evoflux_graph::grants::review(&graph, &reviewed, previous);
        fill_check_commands(&graph, &mut items);
        let in_repository = |d: &Diagnostic| {
            d.locator
                .file
                .as_deref()
                .is_some_and(|f| f.starts_with(repository))
        };
        let mut diagnostics: Diagnostics = graph
            .diagnostics
            .iter()
            .filter(|d| d.severity != evoflux_core::Severity::Info && in_repository(d))
            .cloned()
            .collect();
        diagnostics.extend(
            evoflux_mcp::definitions_from_graph(&graph)
                .iter()
                .flat_map(evoflux_mcp::definition_diagnostics)
                .filter(in_repository),
        );
        Ok(TrustReview {
            repository: repository.to_path_buf(),
            remote: evoflux_core::trust::git_remote(repository),
            items,
            diagnostics,
            trusted: previous.is_some(),
            grants: reviewed.into_iter().map(|g| g.grant).collect(),
        })
    }

    /// Records the user's trust in the reviewed repository, granting
    /// exactly what the review listed. What it granted before, from files
    /// the review did not read (another directory's `.evoflux/`), stays
    /// granted as it was.
    pub fn grant(&self, review: &TrustReview) -> Result<TrustedRepository, SessionError> {
        let mut list = self.trust_list()?;
        let mut granted = review.grants.clone();
        if let Some(before) = list.granted(&review.repository) {
            let kept: Vec<Grant> = before
                .iter()
                .filter(|g| {
                    !review
                        .grants
                        .iter()
                        .any(|n| n.slot == g.slot && n.source == g.source)
                })
                .cloned()
                .collect();
            granted.extend(kept);
        }
        list.trust(&review.repository, granted)
            .cloned()
            .map_err(SessionError::Trust)
    }
}

fn compile(
    opts: &evoflux_graph::RootOptions,
    trust: &TrustGrants,
) -> Result<
    (
        evoflux_graph::CompiledGraph,
        Vec<evoflux_graph::grants::GrantedSource>,
    ),
    SessionError,
> {
    evoflux_graph::compile_with_grants(
        &AppContext::registries(),
        &evoflux_graph::discover::standard_roots(opts),
        trust,
    )
    .map_err(|e| SessionError::Compile(Box::new(e)))
}

/// The check commands of the registry the graph selected, each as its
/// argv, for the item of its file.
fn fill_check_commands(graph: &evoflux_graph::CompiledGraph, items: &mut [ReviewItem]) {
    let evoflux_fleet::RegistryState::Loaded(registry) =
        evoflux_fleet::catalog::command_registry(graph)
    else {
        return;
    };
    for item in items.iter_mut().filter(|i| i.file == registry.path) {
        if let Runs::CheckCommands { commands } = &mut item.runs {
            *commands = registry
                .iter()
                .map(|c| format!("{}: {}", c.id, c.display()))
                .collect();
        }
    }
}
