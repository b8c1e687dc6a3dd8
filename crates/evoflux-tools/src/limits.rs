//! The process and open-file limits of a sandboxed command.
//!
//! Processes: `RLIMIT_NPROC`, set inside the sandbox by util-linux's
//! `prlimit` right before the command, which the kernel counts per user
//! namespace, so inside bubblewrap's namespace it counts the command's
//! processes only, never the user's others. The kernel never applies
//! `RLIMIT_NPROC` to uid 0, though, so when evoflux runs as root each
//! command gets a pids cgroup of its own instead, where the machine lets
//! root create one; `evoflux doctor` says when neither holds. Open files:
//! `RLIMIT_NOFILE`, set by the same `prlimit`, or with a cgroup by the
//! shell that joins it (the capability to raise it again is dropped).

use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

/// Where util-linux installs `prlimit`; both are visible in the sandbox.
const PRLIMIT: [&str; 2] = ["/usr/bin/prlimit", "/bin/prlimit"];

/// How this machine limits a command's processes, found once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProcessLimit {
    /// `RLIMIT_NPROC` inside the command's user namespace.
    Rlimit,
    /// A pids cgroup per command, below this folder (root).
    Cgroup(PathBuf),
    /// Nothing holds here; the reason says what is missing.
    Unavailable(String),
}

/// The limit mechanisms of this machine.
#[derive(Debug, Clone)]
pub struct Limits {
    /// `prlimit`, when installed.
    pub prlimit: Option<PathBuf>,
    pub processes: ProcessLimit,
    /// evoflux's own hard limits: a command's cannot be set above them
    /// (raising a hard limit needs a capability commands do not have).
    hard_nproc: Option<u64>,
    hard_nofile: Option<u64>,
}

impl Limits {
    /// What this machine offers, found on first use.
    pub fn detect() -> &'static Limits {
        static LIMITS: OnceLock<Limits> = OnceLock::new();
        LIMITS.get_or_init(|| {
            let prlimit = PRLIMIT.iter().map(PathBuf::from).find(|p| p.is_file());
            let processes = match (rustix::process::getuid().is_root(), &prlimit) {
                (true, _) => match pids_cgroup_base() {
                    Ok(base) => ProcessLimit::Cgroup(base),
                    Err(reason) => ProcessLimit::Unavailable(format!(
                        "evoflux runs as root, where the kernel ignores RLIMIT_NPROC, and no \
                         pids cgroup can be created ({reason})"
                    )),
                },
                (false, Some(_)) if counts_per_namespace() => ProcessLimit::Rlimit,
                (false, Some(_)) => ProcessLimit::Unavailable(
                    "this kernel (before 5.14) counts RLIMIT_NPROC over all of the user's \
                     processes, not the command's"
                        .into(),
                ),
                (false, None) => {
                    ProcessLimit::Unavailable("`prlimit` (util-linux) is not installed".into())
                }
            };
            let hard = |resource| rustix::process::getrlimit(resource).maximum;
            Limits {
                prlimit,
                processes,
                hard_nproc: hard(rustix::process::Resource::Nproc),
                hard_nofile: hard(rustix::process::Resource::Nofile),
            }
        })
    }

    /// The processes and open files a command allowed `processes` and
    /// `files` gets: each clamped to evoflux's own hard limit.
    pub(crate) fn clamped(&self, processes: u64, files: u64) -> (u64, u64) {
        let clamp = |want: u64, hard: Option<u64>| hard.map_or(want, |h| want.min(h));
        (
            clamp(processes, self.hard_nproc),
            clamp(files, self.hard_nofile),
        )
    }
}

/// Whether the kernel counts `RLIMIT_NPROC` per user namespace (5.14 and
/// later), so a limit set inside the sandbox counts only its processes.
fn counts_per_namespace() -> bool {
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    let mut parts = release.trim().split(['.', '-']);
    let major = parts.next().and_then(|p| p.parse::<u32>().ok());
    let minor = parts.next().and_then(|p| p.parse::<u32>().ok());
    matches!((major, minor), (Some(m), Some(n)) if (m, n) >= (5, 14))
}

/// The folder below which root can make pids cgroups: this process's own
/// pids cgroup (cgroup v1's `pids` hierarchy, or v2 with the controller
/// enabled for children), checked by making and removing one.
fn pids_cgroup_base() -> Result<PathBuf, String> {
    let own = std::fs::read_to_string("/proc/self/cgroup").map_err(|e| e.to_string())?;
    let mut candidates = Vec::new();
    for line in own.lines() {
        let mut parts = line.splitn(3, ':');
        let (_, controllers, path) = (parts.next(), parts.next(), parts.next());
        let (Some(controllers), Some(path)) = (controllers, path) else {
            continue;
        };
        let path = path.trim_start_matches('/');
        if controllers.split(',').any(|c| c == "pids") {
            candidates.push(Path::new("/sys/fs/cgroup/pids").join(path));
        } else if controllers.is_empty() {
            for mount in ["/sys/fs/cgroup", "/sys/fs/cgroup/unified"] {
                candidates.push(Path::new(mount).join(path));
            }
        }
    }
    let mut last = "no pids controller is mounted".to_owned();
    for base in candidates {
        let probe = base.join(format!("evoflux-probe-{}", std::process::id()));
        let made =
            std::fs::create_dir(&probe).and_then(|()| std::fs::write(probe.join("pids.max"), "64"));
        let _ = std::fs::remove_dir(&probe);
        match made {
            Ok(()) => return Ok(base),
            Err(e) => last = format!("{}: {e}", base.display()),
        }
    }
    Err(last)
}

/// One command's pids cgroup, removed when the command has ended.
#[derive(Debug)]
pub(crate) struct Cgroup {
    dir: PathBuf,
}

impl Cgroup {
    /// Makes a fresh cgroup below `base` allowing `max` processes.
    ///
    /// A name can be taken already: an evoflux that was killed never
    /// removed its cgroups, and a later process may get its pid. Such a
    /// leftover is removed when it is empty (nothing runs in it any more)
    /// and the next name is tried either way.
    pub(crate) fn create(base: &Path, max: u64) -> std::io::Result<Cgroup> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let mut attempts = 0;
        let dir = loop {
            let n = NEXT.fetch_add(1, Ordering::Relaxed);
            let dir = base.join(format!("evoflux-{}-{n}", std::process::id()));
            match std::fs::create_dir(&dir) {
                Ok(()) => break dir,
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && attempts < 64 => {
                    attempts += 1;
                    let _ = std::fs::remove_dir(&dir);
                }
                Err(e) => return Err(e),
            }
        };
        if let Err(e) = std::fs::write(dir.join("pids.max"), max.to_string()) {
            let _ = std::fs::remove_dir(&dir);
            return Err(e);
        }
        Ok(Cgroup { dir })
    }

    /// The file a process writes its pid to in order to join.
    pub(crate) fn procs(&self) -> PathBuf {
        self.dir.join("cgroup.procs")
    }

    /// Kills what is left in the cgroup and removes it.
    pub(crate) fn remove(&self) {
        for _ in 0..50 {
            let left = std::fs::read_to_string(self.procs()).unwrap_or_default();
            for pid in left.lines().filter_map(|l| l.trim().parse::<i32>().ok()) {
                if let Some(pid) = rustix::process::Pid::from_raw(pid) {
                    let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
                }
            }
            if std::fs::remove_dir(&self.dir).is_ok() {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
        tracing::warn!(cgroup = %self.dir.display(), "a command's cgroup could not be removed");
    }
}

#[cfg(test)]
mod cgroup_tests {
    use super::*;

    /// A killed evoflux's cgroups, left under names a process with the
    /// same pid would choose, do not stop this one's commands.
    #[test]
    fn a_killed_processs_leftover_cgroups_do_not_block_a_new_one() {
        let base = tempfile::tempdir().unwrap();
        // Leftovers under every name this process would try first, one of
        // them still holding a file (as a live cgroup would refuse removal).
        for n in 0..8 {
            let dir = base
                .path()
                .join(format!("evoflux-{}-{n}", std::process::id()));
            std::fs::create_dir(&dir).unwrap();
        }
        let busy = base
            .path()
            .join(format!("evoflux-{}-3", std::process::id()));
        std::fs::write(busy.join("cgroup.procs"), "1").unwrap();
        let made = Cgroup::create(base.path(), 7).unwrap();
        assert_eq!(
            std::fs::read_to_string(made.dir.join("pids.max")).unwrap(),
            "7"
        );
        assert!(busy.exists(), "a cgroup in use is never removed");
    }
}
