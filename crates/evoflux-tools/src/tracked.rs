//! One tracked command: how it is spawned, the task that supervises it
//! until it ends (exit, timeout, or a stop request), and how its
//! observations are taken.
//!
//! Exactly one observation sees a command finish; it carries the final
//! bytes and removes the command from its session. When the command was
//! started with `notify_on_exit` and nobody is blocked waiting on it at
//! that moment, the supervisor takes that final observation itself and
//! hands it to the session's exit channel.

use std::ffi::OsString;
use std::fs::OpenOptions;
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use evoflux_core::ids::SessionId;
use tokio::process::Child;
use tokio::sync::{Notify, watch};
use tokio::time::{Instant, sleep_until, timeout};

use crate::error::ToolError;
use crate::group::ProcessGroup;
use crate::journal::Journal;
use crate::lineage::LINEAGE_VAR;
use crate::observation::{CommandStatus, Facts, Form, format};
use crate::output::ToolOutput;
use crate::runtime::Inner;
use crate::sandbox::AfterCommand;
use crate::sync::lock;

/// What to run.
#[derive(Debug, Clone)]
pub(crate) struct SpawnSpec {
    pub program: PathBuf,
    pub args: Vec<OsString>,
    pub cwd: PathBuf,
    pub env: Vec<(OsString, OsString)>,
    /// How the command is shown in `list` and the yield text.
    pub display: String,
    pub timeout: Duration,
    pub notify_on_exit: bool,
    /// The user approved running this one command outside the sandbox:
    /// only the sandbox's timeout ceiling and environment apply.
    pub outside_sandbox: bool,
    /// Bytes the command reads from descriptors of its own (bubblewrap's
    /// seccomp programs): each is a fresh in-memory file per spawn, so
    /// concurrent commands never share a read offset.
    pub fds: Vec<PassedBytes>,
    /// A command, or a preview with its own lifecycle.
    pub role: Role,
}

/// What a tracked process is to its session. Closed: the runtime decides
/// by it where the process is registered, how long it may run and which
/// stop reaches it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Role {
    /// `shell`, `process`, a command tool, `!command`: bounded by its
    /// timeout, listed by `process`, stopped when its turn is cancelled.
    Command,
    /// A dev server `preview` started: not listed by `process`, no
    /// timeout, stopped by `preview stop` or when its session closes.
    Preview,
}

/// Bytes handed to a command on descriptor `child_fd`.
#[derive(Debug, Clone)]
pub(crate) struct PassedBytes {
    pub child_fd: i32,
    pub bytes: std::sync::Arc<[u8]>,
}

impl PassedBytes {
    /// A sealed-off in-memory file holding the bytes, read from the start.
    /// A fresh in-memory file for each of `fds`, mapped to its descriptor
    /// in the child.
    pub(crate) fn mappings(fds: &[PassedBytes]) -> std::io::Result<Vec<command_fds::FdMapping>> {
        fds.iter()
            .map(|p| {
                p.open().map(|parent_fd| command_fds::FdMapping {
                    parent_fd,
                    child_fd: p.child_fd,
                })
            })
            .collect()
    }

    fn open(&self) -> std::io::Result<std::os::fd::OwnedFd> {
        use std::io::{Seek, Write};
        let fd = rustix::fs::memfd_create("evoflux-seccomp", rustix::fs::MemfdFlags::CLOEXEC)?;
        let mut file = std::fs::File::from(fd);
        file.write_all(&self.bytes)?;
        file.rewind()?;
        Ok(file.into())
    }
}

/// How a command ended.
#[derive(Debug, Clone, Copy)]
struct Outcome {
    status: CommandStatus,
    exit_code: Option<i32>,
    signal: Option<i32>,
    duration: Duration,
}

#[derive(Debug, Default)]
struct Life {
    outcome: Option<Outcome>,
    /// A stop was asked for (terminate, session end, shutdown): the end is
    /// reported as terminated whatever the exit status.
    stop_requested: bool,
    /// Callers blocked waiting for this command; while any is, an exit
    /// notice is not sent because that caller reports the end itself.
    waiters: usize,
    /// The observation that saw the end has been taken.
    final_taken: bool,
    /// What the sandbox did after the command (a control it created moved
    /// away), told with the final observation.
    notes: Vec<String>,
}

/// Which observation a caller takes.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Moment {
    /// The first answer to the call that started the command.
    First,
    /// A later `process` observation or an exit notice.
    Later,
    /// A `preview` observation of its server's output.
    Preview,
}

#[derive(Debug)]
pub(crate) struct Tracked {
    pub id: String,
    pub session: SessionId,
    pub pid: u32,
    pub group: ProcessGroup,
    pub display: String,
    pub notify_on_exit: bool,
    started: Instant,
    journal: Arc<Journal>,
    life: Mutex<Life>,
    finished: watch::Sender<bool>,
    stop: Notify,
    runtime: Weak<Inner>,
    /// The sandbox's work once the command has ended.
    after: Option<AfterCommand>,
}

/// Counts a blocked caller for as long as it lives. Dropping the last one
/// after the command ended sends the exit notice nobody took.
#[derive(Debug)]
pub(crate) struct Waiter<'a>(&'a Arc<Tracked>);

impl Drop for Waiter<'_> {
    fn drop(&mut self) {
        let tracked = self.0;
        let notice = {
            let mut life = lock(&tracked.life);
            life.waiters = life.waiters.saturating_sub(1);
            match life.waiters {
                0 => tracked.take_notice(&mut life),
                _ => None,
            }
        };
        if let Some(output) = notice {
            tracked.deliver(output);
        }
    }
}

impl Tracked {
    /// Creates the artifact, starts the journal and the command, and
    /// returns the tracked command with its child (not yet supervised).
    pub(crate) fn spawn(
        runtime: &Arc<Inner>,
        session: SessionId,
        id: String,
        artifact: PathBuf,
        spec: &SpawnSpec,
        journal_cap: u64,
        after: &mut Option<AfterCommand>,
    ) -> Result<(Arc<Tracked>, Child), ToolError> {
        let journal_error = |source| ToolError::Journal {
            path: artifact.clone(),
            source,
        };
        // Read too: past the journal cap the tail is put in order in place.
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&artifact)
            .map_err(journal_error)?;
        let (reader, writer) = std::io::pipe().map_err(journal_error)?;
        let writer_err = writer.try_clone().map_err(journal_error)?;
        let journal =
            Journal::start(artifact.clone(), file, reader, journal_cap).map_err(journal_error)?;
        let spawn_error = |source| ToolError::SpawnFailed {
            program: spec.program.display().to_string(),
            source,
        };
        let child = {
            // The command (and its copies of the pipe's write end) is
            // dropped right after the spawn, so the journal sees the end
            // of output once the command's processes close theirs.
            let mut command = tokio::process::Command::new(&spec.program);
            command
                .args(&spec.args)
                .current_dir(&spec.cwd)
                .env_clear()
                .envs(spec.env.iter().map(|(k, v)| (k, v)))
                .env(LINEAGE_VAR, runtime.lineage.value_of(session, spec.role))
                .stdin(Stdio::null())
                .stdout(Stdio::from(writer))
                .stderr(Stdio::from(writer_err))
                .process_group(0)
                .kill_on_drop(true);
            let mappings = PassedBytes::mappings(&spec.fds).map_err(spawn_error)?;
            if !mappings.is_empty() {
                command_fds::CommandFdExt::fd_mappings(&mut command, mappings)
                    .map_err(|e| spawn_error(std::io::Error::other(e)))?;
            }
            match command.spawn() {
                Ok(child) => child,
                Err(source) => {
                    // Nothing ran: leave no empty artifact behind.
                    let _ = std::fs::remove_file(&artifact);
                    return Err(spawn_error(source));
                }
            }
        };
        let group = child
            .id()
            .and_then(|pid| ProcessGroup::led_by(pid).map(|g| (pid, g)));
        let Some((pid, group)) = group else {
            return Err(spawn_error(std::io::Error::other(
                "the command exited before its pid was known",
            )));
        };
        let tracked = Arc::new(Tracked {
            id,
            session,
            pid,
            group,
            display: spec.display.clone(),
            notify_on_exit: spec.notify_on_exit,
            started: Instant::now(),
            journal,
            life: Mutex::new(Life::default()),
            finished: watch::Sender::new(false),
            stop: Notify::new(),
            runtime: Arc::downgrade(runtime),
            after: after.take(),
        });
        Ok((tracked, child))
    }

    /// The file its output is journalled to.
    pub(crate) fn artifact(&self) -> &std::path::Path {
        self.journal.artifact()
    }

    /// The status `list` shows.
    pub(crate) fn status(&self) -> CommandStatus {
        lock(&self.life)
            .outcome
            .map_or(CommandStatus::Running, |o| o.status)
    }

    /// Registers a blocked caller until the returned guard drops.
    pub(crate) fn waiter(self: &Arc<Self>) -> Waiter<'_> {
        lock(&self.life).waiters += 1;
        Waiter(self)
    }

    /// Resolves once the command has ended and its outcome is recorded.
    pub(crate) async fn finished(&self) {
        let mut rx = self.finished.subscribe();
        // The sender lives in `self`, so this cannot fail.
        let _ = rx.wait_for(|done| *done).await;
    }

    /// Marks the command as stopped on request without signalling it (the
    /// caller signals the whole group itself).
    pub(crate) fn mark_stopped(&self) {
        lock(&self.life).stop_requested = true;
    }

    /// Asks the supervisor to stop the command: SIGTERM to the group, a
    /// grace period, then SIGKILL.
    pub(crate) fn request_stop(&self) {
        self.mark_stopped();
        self.stop.notify_one();
    }

    /// Takes the next observation. Returns it and whether it was the final
    /// one (the command ended and this observation saw it).
    pub(crate) fn observe(&self, moment: Moment) -> (ToolOutput, bool) {
        let mut life = lock(&self.life);
        self.observe_locked(&mut life, moment)
    }

    fn observe_locked(&self, life: &mut Life, moment: Moment) -> (ToolOutput, bool) {
        let (facts, ended) = match life.outcome {
            Some(o) => (
                (o.status, o.exit_code, o.signal, o.duration),
                !life.final_taken,
            ),
            None => (
                (CommandStatus::Running, None, None, self.started.elapsed()),
                false,
            ),
        };
        let (status, exit_code, signal, duration) = facts;
        let taken = self.journal.take(life.outcome.is_none());
        if life.outcome.is_some() {
            life.final_taken = true;
        }
        let form = match (moment, status) {
            (Moment::First, CommandStatus::Running) => Form::Yielded {
                command: &self.display,
            },
            (Moment::First, _) => Form::Completed,
            (Moment::Later, _) => Form::Continued,
            (Moment::Preview, _) => Form::Preview,
        };
        let facts = Facts {
            process_id: &self.id,
            pid: self.pid,
            status,
            exit_code,
            signal,
            duration,
            artifact: self.journal.artifact(),
            artifact_bytes: self.journal.artifact_bytes(),
            journal_dropped: self.journal.dropped(),
            notes: if ended { &life.notes } else { &[] },
        };
        (format(form, &facts, &taken), ended)
    }

    /// The exit notice to send now, if this command asked for one and
    /// nobody else will report its end.
    fn take_notice(&self, life: &mut Life) -> Option<ToolOutput> {
        let due =
            self.notify_on_exit && life.waiters == 0 && life.outcome.is_some() && !life.final_taken;
        due.then(|| self.observe_locked(life, Moment::Later).0)
    }

    fn deliver(&self, output: ToolOutput) {
        if let Some(runtime) = self.runtime.upgrade() {
            runtime.notify_exit(self, output);
        }
    }

    /// Runs until the command ends: exit, timeout (SIGKILL to the group)
    /// or a stop request (SIGTERM, grace, SIGKILL). Waits a little for
    /// the journal to read the last bytes, records the outcome, and sends
    /// the exit notice when one is due.
    pub(crate) async fn supervise(
        self: Arc<Self>,
        mut child: Child,
        deadline: Instant,
        grace: Duration,
        drain: Duration,
    ) {
        enum Ending {
            Exited(std::io::Result<ExitStatus>),
            Deadline,
            Stop,
        }
        let ending = tokio::select! {
            status = child.wait() => Ending::Exited(status),
            () = sleep_until(deadline) => Ending::Deadline,
            () = self.stop.notified() => Ending::Stop,
        };
        let (status, timed_out) = match ending {
            Ending::Exited(status) => (status, false),
            Ending::Deadline => {
                self.group.kill();
                (child.wait().await, true)
            }
            Ending::Stop => {
                self.group.terminate();
                let status = match timeout(grace, child.wait()).await {
                    Ok(status) => status,
                    Err(_) => {
                        self.group.kill();
                        child.wait().await
                    }
                };
                // Members that ignored SIGTERM go with the leader.
                self.group.kill();
                (status, false)
            }
        };
        // Final bytes: the pipe closes once every process holding it has
        // exited. A job left running in the background keeps it open; its
        // later output still reaches the artifact but no observation.
        let _ = timeout(drain, self.journal.closed()).await;
        let notes = match &self.after {
            Some(_) => {
                let me = Arc::clone(&self);
                tokio::task::spawn_blocking(move || {
                    me.after
                        .as_ref()
                        .map(|a| a.finish(&me.id))
                        .unwrap_or_default()
                })
                .await
                .unwrap_or_default()
            }
            None => Vec::new(),
        };
        let duration = self.started.elapsed();
        let notice = {
            let mut life = lock(&self.life);
            life.notes = notes;
            let outcome = outcome(status, timed_out, life.stop_requested, duration);
            life.outcome = Some(outcome);
            self.finished.send_replace(true);
            self.take_notice(&mut life)
        };
        if let Some(output) = notice {
            self.deliver(output);
        }
    }
}

fn outcome(
    status: std::io::Result<ExitStatus>,
    timed_out: bool,
    stop_requested: bool,
    duration: Duration,
) -> Outcome {
    let (exit_code, signal) = match &status {
        Ok(s) => (s.code(), s.signal()),
        Err(_) => (None, None),
    };
    let status = match (timed_out, stop_requested, &status) {
        (true, _, _) => CommandStatus::TimedOut,
        (false, true, _) => CommandStatus::Terminated,
        (false, false, Ok(s)) if s.success() => CommandStatus::Succeeded,
        (false, false, _) => CommandStatus::Failed,
    };
    Outcome {
        status,
        exit_code,
        signal,
        duration,
    }
}
