//! One writer per session: a turn runs under the session's lease.
//!
//! Every front end that runs turns on a stored session — `evoflux run`,
//! `sessions resume`, `chat`, `acp` — takes the session's lease in the
//! store ([`evoflux_store::Store::acquire_lease`], the one `evoflux serve`
//! replicas share) before the turn, through [`SessionLease`]: a second
//! process that asks while a turn runs is refused with
//! [`LeaseError::Busy`], which names the holder, instead of interleaving
//! its messages with the first's.
//!
//! The guard renews the lease at a third of its time to live while it is
//! held, and [`SessionLease::release`] frees it when the turn ends (on
//! cancel and error too). A process that dies holding it (SIGKILL, a lost
//! machine) stops renewing it, and the lease expires with its time to
//! live: the session is never blocked for longer than that. One that died
//! where this process can see it is taken at once: a lease stores its
//! holder's process as data ([`LeaseProcess`]: pid, host, and the boot and
//! PID namespace the pid is counted in), and a holder whose boot id and
//! PID namespace are this process's own and whose pid no longer runs is
//! gone. A host name alone proves nothing (two containers may share one
//! and not see each other's processes), nor does a lease that does not say
//! (one taken before holders were stored): those are waited for.
//!
//! A front end that keeps a session open across turns (a chat, an editor)
//! takes the lease per turn through the session host ([`crate::host`]), which
//! opens the session again under the lease when another holder ran it since
//! this harness last held it ([`SessionLease::is_stale`]).

use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use evoflux_core::ids::SessionId;
use evoflux_store::{LeaseClaim, LeaseHolder, LeaseProcess, PidNamespace, Store, StoreError};
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// How long a lease lasts without renewal (renewed at a third of it): how
/// long a session stays blocked by a process that died holding it.
pub const LEASE_TTL: Duration = Duration::from_secs(30);

/// Who takes a session's lease: a front end in this process (`evoflux
/// run (pid 4242) on host build-7`), with the lease's time to live. Each
/// lease it takes is stored with the time it was taken (`… since
/// 2026-05-01 10:00:00 UTC`), which is what a refused process is told, and
/// with its process ([`Holder::process`]), which tells another process
/// whether it still runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Holder {
    name: Arc<str>,
    process: Option<LeaseProcess>,
    ttl: Duration,
}

impl Holder {
    /// This process as `front_end` (`"evoflux run"`), with [`LEASE_TTL`]:
    /// named by the front end, the process id and the host name.
    pub fn process(front_end: &str) -> Holder {
        let process = this_process();
        Holder {
            name: format!("{front_end} (pid {}) on host {}", process.pid, process.host).into(),
            process: Some(process),
            ttl: LEASE_TTL,
        }
    }

    /// A holder named `name` as it is, with [`LEASE_TTL`], that says
    /// nothing of its process: its leases are waited for until they
    /// expire. The name must be unique among the processes sharing the
    /// store.
    pub fn named(name: impl Into<Arc<str>>) -> Holder {
        Holder {
            name: name.into(),
            process: None,
            ttl: LEASE_TTL,
        }
    }

    /// The same process, as one of several holders it runs (`evoflux serve
    /// (pid N) on host H, replica ID`): `instance` follows its name.
    #[must_use]
    pub fn instance(mut self, instance: &str) -> Holder {
        self.name = format!("{}, {instance}", self.name).into();
        self
    }

    /// The same holder with leases that live `ttl` without renewal.
    #[must_use]
    pub fn with_ttl(mut self, ttl: Duration) -> Holder {
        self.ttl = ttl;
        self
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn ttl(&self) -> Duration {
        self.ttl
    }

    /// The process its leases are stored with ([`Holder::process`]).
    pub fn lease_process(&self) -> Option<&LeaseProcess> {
        self.process.as_ref()
    }

    /// Whether `held`, a lease's holder as the store has it, is a lease
    /// this holder took. One that does not say its name never is.
    pub fn took(&self, held: &LeaseHolder) -> bool {
        held.name.as_deref() == Some(&*self.name)
    }

    /// The key one lease is stored under, and what a refused process is
    /// told: the name and when it was taken.
    fn stamped(&self) -> String {
        format!(
            "{} since {}",
            self.name,
            chrono::Utc::now().format("%Y-%m-%d %H:%M:%S UTC")
        )
    }
}

impl fmt::Display for Holder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name)
    }
}

/// This process: its id, the machine's name and where the id is counted.
fn this_process() -> LeaseProcess {
    LeaseProcess {
        pid: std::process::id(),
        host: host_name(),
        namespace: pid_namespace(),
    }
}

/// This machine's name, as well as it can be told without a system call:
/// the kernel's (Linux), the `HOSTNAME` environment variable, or the
/// `hostname` command. For people to read: it identifies nothing.
fn host_name() -> String {
    static NAME: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    NAME.get_or_init(|| {
        let read = |path: &str| {
            std::fs::read_to_string(path)
                .ok()
                .map(|s| s.trim().to_owned())
        };
        read("/proc/sys/kernel/hostname")
            .or_else(|| read("/etc/hostname"))
            .or_else(|| std::env::var("HOSTNAME").ok())
            .or_else(|| {
                std::process::Command::new("hostname")
                    .output()
                    .ok()
                    .filter(|o| o.status.success())
                    .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
            })
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| "unknown".to_owned())
    })
    .clone()
}

/// Where this process's id is counted (Linux): the kernel's boot id and
/// the inode of this process's PID namespace. `None` where either cannot
/// be read (another system, no `/proc`): then no holder is taken for dead.
fn pid_namespace() -> Option<PidNamespace> {
    static NAMESPACE: std::sync::OnceLock<Option<PidNamespace>> = std::sync::OnceLock::new();
    NAMESPACE
        .get_or_init(|| {
            use std::os::unix::fs::MetadataExt;
            let boot_id = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").ok()?;
            let boot_id = boot_id.trim();
            if boot_id.is_empty() {
                return None;
            }
            // The link's target (`pid:[4026531836]`) is the namespace's
            // file, whose inode names it.
            let inode = std::fs::metadata("/proc/self/ns/pid").ok()?.ino();
            Some(PidNamespace {
                boot_id: boot_id.to_owned(),
                inode,
            })
        })
        .clone()
}

/// Whether `held`, a lease's holder, is a process that no longer runs:
/// only when it counts its pid where this process does (the same boot id
/// and PID namespace) and the kernel says there is no such process. A
/// holder that does not say where, or says elsewhere, is never taken for
/// dead: its lease expires.
fn holder_died(held: &LeaseHolder) -> bool {
    let Some(process) = &held.process else {
        return false;
    };
    let (Some(theirs), Some(ours)) = (&process.namespace, pid_namespace()) else {
        return false;
    };
    if *theirs != ours {
        return false;
    }
    i32::try_from(process.pid)
        .ok()
        .and_then(rustix::process::Pid::from_raw)
        .is_some_and(|pid| rustix::process::test_kill_process(pid) == Err(rustix::io::Errno::SRCH))
}

/// Why a session's lease was not taken. Closed.
#[derive(Debug, thiserror::Error)]
pub enum LeaseError {
    /// Another process runs a turn on the session.
    #[error(
        "session {session} is busy: held by {holder}; try again when its turn ends (a holder that died frees it within {} s)",
        ttl.as_secs()
    )]
    Busy {
        session: SessionId,
        /// The holder as the store has it: front end, process, host, since.
        holder: String,
        /// How long the lease lives without renewal.
        ttl: Duration,
    },
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl LeaseError {
    /// The stable code of this error.
    pub fn code(&self) -> &'static str {
        match self {
            LeaseError::Busy { .. } => "session/busy",
            LeaseError::Store(e) => e.code(),
        }
    }
}

/// The stable code of a turn stopped because its lease was lost.
pub const LEASE_LOST: &str = "session/lease-lost";

/// A session's lease, held: renewed in the background until
/// [`SessionLease::release`]. Dropping it stops the renewal and frees the
/// lease on the current runtime if one still runs; otherwise it expires.
#[derive(Debug)]
pub struct SessionLease {
    store: Store,
    session: SessionId,
    /// The holder string the store has.
    holder: String,
    epoch: i64,
    stale: bool,
    lost: watch::Receiver<bool>,
    renewal: Option<JoinHandle<()>>,
}

impl SessionLease {
    /// Takes `session`'s lease for `holder`, or [`LeaseError::Busy`] naming
    /// who holds it. The session must exist.
    pub async fn acquire(
        store: &Store,
        session: SessionId,
        holder: &Holder,
    ) -> Result<SessionLease, LeaseError> {
        let stamped = holder.stamped();
        let claim = LeaseClaim {
            holder: &stamped,
            name: Some(holder.name()),
            process: holder.lease_process(),
        };
        let ttl = holder.ttl();
        // A holder that ends between the two reads is asked again.
        for _ in 0..3 {
            if let Some(lease) = store.acquire_lease(session, claim, ttl).await? {
                return Ok(SessionLease::held(
                    store.clone(),
                    session,
                    stamped,
                    ttl,
                    lease.epoch,
                ));
            }
            if let Some(held) = store.lease_holder(session).await?
                && held.running
            {
                if !holder_died(&held) {
                    return Err(LeaseError::Busy {
                        session,
                        holder: held.holder,
                        ttl,
                    });
                }
                // Killed where this process sees it: its lease is freed
                // now, not at its expiry (and no server finishes its turn).
                tracing::info!(session = %session, holder = %held.holder, "taking the lease of a process that no longer runs");
                store.release_lease(session, &held.holder).await?;
            }
        }
        let holder = store
            .lease_holder(session)
            .await?
            .map_or_else(|| "another process".to_owned(), |h| h.holder);
        Err(LeaseError::Busy {
            session,
            holder,
            ttl,
        })
    }

    /// A lease just taken; its renewal starts now.
    fn held(
        store: Store,
        session: SessionId,
        holder: String,
        ttl: Duration,
        epoch: i64,
    ) -> SessionLease {
        let (lost_tx, lost) = watch::channel(false);
        let renewal = {
            let store = store.clone();
            let holder = holder.clone();
            tokio::spawn(async move {
                let every = ttl / 3;
                loop {
                    tokio::time::sleep(every).await;
                    match store.renew_lease(session, &holder, ttl).await {
                        Ok(true) => {}
                        Ok(false) => {
                            tracing::warn!(session = %session, "lost the session's lease: another process took it");
                            let _ = lost_tx.send(true);
                            // The sender stays, so `lost()` keeps seeing it.
                            std::future::pending::<()>().await;
                        }
                        // The database may come back before the lease ends.
                        Err(e) => {
                            tracing::warn!(session = %session, error = %e, "cannot renew the session's lease");
                        }
                    }
                }
            })
        };
        SessionLease {
            store,
            session,
            holder,
            epoch,
            stale: false,
            lost,
            renewal: Some(renewal),
        }
    }

    pub fn session(&self) -> SessionId {
        self.session
    }

    /// The holder as the store has it.
    pub fn holder(&self) -> &str {
        &self.holder
    }

    /// How many times the session's lease was taken, this time included.
    pub fn epoch(&self) -> i64 {
        self.epoch
    }

    /// Another holder ran the session since the harness that took this
    /// lease last held it (or was opened): open it again before the turn.
    pub fn is_stale(&self) -> bool {
        self.stale
    }

    pub(crate) fn set_stale(&mut self, stale: bool) {
        self.stale = stale;
    }

    /// Whether the lease was lost: this process stalled past its time to
    /// live and another took the session.
    pub fn is_lost(&self) -> bool {
        *self.lost.borrow()
    }

    /// Resolves when the lease is lost (see [`SessionLease::is_lost`]); a
    /// turn running under it should be cancelled then. Never resolves
    /// otherwise.
    pub fn lost(&self) -> impl Future<Output = ()> + Send + 'static {
        let mut lost = self.lost.clone();
        async move {
            if lost.wait_for(|l| *l).await.is_err() {
                std::future::pending::<()>().await;
            }
        }
    }

    /// Frees the lease for the session's next turn, anyone's. Signals other
    /// processes left for this turn (a cancel through `evoflux serve`'s API)
    /// go with it, so none reaches the next holder's turn.
    pub async fn release(mut self) -> Result<(), StoreError> {
        self.stop_renewal();
        let drained = self.store.take_signals(self.session).await;
        let released = self.store.release_lease(self.session, &self.holder).await;
        drained.and(released)
    }

    fn stop_renewal(&mut self) -> bool {
        match self.renewal.take() {
            Some(task) => {
                task.abort();
                true
            }
            None => false,
        }
    }
}

impl Drop for SessionLease {
    fn drop(&mut self) {
        // Not released (a panic, an early return): free it if a runtime
        // still runs, else its time to live does.
        if self.stop_renewal()
            && let Ok(rt) = tokio::runtime::Handle::try_current()
        {
            let store = self.store.clone();
            let session = self.session;
            let holder = std::mem::take(&mut self.holder);
            rt.spawn(async move {
                if let Err(e) = store.release_lease(session, &holder).await {
                    tracing::warn!(session = %session, error = %e, "cannot release the session's lease; it expires");
                }
            });
        }
    }
}

/// The lease epoch a harness opened now is current at: the stored epoch,
/// or the one before it while a turn runs under it (what is read now may
/// miss the end of that turn).
pub async fn synced_epoch(store: &Store, session: SessionId) -> Result<i64, StoreError> {
    let epoch = store.lease_epoch(session).await?;
    let running = store
        .lease_holder(session)
        .await?
        .is_some_and(|h| h.running);
    Ok(if running { epoch - 1 } else { epoch })
}
