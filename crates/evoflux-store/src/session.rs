//! What a session is: its identity and its authoritative mode and workspace.

use std::path::{Path, PathBuf};

use evoflux_core::AppMode;
use evoflux_core::ids::SessionId;
use serde::Serialize;

use crate::error::StoreError;

/// Where a session works. The mode is implied by the variant, so a Work
/// session can never carry repositories and a Coding session never lacks
/// them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "mode", rename_all = "lowercase")]
pub enum Workspace {
    /// A per-session folder under the data directory, created by the store.
    Work { folder: PathBuf },
    /// One or more repository roots, in the order the user gave them.
    Coding { repositories: Vec<PathBuf> },
}

impl Workspace {
    pub fn mode(&self) -> AppMode {
        match self {
            Workspace::Work { .. } => AppMode::Work,
            Workspace::Coding { .. } => AppMode::Coding,
        }
    }

    /// Every root the session may touch, as persisted.
    pub fn roots(&self) -> &[PathBuf] {
        match self {
            Workspace::Work { folder } => std::slice::from_ref(folder),
            Workspace::Coding { repositories } => repositories,
        }
    }

    pub(crate) fn from_parts(mode: AppMode, roots: Vec<PathBuf>) -> Result<Workspace, StoreError> {
        match mode {
            AppMode::Work => {
                let mut roots = roots.into_iter();
                match (roots.next(), roots.next()) {
                    (Some(folder), None) => Ok(Workspace::Work { folder }),
                    _ => Err(StoreError::corrupt(
                        "workspace",
                        "a work session has exactly one folder",
                    )),
                }
            }
            AppMode::Coding if roots.is_empty() => Err(StoreError::corrupt(
                "workspace",
                "a coding session has at least one repository",
            )),
            AppMode::Coding => Ok(Workspace::Coding {
                repositories: roots,
            }),
        }
    }
}

/// The workspace a caller asks for when creating a session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WorkspaceRequest {
    /// The store creates `<data>/sessions/<id>/workspace`.
    Work,
    /// Absolute repository paths; at least one.
    Coding(Vec<PathBuf>),
    /// The workspace of an existing session, shared: a child session works
    /// in its parent's folder or repositories.
    Shared(Workspace),
}

impl WorkspaceRequest {
    pub fn mode(&self) -> AppMode {
        match self {
            WorkspaceRequest::Work => AppMode::Work,
            WorkspaceRequest::Coding(_) => AppMode::Coding,
            WorkspaceRequest::Shared(w) => w.mode(),
        }
    }

    pub(crate) fn check(&self) -> Result<(), StoreError> {
        match self {
            WorkspaceRequest::Work | WorkspaceRequest::Shared(_) => Ok(()),
            WorkspaceRequest::Coding(repos) if repos.is_empty() => {
                Err(StoreError::CodingWorkspaceEmpty)
            }
            WorkspaceRequest::Coding(repos) => match repos.iter().find(|p| !p.is_absolute()) {
                Some(relative) => Err(StoreError::WorkspaceNotAbsolute(relative.clone())),
                None => Ok(()),
            },
        }
    }
}

/// What a new session is created from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewSession {
    pub workspace: WorkspaceRequest,
    /// The selected lead agent's name, when one was chosen.
    pub lead: Option<String>,
    /// The model the session runs on, as `provider:model`.
    pub model: Option<String>,
    /// For a child session: the parent and the call that dispatched it.
    pub parent: Option<SessionParent>,
    /// The content hash of the compiled graph the session started with.
    pub graph_hash: Option<String>,
}

/// Where a child session comes from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SessionParent {
    pub session_id: SessionId,
    /// The parent's tool call that dispatched the child.
    pub call_id: String,
}

/// A persisted session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Session {
    pub id: SessionId,
    pub workspace: Workspace,
    pub lead: Option<String>,
    /// The model the session runs on (`provider:model`); `None` for
    /// sessions created before models were persisted.
    pub model: Option<String>,
    pub graph_hash: Option<String>,
    /// Set for a child session a dispatch opened.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parent: Option<SessionParent>,
    /// What the session list calls it: a rename, a model's title or the
    /// first user message, trimmed (see [`crate::TitleSource`]); `None`
    /// until the first message.
    pub title: Option<String>,
    /// The surface the conversation is tagged for; shown only when it is
    /// not the standard one.
    #[serde(skip_serializing_if = "crate::SessionSurface::is_standard")]
    pub surface: crate::SessionSurface,
    /// Unix milliseconds.
    pub created_at_ms: i64,
    /// Unix milliseconds of the last append or change.
    pub updated_at_ms: i64,
}

impl Session {
    pub fn mode(&self) -> AppMode {
        self.workspace.mode()
    }

    /// Refuses a resume that names another mode or workspace. `None` means
    /// "whatever was persisted".
    pub fn check_resume(
        &self,
        mode: Option<AppMode>,
        workspace: Option<&[PathBuf]>,
    ) -> Result<(), StoreError> {
        if let Some(requested) = mode
            && requested != self.mode()
        {
            return Err(StoreError::ModeMismatch {
                id: self.id,
                persisted: self.mode(),
                requested,
            });
        }
        if let Some(requested) = workspace
            && !same_roots(requested, self.workspace.roots())
        {
            return Err(StoreError::WorkspaceMismatch {
                id: self.id,
                persisted: self.workspace.roots().to_vec(),
                requested: requested.to_vec(),
            });
        }
        Ok(())
    }
}

/// Lexical comparison, ignoring a trailing slash: the store compares what
/// was persisted, it does not touch the file system to resolve links.
fn same_roots(a: &[PathBuf], b: &[PathBuf]) -> bool {
    a.len() == b.len()
        && a.iter()
            .zip(b)
            .all(|(x, y)| x.components().eq(Path::new(y).components()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use evoflux_core::ids::Ids;

    fn coding(repos: &[&str]) -> Session {
        Session {
            id: Ids::sequential().session_id(),
            workspace: Workspace::Coding {
                repositories: repos.iter().map(PathBuf::from).collect(),
            },
            lead: None,
            model: None,
            graph_hash: None,
            parent: None,
            title: None,
            surface: crate::SessionSurface::Standard,
            created_at_ms: 0,
            updated_at_ms: 0,
        }
    }

    #[test]
    fn resume_checks_mode_then_workspace() {
        let s = coding(&["/r/a", "/r/b"]);
        assert!(s.check_resume(None, None).is_ok());
        let same = [PathBuf::from("/r/a/"), PathBuf::from("/r/b")];
        assert!(s.check_resume(Some(AppMode::Coding), Some(&same)).is_ok());
        let e = s.check_resume(Some(AppMode::Work), None).unwrap_err();
        assert_eq!(e.code(), "store/mode-mismatch");
        let other = [PathBuf::from("/r/a")];
        let e = s.check_resume(None, Some(&other)).unwrap_err();
        assert_eq!(e.code(), "store/workspace-mismatch");
        assert_eq!(
            e.to_diagnostic().locator.field.as_deref(),
            Some("workspace")
        );
    }

    #[test]
    fn coding_request_needs_absolute_repositories() {
        let e = WorkspaceRequest::Coding(vec![]).check().unwrap_err();
        assert_eq!(e.code(), "store/coding-workspace-empty");
        let e = WorkspaceRequest::Coding(vec!["rel".into()])
            .check()
            .unwrap_err();
        assert_eq!(e.code(), "store/workspace-not-absolute");
        assert!(WorkspaceRequest::Work.check().is_ok());
    }

    #[test]
    fn persisted_parts_must_fit_the_mode() {
        assert!(Workspace::from_parts(AppMode::Work, vec![]).is_err());
        assert!(Workspace::from_parts(AppMode::Coding, vec![]).is_err());
        let w = Workspace::from_parts(AppMode::Work, vec!["/d/w".into()]).unwrap();
        assert_eq!(w.mode(), AppMode::Work);
    }
}
