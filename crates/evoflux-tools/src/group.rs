//! Signals to a command's whole process group. Every command runs as the
//! leader of its own group, so a pipeline, a build's workers or a job
//! backgrounded with `&` are stopped together with it instead of
//! surviving as orphans.

use rustix::process::{Pid, Signal, kill_process_group, test_kill_process_group};

/// The process group whose id is the leader's pid.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ProcessGroup(Pid);

impl ProcessGroup {
    /// The group led by `pid` (spawned with its own process group).
    pub fn led_by(pid: u32) -> Option<ProcessGroup> {
        i32::try_from(pid)
            .ok()
            .and_then(Pid::from_raw)
            .map(ProcessGroup)
    }

    /// Asks every member to stop (SIGTERM).
    pub fn terminate(self) {
        self.signal(Signal::TERM);
    }

    /// Stops every member now (SIGKILL).
    pub fn kill(self) {
        self.signal(Signal::KILL);
    }

    /// Whether any member is left (zombies not yet reaped included).
    pub fn is_alive(self) -> bool {
        match test_kill_process_group(self.0) {
            Ok(()) => true,
            // EPERM: a member exists but is no longer ours to signal.
            Err(e) => e == rustix::io::Errno::PERM,
        }
    }

    fn signal(self, signal: Signal) {
        // ESRCH (the group is gone) is the expected race and not an error.
        let _ = kill_process_group(self.0, signal);
    }
}
