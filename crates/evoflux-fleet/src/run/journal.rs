//! Durability: a run is the sequence of its journal entries, so a killed
//! run can be resumed by reading them back (completed nodes are not run
//! again). The executor appends; nothing is ever rewritten.
//!
//! [`FileJournal`] writes one JSON line per entry to `<dir>/<run-id>.jsonl`
//! with append + `fsync`, so an entry the executor has moved past is on
//! disk. A run killed in the middle of a write leaves at most a torn last
//! line, which reading ignores (the entry it would have held never
//! happened as far as the run is concerned); a torn line anywhere else is
//! corruption and refused. [`MemoryJournal`] keeps entries in memory, for
//! tests and dry runs.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};
use tokio::io::AsyncWriteExt;

use crate::run::receipt::NodeReceipt;
use crate::run::runner::RunFuture;

/// One journal line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(
    tag = "entry",
    rename_all = "kebab-case",
    rename_all_fields = "camelCase"
)]
pub enum JournalEntry {
    /// The run's first entry: which plan it runs. A resume against a plan
    /// with another hash is refused.
    Begin {
        run_id: String,
        contract: String,
        plan_hash: String,
        started_at_ms: u64,
    },
    /// A node was handed to its runner. `base` is the snapshot tree of the
    /// main checkout taken before it (main-checkout nodes under
    /// enforcement), so a resumed run judges an interrupted node against
    /// the state before its first attempt, not against its partial work.
    Started {
        node: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        base: Option<String>,
    },
    /// A plan node's delegation plan, spliced into the run (journalled
    /// before the node's receipt; a resume splices the last one of a node
    /// that then succeeded).
    Spliced { node: String, plan: String },
    /// A passed verification went stale (a later step changed the
    /// workspace before its result was used): it is not final any more.
    Stale { node: String },
    /// A worktree node's result is about to be written into the main
    /// checkout: `before` is the main checkout's tree then, `merged` the
    /// tree being written. Until the node's receipt follows, the checkout
    /// may hold part of it (the run was killed while writing): a resume
    /// writes `before` back over every path the merge touches, journals
    /// [`MergeUndone`](Self::MergeUndone), and the node runs again.
    Merging {
        node: String,
        before: String,
        merged: String,
    },
    /// A resume put back the paths of an interrupted merge.
    MergeUndone { node: String },
    /// A node settled.
    Finished { receipt: Box<NodeReceipt> },
}

/// Why the journal cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum JournalError {
    #[error("fleet run journal {}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("fleet run journal {}: line {line} is not a journal entry: {reason}", path.display())]
    Corrupt {
        path: PathBuf,
        line: usize,
        reason: String,
    },
    #[error("fleet run journal: {0}")]
    Encode(#[from] serde_json::Error),
    #[error("fleet run journal: run id '{0}' must be 1-128 characters of [A-Za-z0-9._-]")]
    RunId(String),
    #[error("fleet run journal: {0}")]
    Other(String),
}

impl JournalError {
    pub fn code(&self) -> &'static str {
        match self {
            JournalError::Io { .. } | JournalError::Encode(_) | JournalError::Other(_) => {
                "fleet/journal-io"
            }
            JournalError::Corrupt { .. } => "fleet/journal-corrupt",
            JournalError::RunId(_) => "fleet/run-id-invalid",
        }
    }
}

/// Where runs are made durable. The application implements it over its
/// store; entries must come back from [`RunJournal::load`] in append order.
pub trait RunJournal: Send + Sync + std::fmt::Debug {
    fn append<'a>(
        &'a self,
        run_id: &'a str,
        entry: &'a JournalEntry,
    ) -> RunFuture<'a, Result<(), JournalError>>;

    /// Every entry of the run, oldest first; empty for a run never begun.
    fn load<'a>(
        &'a self,
        run_id: &'a str,
    ) -> RunFuture<'a, Result<Vec<JournalEntry>, JournalError>>;
}

/// A run id names a file: `^[A-Za-z0-9._-]{1,128}$`, not `.` or `..`.
pub fn valid_run_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 128
        && id != "."
        && id != ".."
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
}

/// JSON lines under a directory, one file per run.
#[derive(Debug, Clone)]
pub struct FileJournal {
    dir: PathBuf,
}

impl FileJournal {
    pub fn new(dir: impl Into<PathBuf>) -> FileJournal {
        FileJournal { dir: dir.into() }
    }

    pub fn path(&self, run_id: &str) -> Result<PathBuf, JournalError> {
        if !valid_run_id(run_id) {
            return Err(JournalError::RunId(run_id.to_owned()));
        }
        Ok(self.dir.join(format!("{run_id}.jsonl")))
    }
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> JournalError + '_ {
    move |source| JournalError::Io {
        path: path.to_path_buf(),
        source,
    }
}

impl RunJournal for FileJournal {
    fn append<'a>(
        &'a self,
        run_id: &'a str,
        entry: &'a JournalEntry,
    ) -> RunFuture<'a, Result<(), JournalError>> {
        Box::pin(async move {
            let path = self.path(run_id)?;
            let mut line = serde_json::to_vec(entry)?;
            line.push(b'\n');
            let created = !tokio::fs::try_exists(&path).await.unwrap_or(false);
            tokio::fs::create_dir_all(&self.dir)
                .await
                .map_err(io(&self.dir))?;
            let mut file = tokio::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&path)
                .await
                .map_err(io(&path))?;
            file.write_all(&line).await.map_err(io(&path))?;
            file.sync_data().await.map_err(io(&path))?;
            if created {
                // The new name must survive a crash too.
                let dir = self.dir.clone();
                tokio::task::spawn_blocking(move || evoflux_core::atomic::sync_dir(&dir))
                    .await
                    .map_err(|e| JournalError::Other(e.to_string()))?
                    .map_err(io(&self.dir))?;
            }
            Ok(())
        })
    }

    fn load<'a>(
        &'a self,
        run_id: &'a str,
    ) -> RunFuture<'a, Result<Vec<JournalEntry>, JournalError>> {
        Box::pin(async move {
            let path = self.path(run_id)?;
            let bytes = match tokio::fs::read(&path).await {
                Ok(b) => b,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
                Err(source) => return Err(JournalError::Io { path, source }),
            };
            parse_lines(&path, &bytes)
        })
    }
}

/// Entries of a JSON-lines journal; a torn last line (no newline) is
/// dropped, any other bad line refused.
pub fn parse_lines(path: &Path, bytes: &[u8]) -> Result<Vec<JournalEntry>, JournalError> {
    let complete = match bytes.iter().rposition(|b| *b == b'\n') {
        Some(end) => &bytes[..=end],
        None => &[][..],
    };
    let mut out = Vec::new();
    for (i, line) in complete.split(|b| *b == b'\n').enumerate() {
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let entry = serde_json::from_slice(line).map_err(|e| JournalError::Corrupt {
            path: path.to_path_buf(),
            line: i + 1,
            reason: e.to_string(),
        })?;
        out.push(entry);
    }
    Ok(out)
}

/// Entries in memory.
#[derive(Debug, Default)]
pub struct MemoryJournal {
    runs: Mutex<BTreeMap<String, Vec<JournalEntry>>>,
}

impl MemoryJournal {
    pub fn new() -> MemoryJournal {
        MemoryJournal::default()
    }
}

impl RunJournal for MemoryJournal {
    fn append<'a>(
        &'a self,
        run_id: &'a str,
        entry: &'a JournalEntry,
    ) -> RunFuture<'a, Result<(), JournalError>> {
        Box::pin(async move {
            let mut runs = self
                .runs
                .lock()
                .map_err(|_| JournalError::Other("poisoned".to_owned()))?;
            runs.entry(run_id.to_owned())
                .or_default()
                .push(entry.clone());
            Ok(())
        })
    }

    fn load<'a>(
        &'a self,
        run_id: &'a str,
    ) -> RunFuture<'a, Result<Vec<JournalEntry>, JournalError>> {
        Box::pin(async move {
            let runs = self
                .runs
                .lock()
                .map_err(|_| JournalError::Other("poisoned".to_owned()))?;
            Ok(runs.get(run_id).cloned().unwrap_or_default())
        })
    }
}
