//! Repository trust: whether a repository's own configuration may run code
//! and choose where keys go.
//!
//! A cloned repository is someone else's text. Until the user trusts it,
//! evoflux reads its skills, agents and instructions but none of what would
//! act on the user's behalf: its command tools, MCP servers, channels and
//! schedules wait for trust, and its `config.toml` may only tighten what the
//! user set (see [`crate::config::ConfigScope`]).
//!
//! Decisions are recorded by evoflux itself in `trusted-repositories.toml`
//! in the data directory, beside the plugin registry where plugin trust
//! reviews live, so evoflux never rewrites a file the user wrote. Each
//! record keeps the repository's canonical path and its `origin` remote at
//! the time: a repository whose remote has changed since is untrusted
//! again, because the path now holds someone else's code.
//!
//! A record also keeps what was granted: each source of the repository
//! whose meaning trust changes (command tools, MCP servers, channels,
//! schedules, check commands, evals, its config and sandbox files), by
//! slot, file and content hash, as `evoflux trust` listed them. A source
//! that is not among them, or whose content changed since, is not trusted
//! until the repository is trusted again ([`grant_status`]); the source
//! graph applies that rule when it compiles.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::atomic::{AtomicOptions, AtomicWriteError, write_atomic};

/// Whether a source may act for the user. Closed: every source is one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Trust {
    Untrusted,
    Trusted,
}

/// The recorded state of one repository.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "state", rename_all = "kebab-case")]
pub enum TrustState {
    Trusted,
    Untrusted,
    /// Trusted once, but its `origin` remote is no longer the recorded one.
    RemoteChanged {
        recorded: Option<String>,
        current: Option<String>,
    },
}

impl TrustState {
    pub const fn trust(&self) -> Trust {
        match self {
            TrustState::Trusted => Trust::Trusted,
            TrustState::Untrusted | TrustState::RemoteChanged { .. } => Trust::Untrusted,
        }
    }
}

/// One trusted repository.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TrustedRepository {
    pub path: PathBuf,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote: Option<String>,
    /// What the user was shown and granted. A record written before grants
    /// were kept has none, so every source of its repository waits for the
    /// repository to be trusted again.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub granted: Vec<Grant>,
}

/// One source of a repository as it was when the user trusted it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Grant {
    /// The slot it fills (`tools/deploy`, `connections/db`, `config`).
    pub slot: String,
    /// Its file relative to the repository (`/`-separated), with
    /// `#<entry>` for one entry of a file that holds several (`.mcp.json#db`).
    pub source: String,
    /// The SHA-256 of its content (of the entry, for an entry; for an MCP
    /// server that runs files of the repository, of the entry's hash with
    /// theirs).
    pub sha256: String,
}

/// How a source of a trusted repository stands against what was granted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum GrantStatus {
    /// Granted as it is.
    Granted,
    /// Granted, but its content changed since.
    Changed,
    /// Not there when the repository was trusted.
    Added,
}

impl GrantStatus {
    pub const fn as_str(self) -> &'static str {
        match self {
            GrantStatus::Granted => "granted",
            GrantStatus::Changed => "changed",
            GrantStatus::Added => "added",
        }
    }
}

/// The one rule comparing a source as it is now with what was granted:
/// only the same slot and file with the same content is granted.
pub fn grant_status(granted: &[Grant], current: &Grant) -> GrantStatus {
    let mut same_source = granted
        .iter()
        .filter(|g| g.slot == current.slot && g.source == current.source);
    match same_source.next() {
        None => GrantStatus::Added,
        Some(g) if g.sha256 == current.sha256 => GrantStatus::Granted,
        Some(_) if same_source.any(|g| g.sha256 == current.sha256) => GrantStatus::Granted,
        Some(_) => GrantStatus::Changed,
    }
}

/// The code of the warning for each source of a trusted repository that
/// changed, or was added, since the user trusted it.
pub const CHANGED_SINCE_TRUST: &str = "trust/changed-since-trust";

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct TrustFile {
    #[serde(default, rename = "repository")]
    repositories: Vec<TrustedRepository>,
}

#[derive(Debug, thiserror::Error)]
pub enum TrustError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path} is not a valid trust list: {message}; fix or delete the file")]
    Invalid { path: PathBuf, message: String },
    #[error(transparent)]
    Write(#[from] AtomicWriteError),
}

impl TrustError {
    pub const fn code(&self) -> &'static str {
        match self {
            TrustError::Read { .. } => "trust/unreadable",
            TrustError::Invalid { .. } => "trust/invalid",
            TrustError::Write(_) => "trust/write-failed",
        }
    }
}

/// The user's trust decisions.
#[derive(Debug, Clone, Default)]
pub struct TrustList {
    path: PathBuf,
    repositories: Vec<TrustedRepository>,
}

impl TrustList {
    /// The trust list in a data directory.
    pub fn path_in(data_dir: &Path) -> PathBuf {
        data_dir.join("trusted-repositories.toml")
    }

    /// Reads the list; a missing file trusts nothing.
    pub fn load(path: &Path) -> Result<TrustList, TrustError> {
        let text = match std::fs::read_to_string(path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
            Err(source) => {
                return Err(TrustError::Read {
                    path: path.to_path_buf(),
                    source,
                });
            }
        };
        let file: TrustFile = toml::from_str(&text).map_err(|e| TrustError::Invalid {
            path: path.to_path_buf(),
            message: e.message().trim().to_owned(),
        })?;
        Ok(TrustList {
            path: path.to_path_buf(),
            repositories: file.repositories,
        })
    }

    pub fn repositories(&self) -> &[TrustedRepository] {
        &self.repositories
    }

    /// The state of the repository rooted at `repo` (a canonical path).
    pub fn state(&self, repo: &Path) -> TrustState {
        let Some(record) = self.repositories.iter().find(|r| r.path == repo) else {
            return TrustState::Untrusted;
        };
        let current = git_remote(repo);
        if record.remote == current {
            TrustState::Trusted
        } else {
            TrustState::RemoteChanged {
                recorded: record.remote.clone(),
                current,
            }
        }
    }

    /// What the user granted `repo` (a canonical path) while its trust
    /// holds; `None` when it is not trusted (or its remote changed).
    pub fn granted(&self, repo: &Path) -> Option<&[Grant]> {
        match self.state(repo) {
            TrustState::Trusted => self
                .repositories
                .iter()
                .find(|r| r.path == repo)
                .map(|r| r.granted.as_slice()),
            TrustState::Untrusted | TrustState::RemoteChanged { .. } => None,
        }
    }

    /// Records `repo` (a canonical path) as trusted with its current remote
    /// and what the user was shown (`granted`), replacing an earlier record.
    pub fn trust(
        &mut self,
        repo: &Path,
        mut granted: Vec<Grant>,
    ) -> Result<&TrustedRepository, TrustError> {
        granted.sort();
        granted.dedup();
        self.repositories.retain(|r| r.path != repo);
        self.repositories.push(TrustedRepository {
            path: repo.to_path_buf(),
            remote: git_remote(repo),
            granted,
        });
        self.save()?;
        // Just pushed.
        Ok(&self.repositories[self.repositories.len() - 1])
    }

    /// Forgets `repo`; `false` when it was not trusted.
    pub fn untrust(&mut self, repo: &Path) -> Result<bool, TrustError> {
        let before = self.repositories.len();
        self.repositories.retain(|r| r.path != repo);
        if before == self.repositories.len() {
            return Ok(false);
        }
        self.save()?;
        Ok(true)
    }

    fn save(&self) -> Result<(), TrustError> {
        let file = TrustFile {
            repositories: self.repositories.clone(),
        };
        let body = toml::to_string(&file).map_err(|e| TrustError::Invalid {
            path: self.path.clone(),
            message: e.to_string(),
        })?;
        let text = format!(
            "# Repositories you trusted with `evoflux trust`. Written by evoflux;\n\
             # `evoflux trust --revoke DIR` removes one.\n\n{body}"
        );
        if let Some(parent) = self.path.parent() {
            std::fs::create_dir_all(parent).map_err(|source| {
                TrustError::Write(AtomicWriteError {
                    path: self.path.clone(),
                    step: "create directory",
                    source,
                })
            })?;
        }
        write_atomic(&self.path, text.as_bytes(), AtomicOptions::default())?;
        Ok(())
    }
}

/// The repository that holds `dir`: the nearest enclosing directory with a
/// `.git`, else `dir` itself.
pub fn repository_root(dir: &Path) -> PathBuf {
    dir.ancestors()
        .find(|d| d.join(".git").exists())
        .unwrap_or(dir)
        .to_path_buf()
}

/// The URL of the `origin` remote of the repository at `repo`, read from
/// its git config (a worktree's `.git` file is followed), without running
/// git.
pub fn git_remote(repo: &Path) -> Option<String> {
    let (_, common) = git_dirs(repo)?;
    let config = std::fs::read_to_string(common.join("config")).ok()?;
    origin_url(&config)
}

/// The repository's own git dir (where `HEAD` is) and its common dir
/// (config and refs; the same unless `repo` is a linked worktree).
fn git_dirs(repo: &Path) -> Option<(PathBuf, PathBuf)> {
    let dot_git = repo.join(".git");
    if dot_git.is_file() {
        let text = std::fs::read_to_string(&dot_git).ok()?;
        let target = text.trim().strip_prefix("gitdir:")?.trim();
        let dir = repo.join(target);
        let common = match std::fs::read_to_string(dir.join("commondir")) {
            Ok(common) => dir.join(common.trim()),
            Err(_) => dir.clone(),
        };
        Some((dir, common))
    } else if dot_git.is_dir() {
        Some((dot_git.clone(), dot_git))
    } else {
        None
    }
}

/// The commit `HEAD` of the repository at `repo` points to (a detached
/// head, a loose ref or a packed one), read from its files without running
/// git; `None` outside a repository or before its first commit.
pub fn git_head(repo: &Path) -> Option<String> {
    let (dir, common) = git_dirs(repo)?;
    let head = std::fs::read_to_string(dir.join("HEAD")).ok()?;
    let head = head.trim();
    let Some(name) = head.strip_prefix("ref:").map(str::trim) else {
        return is_object_id(head).then(|| head.to_owned());
    };
    for base in [&dir, &common] {
        if let Ok(id) = std::fs::read_to_string(base.join(name)) {
            let id = id.trim();
            if is_object_id(id) {
                return Some(id.to_owned());
            }
        }
    }
    let packed = std::fs::read_to_string(common.join("packed-refs")).ok()?;
    packed.lines().find_map(|line| {
        let (id, r) = line.split_once(' ')?;
        (r.trim() == name && is_object_id(id)).then(|| id.to_owned())
    })
}

fn is_object_id(s: &str) -> bool {
    matches!(s.len(), 40 | 64) && s.bytes().all(|b| b.is_ascii_hexdigit())
}

/// `remote "origin"`'s `url` in git config text.
fn origin_url(config: &str) -> Option<String> {
    let mut in_origin = false;
    for line in config.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            let section: String = line.chars().filter(|c| !c.is_whitespace()).collect();
            in_origin = section == "[remote\"origin\"]";
            continue;
        }
        if !in_origin {
            continue;
        }
        if let Some((key, value)) = line.split_once('=')
            && key.trim().eq_ignore_ascii_case("url")
        {
            return Some(value.trim().trim_matches('"').to_owned());
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn repo_with_remote(dir: &Path, url: &str) {
        std::fs::create_dir_all(dir.join(".git")).unwrap();
        std::fs::write(
            dir.join(".git/config"),
            format!(
                "[core]\n\tbare = false\n[remote \"upstream\"]\n\turl = other\n[remote \"origin\"]\n\turl = {url}\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n"
            ),
        )
        .unwrap();
    }

    #[test]
    fn trust_is_recorded_with_the_remote_and_lost_when_it_changes() {
        let tmp = tempfile::tempdir().unwrap();
        let repo = tmp.path().join("repo");
        repo_with_remote(&repo, "https://example.test/a.git");
        let list_path = tmp.path().join("data/trusted-repositories.toml");
        let mut list = TrustList::load(&list_path).unwrap();
        assert_eq!(list.state(&repo), TrustState::Untrusted);
        let record = list.trust(&repo, Vec::new()).unwrap();
        assert_eq!(record.remote.as_deref(), Some("https://example.test/a.git"));

        let list = TrustList::load(&list_path).unwrap();
        assert_eq!(list.state(&repo), TrustState::Trusted);
        assert_eq!(list.state(&tmp.path().join("other")), TrustState::Untrusted);

        repo_with_remote(&repo, "https://evil.test/a.git");
        assert_eq!(
            list.state(&repo),
            TrustState::RemoteChanged {
                recorded: Some("https://example.test/a.git".into()),
                current: Some("https://evil.test/a.git".into()),
            }
        );
        assert_eq!(list.state(&repo).trust(), Trust::Untrusted);
    }

    #[test]
    fn revoking_forgets_and_a_broken_file_is_a_coded_error() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("trusted-repositories.toml");
        let mut list = TrustList::load(&path).unwrap();
        list.trust(tmp.path(), Vec::new()).unwrap();
        assert!(list.untrust(tmp.path()).unwrap());
        assert!(!list.untrust(tmp.path()).unwrap());
        assert_eq!(
            TrustList::load(&path).unwrap().state(tmp.path()),
            TrustState::Untrusted
        );
        std::fs::write(&path, "[[repository]]\npth = 1\n").unwrap();
        assert_eq!(TrustList::load(&path).unwrap_err().code(), "trust/invalid");
    }

    fn grant(slot: &str, source: &str, sha256: &str) -> Grant {
        Grant {
            slot: slot.into(),
            source: source.into(),
            sha256: sha256.into(),
        }
    }

    #[test]
    fn grants_are_kept_with_the_record_and_compared_by_slot_file_and_content() {
        let tmp = tempfile::tempdir().unwrap();
        let repo = tmp.path().join("repo");
        std::fs::create_dir_all(&repo).unwrap();
        let path = tmp.path().join("trusted-repositories.toml");
        let mut list = TrustList::load(&path).unwrap();
        let tool = grant("tools/deploy", ".evoflux/tools/deploy.toml", "aa");
        let server = grant("connections/db", ".mcp.json#db", "bb");
        list.trust(&repo, vec![server.clone(), tool.clone(), tool.clone()])
            .unwrap();
        let list = TrustList::load(&path).unwrap();
        let granted = list.granted(&repo).unwrap();
        assert_eq!(granted, [server.clone(), tool.clone()]);
        assert_eq!(list.granted(&tmp.path().join("other")), None);

        assert_eq!(grant_status(granted, &tool), GrantStatus::Granted);
        let edited = grant("tools/deploy", ".evoflux/tools/deploy.toml", "cc");
        assert_eq!(grant_status(granted, &edited), GrantStatus::Changed);
        let moved = grant("tools/deploy", ".evoflux/tools/other.toml", "aa");
        assert_eq!(grant_status(granted, &moved), GrantStatus::Added);
        assert_eq!(grant_status(&[], &tool), GrantStatus::Added);

        // A record from before grants were kept still loads: it grants nothing.
        std::fs::write(&path, format!("[[repository]]\npath = {:?}\n", repo)).unwrap();
        let list = TrustList::load(&path).unwrap();
        assert_eq!(list.granted(&repo), Some(&[][..]));
    }

    #[test]
    fn repository_root_is_the_nearest_git_dir() {
        let tmp = tempfile::tempdir().unwrap();
        let repo = tmp.path().join("r");
        std::fs::create_dir_all(repo.join(".git")).unwrap();
        std::fs::create_dir_all(repo.join("a/b")).unwrap();
        assert_eq!(repository_root(&repo.join("a/b")), repo);
        let plain = tmp.path().join("plain");
        std::fs::create_dir_all(&plain).unwrap();
        assert_eq!(repository_root(&plain), plain);
        assert_eq!(git_remote(&repo), None);
    }
}
