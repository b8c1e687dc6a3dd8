//! The git operations write-boundary enforcement and worktree merging
//! need, each one `git` subprocess with an argv (never a shell).
//!
//! # Snapshots without stash
//!
//! A node's *base* is a tree object: the whole working tree as `git add -A`
//! sees it (tracked files with their current content, untracked files that
//! are not ignored), written through a **private index file**
//! (`GIT_INDEX_FILE` pointing outside the repository). The operator's index,
//! stash, branches and HEAD are never touched, and a checkout that was
//! already dirty before the node is snapshotted as it was, so a change the
//! node made to an already-dirty file is still seen. After the node, the
//! same snapshot is taken again and the two trees are compared with
//! `git diff-tree --no-renames` (a rename is a deletion and an addition,
//! each judged by the boundary on its own).
//!
//! Rolling a path back means: a path that existed in the base is written
//! back from the base tree (`git checkout-index` from a private index read
//! from that tree, so the operator's index is untouched again); a path the
//! node created is deleted, with directories it leaves empty.
//!
//! The private index is seeded from the checkout's own index for its stat
//! cache, so entries marked `assume-unchanged` or `skip-worktree` there
//! (sparse checkouts) are not re-read and a change to them is not seen.
//!
//! # Ignored files
//!
//! Ignored files (`.gitignore`) are not in snapshots: hashing build
//! outputs into the repository's object store on every node would cost
//! more than the nodes. They are still seen: [`Git::ignored`] lists them
//! (`git ls-files --others --ignored --exclude-standard`) with what their
//! metadata says of their content (size, inode, modification and change
//! times, mode), and two such listings compare into the same [`Change`]s a
//! tree diff gives. A node that writes an ignored path is judged by its
//! boundary like any other. What a listing cannot do is give content back:
//! a created ignored file is deleted again, a changed or deleted one can
//! only be named.
//!
//! Needs git 2.40 or later (`merge-tree --write-tree --merge-base`).

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};

use tokio::process::Command;

/// A git object id (hex).
pub type Oid = String;

/// A failed git invocation.
#[derive(Debug, thiserror::Error)]
pub enum GitError {
    #[error("cannot run git: {0}")]
    Spawn(#[source] std::io::Error),
    #[error("`git {args}` failed (exit {code}): {stderr}")]
    Failed {
        args: String,
        code: i32,
        stderr: String,
    },
    #[error("`git {args}` printed something that is not {expected}")]
    Output {
        args: String,
        expected: &'static str,
    },
    #[error("cannot update {}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// How a path differs between two snapshots.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChangeKind {
    Added,
    Modified,
    Deleted,
}

/// One changed path, repository-relative with `/` separators.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    pub path: String,
    pub kind: ChangeKind,
}

/// The answer of a three-way merge of trees.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MergeOutcome {
    Clean(Oid),
    /// The conflicting paths, sorted, each once.
    Conflict(Vec<String>),
}

/// What a file's metadata says of its content: any write or replacement
/// changes one of these.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp {
    len: u64,
    ino: u64,
    mode: u32,
    mtime: (i64, i64),
    ctime: (i64, i64),
}

impl Stamp {
    fn of(meta: &std::fs::Metadata) -> Stamp {
        Stamp {
            len: meta.len(),
            ino: meta.ino(),
            mode: meta.mode(),
            mtime: (meta.mtime(), meta.mtime_nsec()),
            ctime: (meta.ctime(), meta.ctime_nsec()),
        }
    }
}

/// The checkout's ignored files at one moment, by repository-relative
/// path (see the module documentation).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IgnoredFiles(BTreeMap<String, Stamp>);

impl IgnoredFiles {
    /// What differs from `self` to `after`, in path order.
    pub fn changes(&self, after: &IgnoredFiles) -> Vec<Change> {
        let mut out = Vec::new();
        for (path, stamp) in &self.0 {
            match after.0.get(path) {
                None => out.push(Change {
                    path: path.clone(),
                    kind: ChangeKind::Deleted,
                }),
                Some(now) if now != stamp => out.push(Change {
                    path: path.clone(),
                    kind: ChangeKind::Modified,
                }),
                Some(_) => {}
            }
        }
        for path in after.0.keys() {
            if !self.0.contains_key(path) {
                out.push(Change {
                    path: path.clone(),
                    kind: ChangeKind::Added,
                });
            }
        }
        out.sort_by(|a, b| a.path.cmp(&b.path));
        out
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// Git against one checkout (the main one or a worktree). `scratch` is a
/// directory outside the checkout where private index files live.
#[derive(Debug, Clone)]
pub struct Git {
    dir: PathBuf,
    scratch: PathBuf,
}

/// Distinct private index names within one process.
static INDEX_SEQ: AtomicU64 = AtomicU64::new(0);

/// The identity of the scratch commits the executor makes (worktree bases
/// and merge inputs). They are never on a branch; `git gc` collects them.
const IDENTITY: [(&str, &str); 4] = [
    ("GIT_AUTHOR_NAME", "evoflux fleet"),
    ("GIT_AUTHOR_EMAIL", "fleet@evoflux.invalid"),
    ("GIT_COMMITTER_NAME", "evoflux fleet"),
    ("GIT_COMMITTER_EMAIL", "fleet@evoflux.invalid"),
];

impl Git {
    pub fn new(dir: impl Into<PathBuf>, scratch: impl Into<PathBuf>) -> Git {
        Git {
            dir: dir.into(),
            scratch: scratch.into(),
        }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Runs `git <args>` in the checkout with extra environment; stdout on
    /// success. `ok_codes` lists exit codes that are answers, not failures.
    async fn run_with(
        &self,
        args: &[&OsStr],
        env: &[(&str, &OsStr)],
        ok_codes: &[i32],
    ) -> Result<(i32, Vec<u8>), GitError> {
        // The checkout's fsmonitor and hooks never run: the fleet's agents
        // could have written them.
        let mut cmd = Command::from(evoflux_core::git::command());
        cmd.arg("-C")
            .arg(&self.dir)
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            // A git that asks a question would hang the run.
            .env("GIT_TERMINAL_PROMPT", "0")
            // Inherited from a hook or a wrapper, these would point git at
            // another repository or index than `-C` names.
            .env_remove("GIT_DIR")
            .env_remove("GIT_WORK_TREE")
            .env_remove("GIT_INDEX_FILE")
            .env_remove("GIT_COMMON_DIR")
            .env_remove("GIT_OBJECT_DIRECTORY")
            .kill_on_drop(true);
        for (k, v) in env {
            cmd.env(k, v);
        }
        let out = cmd.output().await.map_err(GitError::Spawn)?;
        let code = out.status.code().unwrap_or(-1);
        if out.status.success() || ok_codes.contains(&code) {
            Ok((code, out.stdout))
        } else {
            Err(GitError::Failed {
                args: args
                    .iter()
                    .map(|a| a.to_string_lossy())
                    .collect::<Vec<_>>()
                    .join(" "),
                code,
                stderr: String::from_utf8_lossy(&out.stderr).trim().to_owned(),
            })
        }
    }

    async fn run(&self, args: &[&str]) -> Result<Vec<u8>, GitError> {
        let args: Vec<&OsStr> = args.iter().map(OsStr::new).collect();
        Ok(self.run_with(&args, &[], &[]).await?.1)
    }

    async fn run_env(&self, args: &[&str], env: &[(&str, &OsStr)]) -> Result<Vec<u8>, GitError> {
        let args: Vec<&OsStr> = args.iter().map(OsStr::new).collect();
        Ok(self.run_with(&args, env, &[]).await?.1)
    }

    fn oid(args: &[&str], out: &[u8]) -> Result<Oid, GitError> {
        let s = String::from_utf8_lossy(out).trim().to_owned();
        if !s.is_empty() && s.chars().all(|c| c.is_ascii_hexdigit()) {
            Ok(s)
        } else {
            Err(GitError::Output {
                args: args.join(" "),
                expected: "an object id",
            })
        }
    }

    /// Whether the directory is inside a git work tree.
    pub async fn is_work_tree(&self) -> bool {
        matches!(
            self.run(&["rev-parse", "--is-inside-work-tree"]).await,
            Ok(out) if out.starts_with(b"true")
        )
    }

    /// HEAD's commit, `None` on an unborn branch.
    pub async fn head(&self) -> Result<Option<Oid>, GitError> {
        let args: Vec<&OsStr> = ["rev-parse", "--verify", "--quiet", "HEAD^{commit}"]
            .iter()
            .map(OsStr::new)
            .collect();
        let (code, out) = self.run_with(&args, &[], &[1]).await?;
        if code == 1 {
            return Ok(None);
        }
        Self::oid(&["rev-parse", "HEAD"], &out).map(Some)
    }

    /// A fresh private index path under `scratch`, removed when dropped.
    fn private_index(&self) -> Result<PrivateIndex, GitError> {
        std::fs::create_dir_all(&self.scratch).map_err(|source| GitError::Io {
            path: self.scratch.clone(),
            source,
        })?;
        let n = INDEX_SEQ.fetch_add(1, Ordering::Relaxed);
        Ok(PrivateIndex(
            self.scratch
                .join(format!("index-{}-{n}", std::process::id())),
        ))
    }

    /// The working tree as a tree object (see the module documentation).
    ///
    /// The private index starts as a copy of the checkout's own index when
    /// there is one: its stat cache lets `git add -A` re-read only the
    /// files whose metadata changed, instead of hashing the whole tree.
    /// What the operator staged does not leak into the snapshot: `add -A`
    /// makes every entry match the working tree.
    pub async fn snapshot(&self) -> Result<Oid, GitError> {
        let index = self.private_index()?;
        let env = [("GIT_INDEX_FILE", index.0.as_os_str())];
        let seeded = match self
            .run(&["rev-parse", "--path-format=absolute", "--git-path", "index"])
            .await
        {
            Ok(out) => {
                let own = PathBuf::from(String::from_utf8_lossy(&out).trim());
                seed_index(own, index.0.clone()).await
            }
            Err(_) => false,
        };
        if !seeded {
            match self.head().await? {
                Some(head) => self.run_env(&["read-tree", &head], &env).await?,
                None => self.run_env(&["read-tree", "--empty"], &env).await?,
            };
        }
        self.run_env(&["add", "-A", "--", "."], &env).await?;
        let out = self.run_env(&["write-tree"], &env).await?;
        Self::oid(&["write-tree"], &out)
    }

    /// The checkout's ignored files, each with its metadata (see the
    /// module documentation). Directories git does not descend into (a
    /// nested repository) are not listed.
    pub async fn ignored(&self) -> Result<IgnoredFiles, GitError> {
        let out = self
            .run(&[
                "ls-files",
                "-z",
                "--others",
                "--ignored",
                "--exclude-standard",
            ])
            .await?;
        let dir = self.dir.clone();
        let listed = tokio::task::spawn_blocking(move || {
            let mut files = BTreeMap::new();
            for path in out.split(|b| *b == 0).filter(|p| !p.is_empty()) {
                let path = String::from_utf8_lossy(path).into_owned();
                if path.ends_with('/') {
                    continue;
                }
                // Gone since it was listed: not there, as far as the
                // listing goes.
                if let Ok(meta) = std::fs::symlink_metadata(dir.join(&path)) {
                    files.insert(path, Stamp::of(&meta));
                }
            }
            files
        })
        .await
        .map_err(|e| GitError::Io {
            path: self.dir.clone(),
            source: std::io::Error::other(e.to_string()),
        })?;
        Ok(IgnoredFiles(listed))
    }

    /// Deletes files a node created (and the directories they leave
    /// empty), the rollback of a path no tree holds.
    pub fn remove_created_paths(&self, paths: &[String]) -> Result<(), GitError> {
        paths.iter().try_for_each(|p| self.remove_created(p))
    }

    /// The tree of a commit.
    pub async fn tree_of(&self, commit: &str) -> Result<Oid, GitError> {
        let spec = format!("{commit}^{{tree}}");
        let args = ["rev-parse", "--verify", spec.as_str()];
        let out = self.run(&args).await?;
        Self::oid(&args, &out)
    }

    /// Every path that differs between two trees, in git's order.
    pub async fn diff_trees(&self, from: &str, to: &str) -> Result<Vec<Change>, GitError> {
        if from == to {
            return Ok(Vec::new());
        }
        let args = [
            "diff-tree",
            "-r",
            "-z",
            "--no-renames",
            "--name-status",
            from,
            to,
        ];
        let out = self.run(&args).await?;
        let mut fields = out.split(|b| *b == 0).filter(|f| !f.is_empty());
        let mut changes = Vec::new();
        while let Some(status) = fields.next() {
            let Some(path) = fields.next() else {
                return Err(GitError::Output {
                    args: args.join(" "),
                    expected: "status and path pairs",
                });
            };
            let kind = match status.first() {
                Some(b'A') => ChangeKind::Added,
                Some(b'D') => ChangeKind::Deleted,
                // M, T (type change): the content differs.
                _ => ChangeKind::Modified,
            };
            changes.push(Change {
                path: String::from_utf8_lossy(path).into_owned(),
                kind,
            });
        }
        Ok(changes)
    }

    /// Makes the working tree's `paths` what they are in `tree`: written
    /// from it when present there, deleted when absent. The operator's
    /// index is not touched.
    pub async fn restore_paths(&self, tree: &str, changes: &[Change]) -> Result<(), GitError> {
        let (write, delete): (Vec<&Change>, Vec<&Change>) =
            changes.iter().partition(|c| c.kind != ChangeKind::Added);
        if !write.is_empty() {
            let index = self.private_index()?;
            let env = [("GIT_INDEX_FILE", index.0.as_os_str())];
            self.run_env(&["read-tree", tree], &env).await?;
            // Chunks keep the argv far below the system limit.
            for chunk in write.chunks(256) {
                let mut args = vec!["checkout-index", "-f", "--"];
                args.extend(chunk.iter().map(|c| c.path.as_str()));
                self.run_env(&args, &env).await?;
            }
        }
        for change in delete {
            self.remove_created(&change.path)?;
        }
        Ok(())
    }

    /// Deletes a file the node created and the directories it leaves empty
    /// (never the checkout's root).
    fn remove_created(&self, path: &str) -> Result<(), GitError> {
        let full = self.dir.join(path);
        match std::fs::remove_file(&full) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(source) => return Err(GitError::Io { path: full, source }),
        }
        let mut dir = full.parent();
        while let Some(d) = dir {
            if d == self.dir || !d.starts_with(&self.dir) {
                break;
            }
            // Fails (and stops) at the first directory that is not empty.
            if std::fs::remove_dir(d).is_err() {
                break;
            }
            dir = d.parent();
        }
        Ok(())
    }

    /// A commit of `tree` with `parent`, on no branch.
    pub async fn commit_tree(
        &self,
        tree: &str,
        parent: Option<&str>,
        message: &str,
    ) -> Result<Oid, GitError> {
        let mut args = vec!["commit-tree", tree, "-m", message];
        if let Some(p) = parent {
            args.push("-p");
            args.push(p);
        }
        let env: Vec<(&str, &OsStr)> = IDENTITY.iter().map(|(k, v)| (*k, OsStr::new(*v))).collect();
        let out = self.run_env(&args, &env).await?;
        Self::oid(&args, &out)
    }

    /// Adds a detached worktree at `path` checked out at `commit`, removing
    /// a stale one left there by a killed run first.
    pub async fn add_worktree(&self, path: &Path, commit: &str) -> Result<(), GitError> {
        self.remove_worktree(path).await;
        let p = path.to_string_lossy();
        self.run(&["worktree", "add", "--detach", "--force", &p, commit])
            .await?;
        Ok(())
    }

    /// Removes a worktree and its directory; best effort (a worktree that
    /// is already gone is fine), then prunes git's bookkeeping.
    pub async fn remove_worktree(&self, path: &Path) {
        let p = path.to_string_lossy();
        let _ = self.run(&["worktree", "remove", "--force", &p]).await;
        let _ = std::fs::remove_dir_all(path);
        let _ = self.run(&["worktree", "prune"]).await;
    }

    /// Three-way merge of commits with an explicit base, written as a tree
    /// without touching any checkout (`git merge-tree --write-tree`).
    pub async fn merge(
        &self,
        base: &str,
        ours: &str,
        theirs: &str,
    ) -> Result<MergeOutcome, GitError> {
        let base_arg = format!("--merge-base={base}");
        let argv = [
            "merge-tree",
            "--write-tree",
            "--name-only",
            "--no-messages",
            "-z",
            base_arg.as_str(),
            ours,
            theirs,
        ];
        let args: Vec<&OsStr> = argv.iter().map(OsStr::new).collect();
        let (code, out) = self.run_with(&args, &[], &[1]).await?;
        let mut fields = out.split(|b| *b == 0).filter(|f| !f.is_empty());
        let tree = fields
            .next()
            .map(|t| String::from_utf8_lossy(t).into_owned());
        if code == 0 {
            return match tree {
                Some(t) => Ok(MergeOutcome::Clean(t.trim().to_owned())),
                None => Err(GitError::Output {
                    args: "merge-tree".to_owned(),
                    expected: "a tree id",
                }),
            };
        }
        let mut paths: Vec<String> = fields
            .map(|f| String::from_utf8_lossy(f).into_owned())
            .collect();
        paths.sort();
        paths.dedup();
        Ok(MergeOutcome::Conflict(paths))
    }
}

/// Copies the checkout's index to `to`, keeping its modification time:
/// git's racy-clean check compares entries against the index file's mtime,
/// and a copy stamped "now" would trust entries written in the same instant
/// as the original. `false` when there is no index to copy.
async fn seed_index(from: PathBuf, to: PathBuf) -> bool {
    tokio::task::spawn_blocking(move || -> std::io::Result<()> {
        let modified = std::fs::metadata(&from)?.modified()?;
        std::fs::copy(&from, &to)?;
        std::fs::File::options()
            .write(true)
            .open(&to)?
            .set_modified(modified)
    })
    .await
    .is_ok_and(|r| r.is_ok())
}

/// A private index file, deleted when dropped.
#[derive(Debug)]
struct PrivateIndex(PathBuf);

impl Drop for PrivateIndex {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
        let _ = std::fs::remove_file(self.0.with_extension("lock"));
    }
}
