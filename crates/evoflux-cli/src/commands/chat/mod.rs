//! `evoflux chat`: the terminal UI over the harness's session engine.
//!
//! At a terminal: a line editor with history per workspace, bracketed
//! paste and completion ([`editor`]); the agent's words as streaming
//! Markdown and numbered tool lines ([`view`]); slash commands
//! ([`slash`]); Ctrl-C cancels the running turn through the harness's one
//! cancellation path and returns to the prompt. With a pipe on stdin (or
//! `--json`) it stays a line-per-message reader for scripts. The session
//! logic is the harness's; this module only reads keys and draws.

mod complete;
mod editor;
mod markdown;
mod slash;
mod view;

use std::io::Write as _;
use std::path::PathBuf;
use std::sync::Arc;

use clap::Args;
use evoflux_core::AppMode;
use evoflux_core::dirs::Dirs;
use evoflux_harness::sources::{NotApplied, SourceWatch};
use evoflux_harness::{
    ApprovalRequest, Approver, EventSink, Harness, HarnessError, Holder, SessionLease, TurnEnd,
    TurnOptions,
};
use evoflux_tools::ProcessRuntime;
use tokio::sync::Notify;

use super::run::{
    AskApprover, OpenLease, SessionArgs, approval_answer, approval_question, ask_trust, clip,
    denied, event_sink, lease_turn, open, open_reusing, process_runtime, read_line, release,
    runtime, session_row, shutdown_signal, terminate_signal,
};
use crate::output::{Exit, Output};
use complete::Completions;
use editor::{LineEditor, Read, ReadKind};
use markdown::Style;
use slash::{Input, SlashCommand};
use view::ChatView;

#[derive(Debug, Args)]
pub struct ChatArgs {
    #[command(flatten)]
    pub session: SessionArgs,
}

/// Entries of a resumed conversation shown before the prompt.
const REPLAY_ENTRIES: usize = 30;

pub fn chat(out: &Output, args: &ChatArgs) -> anyhow::Result<Exit> {
    use std::io::IsTerminal as _;
    if out.json || !std::io::stdin().is_terminal() {
        return lines(out, args);
    }
    let rt = runtime()?;
    rt.block_on(async {
        let dirs = match super::resolve_dirs(out) {
            Ok(d) => d,
            Err(exit) => return Ok(exit),
        };
        if args.session.session.is_none()
            && let Err(exit) = ask_trust(out, &args.session).await?
        {
            return Ok(exit);
        }
        let style = Style::detect();
        let editor = LineEditor::start()?;
        let cancel = Arc::new(Notify::new());
        let mut chat = Chat {
            out,
            dirs,
            base: SessionArgs {
                session: None,
                ..args.session.clone()
            },
            next: Next::default(),
            view: Arc::new(ChatView::new(style)),
            approver: Arc::new(TerminalApprover {
                editor: editor.clone(),
                cancel: Arc::clone(&cancel),
            }),
            editor,
            processes: process_runtime(out)?,
            cancel,
            holder: Holder::process("evoflux chat"),
            sources: Sources::default(),
        };
        let mut harness = match chat.open(&args.session).await? {
            Ok(h) => h,
            Err(exit) => return Ok(exit),
        };
        chat.opened(&harness, args.session.session.is_some()).await;
        eprintln!(
            "{}",
            style.paint(
                "2",
                "/help lists commands · Alt-Enter inserts a newline · Ctrl-C cancels a turn · Ctrl-D exits"
            )
        );
        let exit = chat.run(&mut harness).await;
        harness.shutdown().await;
        chat.processes.shutdown().await;
        eprintln!(
            "session {} saved; continue it with `evoflux chat --session {}`",
            harness.session().id,
            harness.session().id
        );
        exit
    })
}

/// What `/mode` and `/lead` chose for the next new session.
#[derive(Debug, Default)]
struct Next {
    mode: Option<AppMode>,
    lead: Option<String>,
}

/// What a command asks of the loop.
enum Flow {
    Continue,
    Exit,
}

struct Chat<'a> {
    out: &'a Output,
    dirs: Dirs,
    /// The command line's arguments (without a session), what a new or
    /// reopened session starts from.
    base: SessionArgs,
    next: Next,
    view: Arc<ChatView>,
    approver: Arc<TerminalApprover>,
    editor: LineEditor,
    processes: ProcessRuntime,
    /// Cancels the running turn (Ctrl-C at an approval prompt).
    cancel: Arc<Notify>,
    /// This chat, as the leases of its turns name it.
    holder: Holder,
    /// The sources of the open session, applied between turns.
    sources: Sources,
}

/// The sources a chat's session is compiled from, followed so changes
/// apply between turns by the engine's one rule
/// ([`evoflux_harness::sources::apply`], as the session host applies it for
/// the server and ACP): the session is opened again on them before the
/// next message.
#[derive(Debug, Default)]
struct Sources {
    watch: Option<SourceWatch>,
    applied: u64,
}

impl Sources {
    /// Follows the sources of `harness`'s session.
    fn follow(dirs: &Dirs, harness: &Harness) -> Sources {
        let Ok(app) = super::app_context(dirs) else {
            return Sources::default();
        };
        let roots = app.source_roots(harness.session().workspace.roots());
        match SourceWatch::start(&roots) {
            Ok(watch) => Sources {
                applied: watch.generation(),
                watch: Some(watch),
            },
            Err(e) => {
                tracing::warn!(error = %e, "cannot watch the sources; changes apply to new sessions");
                Sources::default()
            }
        }
    }

    /// Whether the sources changed since they were last applied.
    fn take_change(&mut self) -> bool {
        match &self.watch {
            Some(watch) => watch.take_change(&mut self.applied),
            None => false,
        }
    }
}

/// Applies changed sources with `reopened` (the session opened again on
/// them; its failure was printed where it happened).
async fn apply_sources(
    harness: &mut Harness,
    reopened: anyhow::Result<Result<Harness, Exit>>,
    events: &dyn EventSink,
) -> bool {
    let reopened = match reopened {
        Ok(Ok(new)) => Ok(new),
        Ok(Err(_)) => Err(NotApplied {
            code: "session/sources-not-applied".to_owned(),
            message: "the session cannot be opened on them (said above)".to_owned(),
        }),
        Err(e) => Err(NotApplied {
            code: "session/sources-not-applied".to_owned(),
            message: format!("{e:#}"),
        }),
    };
    evoflux_harness::sources::apply(harness, reopened, events).await
}

impl Chat<'_> {
    async fn open(&self, args: &SessionArgs) -> anyhow::Result<Result<Harness, Exit>> {
        self.open_leased(args, OpenLease::PerTurn).await
    }

    async fn open_leased(
        &self,
        args: &SessionArgs,
        lease: OpenLease<'_>,
    ) -> anyhow::Result<Result<Harness, Exit>> {
        Ok(open(
            self.out,
            args,
            self.view.clone(),
            self.approver.clone(),
            &self.processes,
            lease,
        )
        .await?
        .map(|(harness, _)| harness))
    }

    /// The session's lease for one turn (or a `!command`), the session
    /// opened again under it when another process ran turns since this
    /// chat last did; `None` when another process runs a turn now (said).
    async fn lease(&mut self, harness: &mut Harness) -> anyhow::Result<Option<SessionLease>> {
        let holder = self.holder.clone();
        let view = Arc::clone(&self.view);
        let args = self.reopen_args(harness.session().id.to_string(), None);
        lease_turn(
            harness,
            &holder,
            view.as_ref(),
            async |lease: &SessionLease| {
                let reopened = self.open_leased(&args, OpenLease::Held(lease)).await?;
                if let Ok(reopened) = &reopened {
                    self.opened(reopened, false).await;
                }
                Ok(reopened)
            },
        )
        .await
    }

    /// After a session opened: history, completion and `/show` follow it; a
    /// resumed one replays its conversation.
    async fn opened(&mut self, harness: &Harness, replay: bool) {
        self.sources = Sources::follow(&self.dirs, harness);
        let session = harness.session();
        self.editor.history(history_file(&self.dirs, harness));
        self.editor.set_completions(Completions {
            skills: harness
                .invocable_skills()
                .into_iter()
                .map(|(name, _)| name.to_owned())
                .collect(),
            root: session.workspace.roots().first().cloned(),
        });
        self.view.load(harness.messages());
        if replay {
            self.view.replay(harness.messages(), Some(REPLAY_ENTRIES));
        }
        if let Ok(Some(q)) = harness.pending_question().await {
            eprintln!("The agent asked: {}", q.question);
        }
    }

    async fn run(&mut self, harness: &mut Harness) -> anyhow::Result<Exit> {
        let mut interrupted = false;
        loop {
            let read = tokio::select! {
                read = self.editor.read("› ", ReadKind::Message) => read,
                () = terminate_signal() => break,
            };
            let line = match read {
                Read::Eof => break,
                Read::Interrupted if interrupted => break,
                Read::Interrupted => {
                    interrupted = true;
                    eprintln!(
                        "{}",
                        self.view
                            .style()
                            .paint("2", "(Ctrl-C again or Ctrl-D exits)")
                    );
                    continue;
                }
                Read::Line(line) => line,
            };
            interrupted = false;
            if line.trim().is_empty() {
                continue;
            }
            let input = match slash::parse(&line) {
                Ok(input) => input,
                Err(e) => {
                    eprintln!("{e}");
                    continue;
                }
            };
            match input {
                Input::Command(command) => match self.command(harness, command).await? {
                    Flow::Continue => {}
                    Flow::Exit => break,
                },
                Input::Message(message) => {
                    // Agents, skills, plugins or config changed since the
                    // last turn.
                    if self.sources.take_change() {
                        let args = self.reopen_args(harness.session().id.to_string(), None);
                        let reopened = open_reusing(
                            self.out,
                            &args,
                            self.view.clone(),
                            self.approver.clone(),
                            &self.processes,
                            OpenLease::PerTurn,
                            Some(harness.model_client()),
                        )
                        .await
                        .map(|r| r.map(|(h, _)| h));
                        let view = Arc::clone(&self.view);
                        if apply_sources(harness, reopened, view.as_ref()).await {
                            self.opened(harness, false).await;
                        }
                    }
                    if let Some(command) = message.strip_prefix('!') {
                        let Some(lease) = self.lease(harness).await? else {
                            continue;
                        };
                        let result = harness.user_command(command).await;
                        release(Some(lease)).await;
                        println!("{}", result?.content);
                        continue;
                    }
                    match self.turn(harness, &message).await? {
                        Flow::Continue => {}
                        Flow::Exit => break,
                    }
                }
            }
        }
        Ok(Exit::Ok)
    }

    /// One turn, cancelled by Ctrl-C (or a cancelled approval prompt);
    /// SIGTERM or SIGHUP ends the chat.
    async fn turn(&mut self, harness: &mut Harness, message: &str) -> anyhow::Result<Flow> {
        let Some(lease) = self.lease(harness).await? else {
            return Ok(Flow::Continue);
        };
        let quit = std::cell::Cell::new(false);
        let cancel = Arc::clone(&self.cancel);
        let lost = lease.lost();
        let stop = async {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                () = cancel.notified() => {}
                () = terminate_signal() => quit.set(true),
                () = lost => eprintln!(
                    "error[{}]: another process took this session; the turn was stopped",
                    evoflux_harness::lease::LEASE_LOST
                ),
            }
        };
        let ended = harness
            .turn_or_cancel(Some(message), TurnOptions::default(), stop)
            .await;
        release(Some(lease)).await;
        match ended {
            Ok(TurnEnd::Completed(outcome)) => {
                // What the turn's end means is the harness's to say.
                self.out.diagnostics(&outcome.diagnostics());
                self.status(harness).await;
            }
            // The view showed the turn_cancelled event.
            Ok(TurnEnd::Cancelled) if quit.get() => return Ok(Flow::Exit),
            Ok(TurnEnd::Cancelled) => {}
            // The event stream showed the error; the session stays usable.
            Err(HarnessError::Provider(_)) => {}
            Err(e) => return Err(e.into()),
        }
        Ok(Flow::Continue)
    }

    /// The status line after a turn: session, mode, lead, model, tokens.
    async fn status(&self, harness: &Harness) {
        let s = harness.session();
        let id = s.id.to_string();
        let tokens = match harness.usage().await {
            Ok(u) => format!(
                "{} in / {} out tokens · {} calls · {}",
                u.input_tokens,
                u.output_tokens,
                u.requests,
                u.cost_label()
            ),
            Err(_) => "usage unknown".to_owned(),
        };
        let line = format!(
            "{} · {} · {} · {} · {tokens}",
            &id[id.len().saturating_sub(8)..],
            s.mode(),
            s.lead.as_deref().unwrap_or("-"),
            s.model.as_deref().unwrap_or("-"),
        );
        eprintln!("{}", self.view.style().paint("2", &line));
    }

    async fn command(
        &mut self,
        harness: &mut Harness,
        command: SlashCommand,
    ) -> anyhow::Result<Flow> {
        let style = self.view.style();
        match command {
            SlashCommand::Help => eprint!("{}", slash::help()),
            SlashCommand::Exit => return Ok(Flow::Exit),
            SlashCommand::New => {
                let args = self.new_session_args(harness);
                self.switch(harness, args, false).await?;
            }
            SlashCommand::Sessions => self.sessions(harness).await?,
            SlashCommand::Resume(id) => {
                let args = self.reopen_args(id, None);
                self.switch(harness, args, true).await?;
            }
            SlashCommand::Model(model) => {
                let args = self.reopen_args(harness.session().id.to_string(), Some(model));
                self.switch(harness, args, false).await?;
            }
            SlashCommand::Mode(mode) => {
                self.next.mode = Some(mode);
                self.fresh_or_next(harness, &format!("{mode} mode")).await?;
            }
            SlashCommand::Lead(lead) => {
                self.next.lead = Some(lead.clone());
                self.fresh_or_next(harness, &format!("lead {lead}")).await?;
            }
            SlashCommand::Skills => {
                let skills = harness.invocable_skills();
                if skills.is_empty() {
                    eprintln!("no skills can be invoked in this session");
                }
                for (name, description) in skills {
                    eprintln!("  ${name:<24} {}", clip(description, 100));
                }
            }
            SlashCommand::Tools => {
                for (name, description) in harness.offered_tools() {
                    let first = description.lines().next().unwrap_or_default();
                    eprintln!("  {name:<28} {}", clip(first, 100));
                }
            }
            SlashCommand::Cost => match harness.usage().await {
                Ok(u) => eprintln!("{}", super::run::usage_line(&u)),
                Err(e) => eprintln!("cannot read this session's usage: {e}"),
            },
            SlashCommand::Compact => {
                harness.request_compaction();
                eprintln!(
                    "older turns are summarized at the next model call (recent turns and loaded skills are kept)"
                );
            }
            SlashCommand::Diff => diff(harness, style),
            SlashCommand::Show(n) => match self.view.observation(n) {
                Some((n, o)) => {
                    eprintln!(
                        "{}",
                        style.paint(
                            "1",
                            &format!(
                                "#{n} {}{}",
                                o.tool,
                                if o.is_error { " (failed)" } else { "" }
                            )
                        )
                    );
                    println!("{}", o.content);
                }
                None => eprintln!(
                    "{}",
                    match n {
                        Some(_) => "no tool call has that number; tool lines end with `/show N`",
                        None => "no tool has run in this session yet",
                    }
                ),
            },
            SlashCommand::History => self.view.replay(harness.messages(), None),
        }
        let _ = std::io::stdout().flush();
        Ok(Flow::Continue)
    }

    /// `/mode` and `/lead`: a session that holds no message yet is replaced
    /// by one with the new choice (and removed); otherwise the choice waits
    /// for `/new`, since a persisted session's mode and lead are fixed.
    async fn fresh_or_next(&mut self, harness: &mut Harness, what: &str) -> anyhow::Result<()> {
        let empty = !harness
            .messages()
            .iter()
            .any(|m| matches!(m, evoflux_model::Message::User { .. }));
        if !empty {
            eprintln!("this session's mode and lead are fixed; /new starts a session with {what}");
            return Ok(());
        }
        let old = harness.session().id;
        let args = self.new_session_args(harness);
        if self.switch(harness, args, false).await? {
            let store = super::app_context(&self.dirs)?.open_store().await?;
            let _ = store.delete_session(old).await;
        }
        Ok(())
    }

    /// What `/new` opens: the mode and lead `/mode` and `/lead` chose, else
    /// the current session's mode and the command line's lead; a Coding
    /// session keeps the current repositories.
    fn new_session_args(&self, harness: &Harness) -> SessionArgs {
        let current = harness.session();
        let mode = self.next.mode.unwrap_or(current.mode());
        let workspaces = match (mode, current.mode()) {
            (AppMode::Work, _) => Vec::new(),
            (AppMode::Coding, AppMode::Coding) => current.workspace.roots().to_vec(),
            (AppMode::Coding, AppMode::Work) => self.base.sources.workspaces.clone(),
        };
        SessionArgs {
            mode: Some(mode),
            lead: self.next.lead.clone().or_else(|| self.base.lead.clone()),
            session: None,
            sources: crate::cli::SourceArgs { workspaces },
            ..self.base.clone()
        }
    }

    /// What reopens the persisted session `id` (its mode, lead and
    /// workspace are its own), switching it to `model` when given.
    fn reopen_args(&self, id: String, model: Option<String>) -> SessionArgs {
        reopen_args(&self.base, id, model)
    }

    /// Opens the session `args` name in place of the current one; on
    /// failure the current one stays. `true` when it switched.
    async fn switch(
        &mut self,
        harness: &mut Harness,
        args: SessionArgs,
        replay: bool,
    ) -> anyhow::Result<bool> {
        let old = harness.session().id;
        match self.open(&args).await? {
            Ok(new) => {
                harness.shutdown().await;
                if new.session().id != old {
                    self.processes.terminate_session(old).await;
                }
                *harness = new;
                self.opened(harness, replay).await;
                Ok(true)
            }
            Err(_) => {
                eprintln!("still in session {old}");
                Ok(false)
            }
        }
    }

    async fn sessions(&self, harness: &Harness) -> anyhow::Result<()> {
        let store = super::app_context(&self.dirs)?.open_store().await?;
        let list = evoflux_harness::SessionSummary::list(&store).await?;
        if list.is_empty() {
            eprintln!("no sessions yet");
        }
        for s in list.iter().take(20) {
            let mark = if s.session.id == harness.session().id {
                "*"
            } else {
                " "
            };
            eprintln!("{mark} {}", session_row(s));
        }
        if list.len() > 20 {
            eprintln!("  … {} more: evoflux sessions list", list.len() - 20);
        }
        eprintln!("/resume ID continues one");
        Ok(())
    }
}

/// What reopens the persisted session `id` (its mode, lead and workspace
/// are its own), switching it to `model` when given.
fn reopen_args(base: &SessionArgs, id: String, model: Option<String>) -> SessionArgs {
    SessionArgs {
        mode: None,
        lead: None,
        model,
        session: Some(id),
        sources: crate::cli::SourceArgs {
            workspaces: Vec::new(),
        },
        ..base.clone()
    }
}

/// The history file of a session's workspace: one for Work mode (each
/// session has its own folder), one per set of repositories in Coding.
fn history_file(dirs: &Dirs, harness: &Harness) -> PathBuf {
    let session = harness.session();
    let key = match session.mode() {
        AppMode::Work => "work".to_owned(),
        AppMode::Coding => {
            let roots: Vec<String> = session
                .workspace
                .roots()
                .iter()
                .map(|r| r.display().to_string())
                .collect();
            let hash = evoflux_core::hash::sha256_hex(roots.join("\n").as_bytes());
            format!("coding-{}", &hash.as_str()[..16])
        }
    };
    dirs.data_dir()
        .join("chat-history")
        .join(format!("{key}.txt"))
}

/// `/diff`: each repository's changed files and working-tree diff.
fn diff(harness: &Harness, style: Style) {
    let session = harness.session();
    if session.mode() != AppMode::Coding {
        eprintln!("/diff is for Coding sessions: a Work session's folder is not a repository");
        return;
    }
    let color = match style {
        Style::Ansi => "--color=always",
        Style::Plain => "--color=never",
    };
    for root in session.workspace.roots() {
        eprintln!("{}", style.paint("1", &root.display().to_string()));
        let git = |args: &[&str]| {
            // The repository's fsmonitor, hooks, external diff and
            // textconv never run on the user's behalf.
            evoflux_core::git::command()
                .arg("-C")
                .arg(root)
                .arg("--no-pager")
                .args(args)
                .output()
        };
        match git(&["status", "--short"]) {
            Ok(o) if o.status.success() => {
                let status = String::from_utf8_lossy(&o.stdout);
                if status.trim().is_empty() {
                    eprintln!("  no changes");
                    continue;
                }
                print!("{status}");
            }
            Ok(o) => {
                eprintln!(
                    "  not a git repository: {}",
                    String::from_utf8_lossy(&o.stderr).trim()
                );
                continue;
            }
            Err(e) => {
                eprintln!("  cannot run git: {e}");
                return;
            }
        }
        if let Ok(o) = git(&["diff", "--no-ext-diff", "--no-textconv", color, "HEAD"])
            .or_else(|_| git(&["diff", "--no-ext-diff", "--no-textconv", color]))
        {
            print!("{}", String::from_utf8_lossy(&o.stdout));
        }
    }
}

/// Approvals asked at the chat's prompt. Ctrl-C there denies the call and
/// cancels the turn.
#[derive(Debug)]
struct TerminalApprover {
    editor: LineEditor,
    cancel: Arc<Notify>,
}

impl Approver for TerminalApprover {
    fn approve<'a>(
        &'a self,
        request: &'a ApprovalRequest,
    ) -> evoflux_harness::approval::ApprovalFuture<'a> {
        Box::pin(async move {
            eprintln!("{}", approval_question(request));
            let decision = match self.editor.read("approve? ", ReadKind::Answer).await {
                Read::Line(answer) => approval_answer(request, &answer),
                Read::Interrupted => {
                    self.cancel.notify_waiters();
                    // Let the turn's cancellation (checked first) see the
                    // notice before the denied call's turn goes on: a next
                    // model call that answers without yielding would
                    // otherwise finish the turn first.
                    tokio::task::yield_now().await;
                    denied(request)
                }
                Read::Eof => denied(request),
            };
            evoflux_harness::Decided::by_user(decision)
        })
    }
}

/// `evoflux chat` reading a pipe: one message per line, approvals answered
/// by the next line, an empty line or the end of input ends the chat.
fn lines(out: &Output, args: &ChatArgs) -> anyhow::Result<Exit> {
    let rt = runtime()?;
    rt.block_on(async {
        let events = event_sink(out);
        let processes = process_runtime(out)?;
        if args.session.session.is_none()
            && let Err(exit) = ask_trust(out, &args.session).await?
        {
            return Ok(exit);
        }
        let open_leased = async |args: &SessionArgs, lease: OpenLease<'_>| {
            open(
                out,
                args,
                Arc::clone(&events),
                Arc::new(AskApprover),
                &processes,
                lease,
            )
            .await
        };
        let mut harness = match open_leased(&args.session, OpenLease::PerTurn).await? {
            Ok((h, _)) => h,
            Err(exit) => return Ok(exit),
        };
        let holder = Holder::process("evoflux chat");
        // The lease of a turn Ctrl-C stopped, released once its commands are.
        let mut interrupted = None;
        let mut sources = match super::resolve_dirs(out) {
            Ok(dirs) => Sources::follow(&dirs, &harness),
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
            // Agents, skills, plugins or config changed since the last turn.
            if sources.take_change() {
                let again = reopen_args(&args.session, harness.session().id.to_string(), None);
                let reopened = open_reusing(
                    out,
                    &again,
                    Arc::clone(&events),
                    Arc::new(AskApprover),
                    &processes,
                    OpenLease::PerTurn,
                    Some(harness.model_client()),
                )
                .await
                .map(|r| r.map(|(h, _)| h));
                apply_sources(&mut harness, reopened, events.as_ref()).await;
            }
            // Each message (or command) under the session's lease; a
            // session another process ran turns on since is opened again.
            let again = reopen_args(&args.session, harness.session().id.to_string(), None);
            let Some(lease) = lease_turn(
                &mut harness,
                &holder,
                events.as_ref(),
                async |lease: &SessionLease| {
                    Ok(open_leased(&again, OpenLease::Held(lease))
                        .await?
                        .map(|(reopened, _)| reopened))
                },
            )
            .await?
            else {
                continue;
            };
            if let Some(command) = line.strip_prefix('!') {
                let result = harness.user_command(command).await;
                release(Some(lease)).await;
                println!("{}", result?.content);
                continue;
            }
            // Stopped through the one cancellation path, which ends the
            // turn's open calls and the turn itself.
            let lost = lease.lost();
            let lease_lost = std::cell::Cell::new(false);
            let stop = async {
                tokio::select! {
                    () = shutdown_signal() => {}
                    () = lost => lease_lost.set(true),
                }
            };
            let ended = harness
                .turn_or_cancel(Some(&line), TurnOptions::default(), stop)
                .await;
            match ended {
                Ok(TurnEnd::Cancelled) if lease_lost.get() => {
                    eprintln!(
                        "error[{}]: another process took this session; the turn was stopped",
                        evoflux_harness::lease::LEASE_LOST
                    );
                    release(Some(lease)).await;
                }
                Ok(TurnEnd::Cancelled) => {
                    eprintln!("interrupted");
                    // Released once what the turn started is stopped.
                    interrupted = Some(lease);
                    break;
                }
                Ok(TurnEnd::Completed(_)) => release(Some(lease)).await,
                // The event stream already showed the error; the session
                // stays usable for the next message.
                Err(HarnessError::Provider(_)) => release(Some(lease)).await,
                Err(e) => {
                    release(Some(lease)).await;
                    harness.shutdown().await;
                    processes.shutdown().await;
                    return Err(e.into());
                }
            }
        }
        harness.shutdown().await;
        processes.shutdown().await;
        release(interrupted).await;
        eprintln!(
            "session {} saved; continue it with `evoflux chat --session {}`",
            harness.session().id,
            harness.session().id
        );
        Ok(Exit::Ok)
    })
}
