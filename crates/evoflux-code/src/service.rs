//! The `code_context` service of one session: every repository root, its
//! index loaded lazily from the cache on first use, refreshed before each
//! answer, saved when it changed.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;

use crate::CodeError;
use crate::answer::{Answer, RepoSummary};
use crate::index::{Limits, RefreshReport, RepoIndex};
use crate::navigate::Nav;
use crate::request::{Request, SymbolArg};

/// Whether a file may be read at all (the sandbox's denied files may not).
pub type Visibility = Arc<dyn Fn(&Path) -> bool + Send + Sync>;

/// Names → places, for one repository's index; rebuilt when it changes.
#[derive(Debug, Default)]
pub(crate) struct Lookup {
    /// Definitions by name: (file, definition) indexes.
    pub defs: HashMap<String, Vec<(u32, u32)>>,
    /// References by name: (file, reference) indexes.
    pub refs: HashMap<String, Vec<(u32, u32)>>,
    /// Names of types, traits, classes and modules.
    pub holders: HashSet<String>,
}

impl Lookup {
    fn build(index: &RepoIndex) -> Lookup {
        let mut l = Lookup::default();
        for (fi, f) in index.files.iter().enumerate() {
            let fi = u32::try_from(fi).unwrap_or(u32::MAX);
            for (di, d) in f.facts.definitions.iter().enumerate() {
                l.defs
                    .entry(d.name.clone())
                    .or_default()
                    .push((fi, u32::try_from(di).unwrap_or(u32::MAX)));
                if d.kind.contains_members() {
                    l.holders.insert(d.name.clone());
                }
            }
            for (ri, r) in f.facts.references.iter().enumerate() {
                l.refs
                    .entry(r.name.clone())
                    .or_default()
                    .push((fi, u32::try_from(ri).unwrap_or(u32::MAX)));
            }
        }
        l
    }
}

/// One repository of the session.
#[derive(Debug)]
pub(crate) struct Repo {
    pub name: String,
    pub root: PathBuf,
    pub index: RepoIndex,
    pub lookup: Lookup,
    pub commit: Option<String>,
    cache_file: Option<PathBuf>,
    loaded: bool,
    /// Why the index could not be saved, when it could not.
    pub persist_error: Option<String>,
}

impl Repo {
    /// The repository as an answer lists it.
    pub(crate) fn summary(&self) -> RepoSummary {
        RepoSummary {
            name: self.name.clone(),
            root: self.root.display().to_string(),
            commit: self.commit.clone(),
            files: self.index.files.len(),
        }
    }

    /// Brings the index up to date (loading it from the cache the first
    /// time) and saves it when it changed.
    fn refresh(
        &mut self,
        limits: Limits,
        visible: &Visibility,
        progress: &(dyn Fn(&str, usize, usize) + Sync),
    ) -> RefreshReport {
        let first = !self.loaded;
        if first {
            self.index = self
                .cache_file
                .as_deref()
                .and_then(RepoIndex::load)
                .unwrap_or_default();
            self.loaded = true;
        }
        let name = self.name.clone();
        let report = self
            .index
            .refresh(&self.root, limits, &**visible, &|done, total| {
                progress(&name, done, total);
            });
        if first || report.changed() {
            self.lookup = Lookup::build(&self.index);
        }
        if report.changed() {
            self.persist_error = self
                .cache_file
                .as_deref()
                .and_then(|f| self.index.save(f).err())
                .map(|e| e.to_string());
        }
        self.commit =
            evoflux_core::trust::git_head(&evoflux_core::trust::repository_root(&self.root));
        report
    }
}

/// The service.
pub struct CodeContext {
    repos: Vec<Repo>,
    limits: Limits,
    visible: Visibility,
}

impl std::fmt::Debug for CodeContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CodeContext")
            .field(
                "repos",
                &self.repos.iter().map(|r| &r.root).collect::<Vec<_>>(),
            )
            .field("limits", &self.limits)
            .finish_non_exhaustive()
    }
}

/// Where the persisted index of `root` lives under the cache dir.
pub fn index_file(cache_dir: &Path, root: &Path) -> PathBuf {
    let key = evoflux_core::hash::sha256_hex(root.to_string_lossy().as_bytes()).to_string();
    cache_dir
        .join("code-index")
        .join(format!("{}.bin", key.get(..16).unwrap_or(&key)))
}

impl CodeContext {
    /// A service over `roots` (the first is the primary); indexes persist
    /// under `cache_dir` when given. Repositories are named after their
    /// folder, with `-2`, `-3` … where two folders share a name.
    pub fn new(roots: &[PathBuf], cache_dir: Option<&Path>) -> CodeContext {
        let mut seen: HashMap<String, usize> = HashMap::new();
        let repos = roots
            .iter()
            .map(|root| {
                let base = root.file_name().map_or_else(
                    || "repository".to_owned(),
                    |n| n.to_string_lossy().into_owned(),
                );
                let n = seen.entry(base.clone()).or_insert(0);
                *n += 1;
                let name = if *n == 1 { base } else { format!("{base}-{n}") };
                Repo {
                    name,
                    root: root.clone(),
                    index: RepoIndex::default(),
                    lookup: Lookup::default(),
                    commit: None,
                    cache_file: cache_dir.map(|c| index_file(c, root)),
                    loaded: false,
                    persist_error: None,
                }
            })
            .collect();
        CodeContext {
            repos,
            limits: Limits::default(),
            visible: Arc::new(|_| true),
        }
    }

    pub fn with_visibility(mut self, visible: Visibility) -> CodeContext {
        self.visible = visible;
        self
    }

    pub fn with_limits(mut self, limits: Limits) -> CodeContext {
        self.limits = limits;
        self
    }

    /// Brings every repository's index up to date (loading it from the
    /// cache the first time) and saves those that changed. `progress` is
    /// told the repository and `(done, total)` of the files being parsed.
    pub fn refresh(
        &mut self,
        progress: &(dyn Fn(&str, usize, usize) + Sync),
    ) -> Vec<(String, RefreshReport)> {
        let (limits, visible) = (self.limits, self.visible.clone());
        self.repos
            .iter_mut()
            .map(|repo| (repo.name.clone(), repo.refresh(limits, &visible, progress)))
            .collect()
    }

    /// The repositories as an answer lists them.
    pub fn repositories(&self) -> Vec<RepoSummary> {
        self.repos.iter().map(Repo::summary).collect()
    }

    /// Definitions indexed across the repositories.
    pub fn definition_count(&self) -> usize {
        self.repos.iter().map(|r| r.index.definition_count()).sum()
    }

    /// Answers one request (the tool's JSON arguments): checks it,
    /// refreshes the indexes, and runs its operation.
    pub fn answer(&mut self, input: &Value) -> Result<Answer, CodeError> {
        let (request, symbol) = Request::parse(input)?;
        let repos = self.selected(request.repository.as_deref())?;
        // Only the repositories the request looks in.
        let (limits, visible) = (self.limits, self.visible.clone());
        for &r in &repos {
            self.repos[r].refresh(limits, &visible, &|_, _, _| {});
        }
        let nav = Nav::new(&self.repos, repos, self.repos.len() > 1);
        if let Some(SymbolArg::Prose(given)) = symbol {
            return Err(CodeError::NotASymbol {
                candidates: nav.prose_candidates(&given),
                given,
            });
        }
        nav.run(&request)
    }

    /// The repositories a request looks in.
    fn selected(&self, repository: Option<&str>) -> Result<Vec<usize>, CodeError> {
        match repository {
            None => Ok((0..self.repos.len()).collect()),
            Some(".") if !self.repos.is_empty() => Ok(vec![0]),
            Some(given) => self
                .repos
                .iter()
                .position(|r| r.name == given || r.root == Path::new(given))
                .map(|i| vec![i])
                .ok_or_else(|| CodeError::UnknownRepository {
                    given: given.to_owned(),
                    known: self.repos.iter().map(|r| r.name.clone()).collect(),
                }),
        }
    }
}
