//! Renderings cached by content: the key is the file's SHA-256, its kind,
//! the renderer version and what was asked (the page range), so a changed
//! file or a newer renderer never meets an old rendering. Entries are
//! written atomically; the folder is kept under a size bound by removing
//! the least recently written.

use std::fs;
use std::path::{Path, PathBuf};

use evoflux_core::atomic::{AtomicOptions, write_atomic};
use sha2::{Digest, Sha256};

use crate::{DocumentKind, RENDERER_VERSION, Rendered, ViewRequest};

/// The cache folder.
#[derive(Debug, Clone)]
pub struct Cache {
    dir: PathBuf,
    max_bytes: u64,
}

impl Cache {
    /// The default bound of the folder.
    pub const MAX_BYTES: u64 = 512 * 1024 * 1024;

    /// A cache in `dir` (created on the first write).
    pub fn new(dir: impl Into<PathBuf>) -> Cache {
        Cache {
            dir: dir.into(),
            max_bytes: Cache::MAX_BYTES,
        }
    }

    pub fn with_max_bytes(mut self, max_bytes: u64) -> Cache {
        self.max_bytes = max_bytes;
        self
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The key of a rendering of `content`.
    pub fn key(content_sha256: &str, kind: DocumentKind, request: ViewRequest) -> String {
        let pages = match request.pages {
            Some(p) if kind == DocumentKind::Pdf => format!("-p{}-{}", p.first, p.last),
            _ => String::new(),
        };
        format!(
            "{content_sha256}-{}-v{RENDERER_VERSION}{pages}",
            kind.as_str()
        )
    }

    fn path(&self, key: &str) -> PathBuf {
        self.dir.join(format!("{key}.json"))
    }

    /// A cached rendering; `None` when absent or unreadable (it is then
    /// rendered again and replaced).
    pub fn get(&self, key: &str) -> Option<Rendered> {
        let bytes = fs::read(self.path(key)).ok()?;
        serde_json::from_slice(&bytes).ok()
    }

    /// Stores a rendering, then trims the folder to its bound.
    pub fn put(&self, key: &str, rendered: &Rendered) -> std::io::Result<()> {
        fs::create_dir_all(&self.dir)?;
        let bytes = serde_json::to_vec(rendered).map_err(std::io::Error::other)?;
        write_atomic(&self.path(key), &bytes, AtomicOptions::default())
            .map_err(|e| std::io::Error::other(e.to_string()))?;
        self.trim();
        Ok(())
    }

    fn trim(&self) {
        let Ok(dir) = fs::read_dir(&self.dir) else {
            return;
        };
        let mut entries: Vec<(std::time::SystemTime, u64, PathBuf)> = dir
            .flatten()
            .filter(|e| e.path().extension().is_some_and(|x| x == "json"))
            .filter_map(|e| {
                let meta = e.metadata().ok()?;
                Some((meta.modified().ok()?, meta.len(), e.path()))
            })
            .collect();
        let mut total: u64 = entries.iter().map(|e| e.1).sum();
        entries.sort();
        for (_, len, path) in entries {
            if total <= self.max_bytes {
                break;
            }
            if fs::remove_file(&path).is_ok() {
                total = total.saturating_sub(len);
            }
        }
    }
}

/// The hex SHA-256 of `bytes`.
pub fn content_hash(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}
