//! The confinement every command of a session runs under: `shell`,
//! command-backed tools and the user's `!command`, as `sandbox.toml` says.
//!
//! On Linux the command runs inside `bubblewrap` (`bwrap`, the Debian
//! package `bubblewrap`): a new PID namespace with its own `/proc`, so
//! `/proc/$PPID/environ` holds nothing of evoflux's (no API key), killed
//! with evoflux (`--die-with-parent`), the filesystem read-only except the
//! session's workspace roots (minus the agent's own controls, see
//! [`Control`]), the policy's writable roots and a private `/tmp`;
//! evoflux's own config, data and cache directories (the session store,
//! plugin credentials) replaced by empty ones; denied files (`.env`)
//! replaced by `/dev/null`; no network when the policy denies it. A Work
//! session sees only the system directories and its workspace.
//!
//! The sandbox is never silently skipped: when `bwrap` is missing or cannot
//! create namespaces, a confined command fails with
//! [`ToolError::SandboxUnavailable`], naming the package, unless the user
//! chose `filesystem = "full-access"` (and allows the network).
//!
//! A control folder that does not exist yet is not mounted (bubblewrap can
//! only protect what exists), so a command could create one; the file
//! tools refuse that, and the next compile reads it only from a repository
//! the user trusts.

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Duration;

use evoflux_core::child_env::{OWN_PREFIX, is_inherited};
use evoflux_graph::sandbox::{FilesystemPolicy, NetworkPolicy, SandboxPolicy};
use globset::{Glob, GlobSet, GlobSetBuilder};

use crate::error::ToolError;
use crate::tracked::SpawnSpec;
use crate::workspace::Control;

/// How much of the machine a session's commands see.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Confinement {
    /// Coding: the whole filesystem readable (minus evoflux's own
    /// directories and denied files), the repositories writable.
    Repositories,
    /// Work: only the system directories and the session workspace.
    SessionWorkspace,
}

/// The files neither file tools nor commands may read: the policy's
/// `denied_patterns`, matched against paths relative to a workspace root.
/// One matcher for both, so `read` and `cat` agree.
#[derive(Debug, Clone, Default)]
pub struct DeniedFiles {
    set: GlobSet,
    patterns: Vec<String>,
}

impl DeniedFiles {
    /// Compiles `patterns` (already checked by the graph; an invalid one
    /// is reported here too rather than dropped).
    pub fn new(patterns: &[String]) -> Result<DeniedFiles, ToolError> {
        let mut builder = GlobSetBuilder::new();
        for p in patterns {
            let glob = Glob::new(p).map_err(|e| ToolError::SandboxUnavailable {
                reason: format!("denied pattern `{p}` is not a glob: {e}"),
            })?;
            builder.add(glob);
        }
        let set = builder.build().map_err(|e| ToolError::SandboxUnavailable {
            reason: format!("denied patterns cannot be compiled: {e}"),
        })?;
        Ok(DeniedFiles {
            set,
            patterns: patterns.to_vec(),
        })
    }

    /// Whether `relative` (below a workspace root) is denied.
    pub fn is_denied(&self, relative: &Path) -> bool {
        !self.patterns.is_empty() && self.set.is_match(relative)
    }

    pub fn patterns(&self) -> &[String] {
        &self.patterns
    }
}

/// The sandbox of one session's commands.
#[derive(Debug)]
pub struct CommandSandbox {
    policy: SandboxPolicy,
    confinement: Confinement,
    roots: Vec<PathBuf>,
    hidden: Vec<PathBuf>,
    denied: DeniedFiles,
}

/// The `bwrap` program of a command runtime: found on the `PATH` commands
/// get and checked once per runtime, not once per session.
#[derive(Debug, Default)]
pub(crate) struct Bubblewrap(OnceLock<Result<PathBuf, String>>);

impl Bubblewrap {
    fn program(&self, parent_env: &[(OsString, OsString)]) -> Result<PathBuf, ToolError> {
        self.0
            .get_or_init(|| find_bwrap(crate::env::lookup(parent_env, "PATH")))
            .clone()
            .map_err(|reason| ToolError::SandboxUnavailable { reason })
    }
}

/// Directories a Work session's commands can read: the system's programs,
/// libraries and configuration, nothing of any user's.
const SYSTEM_DIRS: [&str; 9] = [
    "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt",
];

/// Entries visited per workspace root when looking for denied files and
/// nested controls; a larger tree is searched only this far.
const MAX_SCAN_ENTRIES: usize = 100_000;

impl CommandSandbox {
    /// `roots`: the session's workspace roots. `hidden`: evoflux's own
    /// directories. `bwrap` is looked for on the `PATH` commands get.
    pub fn new(
        policy: SandboxPolicy,
        confinement: Confinement,
        roots: Vec<PathBuf>,
        hidden: Vec<PathBuf>,
    ) -> Result<CommandSandbox, ToolError> {
        let denied = DeniedFiles::new(&policy.denied_patterns)?;
        Ok(CommandSandbox {
            policy,
            confinement,
            roots,
            hidden,
            denied,
        })
    }

    pub fn denied(&self) -> &DeniedFiles {
        &self.denied
    }

    /// The most one command's journal keeps, in bytes.
    pub(crate) fn journal_cap(&self) -> u64 {
        self.policy.journal_cap_bytes()
    }

    /// Whether commands run unconfined (the user chose full access and
    /// allows the network).
    fn unconfined(&self) -> bool {
        self.policy.filesystem == FilesystemPolicy::FullAccess
            && self.policy.network == NetworkPolicy::Allow
    }

    /// Rewrites a command to run under this sandbox: the policy's timeout
    /// ceiling and environment allowlist always; bubblewrap unless the
    /// user chose full, networked access. `tmp` is the session's private
    /// temporary directory (the command's `/tmp`).
    pub(crate) fn wrap(
        &self,
        mut spec: SpawnSpec,
        parent_env: &[(OsString, OsString)],
        bwrap: &Bubblewrap,
        tmp: &Path,
    ) -> Result<SpawnSpec, ToolError> {
        spec.timeout = spec
            .timeout
            .min(Duration::from_secs(self.policy.max_timeout_seconds));
        spec.env = self.environment(spec.env, parent_env);
        if self.unconfined() || spec.outside_sandbox {
            return Ok(spec);
        }
        let bwrap = bwrap.program(parent_env)?;
        evoflux_core::private::create_private_dir(tmp).map_err(|source| ToolError::Io {
            action: "create the sandbox's temporary directory",
            path: tmp.display().to_string(),
            source,
        })?;
        spec.env.retain(|(k, _)| k != "TMPDIR");
        spec.env.push(("TMPDIR".into(), "/tmp".into()));
        let mut args = self.bwrap_args(tmp);
        args.push("--chdir".into());
        args.push(spec.cwd.clone().into_os_string());
        args.push("--".into());
        args.push(spec.program.into_os_string());
        args.append(&mut spec.args);
        spec.program = bwrap;
        spec.args = args;
        Ok(spec)
    }

    /// The policy's allowlist replaces the default inherited set; names a
    /// command tool declared stay; evoflux's own variables never pass.
    fn environment(
        &self,
        env: Vec<(OsString, OsString)>,
        parent: &[(OsString, OsString)],
    ) -> Vec<(OsString, OsString)> {
        let allowed = |name: &OsStr| {
            name.to_str()
                .is_some_and(|n| self.policy.env_allowlist.iter().any(|a| a == n))
        };
        let mut out: Vec<(OsString, OsString)> = env
            .into_iter()
            .filter(|(name, _)| {
                name == "PATH" || allowed(name) || name.to_str().is_some_and(|n| !is_inherited(n))
            })
            .collect();
        for (name, value) in parent {
            let own = name.to_str().is_none_or(|n| n.starts_with(OWN_PREFIX));
            if !own && allowed(name) && !out.iter().any(|(n, _)| n == name) {
                out.push((name.clone(), value.clone()));
            }
        }
        out
    }

    /// Everything but the command: namespaces, then the filesystem view
    /// from the widest mount to the narrowest (later mounts win).
    fn bwrap_args(&self, tmp: &Path) -> Vec<OsString> {
        let mut a = Args::default();
        a.flags(&[
            "--die-with-parent",
            "--new-session",
            "--unshare-pid",
            "--unshare-ipc",
            "--unshare-uts",
            "--unshare-cgroup-try",
        ]);
        if self.policy.network == NetworkPolicy::Deny {
            a.flags(&["--unshare-net"]);
        }
        let writable = match self.policy.filesystem {
            FilesystemPolicy::FullAccess => {
                // Only the network is confined.
                a.pair("--bind", Path::new("/"), Path::new("/"));
                a.flags(&["--dev", "/dev", "--proc", "/proc"]);
                return a.0;
            }
            FilesystemPolicy::WorkspaceWrite => true,
            FilesystemPolicy::ReadOnly => false,
        };
        match self.confinement {
            Confinement::Repositories => a.pair("--ro-bind", Path::new("/"), Path::new("/")),
            Confinement::SessionWorkspace => {
                for dir in SYSTEM_DIRS {
                    a.pair("--ro-bind-try", Path::new(dir), Path::new(dir));
                }
            }
        }
        a.flags(&["--dev", "/dev", "--proc", "/proc"]);
        if self.confinement == Confinement::Repositories {
            for dir in self.hidden.iter().filter(|d| d.is_dir()) {
                a.one("--tmpfs", dir);
            }
        }
        a.pair("--bind", tmp, Path::new("/tmp"));
        let bind = if writable { "--bind" } else { "--ro-bind" };
        for root in &self.roots {
            a.pair(bind, root, root);
        }
        if writable {
            for root in &self.policy.writable_roots {
                a.pair("--bind-try", root, root);
            }
        }
        for root in &self.roots {
            let found = scan(root, &self.denied);
            if writable {
                for control in &found.controls {
                    a.pair("--ro-bind", control, control);
                }
            }
            for file in &found.denied_files {
                a.pair("--ro-bind", Path::new("/dev/null"), file);
            }
            for dir in &found.denied_dirs {
                a.one("--tmpfs", dir);
                a.one("--remount-ro", dir);
            }
        }
        a.0
    }
}

#[derive(Default)]
struct Args(Vec<OsString>);

impl Args {
    fn flags(&mut self, flags: &[&str]) {
        self.0.extend(flags.iter().map(OsString::from));
    }
    fn one(&mut self, flag: &str, path: &Path) {
        self.0.push(flag.into());
        self.0.push(path.as_os_str().to_owned());
    }
    fn pair(&mut self, flag: &str, from: &Path, to: &Path) {
        self.0.push(flag.into());
        self.0.push(from.as_os_str().to_owned());
        self.0.push(to.as_os_str().to_owned());
    }
}

/// What a workspace root holds that commands must not change or read.
#[derive(Debug, Default, PartialEq, Eq)]
struct Found {
    controls: Vec<PathBuf>,
    denied_files: Vec<PathBuf>,
    denied_dirs: Vec<PathBuf>,
}

/// Walks `root` for the agent's controls (at any depth) and denied files.
/// Directories the root's `.gitignore` ignores (build output, installed
/// packages) are not entered, but every entry of a visited directory is
/// matched, ignored ones included, since `.env` is usually ignored.
fn scan(root: &Path, denied: &DeniedFiles) -> Found {
    let mut found = Found::default();
    let ignore = gitignore(root);
    let hooks = root.join(".git/hooks");
    if hooks.is_dir() {
        found.controls.push(hooks);
    }
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
            if entry.file_name() == ".git" {
                continue;
            }
            let control = Control::of(relative);
            if denied.is_denied(relative) {
                match kind.is_dir() {
                    true => found.denied_dirs.push(path),
                    false => found.denied_files.push(path),
                }
                continue;
            }
            if control.is_some() {
                // The whole folder (or the instruction file) is mounted
                // read-only; nothing inside needs a mount of its own.
                found.controls.push(path);
                continue;
            }
            if kind.is_dir() && !ignore.matched(relative, true).is_ignore() {
                stack.push(path);
            }
        }
    }
    found
}

fn gitignore(root: &Path) -> ignore::gitignore::Gitignore {
    let mut builder = ignore::gitignore::GitignoreBuilder::new(root);
    let _ = builder.add(root.join(".gitignore"));
    let _ = builder.add(root.join(".git/info/exclude"));
    builder
        .build()
        .unwrap_or_else(|_| ignore::gitignore::Gitignore::empty())
}

/// Finds `bwrap` on `path` and checks, once, that it can create the
/// namespaces the sandbox needs here (a container may forbid them).
/// Whether commands can be confined here: the `bwrap` found on `path` (a
/// `PATH` value) when it can create a sandbox, else what to do about it.
/// Runs the same probe a session's first confined command runs.
pub fn probe_bubblewrap(path: Option<&OsStr>) -> Result<PathBuf, String> {
    find_bwrap(path)
}

fn find_bwrap(path: Option<&OsStr>) -> Result<PathBuf, String> {
    const HOW: &str = "commands run in a sandbox through bubblewrap: install the `bubblewrap` \
                       package (Debian and Ubuntu: apt install bubblewrap), or set filesystem = \
                       \"full-access\" in sandbox.toml to run commands unconfined";
    let program = path
        .map(std::env::split_paths)
        .into_iter()
        .flatten()
        .map(|dir| dir.join("bwrap"))
        .find(|p| is_executable(p))
        .ok_or_else(|| format!("bubblewrap (`bwrap`) is not on PATH; {HOW}"))?;
    let probe = std::process::Command::new(&program)
        .args([
            "--ro-bind",
            "/",
            "/",
            "--dev",
            "/dev",
            "--proc",
            "/proc",
            "--unshare-pid",
            "--die-with-parent",
            "true",
        ])
        .env_clear()
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .output();
    match probe {
        Ok(out) if out.status.success() => Ok(program),
        Ok(out) => Err(format!(
            "{} cannot create a sandbox here ({}); {HOW}",
            program.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        )),
        Err(e) => Err(format!("cannot run {}: {e}; {HOW}", program.display())),
    }
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scan_finds_controls_and_denied_files_but_skips_ignored_directories() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        for f in [
            ".env",
            "app/.env.local",
            "app/AGENTS.md",
            ".evoflux/tools/x.toml",
            "target/deep/.env",
            "src/main.rs",
            ".git/hooks/pre-commit",
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
                root.join(".git/hooks"),
                root.join("app/AGENTS.md")
            ]
        );
        assert_eq!(
            found.denied_files,
            [root.join(".env"), root.join("app/.env.local")]
        );
        assert!(denied.is_denied(Path::new("a/b/.env.production")));
        assert!(!denied.is_denied(Path::new("env.md")));
    }

    #[test]
    fn the_allowlist_replaces_the_inherited_set_and_keeps_declared_names() {
        let mut policy = SandboxPolicy::framework_default();
        policy.env_allowlist = vec!["PATH".into(), "LANG".into()];
        let sandbox =
            CommandSandbox::new(policy, Confinement::Repositories, Vec::new(), Vec::new()).unwrap();
        let pairs = |v: &[(&str, &str)]| -> Vec<(OsString, OsString)> {
            v.iter().map(|(a, b)| ((*a).into(), (*b).into())).collect()
        };
        let env = sandbox.environment(
            pairs(&[("PATH", "/bin"), ("HOME", "/h"), ("DEPLOY_TOKEN", "t")]),
            &pairs(&[("LANG", "C"), ("EVOFLUX_X", "1"), ("OPENAI_API_KEY", "k")]),
        );
        let names: Vec<&OsStr> = env.iter().map(|(n, _)| n.as_os_str()).collect();
        assert_eq!(names, ["PATH", "DEPLOY_TOKEN", "LANG"]);
    }

    #[test]
    fn a_missing_bwrap_names_the_package() {
        let tmp = tempfile::tempdir().unwrap();
        let err = find_bwrap(Some(tmp.path().as_os_str())).unwrap_err();
        assert!(err.contains("bubblewrap"), "{err}");
    }
}
