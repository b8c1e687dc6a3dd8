//! `evoflux run`: one task from the command line, and what the command
//! line's front ends share — opening a session, the event printers, the
//! approval and trust prompts, signals (`evoflux chat` is in
//! [`super::chat`], `evoflux sessions` in [`super::sessions`]).
//!
//! The commands only assemble a [`RunSetup`] — graph, lead, model, store —
//! and render the harness's event stream; the loop itself lives in
//! `evoflux-harness`.

use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Context as _;
use clap::Args;
use evoflux_core::AppMode;
use evoflux_core::ids::SessionId;
use evoflux_harness::approval::{ApprovalSubject, Remember};
use evoflux_harness::host::BoxFuture;
use evoflux_harness::{
    ApprovalDecision, ApprovalRequest, Approver, Decided, DecidedBy, DecisionKind, Event,
    EventSink, Harness, HarnessError, Holder, HostError, HostFrontEnd, HostOptions, HostWiring,
    Limits, ModelOrigin, NonInteractive, Reopen, SessionBuilder, SessionError, SessionHost,
    SessionLease, SessionOptions, ToolStatus, TurnEnd, TurnOptions, TurnOutcome, TurnStatus,
};
use evoflux_store::{Session, StoreError};
use evoflux_tools::ProcessRuntime;

use super::sessions::LIST_SESSIONS;
use crate::cli::SourceArgs;
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

#[derive(Debug, Args)]
pub struct RunArgs {
    #[command(flatten)]
    pub session: SessionArgs,
    /// A JSON Schema file: the run must end with a result matching it
    /// (delivered by the model through `final_output`, printed as JSON).
    #[arg(long, value_name = "FILE")]
    pub output_schema: Option<PathBuf>,
    /// The task. With --session, a new message or the answer to the
    /// agent's open question.
    pub task: String,
}

pub(crate) fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")
}

pub fn run(out: &Output, args: &RunArgs) -> anyhow::Result<Exit> {
    let rt = runtime()?;
    rt.block_on(async {
        let schema = match args.output_schema.as_deref().map(read_schema).transpose() {
            Ok(schema) => schema,
            Err(diagnostic) => {
                out.diagnostics(&evoflux_core::Diagnostics::from(vec![*diagnostic]));
                return Ok(Exit::Invalid);
            }
        };
        let wiring = non_interactive(event_sink(out));
        let processes = process_runtime(out)?;
        let (harness, lease) = match open(
            out,
            &args.session,
            wiring.events(),
            wiring.approver(),
            &processes,
            OpenLease::Take("evoflux run"),
        )
        .await?
        {
            Ok(opened) => opened,
            Err(exit) => return Ok(exit),
        };
        one_turn(
            out,
            (harness, wiring),
            &args.session,
            lease,
            &processes,
            Some(&args.task),
            TurnOptions {
                output_schema: schema,
            },
        )
        .await
    })
}

/// Runs one non-interactive turn on the session host, under the session's
/// `lease` (held since the session opened), until it ends, Ctrl-C/SIGTERM
/// arrives or the lease is lost — both cancel through the host — then
/// stops everything the session started (no command process or MCP server
/// outlives evoflux) and releases the lease.
pub(crate) async fn one_turn(
    out: &Output,
    opened: (Harness, HostWiring),
    args: &SessionArgs,
    lease: Option<SessionLease>,
    processes: &ProcessRuntime,
    input: Option<&str>,
    options: TurnOptions,
) -> anyhow::Result<Exit> {
    let (harness, wiring) = opened;
    let session = harness.session().clone();
    let host = SessionHost::start(
        harness,
        wiring,
        Arc::new(CliFront::new(out, args, processes)?),
        // The lease is this process's for as long as it runs.
        HostOptions::default(),
    );
    let ended = match host.submit(input.map(str::to_owned), options).await {
        Ok(turn) => {
            let lost = lease.as_ref().map(SessionLease::lost);
            let lost = async move {
                match lost {
                    Some(lost) => lost.await,
                    None => std::future::pending().await,
                }
            };
            tokio::pin!(lost);
            let ended = turn.ended();
            tokio::pin!(ended);
            let mut stopped = None;
            loop {
                tokio::select! {
                    ended = &mut ended => break ended.map(|end| (end, stopped)),
                    () = shutdown_signal(), if stopped.is_none() => {
                        stopped = Some(Stopped::Interrupted);
                        host.cancel();
                    }
                    () = &mut lost, if stopped.is_none() => {
                        stopped = Some(Stopped::LeaseLost);
                        host.cancel();
                    }
                }
            }
        }
        Err(e) => Err(e),
    };
    host.close().await;
    processes.shutdown().await;
    release(lease).await;
    let id = session.id;
    Ok(match ended {
        Ok((TurnEnd::Completed(outcome), _)) => finish(out, &session, Ok(outcome)),
        Err(HostError::Turn(e)) => finish(out, &session, Err(e)),
        Err(e) => {
            out.failure(&anyhow::anyhow!("{e} [{}]", e.code()));
            Exit::Failure
        }
        Ok((TurnEnd::Cancelled, Some(Stopped::LeaseLost))) => {
            out.failure(&anyhow::anyhow!(
                "the turn was stopped: another process took session {id} after this one \
                 could not renew its lease [{}]",
                evoflux_harness::lease::LEASE_LOST
            ));
            Exit::Failure
        }
        Ok((TurnEnd::Cancelled, _)) => {
            eprintln!("interrupted; the session is saved: evoflux sessions resume {id}");
            Exit::Interrupted
        }
    })
}

/// How a CLI front end opens its hosted session again (another process ran
/// it, or its sources changed): on its process runtime, with the command
/// line's model-call limit.
#[derive(Debug)]
pub(crate) struct CliFront {
    app: evoflux_harness::AppContext,
    processes: ProcessRuntime,
    limits: Limits,
}

impl CliFront {
    pub(crate) fn new(
        out: &Output,
        args: &SessionArgs,
        processes: &ProcessRuntime,
    ) -> anyhow::Result<CliFront> {
        let dirs = match super::resolve_dirs(out) {
            Ok(d) => d,
            Err(_) => anyhow::bail!("cannot resolve evoflux's directories"),
        };
        Ok(CliFront {
            app: super::app_context(&dirs)?,
            processes: processes.clone(),
            limits: Limits {
                model_calls_per_turn: args.max_model_calls,
                ..Limits::default()
            },
        })
    }
}

impl HostFrontEnd for CliFront {
    fn reopen<'a>(&'a self, reopen: Reopen<'a>) -> BoxFuture<'a, Result<Harness, SessionError>> {
        Box::pin(async move {
            let builder = reopen
                .builder(&self.app, self.limits)
                .processes(self.processes.clone());
            Ok(builder.open().await?.harness)
        })
    }
}

/// A non-interactive front end's wiring: events to `events`, every
/// approval refused with a reason the model reads.
pub(crate) fn non_interactive(events: Arc<dyn EventSink>) -> HostWiring {
    HostWiring::new(events, Some(Arc::new(NonInteractive)))
}

/// Why [`one_turn`] stopped a turn before its end.
#[derive(Debug, Clone, Copy)]
enum Stopped {
    Interrupted,
    LeaseLost,
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
    let dirs = match super::resolve_dirs(out) {
        Ok(d) => d,
        Err(_) => anyhow::bail!("cannot resolve the data directory"),
    };
    Ok(ProcessRuntime::new(
        super::app_context(&dirs)?.runtime_config(),
    ))
}

/// Resolves on Ctrl-C, SIGTERM or SIGHUP.
pub(crate) async fn shutdown_signal() {
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        () = terminate_signal() => {}
    }
}

/// Resolves on SIGTERM or SIGHUP: a closed terminal stops evoflux as
/// SIGTERM does, its commands and servers stopped, not left behind. Never
/// resolves where there are no such signals.
pub(crate) async fn terminate_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match (
            signal(SignalKind::terminate()),
            signal(SignalKind::hangup()),
        ) {
            (Ok(mut term), Ok(mut hup)) => {
                tokio::select! {
                    _ = term.recv() => {}
                    _ = hup.recv() => {}
                }
            }
            (Ok(mut term), Err(_)) => {
                let _ = term.recv().await;
            }
            (Err(_), _) => std::future::pending::<()>().await,
        }
    }
    #[cfg(not(unix))]
    std::future::pending::<()>().await;
}

/// Reads `--output-schema`: a file that cannot be read or is not JSON is
/// the user's input to fix (exit 3), named with what to do.
fn read_schema(path: &Path) -> Result<serde_json::Value, Box<evoflux_core::Diagnostic>> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        Box::new(
            evoflux_core::Diagnostic::error(
                "run/output-schema-unreadable",
                format!("cannot read the output schema: {e}; give the path of a JSON Schema file"),
            )
            .with_file(path)
            .with_field("--output-schema"),
        )
    })?;
    serde_json::from_str(&text).map_err(|e| {
        Box::new(
            evoflux_core::Diagnostic::error(
                "run/output-schema-invalid",
                format!("the output schema is not valid JSON ({e}); give a JSON Schema document"),
            )
            .with_file(path)
            .with_line(u32::try_from(e.line()).unwrap_or(u32::MAX))
            .with_field("--output-schema"),
        )
    })
}

/// Prints what the user needs after a turn and picks the exit code:
/// 0 completed, 1 failed or stopped by a limit (or a dispatched worker's
/// result missed its contract), 4 waiting for an answer.
fn finish(out: &Output, session: &Session, outcome: Result<TurnOutcome, HarnessError>) -> Exit {
    match outcome {
        Ok(o) => {
            if o.status == TurnStatus::Completed
                && !out.json
                && let Some(output) = &o.output
            {
                println!(
                    "{}",
                    serde_json::to_string_pretty(output).unwrap_or_default()
                );
            }
            if o.status == TurnStatus::WaitingForInput {
                if !out.json {
                    eprintln!(
                        "session {} is waiting for your answer: evoflux sessions resume {} \"<answer>\"",
                        session.id, session.id
                    );
                }
                return Exit::Waiting;
            }
            // What the turn's end means is the harness's to say.
            let diags = o.diagnostics();
            if diags.is_empty() {
                return Exit::Ok;
            }
            out.diagnostics(&diags);
            if !out.json {
                let id = session.id;
                match o.status {
                    TurnStatus::LimitReached => {
                        eprintln!("continue with `evoflux sessions resume {id}`");
                    }
                    TurnStatus::Completed if !o.unmet_contracts.is_empty() => {
                        eprintln!("`evoflux sessions show <session>` shows what a worker did");
                    }
                    TurnStatus::Completed
                    | TurnStatus::WaitingForInput
                    | TurnStatus::CostLimitReached
                    | TurnStatus::OutputMissing => {}
                }
            }
            Exit::Failure
        }
        // The event stream has shown the error.
        Err(_) => Exit::Failure,
    }
}

/// Opens the session these arguments name through the harness's
/// [`SessionBuilder`]; this front end only words what went wrong and picks
/// the exit code.
/// On the first chat in an untrusted repository that holds command tools,
/// MCP servers, channels or schedules: asks whether to trust it.
pub(crate) async fn ask_trust(
    out: &Output,
    args: &SessionArgs,
) -> anyhow::Result<Result<(), Exit>> {
    let dirs = match super::resolve_dirs(out) {
        Ok(d) => d,
        Err(exit) => return Ok(Err(exit)),
    };
    let app = super::app_context(&dirs)?;
    let Some(question) = app.trust_question(&args.sources.workspaces)? else {
        return Ok(Ok(()));
    };
    // What trusting it grants is listed, and exactly that is recorded.
    let review = app.trust_review(&question.workspace)?;
    eprint!(
        "{} {}: {} of its sources would run commands or servers for you and wait ({}).\n{}Trust \
         this repository? [y/N] ",
        question.repository.display(),
        match question.since_trust {
            true => "changed since you trusted it",
            false => "is not trusted, so evoflux only reads it",
        },
        question.withheld.len(),
        clip(&question.withheld.join(", "), 200),
        super::trust::render_review(&review)
    );
    let _ = std::io::stderr().flush();
    if let Some(answer) = read_line().await?
        && matches!(answer.trim(), "y" | "Y" | "yes")
    {
        app.grant(&review)?;
        eprintln!("trusted {}", question.repository.display());
    }
    Ok(Ok(()))
}

pub(crate) async fn open(
    out: &Output,
    args: &SessionArgs,
    events: Arc<dyn EventSink>,
    approver: Arc<dyn Approver>,
    processes: &ProcessRuntime,
    lease: OpenLease<'_>,
) -> anyhow::Result<Result<(Harness, Option<SessionLease>), Exit>> {
    let dirs = match super::resolve_dirs(out) {
        Ok(d) => d,
        Err(exit) => return Ok(Err(exit)),
    };
    let app = super::app_context(&dirs)?;
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
    match builder.open().await {
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

pub(crate) async fn read_line() -> anyhow::Result<Option<String>> {
    tokio::task::spawn_blocking(|| {
        let mut line = String::new();
        match std::io::stdin().lock().read_line(&mut line) {
            Ok(0) => Ok(None),
            Ok(_) => Ok(Some(line)),
            Err(e) => Err(anyhow::anyhow!("cannot read stdin: {e}")),
        }
    })
    .await?
}

/// Asks on stdin before a tool that needs approval runs (`evoflux chat`
/// reading a pipe).
#[derive(Debug)]
pub(crate) struct AskApprover;

impl Approver for AskApprover {
    fn approve<'a>(
        &'a self,
        request: &'a ApprovalRequest,
    ) -> evoflux_harness::approval::ApprovalFuture<'a> {
        Box::pin(async move {
            eprint!("{} ", approval_question(request));
            let _ = std::io::stderr().flush();
            let decision = match read_line().await {
                Ok(Some(answer)) => approval_answer(request, &answer),
                _ => denied(request),
            };
            Decided::by_user(decision)
        })
    }
}

/// The question a terminal asks before `request` runs, with the answers it
/// accepts (those its subject may remember).
pub(crate) fn approval_question(request: &ApprovalRequest) -> String {
    let what = clip(&request.arguments.to_string(), 200);
    let options = match request.subject.remember() {
        Remember::Never => "[y]es, this once / [N]o",
        Remember::Session => "[y]es / [s] always this session / [N]o",
        Remember::SessionOrWorkspace => {
            "[y]es / [s] always this session / [w] always in this workspace / [N]o"
        }
    };
    match &request.subject {
        ApprovalSubject::Call => format!("approve `{}` with {what}?\n{options}", request.tool),
        ApprovalSubject::OutsideSandbox { justification } => format!(
            "run `{}` OUTSIDE the sandbox with {what}?\n  the agent says: {justification}\n{options}",
            request.tool
        ),
        ApprovalSubject::Control { path, control } => format!(
            "let `{}` change `{path}`, {control} (it takes effect from the next session)?\n{options}",
            request.tool
        ),
    }
}

/// The decision a typed answer to [`approval_question`] means; anything
/// else denies.
pub(crate) fn approval_answer(request: &ApprovalRequest, answer: &str) -> ApprovalDecision {
    match (answer.trim(), request.subject.remember()) {
        ("y" | "Y" | "yes", _) => ApprovalDecision::Approved,
        ("s" | "S", Remember::Session | Remember::SessionOrWorkspace) => {
            ApprovalDecision::ApprovedForSession
        }
        ("w" | "W", Remember::SessionOrWorkspace) => ApprovalDecision::ApprovedForWorkspace,
        _ => denied(request),
    }
}

pub(crate) fn denied(request: &ApprovalRequest) -> ApprovalDecision {
    ApprovalDecision::Denied {
        reason: format!("The user denied `{}`.", request.tool),
    }
}

/// Where a session's events go: JSON lines with `--json`, text otherwise.
pub(crate) fn event_sink(out: &Output) -> Arc<dyn EventSink> {
    if out.json {
        Arc::new(JsonLines)
    } else {
        Arc::new(HumanEvents::default())
    }
}

/// `--json`: every event as one JSON line on stdout.
#[derive(Debug)]
struct JsonLines;

impl EventSink for JsonLines {
    fn emit(&self, event: &Event) {
        if let Ok(line) = serde_json::to_string(event) {
            let mut stdout = std::io::stdout().lock();
            let _ = writeln!(stdout, "{line}");
            let _ = stdout.flush();
        }
    }
}

/// One line for a web search the provider ran.
pub(crate) fn web_search_line(search: &evoflux_model::WebSearch) -> String {
    let query = search
        .query
        .as_deref()
        .map_or_else(String::new, |q| format!(" \"{}\"", clip(q, 120)));
    match &search.error {
        Some(e) => format!("⌕ web search{query} failed: {e}"),
        None => format!("⌕ web search{query}: {} results", search.sources.len()),
    }
}

/// Adds a cited page to the list under an answer, once: an answer cites
/// the same page in many places.
pub(crate) fn cite_once(list: &mut Vec<evoflux_model::Citation>, c: &evoflux_model::Citation) {
    if !list.iter().any(|d| d.url == c.url) {
        list.push(c.clone());
    }
}

/// One cited page: its title, when known, and its address.
pub(crate) fn citation_line(c: &evoflux_model::Citation) -> String {
    match &c.title {
        Some(t) => format!("{} <{}>", clip(t, 120), c.url),
        None => format!("<{}>", c.url),
    }
}

/// Text for people: the agent's words on stdout as they stream, activity
/// on stderr.
#[derive(Debug, Default)]
pub(crate) struct HumanEvents {
    mid_line: std::sync::atomic::AtomicBool,
    /// Pages the answer being streamed cites, listed once it is complete
    /// (citations arrive in the middle of the text).
    citations: std::sync::Mutex<Vec<evoflux_model::Citation>>,
}

impl HumanEvents {
    fn end_text(&self) {
        if self
            .mid_line
            .swap(false, std::sync::atomic::Ordering::Relaxed)
        {
            println!();
        }
    }
}

impl EventSink for HumanEvents {
    fn emit(&self, event: &Event) {
        match event {
            Event::SessionStarted {
                session_id,
                mode,
                lead,
                model,
                resumed,
                ..
            } => eprintln!(
                "{} session {session_id} · {mode} · lead {lead} · {model}",
                if *resumed { "resuming" } else { "new" }
            ),
            Event::TurnStarted { .. } => {}
            Event::TurnCancelled { .. } => {
                self.end_text();
                eprintln!("  turn cancelled; the commands it started were stopped");
            }
            Event::MessageDelta { text } => {
                let mut stdout = std::io::stdout().lock();
                let _ = stdout.write_all(text.as_bytes());
                let _ = stdout.flush();
                self.mid_line
                    .store(!text.ends_with('\n'), std::sync::atomic::Ordering::Relaxed);
            }
            Event::ToolStarted {
                tool, arguments, ..
            } => {
                self.end_text();
                eprintln!("→ {tool} {}", clip(&arguments.to_string(), 160));
            }
            Event::ApprovalRequested { tool, .. } => eprintln!("  {tool} needs approval"),
            Event::ApprovalDecided { decision, by, .. } => match (decision, by) {
                (DecisionKind::Denied, DecidedBy::Policy | DecidedBy::Cancellation) => {}
                (DecisionKind::Denied, DecidedBy::User) => eprintln!("  denied"),
                (
                    DecisionKind::Approved
                    | DecisionKind::ApprovedForSession
                    | DecisionKind::ApprovedForWorkspace,
                    _,
                ) => {}
            },
            Event::ToolEnded {
                tool,
                status: ToolStatus::Cancelled,
                ..
            } => eprintln!("  ✗ {tool}: cancelled"),
            Event::ToolEnded {
                tool,
                is_error,
                content,
                ..
            } => {
                let first = content.lines().next().unwrap_or_default();
                let lines = content.lines().count();
                if *is_error {
                    eprintln!("  ✗ {tool}: {}", clip(first, 200));
                } else {
                    eprintln!("  ✓ {tool} ({lines} lines)");
                }
            }
            Event::CommandEnded {
                process_id,
                command,
                is_error,
                ..
            } => {
                self.end_text();
                let mark = if *is_error { "✗" } else { "✓" };
                eprintln!(
                    "  {mark} background {process_id} `{}` ended",
                    clip(command, 80)
                );
            }
            Event::ContextCompacted {
                covered_messages, ..
            } => {
                self.end_text();
                eprintln!(
                    "  context compacted: a summary stands for the first {covered_messages} messages"
                );
            }
            Event::ModelSwitched { from, to } => {
                self.end_text();
                eprintln!("  model switched from {from} to {to} for this session");
            }
            Event::McpServer {
                server,
                owner,
                state,
                error,
            } => match error {
                Some(e) => eprintln!("  mcp {server} ({owner}): {state}: {e}"),
                None => eprintln!("  mcp {server} ({owner}): {state}"),
            },
            Event::InputRequested {
                question, options, ..
            } => {
                self.end_text();
                if options.is_empty() {
                    println!("? {question}");
                } else {
                    println!("? {question} [{}]", options.join(" / "));
                }
            }
            Event::WebSearch { search } => {
                self.end_text();
                eprintln!("  {}", web_search_line(search));
            }
            Event::Citation { citation } => {
                if let Ok(mut list) = self.citations.lock() {
                    cite_once(&mut list, citation);
                }
            }
            Event::TurnCompleted { .. } => {
                self.end_text();
                let cited = self
                    .citations
                    .lock()
                    .map(|mut l| std::mem::take(&mut *l))
                    .unwrap_or_default();
                for (i, c) in cited.iter().enumerate() {
                    eprintln!("  [{}] {}", i + 1, citation_line(c));
                }
            }
            // Usage is for `--json` readers and `sessions show`.
            Event::ModelCallCompleted { .. } => {}
            Event::Error { code, message } => {
                self.end_text();
                eprintln!("error[{code}]: {message}");
            }
            // The error before it said what failed.
            Event::TurnFailed { .. } => {}
            Event::SourcesApplied { .. } => {
                self.end_text();
                eprintln!("  changed agents, skills, plugins or config apply from this turn");
            }
            Event::GraphInvalid { code, message, .. } => {
                self.end_text();
                eprintln!("error[{code}]: {message}");
            }
            Event::Warning { code, message } => eprintln!("warning[{code}]: {message}"),
            Event::DispatchStarted {
                agent,
                child_session_id,
                ..
            } => {
                self.end_text();
                eprintln!("  ⇢ {agent} (session {child_session_id})");
            }
            Event::DispatchEnded {
                agent, is_error, ..
            } => {
                let mark = if *is_error { "✗" } else { "✓" };
                eprintln!("  {mark} {agent} answered");
            }
            Event::TaskCancelled { agent, .. } => eprintln!("  ✗ {agent} cancelled"),
            Event::ToolsActivated { tools } => {
                self.end_text();
                eprintln!("  + tools turned on: {}", tools.join(", "));
            }
            Event::TaskUpdate { message } => eprintln!("  ⋯ {}", clip(message, 200)),
            // A child's activity, indented under the call that opened it;
            // its words go to stderr so stdout stays the lead's answer.
            Event::Child { event, .. } => match event.as_ref() {
                Event::MessageDelta { .. } | Event::TurnStarted { .. } => {}
                Event::ToolStarted {
                    tool, arguments, ..
                } => eprintln!("    → {tool} {}", clip(&arguments.to_string(), 140)),
                Event::ToolEnded {
                    tool,
                    is_error,
                    content,
                    ..
                } => {
                    let first = content.lines().next().unwrap_or_default();
                    match is_error {
                        true => eprintln!("      ✗ {tool}: {}", clip(first, 160)),
                        false => eprintln!("      ✓ {tool}"),
                    }
                }
                Event::Error { code, message } => eprintln!("    error[{code}]: {message}"),
                Event::Warning { code, message } => {
                    eprintln!("    warning[{code}]: {message}");
                }
                Event::TaskUpdate { message } => eprintln!("    ⋯ {}", clip(message, 200)),
                _ => {}
            },
        }
    }
}

pub(crate) fn clip(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_owned();
    }
    let head: String = s.chars().take(max).collect();
    format!("{head}…")
}
