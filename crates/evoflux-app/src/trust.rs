//! The user's trust in repositories as sessions see it: which of a
//! session's repositories are trusted, what a compile holds each to (what
//! the user granted it), a checkout trusted for this process as the
//! repository it was made from, and what to ask a user whose repository's
//! sources wait for trust. What trusting grants is reviewed in
//! [`crate::trust_review`].

use std::path::{Path, PathBuf};

use evoflux_core::trust::{Trust, TrustList, TrustState, repository_root};
use evoflux_graph::compose::CompositionEntry;

use crate::context::canonical;
use crate::{AppContext, SessionError, TrustedCheckout};

impl AppContext {
    /// What the user granted each of the `trusted` repositories (a trusted
    /// checkout: what its original was granted), for the compile to hold
    /// them to.
    pub(crate) fn trust_grants(
        &self,
        trusted: &[PathBuf],
    ) -> Result<evoflux_graph::grants::TrustGrants, SessionError> {
        let list = self.trust_list()?;
        let mut grants = evoflux_graph::grants::TrustGrants::new();
        for repo in trusted {
            let original = self
                .trusted_checkouts
                .iter()
                .find(|c| c.path == *repo)
                .map_or(repo.as_path(), |c| c.original.as_path());
            let granted = list.granted(original).unwrap_or_default().to_vec();
            grants.enforce(repo.clone(), granted);
        }
        Ok(grants)
    }

    /// Trusts `copy` for this process when the user trusts `original`: a
    /// replay's checkout or an eval's copy of a repository is as trusted
    /// as the repository it was made from (and held to what it was
    /// granted), and nothing is written to the trust list.
    pub fn inherit_trust(&mut self, original: &Path, copy: &Path) -> Result<(), SessionError> {
        if self.trust_list()?.state(original).trust() == Trust::Trusted {
            self.trusted_checkouts.push(TrustedCheckout {
                path: copy.to_path_buf(),
                original: original.to_path_buf(),
            });
        }
        Ok(())
    }

    /// The user's repository trust decisions.
    pub fn trust_list(&self) -> Result<TrustList, SessionError> {
        TrustList::load(&TrustList::path_in(self.dirs.data_dir())).map_err(SessionError::Trust)
    }

    /// The repository of each workspace (default: the start directory)
    /// with its trust state, for `info` and the trust prompt.
    pub fn trust_states(
        &self,
        workspaces: &[PathBuf],
    ) -> Result<Vec<(PathBuf, TrustState)>, SessionError> {
        let list = self.trust_list()?;
        let dirs = if workspaces.is_empty() {
            vec![self.cwd.clone()]
        } else {
            canonical(&self.cwd, workspaces)?
        };
        let mut out: Vec<(PathBuf, TrustState)> = Vec::new();
        for dir in dirs {
            let repo = repository_root(&dir);
            if !out.iter().any(|(r, _)| *r == repo) {
                let state = list.state(&repo);
                out.push((repo, state));
            }
        }
        Ok(out)
    }

    /// What to ask a user who opens an interactive session in a repository
    /// whose sources wait for trust (it is not trusted, or they changed
    /// since it was): `None` when there is nothing to ask.
    pub fn trust_question(
        &self,
        workspaces: &[PathBuf],
    ) -> Result<Option<TrustQuestion>, SessionError> {
        let list = self.trust_list()?;
        let dirs = if workspaces.is_empty() {
            vec![self.cwd.clone()]
        } else {
            canonical(&self.cwd, workspaces)?
        };
        let graph = self.compile(workspaces)?;
        for workspace in dirs {
            let repository = repository_root(&workspace);
            let state = list.state(&repository);
            let withheld: Vec<String> = graph
                .composition
                .entries
                .iter()
                .filter_map(|e| match e {
                    CompositionEntry::AwaitingTrust { source }
                        if source.file().is_some_and(|f| f.starts_with(&repository)) =>
                    {
                        Some(source.slot.clone())
                    }
                    CompositionEntry::AwaitingTrust { .. }
                    | CompositionEntry::Shadowed { .. }
                    | CompositionEntry::Disabled { .. }
                    | CompositionEntry::Layered { .. } => None,
                })
                .collect();
            if !withheld.is_empty() {
                return Ok(Some(TrustQuestion {
                    repository,
                    workspace,
                    withheld,
                    since_trust: state.trust() == Trust::Trusted,
                }));
            }
        }
        Ok(None)
    }

    /// Records the user's trust in the repository holding `dir`, granting
    /// its sources as they are now (see [`AppContext::trust_review`] to
    /// show them first).
    pub fn trust(&self, dir: &Path) -> Result<(), SessionError> {
        let review = self.trust_review(dir)?;
        self.grant(&review).map(|_| ())
    }
}

impl AppContext {
    /// Forgets the user's trust in the repository holding `dir` (a
    /// canonical directory): its command tools, MCP servers, channels and
    /// schedules wait for trust again. `false` when it was not trusted.
    pub fn revoke_trust(&self, dir: &Path) -> Result<bool, SessionError> {
        self.trust_list()?
            .untrust(&repository_root(dir))
            .map_err(SessionError::Trust)
    }
}

/// A repository and the sources it holds that wait for trust.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrustQuestion {
    pub repository: PathBuf,
    /// The workspace of the session in it, whose sources
    /// [`AppContext::trust_review`] reviews.
    pub workspace: PathBuf,
    /// The slots withheld (`tools/deploy`, `connections/db`, …).
    pub withheld: Vec<String>,
    /// The repository is trusted, and these changed or were added since.
    pub since_trust: bool,
}
