//! Staging an archive for install: extract into a private folder under the
//! cache dir, validate, and hand back a package that can be moved into
//! place only if its digest is unchanged.
//!
//! The staging folder is a temp dir: if anything fails, or the staged
//! package is dropped without being persisted, it is removed, so nothing
//! half-extracted is ever left behind.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use evoflux_core::Diagnostic;
use evoflux_core::hash::ContentHash;

use crate::archive::{ExtractError, ExtractLimits, extract_archive};
use crate::inspect::{PluginInspection, inspect};
use crate::pack::{ExcludedEntry, PackageCopy, copy_plan};
use crate::scope::{Scope, ScopedDiagnostic};
use crate::skills::SkillValidator;
use crate::tree::{LeftOutLink, PackageTree};

/// `{CACHE_DIR}/agent-plugins/staging`.
pub fn staging_dir(cache_dir: &Path) -> PathBuf {
    cache_dir.join("agent-plugins").join("staging")
}

#[derive(Debug, thiserror::Error)]
pub enum StageError {
    #[error(transparent)]
    Extract(#[from] ExtractError),
    #[error("the archive does not hold a valid plugin")]
    Invalid { diagnostics: Vec<ScopedDiagnostic> },
    #[error("the package holds symlinks; installed plugins may contain only files and folders")]
    Symlink,
    #[error("package changed while it was being staged")]
    Changed,
    /// What the copy leaves out could not be decided (`.evopluginignore`
    /// cannot be read or leaves out `plugin.json`).
    #[error(transparent)]
    Select(crate::pack::PackError),
    /// Staging failed on `path`, the file or folder the error concerns.
    #[error("cannot stage the package: `{}`: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
}

impl StageError {
    pub const fn code(&self) -> &'static str {
        match self {
            StageError::Extract(e) => e.code(),
            StageError::Invalid { .. } => "plugin/stage-invalid-package",
            StageError::Symlink => "plugin/archive-symlink",
            StageError::Changed => "plugin/stage-changed",
            StageError::Select(e) => e.code(),
            StageError::Io { .. } => "plugin/stage-io",
        }
    }

    /// Wraps an IO error with the path it concerns.
    pub fn io(path: &Path) -> impl FnOnce(io::Error) -> StageError + '_ {
        move |source| StageError::Io {
            path: path.to_path_buf(),
            source,
        }
    }

    pub fn to_diagnostic(&self) -> Diagnostic {
        let d = Diagnostic::error(self.code(), self.to_string());
        match self {
            StageError::Io { path, .. } => d.with_file(path),
            StageError::Select(crate::pack::PackError::Io { path, .. }) => d.with_file(path),
            StageError::Extract(_)
            | StageError::Invalid { .. }
            | StageError::Symlink
            | StageError::Changed
            | StageError::Select(_) => d,
        }
    }
}

/// A validated package in the staging area.
#[derive(Debug)]
pub struct StagedPackage {
    temp: tempfile::TempDir,
    inspection: PluginInspection,
    /// Links of a source folder the copy left out (see
    /// [`crate::tree::LeftOutLink`]); an archive has none.
    left_out: Vec<LeftOutLink>,
    /// What the copy of a source folder left out by the packing rule
    /// (`.env`, `.evopluginignore`); an archive was packed by it already.
    excluded: Vec<ExcludedEntry>,
}

impl StagedPackage {
    /// The staged plugin root.
    pub fn root(&self) -> &Path {
        &self.inspection.root
    }

    pub fn inspection(&self) -> &PluginInspection {
        &self.inspection
    }

    /// The links the copy left out, each with its warning.
    pub fn left_out(&self) -> &[LeftOutLink] {
        &self.left_out
    }

    /// What the copy left out by the packing rule, as `pack` lists it.
    pub fn excluded(&self) -> &[ExcludedEntry] {
        &self.excluded
    }

    /// The digest recorded when the package was staged.
    pub fn digest(&self) -> Option<&ContentHash> {
        self.inspection.content_sha256.as_ref()
    }

    /// Moves the package to `dest` (which must not exist, on the same file
    /// system as the cache dir) after re-checking its digest. The staging
    /// folder is removed either way.
    pub fn persist(
        self,
        dest: &Path,
        validator: &dyn SkillValidator,
    ) -> Result<PluginInspection, StageError> {
        let again = inspect(self.root(), validator);
        if again.content_sha256.is_none() || again.content_sha256 != self.inspection.content_sha256
        {
            return Err(StageError::Changed);
        }
        if fs::symlink_metadata(dest).is_ok() {
            return Err(StageError::Io {
                path: dest.to_path_buf(),
                source: io::Error::new(io::ErrorKind::AlreadyExists, "it already exists"),
            });
        }
        let parent = dest.parent().unwrap_or(dest);
        fs::create_dir_all(parent).map_err(StageError::io(parent))?;
        match fs::rename(self.root(), dest) {
            Ok(()) => {}
            // The cache and data dirs may be different file systems: copy
            // next to the destination, then rename there, so `dest` still
            // appears whole or not at all.
            Err(e) if e.kind() == io::ErrorKind::CrossesDevices => {
                let incoming = tempfile::Builder::new()
                    .prefix(".incoming-")
                    .tempdir_in(parent)
                    .map_err(StageError::io(parent))?;
                let copy = incoming.path().join("package");
                match again.tree.as_ref() {
                    Some(tree) => copy_files(tree, &copy)?,
                    None => return Err(StageError::Changed),
                }
                fs::rename(&copy, dest).map_err(StageError::io(dest))?;
            }
            Err(e) => return Err(StageError::io(dest)(e)),
        }
        drop(self.temp);
        Ok(inspect(dest, validator))
    }
}

/// Extracts `archive` into a fresh folder under [`staging_dir`] and
/// validates it as a plugin with no symlinks.
pub fn stage_archive(
    archive: &Path,
    cache_dir: &Path,
    limits: &ExtractLimits,
    validator: &dyn SkillValidator,
) -> Result<StagedPackage, StageError> {
    let staging = staging_dir(cache_dir);
    fs::create_dir_all(&staging).map_err(StageError::io(&staging))?;
    let temp = tempfile::Builder::new()
        .prefix("install-")
        .tempdir_in(&staging)
        .map_err(StageError::io(&staging))?;
    let root = temp.path().join("package");
    extract_archive(archive, &root, limits)?;
    let inspection = inspect(&root, validator);
    if !inspection.valid || inspection.content_sha256.is_none() {
        return Err(StageError::Invalid {
            diagnostics: inspection.diagnostics,
        });
    }
    if inspection.tree.as_ref().is_some_and(|t| t.has_symlinks()) {
        return Err(StageError::Symlink);
    }
    Ok(StagedPackage {
        temp,
        inspection,
        left_out: Vec::new(),
        excluded: Vec::new(),
    })
}

/// Inspects an `.evoplugin`/`.zip` archive as an install would see it:
/// extracted with the install's `limits` into a private folder under
/// [`staging_dir`], inspected there, and removed. The inspection names the
/// archive, not that folder: its root is `archive` and each path inside
/// the package reads `<archive>/<entry>`. Nothing is installed or run.
pub fn inspect_archive(
    archive: &Path,
    cache_dir: &Path,
    limits: &ExtractLimits,
    validator: &dyn SkillValidator,
) -> PluginInspection {
    let refused = |e: StageError| {
        PluginInspection::refused(
            archive,
            Diagnostic::error(e.code(), e.to_string()).with_file(archive),
        )
    };
    let staging = staging_dir(cache_dir);
    if let Err(e) = fs::create_dir_all(&staging) {
        return refused(StageError::io(&staging)(e));
    }
    let temp = match tempfile::Builder::new()
        .prefix("inspect-")
        .tempdir_in(&staging)
    {
        Ok(t) => t,
        Err(e) => return refused(StageError::io(&staging)(e)),
    };
    let root = temp.path().join("package");
    if let Err(e) = extract_archive(archive, &root, limits) {
        return refused(StageError::Extract(e));
    }
    let mut inspection = inspect(&root, validator);
    if inspection.tree.as_ref().is_some_and(|t| t.has_symlinks()) {
        let e = StageError::Symlink;
        inspection.valid = false;
        inspection.diagnostics.push(ScopedDiagnostic::new(
            Scope::Package,
            Diagnostic::error(e.code(), e.to_string()).with_file(archive),
        ));
    }
    // Paths into the staging folder, which is removed on return, are
    // shown as paths inside the archive.
    let staged_root = inspection.root.clone();
    let in_archive = |p: &Path| match p.strip_prefix(&staged_root) {
        Ok(rel) => archive.join(rel),
        Err(_) => p.to_path_buf(),
    };
    for skill in &mut inspection.skills {
        skill.path = in_archive(&skill.path);
    }
    for d in &mut inspection.diagnostics {
        if let Some(file) = &d.diagnostic.locator.file {
            d.diagnostic.locator.file = Some(in_archive(file));
        }
    }
    inspection.root = archive.to_path_buf();
    inspection.tree = None;
    inspection
}

/// Copies a valid plugin folder into a fresh folder under [`staging_dir`]
/// and checks that the copy has the digest of the source, so a package
/// edited while it is copied is refused instead of installed half-old.
/// The copy holds what `pack` would pack ([`copy_plan`]): no `.env`
/// files, nothing `.evopluginignore` names, and only files: a link inside
/// the root to a file is copied as that file, and other links are left
/// out (and reported), so only the components that read through them are
/// unavailable.
pub fn stage_directory(
    source: &Path,
    cache_dir: &Path,
    validator: &dyn SkillValidator,
) -> Result<StagedPackage, StageError> {
    let original = inspect(source, validator);
    // A digest exists only for a complete walk.
    let (true, Some(_), Some(tree)) = (
        original.valid,
        original.content_sha256.as_ref(),
        original.tree.as_ref(),
    ) else {
        return Err(StageError::Invalid {
            diagnostics: original.diagnostics,
        });
    };
    let PackageCopy {
        tree: plan,
        excluded,
        left_out,
    } = copy_plan(tree).map_err(StageError::Select)?;
    // What the copy must hold, read through the links it turns into files.
    let expected = match plan.digest() {
        Ok(d) => d,
        Err(_) => return Err(StageError::Changed),
    };
    let staging = staging_dir(cache_dir);
    fs::create_dir_all(&staging).map_err(StageError::io(&staging))?;
    let temp = tempfile::Builder::new()
        .prefix("install-")
        .tempdir_in(&staging)
        .map_err(StageError::io(&staging))?;
    let root = temp.path().join("package");
    copy_files(&plan, &root)?;
    let inspection = inspect(&root, validator);
    if inspection.content_sha256.as_ref() != Some(&expected) {
        return Err(StageError::Changed);
    }
    Ok(StagedPackage {
        temp,
        inspection,
        left_out,
        excluded,
    })
}

/// Copies the regular files of `tree` to `dest` (created), with modes
/// normalized to 0755 (any exec bit) or 0644.
fn copy_files(tree: &PackageTree, dest: &Path) -> Result<(), StageError> {
    fs::create_dir_all(dest).map_err(StageError::io(dest))?;
    for (rel, executable) in tree.files() {
        let to = dest.join(rel);
        if let Some(parent) = to.parent() {
            fs::create_dir_all(parent).map_err(StageError::io(parent))?;
        }
        let from = tree.root.join(rel);
        // The error names the source when it cannot be read, else the copy.
        fs::copy(&from, &to).map_err(|e| match fs::metadata(&from) {
            Ok(_) => StageError::io(&to)(e),
            Err(_) => StageError::io(&from)(e),
        })?;
        crate::tree::set_file_mode(&to, executable).map_err(StageError::io(&to))?;
    }
    Ok(())
}
