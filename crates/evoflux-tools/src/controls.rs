//! The agent's controls: the files that decide what an agent (evoflux's or
//! another tool's) may do, how it is told to work, and what git runs on
//! the user's machine. One closed list, used by the file tools (which
//! refuse to change them), by the sandbox (which mounts the existing ones
//! read-only) and by the guard that runs after every confined command
//! (which moves away the ones a command created, since a file that does
//! not exist cannot be mounted read-only).
//!
//! A control planted in a workspace runs outside any sandbox later: a
//! `.git/config` with `core.fsmonitor` or `core.hooksPath` runs on the
//! user's next `git status`, a `.mcp.json` starts a server at the next
//! `evoflux mcp list`, an `AGENTS.md` or `CLAUDE.md` makes a prompt
//! injection permanent. Objects, refs, the index and logs below `.git`
//! are not controls, so the agent can still commit.

use std::collections::HashMap;
use std::ffi::OsStr;
use std::os::unix::fs::MetadataExt;
use std::path::{Component, Path, PathBuf};

use crate::sandbox::DeniedFiles;

/// The files that decide what an agent may do and how it is told to work.
/// Closed: each is matched by its typed kind, never by a prefix test
/// scattered through the tools.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Control {
    /// A harness's or editor's control folder: `.evoflux/`, `.agents/`,
    /// `.claude/`, `.opencode/`, `.cursor/` (tools, agents, skills,
    /// config, MCP servers, rules).
    Folder(&'static str),
    /// MCP configuration other tools read: `.mcp.json`,
    /// `.vscode/mcp.json`.
    McpConfig,
    /// An instruction file: `AGENTS.md`, `AGENTS.override.md`,
    /// `CLAUDE.md`, `GEMINI.md`.
    Instructions,
    /// What git runs or reads as configuration.
    Git(GitControl),
}

/// The parts of a git directory that run code or configure what runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GitControl {
    /// The `.git` entry itself (a folder, or a file pointing at one): it
    /// can be neither renamed nor replaced.
    Entry,
    /// `config` (and a worktree's `config.worktree`).
    Config,
    /// `hooks/`.
    Hooks,
    /// `info/` (`attributes` and `exclude`).
    Info,
}

/// The control folders, by name.
const CONTROL_FOLDERS: [&str; 5] = [".evoflux", ".agents", ".claude", ".opencode", ".cursor"];
/// The instruction files, by name, at any depth.
const INSTRUCTION_FILES: [&str; 4] = ["AGENTS.md", "AGENTS.override.md", "CLAUDE.md", "GEMINI.md"];

impl Control {
    /// The control `relative` (a path below a workspace root) belongs to.
    pub fn of(relative: &Path) -> Option<Control> {
        let names: Vec<&OsStr> = relative
            .components()
            .filter_map(|c| match c {
                Component::Normal(n) => Some(n),
                Component::Prefix(_)
                | Component::RootDir
                | Component::CurDir
                | Component::ParentDir => None,
            })
            .collect();
        for (i, name) in names.iter().enumerate() {
            if let Some(folder) = CONTROL_FOLDERS.iter().find(|f| *name == **f) {
                return Some(Control::Folder(folder));
            }
            if *name == ".git" {
                return git_part(&names[i + 1..]).map(Control::Git);
            }
            if *name == ".vscode" && names.get(i + 1).is_some_and(|n| *n == "mcp.json") {
                return Some(Control::McpConfig);
            }
        }
        match names.last() {
            Some(n) if *n == ".mcp.json" => Some(Control::McpConfig),
            Some(n) if INSTRUCTION_FILES.iter().any(|f| n == f) => Some(Control::Instructions),
            _ => None,
        }
    }
}

/// Which control `rest` (the names below a `.git`) is, if any: the entry
/// itself, or `config`, `hooks/`, `info/` of the git directory or of one
/// of its submodules' (`modules/<name>/…`) or worktrees'
/// (`worktrees/<name>/…`).
fn git_part(mut rest: &[&OsStr]) -> Option<GitControl> {
    if rest.is_empty() {
        return Some(GitControl::Entry);
    }
    while rest.len() > 2 && (rest[0] == "modules" || rest[0] == "worktrees") {
        rest = &rest[2..];
    }
    match rest.first() {
        Some(n) if *n == "config" || *n == "config.worktree" => Some(GitControl::Config),
        Some(n) if *n == "hooks" => Some(GitControl::Hooks),
        Some(n) if *n == "info" => Some(GitControl::Info),
        _ => None,
    }
}

impl std::fmt::Display for Control {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Control::Folder(name) => write!(f, "inside the control folder `{name}/`"),
            Control::McpConfig => f.write_str("an MCP configuration file"),
            Control::Instructions => f.write_str("a workspace instruction file"),
            Control::Git(GitControl::Entry) => f.write_str("a git directory"),
            Control::Git(GitControl::Config) => f.write_str("a git configuration file"),
            Control::Git(GitControl::Hooks) => f.write_str("a git hook"),
            Control::Git(GitControl::Info) => f.write_str("git's info folder"),
        }
    }
}

/// Entries visited per workspace root when looking for denied files and
/// controls; a larger tree is searched only this far.
const MAX_SCAN_ENTRIES: usize = 100_000;

/// What a workspace root holds that commands must not change or read.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Found {
    /// Existing controls, each mounted read-only as a whole.
    pub controls: Vec<PathBuf>,
    /// Existing `.git` folders, bound onto themselves so they cannot be
    /// renamed or removed (a mount point cannot be).
    pub git_dirs: Vec<PathBuf>,
    pub denied_files: Vec<PathBuf>,
    pub denied_dirs: Vec<PathBuf>,
}

/// Walks `root` for the agent's controls (at any depth) and denied files.
/// Directories the root's `.gitignore` ignores (build output, installed
/// packages) are not entered, but every entry of a visited directory is
/// matched, ignored ones included, since `.env` is usually ignored.
pub(crate) fn scan(root: &Path, denied: &DeniedFiles) -> Found {
    let mut found = Found::default();
    let ignore = gitignore(root);
    let mut stack = vec![root.to_path_buf()];
    let mut visited = 0usize;
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            visited += 1;
            if visited > MAX_SCAN_ENTRIES {
                tracing::warn!(root = %root.display(), "sandbox scan stopped at {MAX_SCAN_ENTRIES} entries");
                return found;
            }
            let path = entry.path();
            let Ok(relative) = path.strip_prefix(root) else {
                continue;
            };
            // Symlinks are not followed: their targets are outside or
            // already covered by the walk.
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            if denied.is_denied(relative) {
                match kind.is_dir() {
                    true => found.denied_dirs.push(path),
                    false => found.denied_files.push(path),
                }
                continue;
            }
            match Control::of(relative) {
                Some(Control::Git(GitControl::Entry)) if kind.is_dir() => {
                    git_controls(&path, &mut found.controls);
                    found.git_dirs.push(path);
                }
                // The whole folder (or the file) is mounted read-only;
                // nothing inside needs a mount of its own.
                Some(_) => found.controls.push(path),
                None if kind.is_dir() && !ignore.matched(relative, true).is_ignore() => {
                    stack.push(path);
                }
                None => {}
            }
        }
    }
    found
}

/// The controls inside one git directory: its own and those of its
/// submodules and worktrees.
fn git_controls(git_dir: &Path, out: &mut Vec<PathBuf>) {
    let mut stack = vec![git_dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for name in ["config", "config.worktree", "hooks", "info"] {
            let path = dir.join(name);
            if path.symlink_metadata().is_ok() {
                out.push(path);
            }
        }
        for nested in ["modules", "worktrees"] {
            if let Ok(entries) = std::fs::read_dir(dir.join(nested)) {
                stack.extend(
                    entries
                        .flatten()
                        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
                        .map(|e| e.path()),
                );
            }
        }
    }
}

fn gitignore(root: &Path) -> ignore::gitignore::Gitignore {
    let mut builder = ignore::gitignore::GitignoreBuilder::new(root);
    let _ = builder.add(root.join(".gitignore"));
    let _ = builder.add(root.join(".git/info/exclude"));
    builder
        .build()
        .unwrap_or_else(|_| ignore::gitignore::Gitignore::empty())
}

/// The controls of a session's workspace roots as they were when a command
/// started, by identity, so that one it created can be told from one it
/// only moved (a moved control keeps its read-only mount).
#[derive(Debug, Clone)]
pub(crate) struct ControlGuard {
    roots: Vec<PathBuf>,
    before: HashMap<(u64, u64), ()>,
    quarantine: PathBuf,
}

impl ControlGuard {
    /// Records the controls `found` lists (and the git folders) before a
    /// command; what the command creates is moved below `quarantine`.
    pub(crate) fn new(roots: Vec<PathBuf>, found: &[&Found], quarantine: PathBuf) -> ControlGuard {
        let mut before = HashMap::new();
        for f in found {
            for path in f.controls.iter().chain(&f.git_dirs) {
                if let Some(id) = identity(path) {
                    before.insert(id, ());
                }
            }
        }
        ControlGuard {
            roots,
            before,
            quarantine,
        }
    }

    /// After the command: every control that exists now and did not
    /// before is moved to the quarantine folder, and each move is
    /// described for the model and the user. A new git repository
    /// (`git init`, `git clone`, `cargo new`) stays when it holds nothing
    /// that runs: only sample hooks and plain configuration.
    pub(crate) fn check(&self, denied: &DeniedFiles, command: &str) -> Vec<String> {
        let mut notes = Vec::new();
        for root in &self.roots {
            let found = scan(root, denied);
            for path in found.controls.iter().chain(&found.git_dirs) {
                let Some(id) = identity(path) else { continue };
                if self.before.contains_key(&id) {
                    continue;
                }
                // Controls inside a new git folder are judged with it.
                let in_new_repository = found.git_dirs.iter().any(|g| {
                    path != g
                        && path.starts_with(g)
                        && identity(g).is_none_or(|id| !self.before.contains_key(&id))
                });
                if in_new_repository {
                    continue;
                }
                if found.git_dirs.contains(path) && plain_repository(path).is_ok() {
                    continue;
                }
                notes.push(self.quarantine_one(root, path, command));
            }
        }
        notes
    }

    fn quarantine_one(&self, root: &Path, path: &Path, command: &str) -> String {
        let relative = path.strip_prefix(root).unwrap_or(path);
        let shown = relative.display();
        let target = self.quarantine.join(command).join(relative);
        let moved = evoflux_core::private::create_private_dir(&self.quarantine)
            .and_then(|()| match target.parent() {
                Some(parent) => std::fs::create_dir_all(parent),
                None => Ok(()),
            })
            .and_then(|()| move_path(path, &target));
        match moved {
            Ok(()) => {
                tracing::warn!(path = %path.display(), to = %target.display(), "a command created a control; moved away");
                format!(
                    "evoflux: the command created `{shown}`, {}, which commands may not create; \
                     it was moved to {} (restore it yourself if you meant it)",
                    Control::of(relative).map_or_else(|| "a control".into(), |c| c.to_string()),
                    target.display()
                )
            }
            Err(e) => {
                tracing::error!(path = %path.display(), "cannot move a control a command created: {e}");
                format!(
                    "evoflux: the command created `{shown}`, which commands may not create, and \
                     it could not be moved away ({e}); remove it before running git or evoflux here"
                )
            }
        }
    }
}

/// Whether a git folder a command created holds nothing that runs: only
/// sample hooks, an `exclude` file in `info/`, and plain configuration (see
/// [`evoflux_core::git::plain_config`]), in it and in every submodule's or
/// worktree's folder below it.
fn plain_repository(git_dir: &Path) -> Result<(), String> {
    for config in ["config", "config.worktree"] {
        match std::fs::read_to_string(git_dir.join(config)) {
            Ok(text) => evoflux_core::git::plain_config(&text)?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(format!("{config}: {e}")),
        }
    }
    let only = |folder: &str, allowed: &dyn Fn(&OsStr) -> bool| -> Result<(), String> {
        let Ok(entries) = std::fs::read_dir(git_dir.join(folder)) else {
            return Ok(());
        };
        for entry in entries {
            let entry = entry.map_err(|e| e.to_string())?;
            let plain = entry.file_type().is_ok_and(|t| t.is_file());
            if !plain || !allowed(&entry.file_name()) {
                return Err(format!("{folder}/{}", entry.file_name().to_string_lossy()));
            }
        }
        Ok(())
    };
    only("hooks", &|name| {
        Path::new(name).extension().is_some_and(|e| e == "sample")
    })?;
    only("info", &|name| name == "exclude")?;
    for nested in ["modules", "worktrees"] {
        if let Ok(entries) = std::fs::read_dir(git_dir.join(nested)) {
            for entry in entries.flatten() {
                plain_repository(&entry.path())?;
            }
        }
    }
    Ok(())
}

fn identity(path: &Path) -> Option<(u64, u64)> {
    path.symlink_metadata().ok().map(|m| (m.dev(), m.ino()))
}

/// Renames `from` to `to`, copying and removing when they are on
/// different filesystems.
fn move_path(from: &Path, to: &Path) -> std::io::Result<()> {
    match std::fs::rename(from, to) {
        Err(e) if e.kind() == std::io::ErrorKind::CrossesDevices => {
            copy_tree(from, to)?;
            match from.symlink_metadata()?.is_dir() {
                true => std::fs::remove_dir_all(from),
                false => std::fs::remove_file(from),
            }
        }
        other => other,
    }
}

fn copy_tree(from: &Path, to: &Path) -> std::io::Result<()> {
    let meta = from.symlink_metadata()?;
    if meta.file_type().is_symlink() {
        std::os::unix::fs::symlink(std::fs::read_link(from)?, to)
    } else if meta.is_dir() {
        std::fs::create_dir_all(to)?;
        for entry in std::fs::read_dir(from)? {
            let entry = entry?;
            copy_tree(&entry.path(), &to.join(entry.file_name()))?;
        }
        Ok(())
    } else {
        std::fs::copy(from, to).map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_control_name_is_recognised() {
        let cases = [
            (".evoflux/tools/x.toml", Some(Control::Folder(".evoflux"))),
            (
                "a/.agents/skills/s/SKILL.md",
                Some(Control::Folder(".agents")),
            ),
            (".claude/settings.json", Some(Control::Folder(".claude"))),
            (".opencode/x", Some(Control::Folder(".opencode"))),
            (".cursor/mcp.json", Some(Control::Folder(".cursor"))),
            (".vscode/mcp.json", Some(Control::McpConfig)),
            (".vscode/settings.json", None),
            (".mcp.json", Some(Control::McpConfig)),
            ("sub/.mcp.json", Some(Control::McpConfig)),
            ("AGENTS.md", Some(Control::Instructions)),
            ("sub/AGENTS.override.md", Some(Control::Instructions)),
            ("CLAUDE.md", Some(Control::Instructions)),
            ("deep/er/GEMINI.md", Some(Control::Instructions)),
            (".git", Some(Control::Git(GitControl::Entry))),
            ("sub/.git", Some(Control::Git(GitControl::Entry))),
            (".git/config", Some(Control::Git(GitControl::Config))),
            (
                ".git/hooks/pre-commit",
                Some(Control::Git(GitControl::Hooks)),
            ),
            (".git/info/attributes", Some(Control::Git(GitControl::Info))),
            (
                ".git/modules/lib/config",
                Some(Control::Git(GitControl::Config)),
            ),
            (
                ".git/modules/lib/hooks/x",
                Some(Control::Git(GitControl::Hooks)),
            ),
            (
                ".git/worktrees/w/config.worktree",
                Some(Control::Git(GitControl::Config)),
            ),
            (".git/objects/ab/cdef", None),
            (".git/refs/heads/config", None),
            (".git/index", None),
            (".git/logs/HEAD", None),
            ("src/main.rs", None),
            ("README.md", None),
        ];
        for (path, expected) in cases {
            assert_eq!(Control::of(Path::new(path)), expected, "{path}");
        }
    }

    #[test]
    fn scan_finds_controls_and_denied_files_but_skips_ignored_directories() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        for f in [
            ".env",
            "app/.env.local",
            "app/AGENTS.md",
            "app/CLAUDE.md",
            ".mcp.json",
            ".evoflux/tools/x.toml",
            "target/deep/.env",
            "target/AGENTS.md",
            "src/main.rs",
            ".git/hooks/pre-commit",
            ".git/config",
            ".git/objects/x",
        ] {
            let p = root.join(f);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, "x").unwrap();
        }
        std::fs::write(root.join(".gitignore"), "target/\n.env\n").unwrap();
        let denied = DeniedFiles::new(&["**/.env".into(), "**/.env.*".into()]).unwrap();
        let mut found = scan(root, &denied);
        found.controls.sort();
        found.denied_files.sort();
        assert_eq!(
            found.controls,
            [
                root.join(".evoflux"),
                root.join(".git/config"),
                root.join(".git/hooks"),
                root.join(".mcp.json"),
                root.join("app/AGENTS.md"),
                root.join("app/CLAUDE.md"),
            ]
        );
        assert_eq!(found.git_dirs, [root.join(".git")]);
        assert_eq!(
            found.denied_files,
            [root.join(".env"), root.join("app/.env.local")]
        );
    }
}
