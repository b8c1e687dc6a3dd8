//! Writing skill bundles for editors (Settings' bundle editor,
//! `/api/skills`): create a bundle in the user's skill root, replace an
//! editable bundle's files, delete one, and read a bundle's files back.
//!
//! Every change is made in a hidden staging copy beside the bundle, checked
//! whole (SKILL.md valid under the name the bundle is addressed by, every
//! path inside the bundle, the size and entry limits), and only then
//! swapped in with two renames, so a refused or failed edit leaves the
//! bundle exactly as it was. Runtime preferences are never written here:
//! they live in the overlay ([`crate::overlay`]); `modes` changes the
//! bundle's own sidecar default, and only when the edit names it.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use base64::Engine as _;
use evoflux_core::Diagnostics;
use evoflux_core::atomic::{AtomicOptions, write_atomic};
use serde::{Deserialize, Serialize};

use crate::bundle::SkillRecord;
use crate::modes::ModeSet;
use crate::name::BundleName;
use crate::origin::SkillSource;
use crate::resources::normal_components;
use crate::scan::SKILL_FILE;
use crate::sidecar::{SIDECAR_FILE, render_sidecar};
use crate::validate::{ValidationLevel, check_skill_text, is_portable_name};

/// Largest file of a bundle an edit may write (2 MiB).
pub const MAX_EDIT_FILE_BYTES: u64 = 2 * 1024 * 1024;
/// Largest bundle an edit may leave (20 MiB, every file counted).
pub const MAX_BUNDLE_BYTES: u64 = 20 * 1024 * 1024;
/// Most entries (files and folders) an edited bundle may hold.
pub const MAX_BUNDLE_ENTRIES: usize = 2_000;
/// Most files one edit may write.
pub const MAX_FILES_PER_EDIT: usize = 200;

/// How a file's content is carried. Closed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Encoding {
    #[default]
    #[serde(rename = "utf-8")]
    Utf8,
    Base64,
}

/// One file an edit writes, by its POSIX path in the bundle.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileWrite {
    pub path: String,
    pub content: String,
    #[serde(default)]
    pub encoding: Encoding,
}

/// A whole edit of a bundle.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BundleEdit {
    /// The new SKILL.md text.
    pub skill_md: String,
    /// The bundle's own mode default (its sidecar); `None` leaves the
    /// sidecar as it is.
    pub modes: Option<ModeSet>,
    pub files: Vec<FileWrite>,
    /// Files to remove, by path.
    pub deleted_files: Vec<String>,
}

/// One file of a bundle as an editor shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BundleFile {
    pub path: String,
    pub size: u64,
    /// The content, when the file is within [`MAX_EDIT_FILE_BYTES`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    pub encoding: Encoding,
    /// Whether an edit may write it (SKILL.md and the sidecar are edited
    /// through their own fields; a symlink is never written through).
    pub editable: bool,
}

/// Every file of a bundle, bounded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BundleFiles {
    pub files: Vec<BundleFile>,
    /// Whether the listing stopped at [`MAX_BUNDLE_ENTRIES`] or
    /// [`MAX_BUNDLE_BYTES`] of content.
    pub truncated: bool,
}

/// Why an edit was refused (nothing was changed).
#[derive(Debug, thiserror::Error)]
pub enum AuthoringError {
    #[error(
        "`{name}` cannot name a new skill: use lowercase letters, digits and single inner hyphens"
    )]
    NameInvalid { name: String },
    #[error("a skill folder already exists at {}; edit that skill instead", path.display())]
    Exists { path: PathBuf },
    #[error("`{name}` cannot be edited: {reason}")]
    NotEditable { name: String, reason: &'static str },
    #[error("file path `{path}` is not allowed: {why}")]
    PathInvalid { path: String, why: String },
    #[error("`{path}` is not valid base64")]
    Encoding { path: String },
    #[error("`{path}` is not a file of this skill, so it cannot be deleted")]
    DeleteMissing { path: String },
    #[error("{what} is larger than the limit of {limit} bytes")]
    TooLarge { what: String, limit: u64 },
    #[error("the edit writes {count} files; at most {MAX_FILES_PER_EDIT} per edit")]
    TooManyFiles { count: usize },
    #[error("the bundle would hold more than {MAX_BUNDLE_ENTRIES} files and folders")]
    TooManyEntries,
    #[error("SKILL.md is not valid")]
    Invalid { diagnostics: Diagnostics },
    #[error("cannot {action} {}: {source}", path.display())]
    Io {
        action: &'static str,
        path: PathBuf,
        source: io::Error,
    },
}

impl AuthoringError {
    /// The stable code of this refusal.
    pub fn code(&self) -> &'static str {
        match self {
            AuthoringError::NameInvalid { .. } => "skill/name-invalid",
            AuthoringError::Exists { .. } => "skill/exists",
            AuthoringError::NotEditable { .. } => "skill/not-editable",
            AuthoringError::PathInvalid { .. } => "skill/edit-path-invalid",
            AuthoringError::Encoding { .. } => "skill/edit-encoding-invalid",
            AuthoringError::DeleteMissing { .. } => "skill/edit-delete-missing",
            AuthoringError::TooLarge { .. } => "skill/edit-too-large",
            AuthoringError::TooManyFiles { .. } => "skill/edit-too-many-files",
            AuthoringError::TooManyEntries => "skill/edit-too-many-entries",
            AuthoringError::Invalid { .. } => "skill/invalid",
            AuthoringError::Io { .. } => "skill/io",
        }
    }

    /// The problems found in SKILL.md, for a refused invalid edit.
    pub fn diagnostics(&self) -> Option<&Diagnostics> {
        match self {
            AuthoringError::Invalid { diagnostics } => Some(diagnostics),
            AuthoringError::NameInvalid { .. }
            | AuthoringError::Exists { .. }
            | AuthoringError::NotEditable { .. }
            | AuthoringError::PathInvalid { .. }
            | AuthoringError::Encoding { .. }
            | AuthoringError::DeleteMissing { .. }
            | AuthoringError::TooLarge { .. }
            | AuthoringError::TooManyFiles { .. }
            | AuthoringError::TooManyEntries
            | AuthoringError::Io { .. } => None,
        }
    }
}

fn io_err<'a>(
    action: &'static str,
    path: &'a Path,
) -> impl FnOnce(io::Error) -> AuthoringError + 'a {
    move |source| AuthoringError::Io {
        action,
        path: path.to_path_buf(),
        source,
    }
}

/// Why a record's files may not be edited, if they may not: the one rule
/// of every write here and of front ends that check before they act.
pub fn edit_refusal(record: &SkillRecord) -> Option<&'static str> {
    if record.symlinked {
        return Some("its folder is a symlink; edit the files where it points");
    }
    match record.origin.source {
        SkillSource::Bundled { .. } => Some("it ships with evoflux"),
        SkillSource::Admin => Some("it is installed by the administrator"),
        SkillSource::Plugin { .. } => Some("it belongs to a plugin; edit the plugin's package"),
        SkillSource::Project(_) | SkillSource::User(_) | SkillSource::Custom => {
            (!record.editable).then_some("its source does not allow edits")
        }
    }
}

/// The path rules of an edit: a normal relative path inside the bundle
/// that is not SKILL.md or the sidecar (each has its own field).
fn edit_path(rel: &str) -> Result<Vec<String>, AuthoringError> {
    let parts = normal_components(rel).map_err(|e| AuthoringError::PathInvalid {
        path: rel.to_owned(),
        why: e.to_string(),
    })?;
    if parts.len() == 1 && (parts[0] == SKILL_FILE || parts[0] == SIDECAR_FILE) {
        return Err(AuthoringError::PathInvalid {
            path: rel.to_owned(),
            why: format!("{} is edited through its own field", parts[0]),
        });
    }
    Ok(parts)
}

fn decode(file: &FileWrite) -> Result<Vec<u8>, AuthoringError> {
    let bytes = match file.encoding {
        Encoding::Utf8 => file.content.as_bytes().to_vec(),
        Encoding::Base64 => base64::engine::general_purpose::STANDARD
            .decode(file.content.as_bytes())
            .map_err(|_| AuthoringError::Encoding {
                path: file.path.clone(),
            })?,
    };
    if bytes.len() as u64 > MAX_EDIT_FILE_BYTES {
        return Err(AuthoringError::TooLarge {
            what: format!("`{}`", file.path),
            limit: MAX_EDIT_FILE_BYTES,
        });
    }
    Ok(bytes)
}

/// Checks the SKILL.md text of a bundle addressed as `bundle`.
fn check_text(
    text: &str,
    file: &Path,
    bundle: &BundleName,
    level: ValidationLevel,
) -> Result<(), AuthoringError> {
    let check = check_skill_text(text, file, bundle, level);
    if check.is_valid() {
        Ok(())
    } else {
        Err(AuthoringError::Invalid {
            diagnostics: check.diagnostics,
        })
    }
}

/// A hidden sibling of `dir` (discovery skips dot folders).
fn sibling(dir: &Path, tag: &str) -> PathBuf {
    let leaf = dir
        .file_name()
        .map_or_else(|| "skill".into(), |n| n.to_string_lossy().into_owned());
    let nonce = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    dir.with_file_name(format!(".{leaf}.{tag}-{}-{nonce}", std::process::id()))
}

/// Applies the edit's file writes, deletions and sidecar to `dir`.
fn apply(dir: &Path, edit: &BundleEdit) -> Result<(), AuthoringError> {
    if edit.files.len() > MAX_FILES_PER_EDIT {
        return Err(AuthoringError::TooManyFiles {
            count: edit.files.len(),
        });
    }
    for rel in &edit.deleted_files {
        let parts = edit_path(rel)?;
        let path = parts.iter().fold(dir.to_path_buf(), |p, s| p.join(s));
        match fs::symlink_metadata(&path) {
            Ok(m) if m.is_dir() => {
                return Err(AuthoringError::PathInvalid {
                    path: rel.clone(),
                    why: "names a folder; delete its files".into(),
                });
            }
            Ok(_) => fs::remove_file(&path).map_err(io_err("delete", &path))?,
            Err(_) => return Err(AuthoringError::DeleteMissing { path: rel.clone() }),
        }
    }
    for file in &edit.files {
        let parts = edit_path(&file.path)?;
        let bytes = decode(file)?;
        let mut path = dir.to_path_buf();
        for (i, part) in parts.iter().enumerate() {
            path.push(part);
            let last = i + 1 == parts.len();
            match fs::symlink_metadata(&path) {
                Ok(m) if m.file_type().is_symlink() => {
                    return Err(AuthoringError::PathInvalid {
                        path: file.path.clone(),
                        why: "passes through a symlink".into(),
                    });
                }
                Ok(m) if !last && !m.is_dir() => {
                    return Err(AuthoringError::PathInvalid {
                        path: file.path.clone(),
                        why: format!("`{part}` is a file, not a folder"),
                    });
                }
                Ok(m) if last && m.is_dir() => {
                    return Err(AuthoringError::PathInvalid {
                        path: file.path.clone(),
                        why: "names a folder".into(),
                    });
                }
                Ok(_) => {}
                Err(_) if !last => fs::create_dir(&path).map_err(io_err("create", &path))?,
                Err(_) => {}
            }
        }
        write_atomic(&path, &bytes, AtomicOptions::default()).map_err(|e| AuthoringError::Io {
            action: "write",
            path: path.clone(),
            source: io::Error::other(e.to_string()),
        })?;
    }
    write_atomic(
        &dir.join(SKILL_FILE),
        edit.skill_md.as_bytes(),
        AtomicOptions::default(),
    )
    .map_err(|e| AuthoringError::Io {
        action: "write",
        path: dir.join(SKILL_FILE),
        source: io::Error::other(e.to_string()),
    })?;
    if let Some(modes) = edit.modes {
        let path = dir.join(SIDECAR_FILE);
        match render_sidecar(modes) {
            Some(text) => fs::write(&path, text).map_err(io_err("write", &path))?,
            None => match fs::remove_file(&path) {
                Err(e) if e.kind() != io::ErrorKind::NotFound => {
                    return Err(io_err("delete", &path)(e));
                }
                Ok(()) | Err(_) => {}
            },
        }
    }
    check_limits(dir)
}

/// The entry and size limits over the whole tree at `dir`.
fn check_limits(dir: &Path) -> Result<(), AuthoringError> {
    let mut entries = 0usize;
    let mut bytes = 0u64;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in fs::read_dir(&d).map_err(io_err("list", &d))? {
            let entry = entry.map_err(io_err("list", &d))?;
            entries += 1;
            if entries > MAX_BUNDLE_ENTRIES {
                return Err(AuthoringError::TooManyEntries);
            }
            let kind = entry.file_type().map_err(io_err("stat", &entry.path()))?;
            if kind.is_dir() {
                stack.push(entry.path());
            } else if kind.is_file() {
                let size = entry
                    .metadata()
                    .map_err(io_err("stat", &entry.path()))?
                    .len();
                bytes += size;
                if size > MAX_EDIT_FILE_BYTES {
                    return Err(AuthoringError::TooLarge {
                        what: format!("{}", entry.path().display()),
                        limit: MAX_EDIT_FILE_BYTES,
                    });
                }
            }
        }
    }
    if bytes > MAX_BUNDLE_BYTES {
        return Err(AuthoringError::TooLarge {
            what: "the bundle".into(),
            limit: MAX_BUNDLE_BYTES,
        });
    }
    Ok(())
}

/// Copies the tree at `from` to `to` (new), symlinks as symlinks.
fn copy_tree(from: &Path, to: &Path) -> Result<(), AuthoringError> {
    fs::create_dir(to).map_err(io_err("create", to))?;
    for entry in fs::read_dir(from).map_err(io_err("list", from))? {
        let entry = entry.map_err(io_err("list", from))?;
        let (src, dst) = (entry.path(), to.join(entry.file_name()));
        let kind = entry.file_type().map_err(io_err("stat", &src))?;
        if kind.is_dir() {
            copy_tree(&src, &dst)?;
        } else if kind.is_symlink() {
            let target = fs::read_link(&src).map_err(io_err("read", &src))?;
            std::os::unix::fs::symlink(target, &dst).map_err(io_err("copy", &dst))?;
        } else {
            fs::copy(&src, &dst).map_err(io_err("copy", &src))?;
        }
    }
    Ok(())
}

/// Creates the skill `name` in the user's skill root `skills_dir`.
/// Returns the new bundle's folder.
pub fn create_bundle(
    skills_dir: &Path,
    name: &str,
    edit: &BundleEdit,
) -> Result<PathBuf, AuthoringError> {
    let bundle = BundleName::single(name)
        .filter(|_| is_portable_name(name))
        .ok_or_else(|| AuthoringError::NameInvalid {
            name: name.to_owned(),
        })?;
    let dest = skills_dir.join(name);
    if fs::symlink_metadata(&dest).is_ok() {
        return Err(AuthoringError::Exists { path: dest });
    }
    check_text(
        &edit.skill_md,
        &dest.join(SKILL_FILE),
        &bundle,
        ValidationLevel::Strict,
    )?;
    fs::create_dir_all(skills_dir).map_err(io_err("create", skills_dir))?;
    let staging = sibling(&dest, "new");
    fs::create_dir(&staging).map_err(io_err("create", &staging))?;
    let done = apply(&staging, edit)
        .and_then(|()| fs::rename(&staging, &dest).map_err(io_err("move into place", &dest)));
    if done.is_err() {
        let _ = fs::remove_dir_all(&staging);
    }
    done.map(|()| dest)
}

/// Replaces the files of the editable bundle of `record` (staged, checked,
/// swapped).
pub fn replace_bundle(record: &SkillRecord, edit: &BundleEdit) -> Result<(), AuthoringError> {
    if let Some(reason) = edit_refusal(record) {
        return Err(AuthoringError::NotEditable {
            name: record.name.clone(),
            reason,
        });
    }
    check_text(
        &edit.skill_md,
        &record.skill_file,
        &record.bundle,
        record.validation,
    )?;
    let dir = &record.bundle_dir;
    let staging = sibling(dir, "edit");
    let staged = copy_tree(dir, &staging).and_then(|()| apply(&staging, edit));
    if let Err(e) = staged {
        let _ = fs::remove_dir_all(&staging);
        return Err(e);
    }
    let backup = sibling(dir, "old");
    fs::rename(dir, &backup).map_err(io_err("move aside", dir))?;
    if let Err(e) = fs::rename(&staging, dir) {
        let _ = fs::rename(&backup, dir);
        let _ = fs::remove_dir_all(&staging);
        return Err(io_err("move into place", dir)(e));
    }
    let _ = fs::remove_dir_all(&backup);
    Ok(())
}

/// Deletes the editable bundle of `record`. (A front end removes the
/// bundle's overlay record first, so a skill created again later does not
/// inherit its preferences.)
pub fn delete_bundle(record: &SkillRecord) -> Result<(), AuthoringError> {
    if let Some(reason) = edit_refusal(record) {
        return Err(AuthoringError::NotEditable {
            name: record.name.clone(),
            reason,
        });
    }
    let dir = &record.bundle_dir;
    let doomed = sibling(dir, "deleted");
    fs::rename(dir, &doomed).map_err(io_err("delete", dir))?;
    fs::remove_dir_all(&doomed).map_err(io_err("delete", &doomed))
}

/// The files of the bundle of `record` (besides SKILL.md), by path, with
/// the content of each one within the edit limit. A bundled skill's
/// folder is virtual: it has no other files.
pub fn bundle_files(record: &SkillRecord) -> BundleFiles {
    let mut out = BundleFiles {
        files: Vec::new(),
        truncated: false,
    };
    if let SkillSource::Bundled { .. } = record.origin.source {
        return out;
    }
    let editable = edit_refusal(record).is_none();
    let mut budget = MAX_BUNDLE_BYTES;
    let mut stack = vec![(record.bundle_dir.clone(), String::new())];
    while let Some((dir, prefix)) = stack.pop() {
        let Ok(read) = fs::read_dir(&dir) else {
            continue;
        };
        let mut entries: Vec<_> = read.filter_map(Result::ok).collect();
        entries.sort_by_key(|e| e.file_name());
        for entry in entries {
            let Some(name) = entry.file_name().to_str().map(str::to_owned) else {
                continue;
            };
            let rel = if prefix.is_empty() {
                name.clone()
            } else {
                format!("{prefix}/{name}")
            };
            if prefix.is_empty() && name == SKILL_FILE {
                continue;
            }
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            if kind.is_dir() {
                stack.push((entry.path(), rel));
                continue;
            }
            if out.files.len() >= MAX_BUNDLE_ENTRIES {
                out.truncated = true;
                break;
            }
            let size = entry.metadata().map_or(0, |m| m.len());
            let symlink = kind.is_symlink();
            let content = (!symlink && size <= MAX_EDIT_FILE_BYTES && size <= budget)
                .then(|| fs::read(entry.path()).ok())
                .flatten();
            if !symlink && content.is_none() {
                out.truncated = true;
            }
            let (content, encoding) = match content {
                Some(bytes) => {
                    budget = budget.saturating_sub(bytes.len() as u64);
                    match String::from_utf8(bytes) {
                        Ok(text) => (Some(text), Encoding::Utf8),
                        Err(e) => (
                            Some(base64::engine::general_purpose::STANDARD.encode(e.into_bytes())),
                            Encoding::Base64,
                        ),
                    }
                }
                None => (None, Encoding::Utf8),
            };
            out.files.push(BundleFile {
                editable: editable && !symlink && !(prefix.is_empty() && name == SIDECAR_FILE),
                path: rel,
                size,
                content,
                encoding,
            });
        }
    }
    out.files.sort_by(|a, b| a.path.cmp(&b.path));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bundle::{LoadOptions, load_bundle};
    use crate::origin::{CompatDir, SkillOrigin};
    use crate::placeholder::PlaceholderDirs;
    use crate::scan::BundleDir;

    fn skill(name: &str, body: &str) -> String {
        format!("---\nname: {name}\ndescription: Does {name} things.\n---\n{body}\n")
    }

    fn record(root: &Path, name: &str, source: SkillSource) -> SkillRecord {
        let found = BundleDir {
            dir: root.join(name),
            name: BundleName::single(name).unwrap(),
            symlinked: fs::symlink_metadata(root.join(name))
                .is_ok_and(|m| m.file_type().is_symlink()),
        };
        let origin = SkillOrigin::new(source, root.to_path_buf());
        load_bundle(
            &found,
            &origin,
            &LoadOptions::new(PlaceholderDirs::from_config_dir(root)),
        )
    }

    fn edit(md: String) -> BundleEdit {
        BundleEdit {
            skill_md: md,
            ..BundleEdit::default()
        }
    }

    #[test]
    fn create_writes_a_valid_bundle_and_refuses_bad_names_and_conflicts() {
        let t = tempfile::tempdir().unwrap();
        let mut e = edit(skill("notes", "Body"));
        e.modes = Some(ModeSet::WORK);
        e.files.push(FileWrite {
            path: "references/a.md".into(),
            content: "A".into(),
            encoding: Encoding::Utf8,
        });
        let dir = create_bundle(t.path(), "notes", &e).unwrap();
        assert_eq!(
            fs::read_to_string(dir.join("references/a.md")).unwrap(),
            "A"
        );
        assert!(dir.join(SIDECAR_FILE).is_file());
        let r = record(t.path(), "notes", SkillSource::User(CompatDir::Evoflux));
        assert!(r.valid);
        assert_eq!(r.defaults.modes, ModeSet::WORK);

        let err = create_bundle(t.path(), "notes", &e).unwrap_err();
        assert_eq!(err.code(), "skill/exists");
        let err = create_bundle(t.path(), "Notes", &edit(skill("Notes", "x"))).unwrap_err();
        assert_eq!(err.code(), "skill/name-invalid");
        // The front matter name must agree with the folder.
        let err = create_bundle(t.path(), "other", &edit(skill("notes", "x"))).unwrap_err();
        assert_eq!(err.code(), "skill/invalid");
        assert!(!t.path().join("other").exists());
        // Nothing staged is left behind.
        let names: Vec<_> = fs::read_dir(t.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from("notes")]);
    }

    #[test]
    fn edits_refuse_traversal_control_files_and_oversized_content() {
        let t = tempfile::tempdir().unwrap();
        for (path, code) in [
            ("../escape.md", "skill/edit-path-invalid"),
            ("/abs.md", "skill/edit-path-invalid"),
            ("SKILL.md", "skill/edit-path-invalid"),
            (".evoflux.json", "skill/edit-path-invalid"),
        ] {
            let mut e = edit(skill("x", "b"));
            e.files.push(FileWrite {
                path: path.into(),
                content: "z".into(),
                encoding: Encoding::Utf8,
            });
            assert_eq!(
                create_bundle(t.path(), "x", &e).unwrap_err().code(),
                code,
                "{path}"
            );
        }
        let mut e = edit(skill("x", "b"));
        e.files.push(FileWrite {
            path: "big.bin".into(),
            content: "a".repeat(MAX_EDIT_FILE_BYTES as usize + 1),
            encoding: Encoding::Utf8,
        });
        assert_eq!(
            create_bundle(t.path(), "x", &e).unwrap_err().code(),
            "skill/edit-too-large"
        );
        let mut e = edit(skill("x", "b"));
        e.files.push(FileWrite {
            path: "b.bin".into(),
            content: "!!!".into(),
            encoding: Encoding::Base64,
        });
        assert_eq!(
            create_bundle(t.path(), "x", &e).unwrap_err().code(),
            "skill/edit-encoding-invalid"
        );
        assert!(!t.path().join("x").exists());
    }

    #[test]
    fn replace_swaps_the_whole_bundle_or_nothing() {
        let t = tempfile::tempdir().unwrap();
        let mut e = edit(skill("notes", "v1"));
        e.modes = Some(ModeSet::CODING);
        e.files.push(FileWrite {
            path: "keep.md".into(),
            content: "keep".into(),
            encoding: Encoding::Utf8,
        });
        e.files.push(FileWrite {
            path: "gone.md".into(),
            content: "gone".into(),
            encoding: Encoding::Utf8,
        });
        create_bundle(t.path(), "notes", &e).unwrap();
        let r = record(t.path(), "notes", SkillSource::User(CompatDir::Evoflux));

        // An invalid SKILL.md changes nothing.
        let mut bad = edit("no front matter".into());
        bad.deleted_files.push("gone.md".into());
        assert_eq!(
            replace_bundle(&r, &bad).unwrap_err().code(),
            "skill/invalid"
        );
        assert!(t.path().join("notes/gone.md").is_file());
        // A deletion of a missing file changes nothing either.
        let mut missing = edit(skill("notes", "v2"));
        missing.deleted_files.push("nope.md".into());
        assert_eq!(
            replace_bundle(&r, &missing).unwrap_err().code(),
            "skill/edit-delete-missing"
        );
        assert!(
            fs::read_to_string(t.path().join("notes/SKILL.md"))
                .unwrap()
                .contains("v1")
        );

        let mut good = edit(skill("notes", "v2"));
        good.deleted_files.push("gone.md".into());
        good.files.push(FileWrite {
            path: "bin/data".into(),
            content: base64::engine::general_purpose::STANDARD.encode([0u8, 159, 146, 150]),
            encoding: Encoding::Base64,
        });
        replace_bundle(&r, &good).unwrap();
        let dir = t.path().join("notes");
        assert!(
            fs::read_to_string(dir.join("SKILL.md"))
                .unwrap()
                .contains("v2")
        );
        assert!(!dir.join("gone.md").exists());
        assert_eq!(fs::read_to_string(dir.join("keep.md")).unwrap(), "keep");
        assert_eq!(
            fs::read(dir.join("bin/data")).unwrap(),
            vec![0u8, 159, 146, 150]
        );
        // `modes` omitted: the sidecar is untouched.
        assert!(dir.join(SIDECAR_FILE).is_file());

        let files = bundle_files(&record(
            t.path(),
            "notes",
            SkillSource::User(CompatDir::Evoflux),
        ));
        let paths: Vec<_> = files.files.iter().map(|f| f.path.as_str()).collect();
        assert_eq!(paths, [".evoflux.json", "bin/data", "keep.md"]);
        assert_eq!(files.files[1].encoding, Encoding::Base64);
        assert!(!files.files[0].editable && files.files[2].editable);
        let names: Vec<_> = fs::read_dir(t.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from("notes")]);
    }

    #[test]
    fn bundles_that_belong_to_someone_else_are_never_written() {
        let t = tempfile::tempdir().unwrap();
        create_bundle(t.path(), "notes", &edit(skill("notes", "v1"))).unwrap();
        for source in [
            SkillSource::Admin,
            SkillSource::Plugin {
                installation_id: "p1".into(),
            },
        ] {
            let r = record(t.path(), "notes", source);
            assert_eq!(
                replace_bundle(&r, &edit(skill("notes", "v2")))
                    .unwrap_err()
                    .code(),
                "skill/not-editable"
            );
            assert_eq!(delete_bundle(&r).unwrap_err().code(), "skill/not-editable");
        }
        std::os::unix::fs::symlink(t.path().join("notes"), t.path().join("linked")).unwrap();
        let r = record(t.path(), "linked", SkillSource::User(CompatDir::Evoflux));
        assert!(r.symlinked);
        assert_eq!(delete_bundle(&r).unwrap_err().code(), "skill/not-editable");
        assert!(t.path().join("notes/SKILL.md").is_file());

        let r = record(t.path(), "notes", SkillSource::User(CompatDir::Evoflux));
        delete_bundle(&r).unwrap();
        assert!(!t.path().join("notes").exists());
    }
}
