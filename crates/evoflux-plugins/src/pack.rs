//! Packing a plugin folder into a deterministic `.evoplugin` ZIP.
//!
//! The same tree always yields the same bytes: entries are the package's
//! regular files sorted by path, every entry has the fixed timestamp
//! 1980-01-01 00:00:00, mode 0755 (any exec bit) or 0644, Unix as the
//! creating system, DEFLATE level 9, and no folder entries or extra fields.
//! Caches are skipped exactly as the digest skips them. The archive adds no
//! manifest of its own: it wraps the folder and nothing else.

use std::fs;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use evoflux_core::Diagnostic;
use evoflux_core::hash::ContentHash;
use zip::write::SimpleFileOptions;
use zip::{CompressionMethod, DateTime, System, ZipWriter};

use crate::inspect::{PluginInspection, inspect};
use crate::manifest::PluginManifest;
use crate::scope::ScopedDiagnostic;
use crate::skills::SkillValidator;
use crate::tree::normalize_lexically;

/// Where to write the archive and which trees it must never land in.
#[derive(Debug, Clone, Default)]
pub struct PackOptions {
    /// The archive path; [`default_pack_output`] when `None`.
    pub output: Option<PathBuf>,
    /// Trees the output must stay out of, such as the release-bundled
    /// plugin tree.
    pub forbidden_roots: Vec<PathBuf>,
}

/// A written archive.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PackReport {
    pub output: PathBuf,
    /// Number of file entries.
    pub entries: usize,
    /// Digest of the packed tree; extraction yields a tree with this digest.
    pub content_sha256: ContentHash,
}

#[derive(Debug, thiserror::Error)]
pub enum PackError {
    #[error("the package is not valid and cannot be packed")]
    Invalid { diagnostics: Vec<ScopedDiagnostic> },
    #[error("the package contains symlinks (`{path}`); archives hold regular files only")]
    Symlink { path: String },
    #[error("output `{0}` already exists")]
    OutputExists(PathBuf),
    #[error("output `{0}` must be outside the package")]
    OutputInsidePackage(PathBuf),
    #[error("output `{0}` must be outside `{1}`")]
    OutputForbidden(PathBuf, PathBuf),
    /// Packing failed on `path`, the file or folder the error concerns.
    #[error("cannot pack: `{}`: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    /// Writing the archive `path` (a temp file beside the output) failed.
    #[error("cannot write the archive `{}`: {source}", path.display())]
    Zip {
        path: PathBuf,
        #[source]
        source: zip::result::ZipError,
    },
    #[error("package changed while it was being packed")]
    Changed,
}

impl PackError {
    /// The stable diagnostic code.
    pub const fn code(&self) -> &'static str {
        match self {
            PackError::Invalid { .. } => "plugin/pack-invalid-package",
            PackError::Symlink { .. } => "plugin/pack-symlink",
            PackError::OutputExists(_) => "plugin/pack-output-exists",
            PackError::OutputInsidePackage(_) => "plugin/pack-output-inside-package",
            PackError::OutputForbidden(..) => "plugin/pack-output-forbidden",
            PackError::Io { .. } | PackError::Zip { .. } => "plugin/pack-io",
            PackError::Changed => "plugin/pack-changed",
        }
    }

    /// Wraps an IO error with the path it concerns.
    pub fn io(path: &Path) -> impl FnOnce(io::Error) -> PackError + '_ {
        move |source| PackError::Io {
            path: path.to_path_buf(),
            source,
        }
    }

    fn zip(path: &Path) -> impl FnOnce(zip::result::ZipError) -> PackError + '_ {
        move |source| PackError::Zip {
            path: path.to_path_buf(),
            source,
        }
    }

    pub fn to_diagnostic(&self) -> Diagnostic {
        Diagnostic::error(self.code(), self.to_string())
    }
}

/// `<parent>/<name>-<version|unversioned>.evoplugin`, the version reduced to
/// `[A-Za-z0-9._-]` so it is a safe file name.
pub fn default_pack_output(root: &Path, manifest: &PluginManifest) -> PathBuf {
    let version = match &manifest.version {
        Some(v) if !v.is_empty() => v
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                    c
                } else {
                    '-'
                }
            })
            .take(80)
            .collect(),
        _ => "unversioned".to_owned(),
    };
    let parent = root.parent().unwrap_or(root);
    parent.join(format!("{}-{version}.evoplugin", manifest.name))
}

fn absolute(path: &Path) -> io::Result<PathBuf> {
    let abs = std::path::absolute(path)?;
    Ok(normalize_lexically(&abs).unwrap_or(abs))
}

/// Where `path` lands once the links of its existing ancestors are resolved.
fn resolved(path: &Path) -> io::Result<PathBuf> {
    let abs = absolute(path)?;
    Ok(crate::tree::resolve_existing_prefix(&abs).unwrap_or(abs))
}

/// Packs the plugin folder `root`.
pub fn pack(
    root: &Path,
    options: &PackOptions,
    validator: &dyn SkillValidator,
) -> Result<PackReport, PackError> {
    let inspection = inspect(root, validator);
    pack_inspected(&inspection, options, validator)
}

/// Packs a package already inspected (it is re-inspected after writing to
/// prove the tree did not change meanwhile).
pub fn pack_inspected(
    inspection: &PluginInspection,
    options: &PackOptions,
    validator: &dyn SkillValidator,
) -> Result<PackReport, PackError> {
    let (true, Some(manifest), Some(tree), Some(digest)) = (
        inspection.valid,
        &inspection.manifest,
        &inspection.tree,
        &inspection.content_sha256,
    ) else {
        return Err(PackError::Invalid {
            diagnostics: inspection.diagnostics.clone(),
        });
    };
    if let Some(link) = tree
        .entries
        .iter()
        .find(|e| matches!(e.kind, crate::tree::EntryKind::Link { .. }))
    {
        return Err(PackError::Symlink {
            path: link.path.clone(),
        });
    }
    let root = &inspection.root;
    let output = match &options.output {
        Some(o) => o.clone(),
        None => default_pack_output(root, manifest),
    };
    if fs::symlink_metadata(&output).is_ok() {
        return Err(PackError::OutputExists(output));
    }
    let target = resolved(&output).map_err(PackError::io(&output))?;
    if target.starts_with(root) {
        return Err(PackError::OutputInsidePackage(output));
    }
    for forbidden in &options.forbidden_roots {
        let forbidden = resolved(forbidden).map_err(PackError::io(forbidden))?;
        if target.starts_with(&forbidden) {
            return Err(PackError::OutputForbidden(output, forbidden));
        }
    }
    let parent = match target.parent() {
        Some(p) => p.to_path_buf(),
        None => return Err(PackError::OutputInsidePackage(output)),
    };
    fs::create_dir_all(&parent).map_err(PackError::io(&parent))?;

    let mut temp = tempfile::Builder::new()
        .prefix(".evoplugin-")
        .tempfile_in(&parent)
        .map_err(PackError::io(&parent))?;
    let temp_path = temp.path().to_path_buf();
    let mut entries = 0;
    {
        let mut zip = ZipWriter::new(BufWriter::new(temp.as_file_mut()));
        let base = SimpleFileOptions::default()
            .compression_method(CompressionMethod::Deflated)
            .compression_level(Some(9))
            .last_modified_time(DateTime::default())
            .system(System::Unix);
        for (path, executable) in tree.files() {
            let mode = if executable { 0o755 } else { 0o644 };
            zip.start_file(path, base.unix_permissions(mode))
                .map_err(PackError::zip(&temp_path))?;
            let source = root.join(path);
            let mut file = fs::File::open(&source).map_err(PackError::io(&source))?;
            io::copy(&mut file, &mut zip).map_err(PackError::io(&source))?;
            entries += 1;
        }
        let mut writer = zip.finish().map_err(PackError::zip(&temp_path))?;
        writer.flush().map_err(PackError::io(&temp_path))?;
    }
    temp.as_file()
        .sync_all()
        .map_err(PackError::io(&temp_path))?;
    set_shareable_mode(&temp_path).map_err(PackError::io(&temp_path))?;
    let after = inspect(root, validator);
    if after.content_sha256.as_ref() != Some(digest) {
        return Err(PackError::Changed);
    }
    temp.persist_noclobber(&target)
        .map_err(|e| match e.error.kind() {
            io::ErrorKind::AlreadyExists => PackError::OutputExists(output.clone()),
            _ => PackError::io(&target)(e.error),
        })?;
    Ok(PackReport {
        output: target,
        entries,
        content_sha256: digest.clone(),
    })
}

/// Temp files are created 0600; an archive is meant to be shared.
#[cfg(unix)]
fn set_shareable_mode(path: &Path) -> io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(path, fs::Permissions::from_mode(0o644))
}

#[cfg(not(unix))]
fn set_shareable_mode(_path: &Path) -> io::Result<()> {
    Ok(())
}
