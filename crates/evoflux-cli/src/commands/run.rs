//! `evoflux run`, `evoflux chat` and `evoflux sessions`: the agent loop
//! from the command line.
//!
//! The commands only assemble a [`RunSetup`] — graph, lead, model, store —
//! and render the harness's event stream; the loop itself lives in
//! `evoflux-harness`.

use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Context as _;
use clap::{Args, Subcommand};
use evoflux_agents::ToolCatalog;
use evoflux_agents::team::{EffectiveAgentConfig, compile_agent_config, load_agents};
use evoflux_core::config::{ConfigOrigin, ModelRef};
use evoflux_core::dirs::Dirs;
use evoflux_core::ids::SessionId;
use evoflux_core::{AppMode, Diagnostics, Severity};
use evoflux_harness::skills::{ResolverPolicy, SkillRuntime};
use evoflux_harness::{
    ApprovalDecision, ApprovalRequest, Approver, Event, EventSink, Harness, HarnessError, Limits,
    NonInteractive, PipelineOptions, RunSetup, SessionRequest, SystemClock, TurnOptions,
    TurnOutcome, TurnStatus, standard_pipeline,
};
use evoflux_model::{ProviderOptions, SetupError};
use evoflux_store::{Session, Store, WorkspaceRequest};
use evoflux_tools::{ProcessRuntime, RuntimeConfig};

use crate::cli::SourceArgs;
use crate::output::{Exit, Output};

/// What selects and shapes a session, shared by `run`, `chat` and
/// `sessions resume`.
#[derive(Debug, Clone, Args)]
pub struct SessionArgs {
    /// `work` (a session folder is the workspace) or `coding` (the
    /// `--workspace` repositories, default the current directory). Default: work.
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
    /// Most model calls in one turn.
    #[arg(long, value_name = "N", default_value_t = Limits::default().model_calls_per_turn)]
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

#[derive(Debug, Args)]
pub struct ChatArgs {
    #[command(flatten)]
    pub session: SessionArgs,
}

#[derive(Debug, Subcommand)]
pub enum SessionsCommand {
    /// List sessions, newest first.
    List,
    /// Show a session and its transcript (with tool metadata).
    Show { id: String },
    /// Continue a session: send a message (or answer its open question);
    /// without one, continue a turn that was interrupted.
    Resume {
        id: String,
        /// The message or answer.
        message: Option<String>,
        #[arg(long, value_parser = crate::cli::parse_mode)]
        mode: Option<AppMode>,
        #[arg(long = "workspace", value_name = "DIR")]
        workspaces: Vec<PathBuf>,
        #[arg(long, value_name = "PROVIDER:MODEL")]
        model: Option<String>,
    },
}

fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")
}

pub fn run(out: &Output, args: &RunArgs) -> anyhow::Result<Exit> {
    let rt = runtime()?;
    rt.block_on(async {
        let schema = match &args.output_schema {
            Some(path) => Some(read_schema(path)?),
            None => None,
        };
        let events = event_sink(out);
        let processes = process_runtime(out)?;
        let mut harness = match open(
            out,
            &args.session,
            events,
            Arc::new(NonInteractive),
            &processes,
        )
        .await?
        {
            Ok(h) => h,
            Err(exit) => return Ok(exit),
        };
        Ok(one_turn(
            out,
            &mut harness,
            &processes,
            Some(&args.task),
            TurnOptions {
                output_schema: schema,
            },
        )
        .await)
    })
}

pub fn chat(out: &Output, args: &ChatArgs) -> anyhow::Result<Exit> {
    let rt = runtime()?;
    rt.block_on(async {
        let events = event_sink(out);
        let processes = process_runtime(out)?;
        let mut harness =
            match open(out, &args.session, events, Arc::new(AskApprover), &processes).await? {
                Ok(h) => h,
                Err(exit) => return Ok(exit),
            };
        let plugins = match super::resolve_dirs(out) {
            Ok(dirs) => evoflux_plugins::PluginManager::new(evoflux_plugins::PluginPaths::from_dirs(
                &dirs,
            )),
            Err(exit) => return Ok(exit),
        };
        if let Some(q) = harness.pending_question().await? {
            eprintln!("The agent asked: {}", q.question);
        }
        eprintln!(
            "Type a message; `!command` runs a shell command; an empty line or Ctrl-D ends the chat."
        );
        loop {
            eprint!("> ");
            let _ = std::io::stderr().flush();
            let Some(line) = read_line().await? else {
                break;
            };
            let line = line.trim_end_matches(['\n', '\r']).to_owned();
            if line.trim().is_empty() {
                break;
            }
            // Plugins enabled, disabled or edited since the last turn.
            out.diagnostics(&errors_only(&Diagnostics::from(
                harness.sync_plugins(&plugins).await,
            )));
            if let Some(command) = line.strip_prefix('!') {
                let result = harness.user_command(command).await?;
                println!("{}", result.content);
                continue;
            }
            let turn = harness.turn(Some(&line), TurnOptions::default());
            let outcome = tokio::select! {
                outcome = turn => outcome,
                () = shutdown_signal() => {
                    eprintln!("interrupted");
                    break;
                }
            };
            match outcome {
                Ok(_) => {}
                // The event stream already showed the error; the session
                // stays usable for the next message.
                Err(HarnessError::Provider(_)) => {}
                Err(e) => {
                    harness.shutdown().await;
        processes.shutdown().await;
                    return Err(e.into());
                }
            }
        }
        harness.shutdown().await;
        processes.shutdown().await;
        eprintln!(
            "session {} saved; continue it with `evoflux chat --session {}`",
            harness.session().id,
            harness.session().id
        );
        Ok(Exit::Ok)
    })
}

pub fn sessions(out: &Output, command: &SessionsCommand) -> anyhow::Result<Exit> {
    let rt = runtime()?;
    rt.block_on(async {
        let dirs = match super::resolve_dirs(out) {
            Ok(d) => d,
            Err(exit) => return Ok(exit),
        };
        match command {
            SessionsCommand::List => {
                let store = Store::open(dirs.data_dir()).await?;
                let list = store.list_sessions().await?;
                out.result(&list, || {
                    if list.is_empty() {
                        return "no sessions yet; start one with `evoflux run \"task\"`\n".into();
                    }
                    list.iter()
                        .map(|s| {
                            format!(
                                "{}  {:<6}  {:<10}  {}\n",
                                s.id,
                                s.mode().as_str(),
                                s.lead.as_deref().unwrap_or("-"),
                                s.workspace
                                    .roots()
                                    .iter()
                                    .map(|r| r.display().to_string())
                                    .collect::<Vec<_>>()
                                    .join(", ")
                            )
                        })
                        .collect()
                });
                Ok(Exit::Ok)
            }
            SessionsCommand::Show { id } => {
                let id = parse_id(id)?;
                let store = Store::open(dirs.data_dir()).await?;
                let session = store.load(id).await?;
                let transcript = store.transcript(id).await?;
                let pending = store.open_pending_inputs(id).await?;
                let usage = store.usage(id).await?;
                let value = serde_json::json!({
                    "session": session,
                    "transcript": transcript,
                    "pending_inputs": pending,
                    "usage": usage,
                });
                out.result(&value, || {
                    render_transcript(&session, &transcript, &pending)
                });
                Ok(Exit::Ok)
            }
            SessionsCommand::Resume {
                id,
                message,
                mode,
                workspaces,
                model,
            } => {
                let args = SessionArgs {
                    mode: *mode,
                    sources: SourceArgs {
                        workspaces: workspaces.clone(),
                    },
                    lead: None,
                    model: model.clone(),
                    session: Some(id.clone()),
                    max_model_calls: Limits::default().model_calls_per_turn,
                };
                let events = event_sink(out);
                let processes = process_runtime(out)?;
                let mut harness =
                    match open(out, &args, events, Arc::new(NonInteractive), &processes).await? {
                        Ok(h) => h,
                        Err(exit) => return Ok(exit),
                    };
                Ok(one_turn(
                    out,
                    &mut harness,
                    &processes,
                    message.as_deref(),
                    TurnOptions::default(),
                )
                .await)
            }
        }
    })
}

/// Runs one non-interactive turn until it ends or Ctrl-C/SIGTERM arrives,
/// then stops everything the session started: no command process or MCP
/// server outlives evoflux.
async fn one_turn(
    out: &Output,
    harness: &mut Harness,
    processes: &ProcessRuntime,
    input: Option<&str>,
    options: TurnOptions,
) -> Exit {
    let outcome = tokio::select! {
        outcome = harness.turn(input, options) => Some(outcome),
        () = shutdown_signal() => None,
    };
    harness.shutdown().await;
    processes.shutdown().await;
    match outcome {
        Some(outcome) => finish(out, harness.session(), outcome),
        None => {
            eprintln!(
                "interrupted; the session is saved: evoflux sessions resume {}",
                harness.session().id
            );
            Exit::Interrupted
        }
    }
}

/// The command runtime of this process; artifacts go below the data dir.
fn process_runtime(out: &Output) -> anyhow::Result<ProcessRuntime> {
    let dirs = match super::resolve_dirs(out) {
        Ok(d) => d,
        Err(_) => anyhow::bail!("cannot resolve the data directory"),
    };
    Ok(ProcessRuntime::new(RuntimeConfig::new(
        dirs.data_dir().join("artifacts"),
    )))
}

/// Resolves on Ctrl-C or SIGTERM.
async fn shutdown_signal() {
    let ctrl_c = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = ctrl_c => {}
                    _ = term.recv() => {}
                }
            }
            Err(_) => {
                let _ = ctrl_c.await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = ctrl_c.await;
    }
}

fn parse_id(id: &str) -> anyhow::Result<SessionId> {
    Ok(id.parse::<SessionId>()?)
}

fn read_schema(path: &Path) -> anyhow::Result<serde_json::Value> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read the output schema {}", path.display()))?;
    serde_json::from_str(&text).with_context(|| {
        format!(
            "the output schema {} is not valid JSON; give a JSON Schema document",
            path.display()
        )
    })
}

/// Prints what the user needs after a turn and picks the exit code:
/// 0 completed, 1 failed or stopped by a limit, 4 waiting for an answer.
fn finish(out: &Output, session: &Session, outcome: Result<TurnOutcome, HarnessError>) -> Exit {
    match outcome {
        Ok(o) => match o.status {
            TurnStatus::Completed => {
                if !out.json
                    && let Some(output) = &o.output
                {
                    println!(
                        "{}",
                        serde_json::to_string_pretty(output).unwrap_or_default()
                    );
                }
                Exit::Ok
            }
            TurnStatus::WaitingForInput => {
                if !out.json {
                    eprintln!(
                        "session {} is waiting for your answer: evoflux sessions resume {} \"<answer>\"",
                        session.id, session.id
                    );
                }
                Exit::Waiting
            }
            TurnStatus::LimitReached => {
                if !out.json {
                    eprintln!(
                        "error: the turn reached its model-call limit; continue with `evoflux sessions resume {}`",
                        session.id
                    );
                }
                Exit::Failure
            }
            TurnStatus::OutputMissing => {
                if !out.json {
                    eprintln!(
                        "error: the model did not produce a valid final_output for the output schema"
                    );
                }
                Exit::Failure
            }
        },
        // The event stream has shown the error.
        Err(_) => Exit::Failure,
    }
}

/// Builds the run setup for these arguments and opens the session.
async fn open(
    out: &Output,
    args: &SessionArgs,
    events: Arc<dyn EventSink>,
    approver: Arc<dyn Approver>,
    processes: &ProcessRuntime,
) -> anyhow::Result<Result<Harness, Exit>> {
    let dirs = match super::resolve_dirs(out) {
        Ok(d) => d,
        Err(exit) => return Ok(Err(exit)),
    };
    let store = Store::open(dirs.data_dir()).await?;
    let resumed = match &args.session {
        Some(id) => Some(store.load(parse_id(id)?).await?),
        None => None,
    };
    let mode = match &resumed {
        Some(s) => {
            // The persisted mode decides; a different request is refused by
            // the store below with the session's own words.
            args.mode.unwrap_or(s.mode())
        }
        None => args.mode.unwrap_or(AppMode::Work),
    };
    // Compile with the session's repositories when resuming a Coding
    // session, so its project sources are the ones it started with.
    let sources = match (&resumed, args.sources.workspaces.is_empty()) {
        (Some(s), true) if s.mode() == AppMode::Coding => SourceArgs {
            workspaces: s.workspace.roots().to_vec(),
        },
        _ => args.sources.clone(),
    };
    let graph = super::compile_graph(&dirs, &sources)?;
    let mut diags = Diagnostics::new();
    let lead_name = match (&resumed, &args.lead) {
        (Some(s), None) => s.lead.clone(),
        (_, lead) => lead.clone(),
    };
    let directory = load_agents(&graph, mode, &mut diags);
    let team = match directory.team(lead_name.as_deref()) {
        Ok(t) => t,
        Err(e) => {
            out.diagnostics(&errors_only(&diags));
            out.failure(&anyhow::anyhow!("{e}"));
            return Ok(Err(Exit::Invalid));
        }
    };
    let catalog = ToolCatalog::from_graph(&graph);
    let agent: EffectiveAgentConfig = match directory
        .get(&team.lead)
        .and_then(|e| e.raw.as_ref().map(|r| (r, e.source.clone())))
    {
        Some((raw, source)) => compile_agent_config(raw, source, &catalog, &mut diags),
        None => {
            out.failure(&anyhow::anyhow!("lead `{}` cannot be loaded", team.lead));
            return Ok(Err(Exit::Invalid));
        }
    };
    let (loaded, config_diags) = super::config::selected(&graph);
    let Some(loaded) = loaded else {
        out.diagnostics(&config_diags);
        return Ok(Err(Exit::Invalid));
    };
    out.diagnostics(&errors_only(&diags));
    // A misspelled tool in `[approval]` would silently protect nothing.
    let unknown: Diagnostics = loaded
        .config
        .approval
        .keys()
        .filter(|name| catalog.get(name).is_none())
        .map(|name| {
            let mut d = evoflux_core::Diagnostic::warning(
                "config/approval-tool-unknown",
                format!(
                    "[approval] names `{name}`, which is not a tool of the compiled graph; check \
                     its spelling (an MCP tool's qualified name applies once its server is ready)"
                ),
            )
            .with_field(format!("approval.{name}"));
            if let Some(file) = &loaded.file {
                d = d.with_file(file);
            }
            d
        })
        .collect();
    out.diagnostics(&unknown);
    let (model, origin) = match (&args.model, &agent.model) {
        (Some(m), _) => (m.clone(), "--model"),
        (None, Some(m)) => (m.clone(), "the agent's model"),
        (None, None) => (
            loaded.config.model.default.to_string(),
            match loaded.model_origin {
                ConfigOrigin::Embedded => "embedded default",
                ConfigOrigin::File => "config.toml",
            },
        ),
    };
    let model_ref: ModelRef = model.parse().map_err(|e| anyhow::anyhow!("--model: {e}"))?;
    if origin == "embedded default" && !out.json {
        eprintln!(
            "note: no model configured; using the embedded local model `{model_ref}` (an offline demo model; see README for real models)"
        );
    }
    let provider = match provider(&dirs, &model_ref, &loaded.config) {
        Ok(p) => p,
        Err(e) => {
            out.failure(&anyhow::anyhow!("model `{model_ref}` ({origin}): {e}"));
            return Ok(Err(Exit::Failure));
        }
    };
    let skills = skill_runtime(&dirs, &graph, mode, provider.kind());
    // MCP servers: nothing starts here; the session starts the ones its
    // agent is granted, in the background.
    let (mcp, mcp_diags) = evoflux_mcp::McpRuntime::new(
        &graph,
        Some(&evoflux_plugins::PluginManager::new(
            evoflux_plugins::PluginPaths::from_dirs(&dirs),
        )),
        evoflux_mcp::ManagerOptions {
            roots: match mode {
                AppMode::Coding if args.sources.workspaces.is_empty() => {
                    vec![std::env::current_dir()?]
                }
                AppMode::Coding => canonical(&args.sources.workspaces)?,
                AppMode::Work => Vec::new(),
            },
            ..evoflux_mcp::ManagerOptions::default()
        },
    )?;
    out.diagnostics(&errors_only(&Diagnostics::from(mcp_diags)));
    let setup = RunSetup {
        store,
        provider: Arc::from(provider),
        model: model_ref.model.clone(),
        model_label: model_ref.to_string(),
        agent,
        catalog,
        pipeline: standard_pipeline(PipelineOptions {
            on_compacted: Some(skills.compaction_listener()),
            skills: Some(skills.clone()),
            ..PipelineOptions::new(mode)
        })?,
        clock: Arc::new(SystemClock),
        events,
        approver,
        limits: Limits {
            model_calls_per_turn: args.max_model_calls.max(1),
            ..Limits::default()
        },
        can_request_input: true,
        network: evoflux_harness::NetworkAccess::PublicOnly,
        processes: Some(processes.clone()),
        artifacts_root: dirs.data_dir().join("artifacts"),
        mcp: Some(mcp),
        mcp_call_timeout: evoflux_mcp::DEFAULT_CALL_TIMEOUT,
        skills: Some(skills),
        approvals: loaded.config.approval.clone(),
    };
    let request = match &resumed {
        Some(s) => SessionRequest::Resume {
            id: s.id,
            mode: args.mode,
            workspace: if args.sources.workspaces.is_empty() || mode == AppMode::Work {
                None
            } else {
                Some(canonical(&args.sources.workspaces)?)
            },
        },
        None => SessionRequest::New {
            workspace: match mode {
                AppMode::Work => WorkspaceRequest::Work,
                AppMode::Coding => {
                    WorkspaceRequest::Coding(if args.sources.workspaces.is_empty() {
                        vec![std::env::current_dir()?.canonicalize()?]
                    } else {
                        canonical(&args.sources.workspaces)?
                    })
                }
            },
            graph_hash: Some(graph.hash.to_string()),
        },
    };
    let events = setup.events.clone();
    match Harness::open(setup, request).await {
        Ok(h) => Ok(Ok(h)),
        Err(e) => {
            events.emit(&Event::Error {
                code: e.code().to_owned(),
                message: e.to_string(),
            });
            Ok(Err(match e {
                HarnessError::Store(_) | HarnessError::LeadMismatch { .. } => Exit::Invalid,
                _ => Exit::Failure,
            }))
        }
    }
}

/// The session's skills: the graph's skill slots (bundled, plugin, user and
/// project) with the user's runtime preferences applied. The implicit
/// resolver asks the session's provider, except a scripted one (its script
/// is the main conversation, with no answers to spare for a side call) and
/// the embedded local demo model (too small for a reliable decision).
fn skill_runtime(
    dirs: &Dirs,
    graph: &evoflux_graph::CompiledGraph,
    mode: AppMode,
    provider: evoflux_core::config::ProviderKind,
) -> Arc<SkillRuntime> {
    use evoflux_core::config::ProviderKind;
    let overlay = evoflux_skills::SkillSettingsStore::in_config_dir(dirs.config_dir()).read();
    let options = evoflux_skills::LoadOptions::new(
        evoflux_skills::PlaceholderDirs::from_config_dir(dirs.config_dir()),
    );
    let (slots, _) = evoflux_skills::selection::skill_slots(
        graph,
        &options,
        &overlay,
        evoflux_skills::selection::Depth::Settled,
    );
    let resolver = match provider {
        ProviderKind::Openai | ProviderKind::Anthropic => ResolverPolicy::ActiveProvider,
        ProviderKind::Local | ProviderKind::Scripted => ResolverPolicy::Off,
    };
    Arc::new(SkillRuntime::new(
        &slots,
        mode,
        options.placeholders,
        resolver,
    ))
}

fn provider(
    dirs: &Dirs,
    model: &ModelRef,
    config: &evoflux_core::config::HarnessConfig,
) -> Result<Box<dyn evoflux_model::Provider>, SetupError> {
    let options = ProviderOptions {
        cache_dir: Some(dirs.cache_dir().join("models")),
        model_file: None,
        ..ProviderOptions::default()
    };
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
    evoflux_model::resolve(model, config, &cwd, &options)
}

fn canonical(paths: &[PathBuf]) -> anyhow::Result<Vec<PathBuf>> {
    paths
        .iter()
        .map(|p| {
            p.canonicalize()
                .with_context(|| format!("workspace `{}` cannot be used", p.display()))
        })
        .collect()
}

fn errors_only(diags: &Diagnostics) -> Diagnostics {
    diags
        .iter()
        .filter(|d| d.severity == Severity::Error)
        .cloned()
        .collect()
}

async fn read_line() -> anyhow::Result<Option<String>> {
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

/// Asks on the terminal before a tool that needs approval runs.
#[derive(Debug)]
struct AskApprover;

impl Approver for AskApprover {
    fn approve<'a>(
        &'a self,
        request: &'a ApprovalRequest,
    ) -> evoflux_harness::approval::ApprovalFuture<'a> {
        Box::pin(async move {
            eprint!(
                "approve `{}` with {}? [y/N] ",
                request.tool,
                clip(&request.arguments.to_string(), 200)
            );
            let _ = std::io::stderr().flush();
            match read_line().await {
                Ok(Some(answer)) if matches!(answer.trim(), "y" | "Y" | "yes") => {
                    ApprovalDecision::Approved
                }
                _ => ApprovalDecision::Denied {
                    reason: format!("The user denied `{}`.", request.tool),
                },
            }
        })
    }
}

/// Where a session's events go: JSON lines with `--json`, text otherwise.
fn event_sink(out: &Output) -> Arc<dyn EventSink> {
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

/// Text for people: the agent's words on stdout as they stream, activity
/// on stderr.
#[derive(Debug, Default)]
struct HumanEvents {
    mid_line: std::sync::atomic::AtomicBool,
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
            Event::TurnCompleted { .. } => self.end_text(),
            Event::Error { code, message } => {
                self.end_text();
                eprintln!("error[{code}]: {message}");
            }
            Event::Warning { code, message } => eprintln!("warning[{code}]: {message}"),
        }
    }
}

fn clip(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_owned();
    }
    let head: String = s.chars().take(max).collect();
    format!("{head}…")
}

fn render_transcript(
    session: &Session,
    transcript: &[evoflux_store::TranscriptEntry],
    pending: &[evoflux_store::PendingInput],
) -> String {
    use evoflux_model::Message;
    let mut out = format!(
        "session {} · {} · lead {} · {}\n",
        session.id,
        session.mode(),
        session.lead.as_deref().unwrap_or("-"),
        session
            .workspace
            .roots()
            .iter()
            .map(|r| r.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    );
    for e in transcript {
        match &e.message {
            Message::System { content } => out.push_str(&format!("[system] {content}\n")),
            Message::User { content } => out.push_str(&format!("\nuser: {content}\n")),
            Message::Assistant {
                content,
                tool_calls,
            } => {
                if !content.is_empty() {
                    out.push_str(&format!("\nassistant: {content}\n"));
                }
                for c in tool_calls {
                    out.push_str(&format!(
                        "→ {} {}\n",
                        c.name,
                        clip(&c.arguments.to_string(), 160)
                    ));
                }
            }
            Message::Tool {
                content, is_error, ..
            } => {
                let mark = if *is_error { "✗" } else { "✓" };
                out.push_str(&format!(
                    "  {mark} {}\n",
                    clip(content.lines().next().unwrap_or_default(), 160)
                ));
                if let Some(meta) = &e.artifact {
                    out.push_str(&format!("    {meta}\n"));
                }
            }
        }
    }
    for p in pending {
        out.push_str(&format!(
            "\nwaiting for an answer: {}\n",
            p.request
                .get("question")
                .and_then(serde_json::Value::as_str)
                .unwrap_or_default()
        ));
    }
    out
}
