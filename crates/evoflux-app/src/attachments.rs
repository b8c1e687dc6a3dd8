//! Files a user attaches to a Work session: written into the session's
//! folder, where the agent's tools read them, under the name the user gave
//! — or the next free `name (2).ext` when one is there already, because
//! nothing in the folder (the user's or the agent's) is ever overwritten.
//!
//! Only a Work session's own folder takes attachments: a Coding session's
//! roots are the user's repositories, which an upload must not write into.

use std::io::Write;
use std::path::{Path, PathBuf};

use evoflux_store::Workspace;

/// The largest attachment accepted.
pub const MAX_ATTACHMENT: usize = 25 * 1024 * 1024;

/// Why a file could not be attached.
#[derive(Debug, thiserror::Error)]
pub enum AttachError {
    #[error(
        "files can be attached to Work sessions only; a Coding session works in your repositories"
    )]
    NotWork,
    #[error("`{name}` is not a file name: {why}")]
    Name { name: String, why: &'static str },
    #[error("the file is {bytes} bytes; attachments are at most {MAX_ATTACHMENT} bytes")]
    TooLarge { bytes: usize },
    #[error("the session's folder `{}` is missing", .0.display())]
    FolderMissing(PathBuf),
    #[error("could not write `{}`: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

impl AttachError {
    /// The stable code of the error.
    pub fn code(&self) -> &'static str {
        match self {
            AttachError::NotWork => "attach/not-work-session",
            AttachError::Name { .. } => "attach/name-invalid",
            AttachError::TooLarge { .. } => "attach/too-large",
            AttachError::FolderMissing(_) => "attach/folder-missing",
            AttachError::Io { .. } => "attach/write-failed",
        }
    }
}

/// A file attached: the name it got and where it is.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Attached {
    /// The file's name in the folder (the one asked for, or the next free
    /// one).
    pub name: String,
    pub path: PathBuf,
    pub bytes: u64,
}

/// Writes `bytes` as `name` into the folder of the Work session whose
/// workspace is `workspace`.
pub fn attach(workspace: &Workspace, name: &str, bytes: &[u8]) -> Result<Attached, AttachError> {
    let folder = match workspace {
        Workspace::Work { folder } => folder,
        Workspace::Coding { .. } => return Err(AttachError::NotWork),
    };
    check_name(name)?;
    if bytes.len() > MAX_ATTACHMENT {
        return Err(AttachError::TooLarge { bytes: bytes.len() });
    }
    if !folder.is_dir() {
        return Err(AttachError::FolderMissing(folder.clone()));
    }
    write_new(folder, name, bytes)
}

/// One path component a user would call a file name.
fn check_name(name: &str) -> Result<(), AttachError> {
    let bad = |why| {
        Err(AttachError::Name {
            name: name.to_owned(),
            why,
        })
    };
    if name.trim().is_empty() {
        return bad("it is empty");
    }
    if name.len() > 255 {
        return bad("it is longer than 255 bytes");
    }
    if name.contains(['/', '\\']) {
        return bad("it names a folder; give the file's name only");
    }
    if name.chars().any(char::is_control) {
        return bad("it holds control characters");
    }
    if name.starts_with('.') {
        return bad("it starts with a dot (a hidden file, or `..`)");
    }
    Ok(())
}

/// `name`, then `stem (2).ext`, `stem (3).ext`, …: the first free one.
fn candidates(name: &str) -> impl Iterator<Item = String> + '_ {
    let (stem, ext) = match name.rfind('.') {
        Some(at) if at > 0 => (&name[..at], &name[at..]),
        _ => (name, ""),
    };
    std::iter::once(name.to_owned()).chain((2..).map(move |n| format!("{stem} ({n}){ext}")))
}

/// Writes into a temporary file, then links it under the first free name:
/// the link fails rather than replace a file that appeared meanwhile.
fn write_new(folder: &Path, name: &str, bytes: &[u8]) -> Result<Attached, AttachError> {
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| AttachError::Io { path, source }
    };
    let mut tmp = tempfile::Builder::new()
        .prefix(".evoflux-attach-")
        .tempfile_in(folder)
        .map_err(io(folder))?;
    tmp.write_all(bytes).map_err(io(tmp.path()))?;
    tmp.as_file().sync_all().map_err(io(tmp.path()))?;
    for candidate in candidates(name).take(1_000) {
        let path = folder.join(&candidate);
        match std::fs::hard_link(tmp.path(), &path) {
            Ok(()) => {
                return Ok(Attached {
                    name: candidate,
                    path,
                    bytes: bytes.len() as u64,
                });
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(io(&path)(e)),
        }
    }
    Err(AttachError::Name {
        name: name.to_owned(),
        why: "a thousand files of that name are there already",
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn work(dir: &Path) -> Workspace {
        Workspace::Work {
            folder: dir.to_path_buf(),
        }
    }

    #[test]
    fn a_file_is_written_under_its_name_and_never_over_another() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("notes.md"), "mine").unwrap();
        let a = attach(&work(dir.path()), "notes.md", b"first upload").unwrap();
        let b = attach(&work(dir.path()), "notes.md", b"second upload").unwrap();
        assert_eq!(a.name, "notes (2).md");
        assert_eq!(b.name, "notes (3).md");
        assert_eq!(
            std::fs::read_to_string(dir.path().join("notes.md")).unwrap(),
            "mine"
        );
        assert_eq!(std::fs::read(&a.path).unwrap(), b"first upload");
        let c = attach(&work(dir.path()), "README", b"x").unwrap();
        assert_eq!(c.name, "README");
        // No temporary file is left behind.
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .filter(|n| n.starts_with('.'))
            .collect();
        assert!(names.is_empty(), "{names:?}");
    }

    #[test]
    fn bad_names_coding_sessions_and_large_files_are_refused_with_their_codes() {
        let dir = tempfile::tempdir().unwrap();
        for name in ["", "../x", "a/b", ".env", "..", "a\u{7}b"] {
            let e = attach(&work(dir.path()), name, b"x").unwrap_err();
            assert_eq!(e.code(), "attach/name-invalid", "{name:?}");
        }
        let coding = Workspace::Coding {
            repositories: vec![dir.path().to_path_buf()],
        };
        assert_eq!(
            attach(&coding, "a.txt", b"x").unwrap_err().code(),
            "attach/not-work-session"
        );
        let big = vec![0u8; MAX_ATTACHMENT + 1];
        assert_eq!(
            attach(&work(dir.path()), "big.bin", &big)
                .unwrap_err()
                .code(),
            "attach/too-large"
        );
        assert_eq!(
            attach(&work(&dir.path().join("gone")), "a.txt", b"x")
                .unwrap_err()
                .code(),
            "attach/folder-missing"
        );
    }
}
