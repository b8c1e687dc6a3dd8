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

use std::collections::{HashMap, HashSet};
use std::ffi::OsStr;
use std::os::unix::fs::MetadataExt;
use std::path::{Component, Path, PathBuf};

use ignore::gitignore::Gitignore;

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
/// Everything in a git directory is one of these except the data git
/// keeps there ([`GIT_DATA`]): a rule that lists what may change rather
/// than what may not, since git reads more files as instructions than
/// any list of them stays complete (`commondir` moves `config` and
/// `hooks/` elsewhere, a rebase's todo list holds `exec` lines).
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
    /// Any other file git keeps beside its data: `commondir`, `modules/`,
    /// `worktrees/`, `rebase-merge/`, `sequencer/`, …
    State,
}

/// What the agent may change in a git directory, so that it can commit,
/// branch, merge and fetch: objects, refs, logs, the index and the files
/// git writes as it goes. Lock files (`*.lock`) too.
const GIT_DATA: [&str; 21] = [
    "objects",
    "refs",
    "logs",
    "index",
    "HEAD",
    "ORIG_HEAD",
    "FETCH_HEAD",
    "MERGE_HEAD",
    "MERGE_MSG",
    "MERGE_MODE",
    "MERGE_RR",
    "AUTO_MERGE",
    "CHERRY_PICK_HEAD",
    "REVERT_HEAD",
    "SQUASH_MSG",
    "TAG_EDITMSG",
    "COMMIT_EDITMSG",
    "packed-refs",
    "description",
    "shallow",
    "rr-cache",
];

/// Whether `name`, an entry of a git directory, is data the agent may
/// change.
fn is_git_data(name: &OsStr) -> bool {
    GIT_DATA.iter().any(|d| name == *d) || Path::new(name).extension().is_some_and(|e| e == "lock")
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
/// itself, its `config`, `hooks/`, `info/`, or any other file git keeps
/// beside its data.
fn git_part(rest: &[&OsStr]) -> Option<GitControl> {
    match rest.first() {
        None => Some(GitControl::Entry),
        Some(n) if is_git_data(n) => None,
        Some(n) if *n == "config" || *n == "config.worktree" => Some(GitControl::Config),
        Some(n) if *n == "hooks" => Some(GitControl::Hooks),
        Some(n) if *n == "info" => Some(GitControl::Info),
        Some(_) => Some(GitControl::State),
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
            Control::Git(GitControl::State) => {
                f.write_str("a file git reads as instructions (only objects, refs, logs and the index may change)")
            }
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
    /// The walk stopped at [`MAX_SCAN_ENTRIES`]: what lies past it is
    /// neither mounted nor checked.
    pub truncated: bool,
}

/// Walks `root` for the agent's controls (at any depth) and denied files.
/// Directories the root's `.gitignore` ignores (build output, installed
/// packages) are not entered, but every entry of a visited directory is
/// matched, ignored ones included, since `.env` is usually ignored.
/// `ignore` is the root's ignore rules ([`gitignore`]), read once before
/// a command so that a command cannot hide what it creates from the scan
/// after it by adding a `.gitignore` line.
pub(crate) fn scan(root: &Path, denied: &DeniedFiles, ignore: &Gitignore) -> Found {
    let mut found = Found::default();
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
                found.truncated = true;
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

/// The controls inside one git directory: every entry but its data.
fn git_controls(git_dir: &Path, out: &mut Vec<PathBuf>) {
    if let Ok(entries) = std::fs::read_dir(git_dir) {
        out.extend(
            entries
                .flatten()
                .filter(|e| !is_git_data(&e.file_name()))
                .map(|e| e.path()),
        );
    }
}

/// The ignore rules of a workspace root.
pub(crate) fn gitignore(root: &Path) -> Gitignore {
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
#[derive(Debug)]
pub(crate) struct ControlGuard {
    /// Each root with its ignore rules as they were before the command.
    roots: Vec<(PathBuf, Gitignore)>,
    /// Every control's path before the command, with what it was then.
    before: HashMap<PathBuf, Before>,
    ids: HashSet<Identity>,
    quarantine: PathBuf,
}

/// A file's device and inode.
type Identity = (u64, u64);

#[derive(Debug, Clone, Copy)]
struct Before {
    id: Identity,
    /// The folder holding it.
    parent: Option<Identity>,
    /// Mounted read-only (not a symlink): a command could not replace it
    /// where it is.
    mounted: bool,
}

impl ControlGuard {
    /// Records the controls `found` lists (and the git folders) before a
    /// command, one [`Found`] per root in `roots`; what the command
    /// creates is moved below `quarantine`.
    pub(crate) fn new(
        roots: Vec<(PathBuf, Gitignore)>,
        found: &[Found],
        quarantine: PathBuf,
    ) -> ControlGuard {
        let mut before = HashMap::new();
        for path in found
            .iter()
            .flat_map(|f| f.controls.iter().chain(&f.git_dirs))
        {
            let Ok(meta) = path.symlink_metadata() else {
                continue;
            };
            before.insert(
                path.clone(),
                Before {
                    id: (meta.dev(), meta.ino()),
                    parent: path.parent().and_then(identity),
                    mounted: !meta.file_type().is_symlink(),
                },
            );
        }
        let ids = before.values().map(|b| b.id).collect();
        ControlGuard {
            roots,
            before,
            ids,
            quarantine,
        }
    }

    /// After the command: every control that exists now and did not
    /// before is moved to the quarantine folder, and each move is
    /// described for the model and the user. A new git repository
    /// (`git init`, `git clone`, `cargo new`) stays when it holds nothing
    /// that runs: only git's data, sample hooks and plain configuration.
    /// A control the user replaced on the host meanwhile (an editor's
    /// save, `git config`) stays: a mounted control cannot be replaced
    /// from inside, so a new file at its path, in the same folder, came
    /// from outside.
    pub(crate) fn check(&self, denied: &DeniedFiles, command: &str) -> Vec<String> {
        let mut notes = Vec::new();
        for (root, ignore) in &self.roots {
            let found = scan(root, denied, ignore);
            if found.truncated {
                notes.push(format!(
                    "evoflux: {} holds more than {MAX_SCAN_ENTRIES} files and folders outside \
                     its ignored folders; controls past them were neither protected nor checked \
                     for this command",
                    root.display()
                ));
            }
            let new = |path: &Path| identity(path).is_some_and(|id| !self.ids.contains(&id));
            let new_repositories: Vec<&PathBuf> =
                found.git_dirs.iter().filter(|g| new(g)).collect();
            for path in found.controls.iter().chain(&found.git_dirs) {
                if !new(path) || self.replaced_on_the_host(path) {
                    continue;
                }
                // Controls inside a new git folder are judged with it.
                let in_new_repository = new_repositories
                    .iter()
                    .any(|g| path != *g && path.starts_with(g));
                if in_new_repository {
                    continue;
                }
                if new_repositories.contains(&path) && plain_repository(path).is_ok() {
                    continue;
                }
                notes.push(self.quarantine_one(root, path, command));
            }
        }
        notes
    }

    /// Whether the control at `path` (of a new identity) replaced a
    /// mounted one in the same folder.
    fn replaced_on_the_host(&self, path: &Path) -> bool {
        self.before.get(path).is_some_and(|b| {
            b.mounted && b.parent.is_some() && path.parent().and_then(identity) == b.parent
        })
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

/// Whether a git folder a command created holds nothing that runs: git's
/// data, sample hooks, an `exclude` file in `info/` and plain
/// configuration (see [`evoflux_core::git::plain_config`]); nothing else
/// (no `commondir`, no submodule's or worktree's folder).
fn plain_repository(git_dir: &Path) -> Result<(), String> {
    let entries = std::fs::read_dir(git_dir).map_err(|e| e.to_string())?;
    for entry in entries {
        let entry = entry.map_err(|e| e.to_string())?;
        let name = entry.file_name();
        let shown = name.to_string_lossy();
        match name.to_str() {
            _ if is_git_data(&name) => {}
            Some("config") => {
                let text = std::fs::read_to_string(entry.path()).map_err(|e| e.to_string())?;
                evoflux_core::git::plain_config(&text).map_err(|e| format!("config: {e}"))?;
            }
            Some("hooks") => only(&entry.path(), "hooks", &|n| {
                Path::new(n).extension().is_some_and(|e| e == "sample")
            })?,
            Some("info") => only(&entry.path(), "info", &|n| n == "exclude")?,
            // `git init`'s template makes an empty `branches/`.
            Some("branches") => only(&entry.path(), "branches", &|_| false)?,
            _ => return Err(format!("`{shown}` is more than git's data")),
        }
    }
    Ok(())
}

/// `Ok` when every entry of `dir` is a plain file `allowed` names.
fn only(dir: &Path, shown: &str, allowed: &dyn Fn(&OsStr) -> bool) -> Result<(), String> {
    for entry in std::fs::read_dir(dir).map_err(|e| e.to_string())? {
        let entry = entry.map_err(|e| e.to_string())?;
        let plain = entry.file_type().is_ok_and(|t| t.is_file());
        if !plain || !allowed(&entry.file_name()) {
            return Err(format!("{shown}/{}", entry.file_name().to_string_lossy()));
        }
    }
    Ok(())
}

fn identity(path: &Path) -> Option<Identity> {
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
                Some(Control::Git(GitControl::State)),
            ),
            (
                ".git/modules/lib/hooks/x",
                Some(Control::Git(GitControl::State)),
            ),
            (
                ".git/worktrees/w/config.worktree",
                Some(Control::Git(GitControl::State)),
            ),
            (".git/commondir", Some(Control::Git(GitControl::State))),
            (
                ".git/rebase-merge/git-rebase-todo",
                Some(Control::Git(GitControl::State)),
            ),
            (".git/index.lock", None),
            (".git/packed-refs", None),
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
        let mut found = scan(root, &denied, &gitignore(root));
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
