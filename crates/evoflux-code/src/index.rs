//! One repository's index: the facts of every source file, refreshed
//! incrementally and persisted between sessions.
//!
//! A refresh walks the repository as `glob` and `grep` do (ripgrep's
//! `ignore` walker: `.gitignore` and `.ignore` apply, `.git` is skipped),
//! stats every source file and re-parses only those whose size or
//! modification time changed *and* whose content hash differs — touching
//! a file costs a hash, not a parse. Files above [`Limits::max_file_bytes`]
//! and beyond [`Limits::max_files`] are left out and listed, so a result
//! can say what it did not see.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::UNIX_EPOCH;

use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use crate::extract::extract;
use crate::facts::FileFacts;
use crate::lang::Language;

/// Bumped whenever the persisted shape or the extraction changes, so an
/// index written by another version is rebuilt rather than misread.
pub const INDEX_FORMAT: u32 = 3;
/// A file modified this close before the last refresh began may have
/// changed again within the same timestamp tick: it is hashed again rather
/// than trusted by its stat (as git treats "racily clean" files).
const RACY_WINDOW_NS: i128 = 2_000_000_000;
/// Largest file indexed (1 MiB): bigger sources are generated or vendored.
pub const MAX_FILE_BYTES: u64 = 1024 * 1024;
/// Most files indexed per repository.
pub const MAX_FILES: usize = 50_000;

/// The bounds of one index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    pub max_file_bytes: u64,
    pub max_files: usize,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            max_file_bytes: MAX_FILE_BYTES,
            max_files: MAX_FILES,
        }
    }
}

/// One indexed file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IndexedFile {
    /// Relative to the repository root, `/`-separated.
    pub path: String,
    pub size: u64,
    pub mtime_ns: i128,
    /// The first 16 hex digits of the content's SHA-256: the revision a
    /// result says it read.
    pub revision: String,
    pub facts: FileFacts,
}

/// What a refresh left out.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Skipped {
    /// Source files above the size limit.
    pub too_large: Vec<String>,
    /// Source files beyond the file-count limit.
    pub over_count: usize,
    /// Files that could not be read or parsed, with why.
    pub failed: Vec<(String, String)>,
}

/// The persisted index of one repository.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RepoIndex {
    format: u32,
    /// Sorted by path.
    pub files: Vec<IndexedFile>,
    pub skipped: Skipped,
    /// When the last refresh began (ns since the epoch).
    refreshed_at_ns: i128,
}

impl Default for RepoIndex {
    fn default() -> RepoIndex {
        RepoIndex {
            format: INDEX_FORMAT,
            files: Vec::new(),
            skipped: Skipped::default(),
            refreshed_at_ns: 0,
        }
    }
}

/// What one refresh did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct RefreshReport {
    /// Files parsed (new or changed), in path order.
    pub parsed: Vec<String>,
    /// Files whose facts were kept.
    pub reused: usize,
    /// Files that are gone.
    pub removed: Vec<String>,
}

impl RefreshReport {
    pub fn changed(&self) -> bool {
        !self.parsed.is_empty() || !self.removed.is_empty()
    }
}

/// A source file found by the walk.
struct Found {
    rel: String,
    abs: PathBuf,
    size: u64,
    mtime_ns: i128,
    language: Language,
}

/// How a changed file came out.
enum Outcome {
    Parsed(IndexedFile),
    /// Same content as before: only its stat changed.
    Unchanged(IndexedFile),
    Failed(String, String),
}

impl RepoIndex {
    /// Reads a persisted index; `None` when there is none, it is damaged
    /// or another version wrote it (it is then rebuilt).
    pub fn load(path: &Path) -> Option<RepoIndex> {
        let bytes = std::fs::read(path).ok()?;
        let index: RepoIndex = postcard::from_bytes(&bytes).ok()?;
        (index.format == INDEX_FORMAT).then_some(index)
    }

    /// Writes the index atomically.
    pub fn save(&self, path: &Path) -> Result<(), crate::CodeError> {
        let bytes = postcard::to_stdvec(self).map_err(|e| crate::CodeError::Persist {
            path: path.to_path_buf(),
            message: e.to_string(),
        })?;
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| crate::CodeError::Persist {
                path: path.to_path_buf(),
                message: e.to_string(),
            })?;
        }
        evoflux_core::atomic::write_atomic(
            path,
            &bytes,
            evoflux_core::atomic::AtomicOptions::default(),
        )
        .map_err(|e| crate::CodeError::Persist {
            path: path.to_path_buf(),
            message: e.to_string(),
        })
    }

    /// Brings the index up to date with the files under `root`. `visible`
    /// says whether a file may be read at all (the sandbox's denied files
    /// are not); `progress` is told `(done, total)` as changed files are
    /// parsed.
    pub fn refresh(
        &mut self,
        root: &Path,
        limits: Limits,
        visible: &(dyn Fn(&Path) -> bool + Sync),
        progress: &(dyn Fn(usize, usize) + Sync),
    ) -> RefreshReport {
        let started = now_ns();
        let racy_from = self.refreshed_at_ns - RACY_WINDOW_NS;
        let mut found = walk(root, visible);
        let mut skipped = Skipped::default();
        if found.len() > limits.max_files {
            skipped.over_count = found.len() - limits.max_files;
            found.truncate(limits.max_files);
        }
        let mut old: HashMap<String, IndexedFile> = std::mem::take(&mut self.files)
            .into_iter()
            .map(|f| (f.path.clone(), f))
            .collect();
        let before: std::collections::BTreeSet<String> = old.keys().cloned().collect();

        let mut kept: Vec<IndexedFile> = Vec::with_capacity(found.len());
        let mut work: Vec<(Found, Option<IndexedFile>)> = Vec::new();
        for f in found {
            if f.size > limits.max_file_bytes {
                old.remove(&f.rel);
                skipped.too_large.push(f.rel);
                continue;
            }
            match old.remove(&f.rel) {
                Some(prev)
                    if prev.size == f.size
                        && prev.mtime_ns == f.mtime_ns
                        && prev.mtime_ns < racy_from =>
                {
                    kept.push(prev)
                }
                prev => work.push((f, prev)),
            }
        }
        drop(old);

        let total = work.len();
        let done = AtomicUsize::new(0);
        let outcomes: Vec<Outcome> = work
            .into_par_iter()
            .map(|(f, prev)| {
                let out = index_file(f, prev);
                progress(done.fetch_add(1, Ordering::Relaxed) + 1, total);
                out
            })
            .collect();

        let mut report = RefreshReport {
            reused: kept.len(),
            ..RefreshReport::default()
        };
        for o in outcomes {
            match o {
                Outcome::Parsed(f) => {
                    report.parsed.push(f.path.clone());
                    kept.push(f);
                }
                Outcome::Unchanged(f) => {
                    report.reused += 1;
                    kept.push(f);
                }
                Outcome::Failed(path, why) => skipped.failed.push((path, why)),
            }
        }
        report.parsed.sort();
        kept.sort_by(|a, b| a.path.cmp(&b.path));
        // Whatever left the index — deleted, grown past the size limit,
        // beyond the count, unreadable — is removed: the positions of the
        // files that remain have moved.
        let after: std::collections::BTreeSet<&str> =
            kept.iter().map(|f| f.path.as_str()).collect();
        report.removed = before
            .into_iter()
            .filter(|p| !after.contains(p.as_str()))
            .collect();
        self.refreshed_at_ns = started;
        self.files = kept;
        self.skipped = skipped;
        report
    }

    /// The file at a repository-relative path.
    pub fn file(&self, path: &str) -> Option<&IndexedFile> {
        self.files
            .binary_search_by(|f| f.path.as_str().cmp(path))
            .ok()
            .and_then(|i| self.files.get(i))
    }

    /// Definitions indexed (for reports and benchmarks).
    pub fn definition_count(&self) -> usize {
        self.files.iter().map(|f| f.facts.definitions.len()).sum()
    }
}

fn now_ns() -> i128 {
    std::time::SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i128::try_from(d.as_nanos()).unwrap_or(i128::MAX))
}

fn index_file(f: Found, prev: Option<IndexedFile>) -> Outcome {
    let bytes = match std::fs::read(&f.abs) {
        Ok(b) => b,
        Err(e) => return Outcome::Failed(f.rel, e.to_string()),
    };
    let mut revision = evoflux_core::hash::sha256_hex(&bytes).to_string();
    revision.truncate(16);
    if let Some(prev) = prev.filter(|p| p.revision == revision) {
        return Outcome::Unchanged(IndexedFile {
            size: f.size,
            mtime_ns: f.mtime_ns,
            ..prev
        });
    }
    match extract(f.language, &bytes) {
        Ok(facts) => Outcome::Parsed(IndexedFile {
            path: f.rel,
            size: f.size,
            mtime_ns: f.mtime_ns,
            revision,
            facts,
        }),
        Err(e) => Outcome::Failed(f.rel, e.to_string()),
    }
}

/// The source files under `root` in path order.
fn walk(root: &Path, visible: &(dyn Fn(&Path) -> bool + Sync)) -> Vec<Found> {
    let mut out = Vec::new();
    let walker = evoflux_core::walk::project_walker(root).build();
    for entry in walker.filter_map(Result::ok) {
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            continue;
        }
        let Some(language) = Language::of_path(entry.path()) else {
            continue;
        };
        if !visible(entry.path()) {
            continue;
        }
        let Ok(rel) = entry.path().strip_prefix(root) else {
            continue;
        };
        let Some(rel) = rel
            .to_str()
            .map(|s| s.replace(std::path::MAIN_SEPARATOR, "/"))
        else {
            continue;
        };
        let Ok(meta) = entry.metadata() else { continue };
        let mtime_ns = meta
            .modified()
            .ok()
            .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
            .map_or(0, |d| i128::try_from(d.as_nanos()).unwrap_or(i128::MAX));
        out.push(Found {
            rel,
            abs: entry.into_path(),
            size: meta.len(),
            mtime_ns,
            language,
        });
    }
    out.sort_by(|a, b| a.rel.cmp(&b.rel));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(root: &Path, rel: &str, text: &str) {
        let p = root.join(rel);
        if let Some(d) = p.parent() {
            std::fs::create_dir_all(d).unwrap_or_else(|e| panic!("{e}"));
        }
        std::fs::write(p, text).unwrap_or_else(|e| panic!("{e}"));
    }

    fn refresh(index: &mut RepoIndex, root: &Path, limits: Limits) -> RefreshReport {
        index.refresh(root, limits, &|_| true, &|_, _| {})
    }

    #[test]
    fn only_changed_files_are_parsed_again() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let root = dir.path();
        write(root, "src/a.rs", "fn a() {}\n");
        write(root, "src/b.rs", "fn b() {}\n");
        write(root, "notes.md", "# not source\n");
        let mut index = RepoIndex::default();
        let first = refresh(&mut index, root, Limits::default());
        assert_eq!(first.parsed, ["src/a.rs", "src/b.rs"]);

        let again = refresh(&mut index, root, Limits::default());
        assert!(again.parsed.is_empty() && again.reused == 2);

        write(root, "src/b.rs", "fn b() {}\nfn b2() {}\n");
        let edited = refresh(&mut index, root, Limits::default());
        assert_eq!(edited.parsed, ["src/b.rs"]);
        assert_eq!(edited.reused, 1);
        let names: Vec<&str> = index
            .file("src/b.rs")
            .map(|f| {
                f.facts
                    .definitions
                    .iter()
                    .map(|d| d.name.as_str())
                    .collect()
            })
            .unwrap_or_default();
        assert_eq!(names, ["b", "b2"]);

        std::fs::remove_file(root.join("src/a.rs")).unwrap_or_else(|e| panic!("{e}"));
        let gone = refresh(&mut index, root, Limits::default());
        assert_eq!(gone.removed, ["src/a.rs"]);
        assert!(index.file("src/a.rs").is_none());
    }

    #[test]
    fn a_file_that_grows_past_the_limit_leaves_the_index_as_removed() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let root = dir.path();
        write(root, "a.rs", "fn a() {}\n");
        write(root, "b.rs", "fn b() {}\n");
        let limits = Limits {
            max_file_bytes: 100,
            max_files: 10,
        };
        let mut index = RepoIndex::default();
        refresh(&mut index, root, limits);
        write(root, "a.rs", &"// grown\n".repeat(20));
        let r = refresh(&mut index, root, limits);
        assert_eq!(r.removed, ["a.rs"]);
        assert!(r.changed());
        assert_eq!(index.skipped.too_large, ["a.rs"]);
    }

    #[test]
    fn a_same_size_edit_in_the_same_tick_is_seen() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let root = dir.path();
        write(root, "a.rs", "fn a() {}\n");
        let mut index = RepoIndex::default();
        refresh(&mut index, root, Limits::default());
        let mtime = std::fs::metadata(root.join("a.rs"))
            .and_then(|m| m.modified())
            .unwrap_or_else(|e| panic!("{e}"));
        write(root, "a.rs", "fn b() {}\n");
        // Same size, and the modification time put back as it was.
        std::fs::File::options()
            .write(true)
            .open(root.join("a.rs"))
            .and_then(|f| f.set_modified(mtime))
            .unwrap_or_else(|e| panic!("{e}"));
        let r = refresh(&mut index, root, Limits::default());
        assert_eq!(r.parsed, ["a.rs"]);
        let names: Vec<&str> = index.files[0]
            .facts
            .definitions
            .iter()
            .map(|d| d.name.as_str())
            .collect();
        assert_eq!(names, ["b"]);
    }

    #[test]
    fn ignored_large_and_surplus_files_are_left_out_and_listed() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let root = dir.path();
        write(root, ".gitignore", "gen/\n");
        write(root, "gen/out.rs", "fn generated() {}\n");
        write(root, "big.rs", &"// padding\n".repeat(200));
        write(root, "a.rs", "fn a() {}\n");
        write(root, "b.rs", "fn b() {}\n");
        write(root, "c.rs", "fn c() {}\n");
        let mut index = RepoIndex::default();
        let limits = Limits {
            max_file_bytes: 1000,
            max_files: 3,
        };
        refresh(&mut index, root, limits);
        let paths: Vec<&str> = index.files.iter().map(|f| f.path.as_str()).collect();
        assert_eq!(paths, ["a.rs", "b.rs"]);
        assert_eq!(index.skipped.too_large, ["big.rs"]);
        assert_eq!(index.skipped.over_count, 1, "c.rs is beyond the count");
    }

    #[test]
    fn a_persisted_index_loads_back_and_another_format_is_rebuilt() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        write(dir.path(), "src/lib.rs", "pub fn run() {}\n");
        let mut index = RepoIndex::default();
        refresh(&mut index, dir.path(), Limits::default());
        let file = dir.path().join("cache/index.bin");
        index.save(&file).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(RepoIndex::load(&file).as_ref(), Some(&index));

        let mut stale = index.clone();
        stale.format = INDEX_FORMAT + 1;
        stale.save(&file).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(RepoIndex::load(&file), None);
        std::fs::write(&file, b"garbage").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(RepoIndex::load(&file), None);
    }
}
