//! `sandbox.toml`: the sandbox policy every command runs under.
//!
//! ```toml
//! filesystem = "workspace-write"   # or "read-only", "full-access"
//! writable_roots = ["/srv/cache"]
//! network = "deny"
//! denied_patterns = ["**/.env", "**/.env.*", "**/secrets/**"]
//! max_timeout_seconds = 120
//! journal_cap_mib = 256             # per command; head and tail kept past it
//! env_allowlist = ["PATH", "LANG"]
//! readable_roots = ["~/.cargo", "~/.rustup"]   # the only parts of a home folder commands see
//! max_processes = 1024              # processes and threads of one command
//! max_open_files = 4096             # per process of a command
//! browser_loopback = false          # the browser tool may reach this machine's loopback
//! ```
//!
//! Files are layered like `config.toml`: the admin's, then the user's key by
//! key, then each repository's, which can only tighten (the stricter
//! filesystem and network, the lower timeout, the narrower environment,
//! more denied patterns) and may add writable roots only once trusted.

use std::path::{Path, PathBuf};

use evoflux_core::trust::Trust;
use evoflux_core::{Diagnostic, Diagnostics};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::declarative::deserialize_strict;

/// Ordered from the strictest to the most permissive: the stricter of two
/// is `min`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum NetworkPolicy {
    Deny,
    Allow,
}

/// What commands may write. Ordered from the strictest to the most
/// permissive.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FilesystemPolicy {
    /// Nothing but the session's own temporary directory.
    ReadOnly,
    /// The workspace roots (minus the agent's protected controls), the
    /// writable roots and the session's temporary directory.
    WorkspaceWrite,
    /// No confinement at all: commands run as the user.
    FullAccess,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SandboxPolicy {
    pub filesystem: FilesystemPolicy,
    /// Extra directories commands may write (absolute).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub writable_roots: Vec<PathBuf>,
    /// Whether commands may use the network.
    pub network: NetworkPolicy,
    /// Globs (relative to each workspace root) of files neither file tools
    /// nor commands can read.
    pub denied_patterns: Vec<String>,
    /// Upper bound for any command's `timeout_seconds`.
    pub max_timeout_seconds: u64,
    /// Environment variables passed to commands; nothing else leaks in.
    pub env_allowlist: Vec<String>,
    /// The most one command's journal keeps on disk, in MiB. Past it the
    /// journal keeps the first and last halves and marks what it dropped.
    #[serde(default = "default_journal_cap_mib")]
    pub journal_cap_mib: u64,
    /// The parts of home folders commands may read (absolute, or `~/…`
    /// for the user's home): home folders are otherwise hidden, since
    /// they hold keys (`~/.ssh`, `~/.aws`, `~/.netrc`) a command could
    /// read and send.
    #[serde(default = "default_readable_roots")]
    pub readable_roots: Vec<PathBuf>,
    /// The most processes (and threads) one command may have at once.
    #[serde(default = "default_max_processes")]
    pub max_processes: u64,
    /// The most files each process of a command may hold open.
    #[serde(default = "default_max_open_files")]
    pub max_open_files: u64,
    /// Whether the `browser` tool may reach this machine's loopback
    /// addresses (a dev server, a local page): with `network = "deny"`
    /// it then reaches loopback only; otherwise loopback besides the
    /// public addresses. Off by default, since pages steer the model and
    /// the user's local services must not be reachable from them.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub browser_loopback: bool,
}

/// Toolchains and caches commands need from the user's home folder, and
/// nothing that holds a credential.
pub const DEFAULT_READABLE_ROOTS: [&str; 11] = [
    "~/.cargo",
    "~/.rustup",
    "~/.npm",
    "~/.nvm",
    "~/.cache/pip",
    "~/.pyenv",
    "~/.local/bin",
    "~/.local/lib",
    "~/go",
    "~/.m2",
    "~/.gitconfig",
];

/// Enough for a parallel build (cargo, make -j, a test runner's workers),
/// far below what exhausts a machine.
pub const DEFAULT_MAX_PROCESSES: u64 = 1024;
/// The usual soft limit of a desktop session.
pub const DEFAULT_MAX_OPEN_FILES: u64 = 4096;
/// Bounds a file may set for either limit.
pub const MAX_PROCESS_LIMIT: u64 = 1 << 20;

fn default_readable_roots() -> Vec<PathBuf> {
    DEFAULT_READABLE_ROOTS.map(PathBuf::from).to_vec()
}

fn default_max_processes() -> u64 {
    DEFAULT_MAX_PROCESSES
}

fn default_max_open_files() -> u64 {
    DEFAULT_MAX_OPEN_FILES
}

/// The framework's journal cap: large enough for any build log a person
/// would read, small enough that a runaway command cannot fill the disk.
pub const DEFAULT_JOURNAL_CAP_MIB: u64 = 256;
/// The largest cap a file may set (64 GiB).
pub const MAX_JOURNAL_CAP_MIB: u64 = 64 * 1024;

/// The framework's journal cap in bytes, for commands run outside any
/// session sandbox.
pub const DEFAULT_JOURNAL_CAP_BYTES: u64 = mib_to_bytes(DEFAULT_JOURNAL_CAP_MIB);

const fn mib_to_bytes(mib: u64) -> u64 {
    mib.saturating_mul(1024 * 1024)
}

fn default_journal_cap_mib() -> u64 {
    DEFAULT_JOURNAL_CAP_MIB
}

/// Patterns every policy starts from: the files that hold secrets.
pub const DEFAULT_DENIED_PATTERNS: [&str; 2] = ["**/.env", "**/.env.*"];

impl SandboxPolicy {
    /// The framework default.
    pub fn framework_default() -> SandboxPolicy {
        SandboxPolicy {
            filesystem: FilesystemPolicy::WorkspaceWrite,
            writable_roots: Vec::new(),
            network: NetworkPolicy::Allow,
            denied_patterns: DEFAULT_DENIED_PATTERNS.map(str::to_owned).to_vec(),
            max_timeout_seconds: 600,
            env_allowlist: [
                "PATH", "HOME", "LANG", "LC_ALL", "TERM", "TMPDIR", "USER", "SHELL",
            ]
            .map(str::to_owned)
            .to_vec(),
            journal_cap_mib: DEFAULT_JOURNAL_CAP_MIB,
            readable_roots: default_readable_roots(),
            max_processes: DEFAULT_MAX_PROCESSES,
            max_open_files: DEFAULT_MAX_OPEN_FILES,
            browser_loopback: false,
        }
    }

    /// `readable_roots` as absolute paths: `~/…` below `home` (a root
    /// naming `~` with no home known is dropped: it cannot be found).
    pub fn readable_roots_under(&self, home: Option<&Path>) -> Vec<PathBuf> {
        self.readable_roots
            .iter()
            .filter_map(|root| match root.strip_prefix("~") {
                Ok(rest) => home.map(|h| h.join(rest)),
                Err(_) => Some(root.clone()),
            })
            .collect()
    }

    /// The journal cap in bytes.
    pub fn journal_cap_bytes(&self) -> u64 {
        mib_to_bytes(self.journal_cap_mib)
    }

    /// Lays one file over the policy so far: a user or admin file sets what
    /// it names; a repository's only tightens.
    pub fn apply(&mut self, layer: SandboxLayer) {
        let SandboxLayer { file, scope } = layer;
        match scope {
            SandboxScope::Owner => {
                if let Some(v) = file.filesystem {
                    self.filesystem = v;
                }
                if let Some(v) = file.writable_roots {
                    self.writable_roots = v;
                }
                if let Some(v) = file.network {
                    self.network = v;
                }
                if let Some(v) = file.denied_patterns {
                    self.denied_patterns = v;
                }
                if let Some(v) = file.max_timeout_seconds {
                    self.max_timeout_seconds = v;
                }
                if let Some(v) = file.env_allowlist {
                    self.env_allowlist = v;
                }
                if let Some(v) = file.journal_cap_mib {
                    self.journal_cap_mib = v;
                }
                if let Some(v) = file.readable_roots {
                    self.readable_roots = v;
                }
                if let Some(v) = file.max_processes {
                    self.max_processes = v;
                }
                if let Some(v) = file.max_open_files {
                    self.max_open_files = v;
                }
                if let Some(v) = file.browser_loopback {
                    self.browser_loopback = v;
                }
            }
            SandboxScope::Repository => {
                if let Some(v) = file.filesystem {
                    self.filesystem = self.filesystem.min(v);
                }
                // Only a trusted repository's roots get here (see parse).
                self.writable_roots
                    .extend(file.writable_roots.unwrap_or_default());
                if let Some(v) = file.network {
                    self.network = self.network.min(v);
                }
                for p in file.denied_patterns.unwrap_or_default() {
                    if !self.denied_patterns.contains(&p) {
                        self.denied_patterns.push(p);
                    }
                }
                if let Some(v) = file.max_timeout_seconds {
                    self.max_timeout_seconds = self.max_timeout_seconds.min(v);
                }
                if let Some(v) = file.env_allowlist {
                    self.env_allowlist.retain(|name| v.contains(name));
                }
                if let Some(v) = file.journal_cap_mib {
                    self.journal_cap_mib = self.journal_cap_mib.min(v);
                }
                // A repository can hide more of the home folder, never
                // show more of it.
                if let Some(v) = file.readable_roots {
                    self.readable_roots.retain(|root| v.contains(root));
                }
                if let Some(v) = file.max_processes {
                    self.max_processes = self.max_processes.min(v);
                }
                if let Some(v) = file.max_open_files {
                    self.max_open_files = self.max_open_files.min(v);
                }
                // A repository can take the browser's loopback away, never
                // grant it.
                if let Some(v) = file.browser_loopback {
                    self.browser_loopback = self.browser_loopback && v;
                }
            }
        }
    }
}

/// Whose file it is, and so how it layers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SandboxScope {
    /// The admin's or the user's: sets.
    Owner,
    /// A repository's: tightens.
    Repository,
}

/// One checked sandbox file.
#[derive(Debug)]
pub struct SandboxLayer {
    file: SandboxFile,
    scope: SandboxScope,
}

/// A sandbox file: every key optional.
#[derive(Debug, Deserialize)]
struct SandboxFile {
    filesystem: Option<FilesystemPolicy>,
    writable_roots: Option<Vec<PathBuf>>,
    network: Option<NetworkPolicy>,
    denied_patterns: Option<Vec<String>>,
    max_timeout_seconds: Option<u64>,
    env_allowlist: Option<Vec<String>>,
    journal_cap_mib: Option<u64>,
    readable_roots: Option<Vec<PathBuf>>,
    max_processes: Option<u64>,
    max_open_files: Option<u64>,
    browser_loopback: Option<bool>,
}

/// Parses one file of a layer. `trust` is `Some` for a repository's file.
pub fn parse(
    path: &Path,
    value: Value,
    repository: Option<Trust>,
    diags: &mut Diagnostics,
) -> Option<SandboxLayer> {
    let mut file: SandboxFile = deserialize_strict(path, value, "sandbox policy", diags)?;
    let mut ok = true;
    let mut error = |code: &'static str, field: &str, message: String| {
        diags.push(
            Diagnostic::error(code, message)
                .with_file(path)
                .with_field(field),
        );
        ok = false;
    };
    if file.max_timeout_seconds == Some(0) {
        error(
            "compile/sandbox-invalid",
            "max_timeout_seconds",
            "max_timeout_seconds must be at least 1".into(),
        );
    }
    if let Some(cap) = file.journal_cap_mib
        && !(1..=MAX_JOURNAL_CAP_MIB).contains(&cap)
    {
        error(
            "compile/sandbox-invalid",
            "journal_cap_mib",
            format!("journal_cap_mib = {cap} must be between 1 and {MAX_JOURNAL_CAP_MIB}"),
        );
    }
    for (field, value) in [
        ("max_processes", file.max_processes),
        ("max_open_files", file.max_open_files),
    ] {
        if let Some(n) = value
            && !(16..=MAX_PROCESS_LIMIT).contains(&n)
        {
            error(
                "compile/sandbox-invalid",
                field,
                format!("{field} = {n} must be between 16 and {MAX_PROCESS_LIMIT}"),
            );
        }
    }
    for root in file.readable_roots.iter().flatten() {
        if !root.is_absolute() && root.strip_prefix("~").is_err() {
            error(
                "compile/sandbox-invalid",
                "readable_roots",
                format!(
                    "readable root `{}` must be an absolute path or start with `~/`",
                    root.display()
                ),
            );
        }
    }
    for name in file.env_allowlist.iter().flatten() {
        if !crate::connection::is_env_name(name) {
            error(
                "compile/sandbox-invalid",
                "env_allowlist",
                format!("`{name}` in env_allowlist is not an environment variable name"),
            );
        }
    }
    for pattern in file.denied_patterns.iter().flatten() {
        if let Err(e) = globset::Glob::new(pattern) {
            error(
                "compile/sandbox-invalid",
                "denied_patterns",
                format!("`{pattern}` in denied_patterns is not a glob: {e}"),
            );
        }
    }
    // A repository's roots are relative to the repository (the folder
    // holding `.evoflux/`); the user's and admin's must be absolute.
    let repo_dir = path.parent().and_then(Path::parent);
    if let Some(roots) = &mut file.writable_roots {
        match (repository, repo_dir) {
            (Some(Trust::Untrusted), _) if !roots.is_empty() => error(
                "compile/sandbox-untrusted-roots",
                "writable_roots",
                "this repository is not trusted, so its sandbox.toml cannot add writable \
                 roots: trust the repository (evoflux trust) or set them in your own \
                 sandbox.toml"
                    .into(),
            ),
            (Some(_), Some(repo)) => {
                for root in roots.iter_mut() {
                    *root = repo.join(&*root);
                }
            }
            (None, _) | (Some(_), None) => {
                for root in roots.iter().filter(|r| !r.is_absolute()) {
                    error(
                        "compile/sandbox-invalid",
                        "writable_roots",
                        format!(
                            "writable root `{}` must be an absolute path",
                            root.display()
                        ),
                    );
                }
            }
        }
    }
    ok.then_some(SandboxLayer {
        file,
        scope: match repository {
            Some(_) => SandboxScope::Repository,
            None => SandboxScope::Owner,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layer(json: Value, repository: Option<Trust>) -> (Option<SandboxLayer>, Diagnostics) {
        let mut diags = Diagnostics::new();
        let l = parse(
            Path::new("/repo/.evoflux/sandbox.toml"),
            json,
            repository,
            &mut diags,
        );
        (l, diags)
    }

    #[test]
    fn a_repository_only_tightens() {
        let mut policy = SandboxPolicy::framework_default();
        let (user, _) = layer(
            serde_json::json!({"network": "deny", "max_timeout_seconds": 60}),
            None,
        );
        policy.apply(user.unwrap());
        let (repo, diags) = layer(
            serde_json::json!({
                "network": "allow", "filesystem": "full-access", "max_timeout_seconds": 9000,
                "env_allowlist": ["PATH", "AWS_SECRET"], "denied_patterns": ["**/id_rsa"]
            }),
            Some(Trust::Untrusted),
        );
        assert!(diags.is_empty(), "{diags:?}");
        policy.apply(repo.unwrap());
        assert_eq!(policy.network, NetworkPolicy::Deny);
        assert_eq!(policy.filesystem, FilesystemPolicy::WorkspaceWrite);
        assert_eq!(policy.max_timeout_seconds, 60);
        assert_eq!(policy.env_allowlist, ["PATH"]);
        assert_eq!(
            policy.denied_patterns,
            ["**/.env", "**/.env.*", "**/id_rsa"]
        );
        let (repo, _) = layer(
            serde_json::json!({"filesystem": "read-only", "max_timeout_seconds": 5}),
            Some(Trust::Untrusted),
        );
        policy.apply(repo.unwrap());
        assert_eq!(policy.filesystem, FilesystemPolicy::ReadOnly);
        assert_eq!(policy.max_timeout_seconds, 5);
        // A repository can lower the journal cap, never raise it.
        for (cap, expected) in [(4096, DEFAULT_JOURNAL_CAP_MIB), (8, 8)] {
            let (repo, _) = layer(
                serde_json::json!({"journal_cap_mib": cap}),
                Some(Trust::Untrusted),
            );
            policy.apply(repo.unwrap());
            assert_eq!(policy.journal_cap_mib, expected);
        }
        assert_eq!(policy.journal_cap_bytes(), 8 * 1024 * 1024);
    }

    #[test]
    fn the_browser_s_loopback_is_the_user_s_to_grant_and_a_repository_s_to_take() {
        let mut policy = SandboxPolicy::framework_default();
        assert!(!policy.browser_loopback);
        let (repo, _) = layer(
            serde_json::json!({"browser_loopback": true}),
            Some(Trust::Trusted),
        );
        policy.apply(repo.unwrap());
        assert!(!policy.browser_loopback, "a repository cannot grant it");
        let (user, _) = layer(serde_json::json!({"browser_loopback": true}), None);
        policy.apply(user.unwrap());
        assert!(policy.browser_loopback);
        let (repo, _) = layer(
            serde_json::json!({"browser_loopback": false}),
            Some(Trust::Untrusted),
        );
        policy.apply(repo.unwrap());
        assert!(!policy.browser_loopback);
    }

    #[test]
    fn writable_roots_need_trust_in_a_repository_and_absolute_paths_elsewhere() {
        let roots = serde_json::json!({"writable_roots": ["build"]});
        let (l, diags) = layer(roots.clone(), Some(Trust::Untrusted));
        assert!(l.is_none());
        assert_eq!(diags.codes(), ["compile/sandbox-untrusted-roots"]);
        let (l, diags) = layer(roots.clone(), Some(Trust::Trusted));
        assert!(diags.is_empty());
        let mut policy = SandboxPolicy::framework_default();
        policy.apply(l.unwrap());
        assert_eq!(policy.writable_roots, [PathBuf::from("/repo/build")]);
        let (l, diags) = layer(roots, None);
        assert!(l.is_none());
        assert_eq!(diags.codes(), ["compile/sandbox-invalid"]);
    }

    #[test]
    fn bad_values_are_coded() {
        let (l, diags) = layer(
            serde_json::json!({"denied_patterns": ["a/[b"], "max_timeout_seconds": 0,
                               "env_allowlist": ["no way"], "journal_cap_mib": 0}),
            None,
        );
        assert!(l.is_none());
        assert_eq!(diags.codes().len(), 4);
        assert!(diags.iter().all(|d| d.code == "compile/sandbox-invalid"));
        let (_, diags) = layer(serde_json::json!({"filesystem": "open"}), None);
        assert!(diags.has_errors());
    }
}
