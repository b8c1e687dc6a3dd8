//! Opening a session for the command line: the arguments that select it
//! ([`SessionArgs`]), opening it through the application's [`SessionBuilder`]
//! with the errors worded for a terminal, its lease, and how the session
//! host reopens it ([`CliFront`]). Shared by `run`, `chat` and
//! `sessions resume`.

use std::sync::Arc;

use clap::Args;
use evoflux_app::{ModelOrigin, ReopenBuilder, SessionBuilder, SessionError, SessionOptions};
use evoflux_core::AppMode;
use evoflux_core::ids::SessionId;
use evoflux_harness::host::BoxFuture;
use evoflux_harness::{
    Approver, Event, EventSink, Harness, HarnessError, Holder, HostFrontEnd, HostWiring, Limits,
    NonInteractive, ProcessRuntime, Reopen, ReopenError, SessionLease, StoreError,
};

use crate::cli::SourceArgs;
use crate::commands::sessions::LIST_SESSIONS;
use crate::commands::{app_context, resolve_dirs};
use crate::output::{Exit, Output};

/// What selects and shapes a session, shared by `run`, `chat` and
/// `sessions resume`.
#[derive(Debug, Clone, Args)]
pub struct SessionArgs {
    /// `work` (a session folder is the workspace) or `coding` (the
    /// `--workspace` repositories, default the current directory). Default:
    /// coding when --workspace is given, else work.
    #[arg(long, value_parser = crate::cli::parse_mode)]
    pub mode: Option<AppMode>,
    #[command(flatten)]
    pub sources: SourceArgs,
    /// The lead agent (default: the mode's default lead).
    #[arg(long, value_name = "NAME")]
    pub lead: Option<String>,
    /// The model as `provider:model` (default: the agent's, else config.toml's).
    #[arg(long, value_name = "PROVIDER:MODEL")]
    pub model: Option<String>,
    /// Continue this session instead of starting a new one.
    #[arg(long, value_name = "ID")]
    pub session: Option<String>,
    /// Most model calls in one turn (at least 1).
    #[arg(long, value_name = "N", default_value_t = Limits::default().model_calls_per_turn,
          value_parser = clap::value_parser!(u32).range(1..))]
    pub max_model_calls: u32,
}

/// Opens the session these arguments name through the application's
/// [`SessionBuilder`]; this front end only words what went wrong and picks
/// the exit code.
pub(crate) async fn open(
    out: &Output,
    args: &SessionArgs,
    events: Arc<dyn EventSink>,
    approver: Arc<dyn Approver>,
    processes: &ProcessRuntime,
    lease: OpenLease<'_>,
) -> anyhow::Result<Result<(Harness, Option<SessionLease>), Exit>> {
    let dirs = match resolve_dirs(out) {
        Ok(d) => d,
        Err(exit) => return Ok(Err(exit)),
    };
    let app = app_context(&dirs)?;
    let resume = match &args.session {
        Some(id) => match id.parse::<SessionId>() {
            Ok(id) => Some(id),
            Err(e) => {
                out.failure(&anyhow::anyhow!("--session {id}: {e}"));
                return Ok(Err(Exit::Invalid));
            }
        },
        None => None,
    };
    let options = SessionOptions {
        mode: args.mode,
        workspaces: args.sources.workspaces.clone(),
        lead: args.lead.clone(),
        model: args.model.clone(),
        resume,
        limits: Limits {
            model_calls_per_turn: args.max_model_calls,
            ..Limits::default()
        },
    };
    let builder = SessionBuilder::new(&app, options)
        .events(events.clone())
        .approver(approver)
        .processes(processes.clone());
    let builder = match lease {
        OpenLease::Take(front_end) => builder.lease(Holder::process(front_end)),
        OpenLease::PerTurn => builder,
    };
    // The data directory is pruned when it is due, as a step of its own
    // before the session opens.
    let opened = async {
        let store = app.open_store().await?;
        app.prune_if_due(&store).await;
        builder.store(store).open().await
    };
    match opened.await {
        Ok(opened) => {
            out.diagnostics(&opened.diagnostics);
            if opened.model_origin == ModelOrigin::Embedded && !out.json {
                embedded_model_note(&opened.model);
            }
            Ok(Ok((opened.harness, opened.lease)))
        }
        Err(e) => {
            report_open_error(out, events.as_ref(), &e);
            Ok(Err(if e.is_busy() {
                Exit::Busy
            } else if e.is_invalid_input() {
                Exit::Invalid
            } else {
                Exit::Failure
            }))
        }
    }
}

/// How [`open`] leases the session ([`evoflux_harness::lease`]).
#[derive(Debug, Clone, Copy)]
pub(crate) enum OpenLease<'a> {
    /// Taken while opening, for this front end (`"evoflux run"`), and held
    /// until its turn ends.
    Take(&'a str),
    /// Taken per turn later, by the session host: `chat`.
    PerTurn,
}

/// Says that no model is configured and the offline demo model runs.
fn embedded_model_note(model: &evoflux_core::config::ModelRef) {
    eprintln!(
        "note: no model configured; using the embedded local model `{model}` (an offline demo model; see README for real models)"
    );
}

/// Words an error of opening a session for this command line: session and
/// store errors go to the event stream (as every later error does), the
/// others to stderr with the diagnostics that explain them, each with the
/// command that fixes it where there is one.
fn report_open_error(out: &Output, events: &dyn EventSink, e: &SessionError) {
    if let Some(diags) = e.diagnostics() {
        out.diagnostics(diags);
    }
    let hint = match e {
        SessionError::Store(StoreError::SessionNotFound(_))
        | SessionError::Harness(HarnessError::Store(StoreError::SessionNotFound(_))) => {
            Some(LIST_SESSIONS.to_owned())
        }
        SessionError::Harness(HarnessError::LeadMismatch { persisted, .. }) => Some(format!(
            "resume it without --lead or with --lead {persisted}"
        )),
        SessionError::WorkspaceInWorkMode { .. } => Some(
            "to work in those folders, leave out --mode work (--workspace opens a Coding session); \
             for a Work session, leave out --workspace"
                .to_owned(),
        ),
        _ => None,
    };
    let message = match &hint {
        Some(h) => format!("{e}; {h}"),
        None => e.to_string(),
    };
    match e {
        SessionError::Store(_) | SessionError::Harness(_) | SessionError::Lease(_) => {
            events.emit(&Event::Error {
                code: e.code().to_owned(),
                message,
            })
        }
        SessionError::Provider {
            model,
            origin,
            source,
        } => {
            if *origin == ModelOrigin::Embedded && !out.json {
                embedded_model_note(model);
            }
            let origin = match origin {
                ModelOrigin::Explicit => "--model",
                ModelOrigin::Session
                | ModelOrigin::Agent
                | ModelOrigin::Config
                | ModelOrigin::Embedded
                | ModelOrigin::SkillResolver => origin.as_str(),
            };
            out.failure(&anyhow::anyhow!("model `{model}` ({origin}): {source}"));
        }
        SessionError::Config { .. } => {}
        _ => out.failure(&anyhow::anyhow!("{message} [{}]", e.code())),
    }
}

/// How a CLI front end opens its hosted session again (another process ran
/// it, or its sources changed): on its process runtime, with the command
/// line's model-call limit.
#[derive(Debug)]
pub(crate) struct CliFront {
    app: evoflux_app::AppContext,
    processes: ProcessRuntime,
    limits: Limits,
}

impl CliFront {
    pub(crate) fn new(
        out: &Output,
        args: &SessionArgs,
        processes: &ProcessRuntime,
    ) -> anyhow::Result<CliFront> {
        let dirs = match resolve_dirs(out) {
            Ok(d) => d,
            Err(_) => anyhow::bail!("cannot resolve evoflux's directories"),
        };
        Ok(CliFront {
            app: app_context(&dirs)?,
            processes: processes.clone(),
            limits: Limits {
                model_calls_per_turn: args.max_model_calls,
                ..Limits::default()
            },
        })
    }
}

impl HostFrontEnd for CliFront {
    fn reopen<'a>(&'a self, reopen: Reopen<'a>) -> BoxFuture<'a, Result<Harness, ReopenError>> {
        Box::pin(async move {
            let store = self.app.open_store().await?;
            self.app.prune_if_due(&store).await;
            let builder = reopen
                .builder(&self.app, self.limits)
                .processes(self.processes.clone())
                .store(store);
            Ok(builder.open().await?.harness)
        })
    }
}

/// A non-interactive front end's wiring: events to `events`, every
/// approval refused with a reason the model reads.
pub(crate) fn non_interactive(events: Arc<dyn EventSink>) -> HostWiring {
    HostWiring::new(events, Some(Arc::new(NonInteractive)))
}

/// Releases a session's lease at the end of its turn; a lease that cannot
/// be released expires.
pub(crate) async fn release(lease: Option<SessionLease>) {
    if let Some(lease) = lease
        && let Err(e) = lease.release().await
    {
        tracing::warn!(error = %e, "cannot release the session's lease; it expires");
    }
}

/// The command runtime of this process; artifacts go below the data dir.
pub(crate) fn process_runtime(out: &Output) -> anyhow::Result<ProcessRuntime> {
    let dirs = match resolve_dirs(out) {
        Ok(d) => d,
        Err(_) => anyhow::bail!("cannot resolve the data directory"),
    };
    Ok(ProcessRuntime::new(app_context(&dirs)?.runtime_config()))
}
