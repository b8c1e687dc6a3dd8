//! The confinement every command of a session runs under: `shell`,
//! command-backed tools and the user's `!command`, as `sandbox.toml` says.
//!
//! On Linux the command runs inside `bubblewrap` (`bwrap`, the Debian
//! package `bubblewrap`) with no privilege whoever runs evoflux: every
//! capability dropped (as root bubblewrap keeps them unless told), no new
//! privileges, a user namespace where the kernel gives one, and the
//! seccomp programs of [`crate::seccomp`] (no mount, no namespace, no
//! host Unix socket when the network is denied). A new PID namespace with
//! its own `/proc`, so `/proc/$PPID/environ` holds nothing of evoflux's
//! (no API key), killed with evoflux (`--die-with-parent`); the
//! filesystem read-only except the session's workspace roots (minus the
//! agent's own controls, see [`crate::controls`]), the policy's writable
//! roots and a private `/tmp`; home folders hidden but for the policy's
//! readable roots; evoflux's own config, data and cache directories (the
//! session store, plugin credentials) replaced by empty ones; denied files
//! (`.env`) replaced by `/dev/null`; no network when the policy denies
//! it; the process and open-file limits of [`crate::limits`]. A Work
//! session sees only the system directories and its workspace.
//!
//! The sandbox is never silently skipped: when `bwrap` is missing or cannot
//! create namespaces, a confined command fails with
//! [`ToolError::SandboxUnavailable`], naming the package, unless the user
//! chose `filesystem = "full-access"` (and allows the network).
//!
//! A control that does not exist yet cannot be mounted, so a command
//! could create one: once the command has ended, the guard of
//! [`crate::controls`] moves every such control out of the workspace.

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Duration;

use evoflux_core::child_env::{OWN_PREFIX, is_inherited};
use evoflux_graph::sandbox::{FilesystemPolicy, NetworkPolicy, SandboxPolicy};
use globset::{Glob, GlobSet, GlobSetBuilder};

use crate::controls::{ControlGuard, Found, gitignore, scan};
use crate::error::ToolError;
use crate::limits::{self, Limits};
use crate::seccomp::Filters;
use crate::tracked::SpawnSpec;
use ignore::gitignore::Gitignore;

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
    filters: Filters,
}

/// The descriptors bubblewrap reads the seccomp programs from, in the
/// command's process (0–2 are its standard streams).
const FIRST_FILTER_FD: i32 = 3;

impl Filters {
    /// bubblewrap's `--add-seccomp-fd` arguments for these programs, and
    /// the bytes to hand the command on those descriptors.
    fn bwrap_fds(&self) -> (Vec<OsString>, Vec<crate::tracked::PassedBytes>) {
        let mut args = Vec::new();
        let mut fds = Vec::new();
        for (fd, program) in (FIRST_FILTER_FD..).zip(&self.programs) {
            args.push("--add-seccomp-fd".into());
            args.push(fd.to_string().into());
            fds.push(crate::tracked::PassedBytes {
                child_fd: fd,
                bytes: program.clone(),
            });
        }
        (args, fds)
    }
}

/// A command rewritten to run confined, and what is left to do once it
/// has ended.
#[derive(Debug)]
pub(crate) struct Confined {
    pub spec: SpawnSpec,
    pub after: Option<AfterCommand>,
}

/// Work after a confined command: the controls it created are moved away
/// and its cgroup removed.
#[derive(Debug)]
pub(crate) struct AfterCommand {
    guard: Option<ControlGuard>,
    denied: DeniedFiles,
    cgroup: Option<limits::Cgroup>,
}

impl AfterCommand {
    /// Runs once the command and every process it started are gone
    /// (`command`: its id, naming its quarantine folder). Returns what the
    /// model and the user must be told.
    pub(crate) fn finish(&self, command: &str) -> Vec<String> {
        if let Some(cgroup) = &self.cgroup {
            cgroup.remove();
        }
        match &self.guard {
            Some(guard) => guard.check(&self.denied, command),
            None => Vec::new(),
        }
    }
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
        let filters = Filters::compile(policy.network == NetworkPolicy::Deny)?;
        Ok(CommandSandbox {
            policy,
            confinement,
            roots,
            hidden,
            denied,
            filters,
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
    /// temporary directory (the command's `/tmp`); `quarantine` is where
    /// controls the command creates are moved.
    pub(crate) fn wrap(
        &self,
        mut spec: SpawnSpec,
        parent_env: &[(OsString, OsString)],
        bwrap: &Bubblewrap,
        tmp: &Path,
        quarantine: &Path,
    ) -> Result<Confined, ToolError> {
        // The policy bounds commands; a preview runs until it is stopped
        // or its session closes.
        spec.timeout = match spec.role {
            crate::tracked::Role::Command => spec
                .timeout
                .min(Duration::from_secs(self.policy.max_timeout_seconds)),
            crate::tracked::Role::Preview => spec.timeout,
        };
        spec.env = self.environment(spec.env, parent_env);
        if self.unconfined() || spec.outside_sandbox {
            return Ok(Confined { spec, after: None });
        }
        let bwrap = bwrap.program(parent_env)?;
        evoflux_core::private::create_private_dir(tmp).map_err(|source| ToolError::Io {
            action: "create the sandbox's temporary directory",
            path: tmp.display().to_string(),
            source,
        })?;
        spec.env.retain(|(k, _)| k != "TMPDIR");
        spec.env.push(("TMPDIR".into(), "/tmp".into()));
        let home = crate::env::lookup(parent_env, "HOME").map(PathBuf::from);
        let ignores: Vec<(PathBuf, Gitignore)> = match self.policy.filesystem {
            FilesystemPolicy::FullAccess => Vec::new(),
            FilesystemPolicy::WorkspaceWrite | FilesystemPolicy::ReadOnly => self
                .roots
                .iter()
                .map(|r| (r.clone(), gitignore(r)))
                .collect(),
        };
        let found: Vec<Found> = ignores
            .iter()
            .map(|(root, ignore)| scan(root, &self.denied, ignore))
            .collect();
        let mut args = self.bwrap_args(tmp, home.as_deref(), &found);
        let (filter_args, mut filter_fds) = self.filters.bwrap_fds();
        args.extend(filter_args);
        spec.fds.append(&mut filter_fds);
        args.push("--chdir".into());
        args.push(spec.cwd.clone().into_os_string());
        args.push("--".into());
        let limits = Limits::detect();
        let (nproc, nofile) = limits.clamped(self.policy.max_processes, self.policy.max_open_files);
        let cgroup = match &limits.processes {
            limits::ProcessLimit::Cgroup(base) => Some(
                limits::Cgroup::create(base, self.policy.max_processes).map_err(|source| {
                    ToolError::Io {
                        action: "create the command's pids cgroup",
                        path: base.display().to_string(),
                        source,
                    }
                })?,
            ),
            limits::ProcessLimit::Rlimit | limits::ProcessLimit::Unavailable(_) => None,
        };
        // Without a cgroup, `prlimit` sets both limits inside the user
        // namespace, where the process count is the command's own.
        if let (None, Some(prlimit)) = (&cgroup, &limits.prlimit) {
            args.push(prlimit.clone().into_os_string());
            args.push(format!("--nproc={nproc}").into());
            args.push(format!("--nofile={nofile}").into());
            args.push("--".into());
        }
        args.push(spec.program.into_os_string());
        args.append(&mut spec.args);
        spec.program = bwrap;
        spec.args = args;
        if let Some(cgroup) = &cgroup {
            // The shell joins the cgroup and lowers the open-file limit
            // before it becomes bubblewrap, so no process of the command
            // starts outside either (one program started, not two).
            let mut args: Vec<OsString> = vec![
                "-c".into(),
                "echo $$ > \"$0\" && ulimit -n \"$1\" && shift && exec \"$@\"".into(),
                cgroup.procs().into_os_string(),
                nofile.to_string().into(),
                spec.program.into_os_string(),
            ];
            args.append(&mut spec.args);
            spec.program = PathBuf::from("/bin/sh");
            spec.args = args;
        }
        let guard = (self.policy.filesystem == FilesystemPolicy::WorkspaceWrite)
            .then(|| ControlGuard::new(ignores, &found, quarantine.to_path_buf()));
        Ok(Confined {
            spec,
            after: Some(AfterCommand {
                guard,
                denied: self.denied.clone(),
                cgroup,
            }),
        })
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

    /// Whether commands write only their own user's files, or (evoflux
    /// running as root) a root another user owns.
    fn owner_access(&self) -> OwnerAccess {
        use std::os::unix::fs::MetadataExt;
        let root = rustix::process::geteuid().is_root();
        let others = self
            .roots
            .iter()
            .chain(&self.policy.writable_roots)
            .filter_map(|r| std::fs::metadata(r).ok())
            .any(|m| m.uid() != 0);
        match root && others && self.policy.filesystem == FilesystemPolicy::WorkspaceWrite {
            true => OwnerAccess::Others,
            false => OwnerAccess::Own,
        }
    }

    /// evoflux's own folders that exist, split by when they are hidden:
    /// `first`, those holding a workspace, writable or readable root
    /// (hidden before the roots are mounted, which then show through);
    /// else the rest (hidden after every root, so no root shows them).
    fn hidden_first<'a>(&'a self, first: bool, readable: &[PathBuf]) -> Vec<&'a Path> {
        let inner = self
            .roots
            .iter()
            .chain(&self.policy.writable_roots)
            .chain(readable);
        self.hidden
            .iter()
            .filter(|d| d.is_dir())
            .filter(|d| inner.clone().any(|r| r.starts_with(d)) == first)
            .map(PathBuf::as_path)
            .collect()
    }

    /// Everything but the command: namespaces and privileges, then the
    /// filesystem view from the widest mount to the narrowest (later
    /// mounts win). `found`: what each workspace root holds.
    fn bwrap_args(&self, tmp: &Path, home: Option<&Path>, found: &[Found]) -> Vec<OsString> {
        let mut a = Args::default();
        a.flags(&[
            "--die-with-parent",
            "--new-session",
            // As root, bubblewrap keeps every capability unless told to
            // drop them.
            "--cap-drop",
            "ALL",
            "--unshare-pid",
            "--unshare-ipc",
            "--unshare-uts",
            "--unshare-cgroup-try",
        ]);
        match self.owner_access() {
            // A user namespace where the kernel gives one: even a
            // capability left by mistake would then reach nothing of the
            // host's.
            OwnerAccess::Own => a.flags(&["--unshare-user-try"]),
            // Root working in someone else's files (a container's
            // bind-mounted checkout): root's right to write them stays,
            // in the host's user namespace, where their owner is known.
            // Nothing it reaches is writable but the mounts below.
            OwnerAccess::Others => {
                a.flags(&["--cap-add", "CAP_DAC_OVERRIDE", "--cap-add", "CAP_FOWNER"])
            }
        }
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
        let readable = self.policy.readable_roots_under(home);
        if self.confinement == Confinement::Repositories {
            // Home folders hold keys: only the readable roots of them
            // show (and the workspace, mounted below).
            for dir in ["/home", "/root"]
                .map(Path::new)
                .iter()
                .filter(|d| d.is_dir())
            {
                a.one("--tmpfs", dir);
            }
            // evoflux's own folders go last (below), so that a workspace or
            // readable root holding them shows them not; one that holds a
            // root itself (a replay's checkout) is hidden first instead.
            for dir in self.hidden_first(true, &readable) {
                a.one("--tmpfs", dir);
            }
            // The host's control sockets live in `/run` (systemd's,
            // D-Bus's, the container engines', each user's runtime
            // folder): reaching one is reaching the host. `/run` is
            // empty but for the resolver configuration `/etc/resolv.conf`
            // may point into it.
            for dir in RUNTIME_DIRS
                .map(Path::new)
                .iter()
                .filter(|d| is_real_dir(d))
            {
                a.one("--tmpfs", dir);
            }
            if let Some(resolver) = resolver_in_run() {
                a.pair("--ro-bind", &resolver, &resolver);
            }
            for file in HOST_SOCKETS.map(Path::new).iter().filter(|f| f.exists()) {
                a.pair("--ro-bind", Path::new("/dev/null"), file);
            }
        }
        a.pair("--bind", tmp, Path::new("/tmp"));
        // The user's home is an empty scratch folder (tools write caches
        // there), wherever it is, even below `/tmp`.
        if let Some(home) = scratch_home(home) {
            a.one("--tmpfs", home);
        }
        for root in &readable {
            a.pair("--ro-bind-try", root, root);
        }
        // Toolchain folders keep a registry token or a password here and
        // there: those files read as empty.
        if let Some(home) = home {
            for file in CREDENTIAL_FILES.iter().map(|f| home.join(f)) {
                if file.is_file() && readable.iter().any(|r| file.starts_with(r)) {
                    a.pair("--ro-bind", Path::new("/dev/null"), &file);
                }
            }
        }
        let bind = if writable { "--bind" } else { "--ro-bind" };
        for root in &self.roots {
            a.pair(bind, root, root);
        }
        if writable {
            for root in &self.policy.writable_roots {
                a.pair("--bind-try", root, root);
            }
            // A mount point can be neither renamed nor removed: `.git`
            // stays where git on the host looks for it, with its controls
            // (mounted next) inside.
            for dir in found.iter().flat_map(|f| &f.git_dirs) {
                a.pair("--bind", dir, dir);
            }
            // A control that is a symlink is not mounted: bubblewrap would
            // follow it, and a repository's `.claude -> /home/me` would
            // show what the home's tmpfs hides. The guard watches it.
            for control in found.iter().flat_map(|f| &f.controls) {
                if !control.is_symlink() {
                    a.pair("--ro-bind", control, control);
                }
            }
        }
        if self.confinement == Confinement::Repositories {
            for dir in self.hidden_first(false, &readable) {
                a.one("--tmpfs", dir);
            }
        }
        for f in found {
            for file in &f.denied_files {
                a.pair("--ro-bind", Path::new("/dev/null"), file);
            }
            for dir in &f.denied_dirs {
                a.one("--tmpfs", dir);
                a.one("--remount-ro", dir);
            }
        }
        a.0
    }
}

/// Whose files a sandboxed command writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum OwnerAccess {
    /// Its own user's (the usual case).
    Own,
    /// evoflux runs as root and a writable root belongs to another user.
    Others,
}

/// Folders of the running system's state and sockets, replaced by empty
/// ones in a Coding session (a Work session sees neither at all).
const RUNTIME_DIRS: [&str; 2] = ["/run", "/var/run"];

/// Host control sockets outside `/run`.
const HOST_SOCKETS: [&str; 3] = [
    "/var/snap/lxd/common/lxd/unix.socket",
    "/var/lib/lxd/unix.socket",
    "/var/lib/incus/unix.socket",
];

/// A folder that is not a symlink (`/var/run` usually links to `/run`).
fn is_real_dir(path: &Path) -> bool {
    path.symlink_metadata().is_ok_and(|m| m.is_dir())
}

/// The file `/etc/resolv.conf` resolves to, when that is below `/run`
/// (systemd-resolved, resolvconf, NetworkManager), so names still resolve.
fn resolver_in_run() -> Option<PathBuf> {
    let target = std::fs::canonicalize("/etc/resolv.conf").ok()?;
    (target.starts_with("/run") && target.is_file()).then_some(target)
}

/// Files below the default readable roots that hold credentials, relative
/// to the home folder.
const CREDENTIAL_FILES: [&str; 4] = [
    ".cargo/credentials",
    ".cargo/credentials.toml",
    ".m2/settings.xml",
    ".m2/settings-security.xml",
];

/// The user's home, when it can be replaced by an empty folder: not the
/// root or a system folder (that would hide the system).
fn scratch_home(home: Option<&Path>) -> Option<&Path> {
    let home = home.filter(|h| h.is_absolute())?;
    let system = home == Path::new("/")
        || SYSTEM_DIRS
            .iter()
            .chain(&["/tmp", "/var", "/srv", "/mnt", "/run", "/home"])
            .any(|s| home == Path::new(s));
    (!system).then_some(home)
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

/// Finds `bwrap` on `path` and checks, once, that it can create the
/// namespaces the sandbox needs here (a container may forbid them).
/// Whether commands can be confined here: the `bwrap` found on `path` (a
/// `PATH` value) when it can create a sandbox, else what to do about it.
/// Runs the same probe a session's first confined command runs.
pub fn probe_bubblewrap(path: Option<&OsStr>) -> Result<PathBuf, String> {
    find_bwrap(path)
}

/// One layer of the sandbox and what this machine gives of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layer {
    /// `user namespace`, `capabilities`, `seccomp`, `process limit`,
    /// `landlock`.
    pub name: &'static str,
    /// What holds (`Ok`), or what is missing and why (`Err`).
    pub state: Result<String, String>,
    /// Whether the sandbox's promises rest on this layer.
    pub role: LayerRole,
}

/// What a layer is to the sandbox.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LayerRole {
    /// A missing one weakens what README promises: doctor warns.
    Required,
    /// A further fence over what the required layers already hold.
    Extra,
}

/// What the running kernel actually gives each layer, found by starting
/// one confined `sh` the way commands start (bubblewrap found on `path`)
/// and reading its `/proc/self/status`.
pub fn probe_layers(path: Option<&OsStr>) -> Vec<Layer> {
    let mut layers = Vec::new();
    let (bwrap, status) = match find_and_probe(path) {
        Ok(found) => found,
        Err(why) => {
            layers.push(Layer {
                name: "bubblewrap",
                state: Err(why),
                role: LayerRole::Required,
            });
            return layers;
        }
    };
    let userns = std::process::Command::new(&bwrap)
        .args([
            "--unshare-user",
            "--ro-bind",
            "/",
            "/",
            "--dev",
            "/dev",
            "--proc",
            "/proc",
        ])
        .args(["--unshare-pid", "--die-with-parent", "true"])
        .env_clear()
        .stdin(std::process::Stdio::null())
        .output();
    layers.push(Layer {
        name: "user namespace",
        role: LayerRole::Extra,
        state: match userns {
            Ok(o) if o.status.success() => Ok("each command gets its own".into()),
            Ok(o) => Err(format!(
                "the kernel gives none here ({}); capabilities are still dropped",
                String::from_utf8_lossy(&o.stderr).trim()
            )),
            Err(e) => Err(e.to_string()),
        },
    });
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name).map(|v| v.trim().to_owned()))
    };
    layers.push(Layer {
        name: "capabilities",
        role: LayerRole::Required,
        state: match (field("CapEff:"), field("NoNewPrivs:")) {
            (Some(caps), Some(nnp)) if caps.trim_start_matches('0').is_empty() && nnp == "1" => {
                Ok("none, and no new privileges".into())
            }
            (caps, nnp) => Err(format!(
                "a confined command has CapEff {} and NoNewPrivs {}",
                caps.unwrap_or_else(|| "?".into()),
                nnp.unwrap_or_else(|| "?".into())
            )),
        },
    });
    layers.push(Layer {
        name: "seccomp",
        role: LayerRole::Required,
        state: match field("Seccomp:") {
            Some(mode) if mode == "2" => Ok("mount, namespaces, ptrace, keyring, bpf and the \
                                              rest of the deny list refused"
                .into()),
            other => Err(format!(
                "the filter is not in force (Seccomp: {})",
                other.unwrap_or_default()
            )),
        },
    });
    layers.push(Layer {
        name: "process limit",
        role: LayerRole::Required,
        state: match &Limits::detect().processes {
            limits::ProcessLimit::Rlimit => {
                Ok("RLIMIT_NPROC in the command's user namespace".into())
            }
            limits::ProcessLimit::Cgroup(base) => Ok(format!(
                "a pids cgroup per command below {}",
                base.display()
            )),
            limits::ProcessLimit::Unavailable(why) => Err(why.clone()),
        },
    });
    let lsm = std::fs::read_to_string("/sys/kernel/security/lsm").unwrap_or_default();
    layers.push(Layer {
        name: "landlock",
        role: LayerRole::Extra,
        state: Err(match lsm.split(',').any(|m| m.trim() == "landlock") {
            true => "the kernel has Landlock; evoflux does not add it as a second fence yet".into(),
            false => "the kernel has no Landlock (not in /sys/kernel/security/lsm)".into(),
        }),
    });
    layers
}

/// The `/proc/self/status` of a shell started as a command is.
fn confined_status(bwrap: &Path) -> Result<String, String> {
    use command_fds::CommandFdExt;
    let filters = Filters::compile(false).map_err(|e| e.to_string())?;
    let (filter_args, fds) = filters.bwrap_fds();
    let mappings = crate::tracked::PassedBytes::mappings(&fds).map_err(|e| e.to_string())?;
    let mut cmd = std::process::Command::new(bwrap);
    cmd.args(filter_args);
    cmd.fd_mappings(mappings).map_err(|e| e.to_string())?;
    let out = cmd
        .args([
            "--unshare-user-try",
            "--cap-drop",
            "ALL",
            "--unshare-pid",
            "--die-with-parent",
        ])
        .args(["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"])
        .args(["/bin/sh", "-c", "cat /proc/self/status"])
        .env_clear()
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| e.to_string())?;
    match out.status.success() {
        true => Ok(String::from_utf8_lossy(&out.stdout).into_owned()),
        false => Err(String::from_utf8_lossy(&out.stderr).trim().to_owned()),
    }
}

fn find_bwrap(path: Option<&OsStr>) -> Result<PathBuf, String> {
    find_and_probe(path).map(|(program, _)| program)
}

/// The `bwrap` on `path` and the `/proc/self/status` of the probe it ran.
fn find_and_probe(path: Option<&OsStr>) -> Result<(PathBuf, String), String> {
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
    // The probe starts a shell the way commands start (capabilities
    // dropped, the seccomp programs loaded): a bubblewrap too old for one
    // of those flags fails here, naming the package, not at every command.
    match confined_status(&program) {
        Ok(status) => Ok((program, status)),
        Err(why) => Err(format!(
            "{} cannot create a sandbox here ({why}); {HOW}",
            program.display()
        )),
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
    fn denied_patterns_match_at_any_depth() {
        let denied = DeniedFiles::new(&["**/.env".into(), "**/.env.*".into()]).unwrap();
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
