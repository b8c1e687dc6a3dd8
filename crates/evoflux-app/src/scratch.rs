//! A throwaway home for a session the user did not open: a replay, an eval
//! run. A temporary folder (canonical, so paths in prompts are stable), a
//! store in it, and a process runtime whose commands journal into that
//! store's artifacts rather than the user's data dir.

use std::path::{Path, PathBuf};

use evoflux_store::{Store, StoreError};
use evoflux_tools::{ProcessRuntime, RuntimeConfig};

/// Why a scratch home could not be made.
#[derive(Debug, thiserror::Error)]
pub enum ScratchError {
    #[error("cannot make a scratch directory in {}: {source}", .path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// The scratch home; [`Scratch::close`] ends it.
#[derive(Debug)]
pub(crate) struct Scratch {
    dir: tempfile::TempDir,
    /// The canonical folder.
    pub(crate) root: PathBuf,
    pub(crate) data_dir: PathBuf,
    pub(crate) store: Store,
    pub(crate) processes: ProcessRuntime,
}

impl Scratch {
    /// A new scratch home in the system's temporary folder, named `prefix…`.
    pub(crate) async fn open(prefix: &str) -> Result<Scratch, ScratchError> {
        let io = |path: &Path| {
            let path = path.to_owned();
            move |source| ScratchError::Io { path, source }
        };
        let temp = std::env::temp_dir();
        let dir = tempfile::Builder::new()
            .prefix(prefix)
            .tempdir()
            .map_err(io(&temp))?;
        let root = std::fs::canonicalize(dir.path()).map_err(io(dir.path()))?;
        let data_dir = root.join("data");
        let store = Store::open(&data_dir).await?;
        let processes =
            ProcessRuntime::new(RuntimeConfig::new(evoflux_store::artifacts_root(&data_dir)));
        Ok(Scratch {
            dir,
            root,
            data_dir,
            store,
            processes,
        })
    }

    /// Stops the commands still running and closes the store; the folder
    /// is removed, or kept when `keep` (and then returned).
    pub(crate) async fn close(self, keep: bool) -> Option<PathBuf> {
        self.processes.shutdown().await;
        self.store.close().await;
        keep.then(|| self.dir.keep())
    }
}
