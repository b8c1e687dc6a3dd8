//! No command outlives the evoflux that started it, however it escaped.
//!
//! Killing a command's process group stops what stayed in the group; a
//! sandboxed command also dies with its PID namespace. What is left is an
//! unconfined command (full access, or one the user ran outside the
//! sandbox) that left its group with `setsid` or a double fork, and every
//! unconfined command when evoflux itself is killed with SIGKILL. So every
//! command carries a lineage tag in its environment (inherited by all it
//! starts: a process cannot drop its initial environment), and:
//!
//! - ending a session or the runtime kills every process still carrying
//!   the session's or the runtime's tag;
//! - each runtime records itself (pid and start time) in the runs folder
//!   while it lives; a new runtime that finds the record of one that is
//!   gone kills what carries its tag, and removes the record.
//!
//! Processes of other users cannot be read and are never touched.

use std::path::{Path, PathBuf};

use evoflux_core::ids::SessionId;
use rustix::process::{Pid, Signal, kill_process};

use crate::tracked::Role;

/// What follows a session's lineage for its previews.
const PREVIEW_SUFFIX: &str = "preview";

/// The environment variable that carries a command's lineage:
/// `<runtime tag>/<session id>`.
pub const LINEAGE_VAR: &str = "EVOFLUX_LINEAGE";

/// This runtime's identity in the runs folder and in its commands.
#[derive(Debug)]
pub(crate) struct Lineage {
    tag: String,
    record: Option<PathBuf>,
}

impl Lineage {
    /// Registers a new runtime in `runs_dir` (none: no record, nothing
    /// reaped) after reaping what dead runtimes left there. Returns how
    /// many processes were reaped.
    pub(crate) fn start(runs_dir: Option<&Path>) -> (Lineage, usize) {
        let tag = fresh_tag();
        let Some(dir) = runs_dir else {
            return (Lineage { tag, record: None }, 0);
        };
        let reaped = reap_dead(dir);
        let record = dir.join(&tag);
        // A plain write, not an atomic one: every run starts a runtime, and
        // a record lost to a machine crash has nothing left to reap. A torn
        // record does not parse and so counts as dead, like a missing one.
        let written = Identity::of(std::process::id()).is_some_and(|me| {
            evoflux_core::private::create_private_dir(dir).is_ok()
                && write_private(&record, me.to_record().as_bytes()).is_ok()
        });
        let record = written.then_some(record);
        (Lineage { tag, record }, reaped)
    }

    /// The variable a command of `session` carries.
    pub(crate) fn value(&self, session: SessionId) -> String {
        format!("{}/{session}", self.tag)
    }

    /// The variable a process of `session` in `role` carries: a preview's
    /// is its own, so stopping the session's commands (a cancelled turn)
    /// leaves its previews running, while the runtime's sweep and the
    /// reaping of a dead runtime (both by the tag) reach them too.
    pub(crate) fn value_of(&self, session: SessionId, role: Role) -> String {
        match role {
            Role::Command => self.value(session),
            Role::Preview => format!("{}/{session}/{PREVIEW_SUFFIX}", self.tag),
        }
    }

    /// Kills every live process carrying the lineage of `session`'s
    /// previews. Returns how many were signalled.
    pub(crate) fn sweep_previews(&self, session: SessionId) -> usize {
        kill_carriers(&Wanted::Exact(self.value_of(session, Role::Preview)))
    }

    /// Kills every live process carrying `session`'s lineage, or this
    /// runtime's when `None`. Returns how many were signalled.
    pub(crate) fn sweep(&self, session: Option<SessionId>) -> usize {
        let wanted = match session {
            Some(s) => Wanted::Exact(self.value(s)),
            None => Wanted::Prefix(format!("{}/", self.tag)),
        };
        kill_carriers(&wanted)
    }
}

impl Drop for Lineage {
    fn drop(&mut self) {
        if let Some(record) = &self.record {
            let _ = std::fs::remove_file(record);
        }
    }
}

/// A tag no other runtime has, on this machine, now or before: this
/// process's pid, the time and a counter (not the session ids' source,
/// which tests make sequential and so the same in every process).
fn fresh_tag() -> String {
    static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!("{:08x}{nanos:x}{n:x}", std::process::id())
}

/// Writes `bytes` to a new owner-only file at `path`.
fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(evoflux_core::private::PRIVATE_FILE)
        .open(path)?
        .write_all(bytes)
}

/// A process by pid and start time (clock ticks since boot), so a reused
/// pid is never taken for the process that had it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Identity {
    pid: u32,
    start: u64,
}

impl Identity {
    fn of(pid: u32) -> Option<Identity> {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        // Fields after the command name, which may itself hold spaces
        // and parentheses; the start time is field 22 of the whole line.
        let rest = stat.rsplit_once(')')?.1;
        let start = rest.split_whitespace().nth(19)?.parse().ok()?;
        Some(Identity { pid, start })
    }

    fn to_record(self) -> String {
        format!("{} {}\n", self.pid, self.start)
    }

    fn from_record(text: &str) -> Option<Identity> {
        let mut parts = text.split_whitespace();
        let pid = parts.next()?.parse().ok()?;
        let start = parts.next()?.parse().ok()?;
        Some(Identity { pid, start })
    }

    fn is_alive(self) -> bool {
        Identity::of(self.pid) == Some(self)
    }
}

/// Kills what every runtime recorded in `dir` and no longer alive left
/// behind, and removes its record.
fn reap_dead(dir: &Path) -> usize {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    let mut reaped = 0;
    for entry in entries.flatten() {
        let Some(tag) = entry.file_name().to_str().map(str::to_owned) else {
            continue;
        };
        if !is_tag(&tag) {
            continue;
        }
        let alive = std::fs::read_to_string(entry.path())
            .ok()
            .as_deref()
            .and_then(Identity::from_record)
            .is_some_and(Identity::is_alive);
        if alive {
            continue;
        }
        reaped += kill_carriers(&Wanted::Prefix(format!("{tag}/")));
        let _ = std::fs::remove_file(entry.path());
    }
    reaped
}

/// A runtime tag as [`crate::ProcessRuntime`] makes them: hex digits.
pub(crate) fn is_tag(name: &str) -> bool {
    !name.is_empty() && name.len() <= 64 && name.bytes().all(|b| b.is_ascii_hexdigit())
}

enum Wanted {
    Exact(String),
    Prefix(String),
}

impl Wanted {
    fn matches(&self, value: &[u8]) -> bool {
        match self {
            Wanted::Exact(v) => value == v.as_bytes(),
            Wanted::Prefix(p) => value.starts_with(p.as_bytes()),
        }
    }
}

/// SIGKILLs every process whose initial environment carries a lineage
/// `wanted` accepts; never this process.
fn kill_carriers(wanted: &Wanted) -> usize {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return 0;
    };
    let me = std::process::id();
    let key = format!("{LINEAGE_VAR}=");
    let mut killed = 0;
    for entry in entries.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        if pid == me {
            continue;
        }
        // Unreadable (another user's) or gone: not ours to touch.
        let Ok(environ) = std::fs::read(entry.path().join("environ")) else {
            continue;
        };
        let carries = environ
            .split(|b| *b == 0)
            .filter_map(|var| var.strip_prefix(key.as_bytes()))
            .any(|value| wanted.matches(value));
        let target = i32::try_from(pid).ok().and_then(Pid::from_raw);
        if let (true, Some(target)) = (carries, target)
            && kill_process(target, Signal::KILL).is_ok()
        {
            killed += 1;
        }
    }
    killed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identities_round_trip_and_tell_a_live_process() {
        let me = Identity::of(std::process::id()).unwrap();
        assert!(me.is_alive());
        assert_eq!(Identity::from_record(&me.to_record()), Some(me));
        let reused = Identity {
            start: me.start + 1,
            ..me
        };
        assert!(
            !reused.is_alive(),
            "a pid with another start time is another process"
        );
        assert_eq!(Identity::from_record("garbage"), None);
    }

    #[test]
    fn tags_are_hex() {
        assert!(is_tag("0123abcdef"));
        assert!(!is_tag("../x"));
        assert!(!is_tag(""));
    }

    #[test]
    fn a_dead_runtimes_commands_are_reaped_and_its_record_removed() {
        let dir = tempfile::tempdir().unwrap();
        let tag = "00000000deadbeef";
        // A record of a runtime that is gone: a pid past any pid_max.
        std::fs::write(dir.path().join(tag), "4194305 0\n").unwrap();
        let mut orphan = std::process::Command::new("sleep")
            .arg("300")
            .env(LINEAGE_VAR, format!("{tag}/some-session"))
            .spawn()
            .unwrap();
        let mut bystander = std::process::Command::new("sleep")
            .arg("300")
            .env(LINEAGE_VAR, "00000000cafe/other")
            .spawn()
            .unwrap();
        let (lineage, reaped) = Lineage::start(Some(dir.path()));
        let own = lineage.tag.clone();
        assert_eq!(reaped, 1);
        assert!(
            orphan.wait().unwrap().code().is_none(),
            "killed by a signal"
        );
        assert!(
            bystander.try_wait().unwrap().is_none(),
            "not of the dead runtime"
        );
        assert!(!dir.path().join(tag).exists());
        assert!(dir.path().join(&own).is_file());
        drop(lineage);
        assert!(!dir.path().join(&own).exists());
        bystander.kill().unwrap();
        bystander.wait().unwrap();
    }
}
