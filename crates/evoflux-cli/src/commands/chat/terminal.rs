//! The chat at a terminal: a line editor with history per workspace,
//! bracketed paste and completion ([`super::editor`]); the agent's words as
//! streaming Markdown and numbered tool lines ([`super::view`]); slash
//! commands ([`super::slash`]), which switch, list and inspect sessions;
//! approvals asked at the prompt. Ctrl-C cancels the running turn and
//! returns to the prompt; at the prompt, a second Ctrl-C or Ctrl-D exits.

use std::io::Write as _;
use std::path::PathBuf;
use std::sync::Arc;

use evoflux_core::AppMode;
use evoflux_core::dirs::Dirs;
use evoflux_harness::host::BoxFuture;
use evoflux_harness::{
    ApprovalRequest, Approver, Decided, DecidedBy, EventSink, Harness, Holder, ProcessRuntime,
    Session, TurnOutcome,
};
use evoflux_protocol::{Message, Usage};

use super::complete::Completions;
use super::editor::{LineEditor, Read, ReadKind};
use super::markdown::Style;
use super::slash::{self, Input, SlashCommand};
use super::view::ChatView;
use super::{ChatArgs, Console, CtrlC, Flow, Hosted, Said, open_hosted};
use crate::frontend::printer::clip;
use crate::frontend::prompts::{approval_answer, approval_question, denied};
use crate::frontend::runtime;
use crate::frontend::session::{SessionArgs, process_runtime};
use crate::frontend::signals::terminate_signal;
use crate::output::{Exit, Output};

/// Entries of a resumed conversation shown before the prompt.
const REPLAY_ENTRIES: usize = 30;

/// `evoflux chat` at a terminal.
pub(super) fn chat(out: &Output, args: &ChatArgs) -> anyhow::Result<Exit> {
    let rt = runtime()?;
    rt.block_on(async {
        let dirs = match super::starting(out, args).await? {
            Ok(dirs) => dirs,
            Err(exit) => return Ok(exit),
        };
        let style = Style::detect();
        let editor = LineEditor::start()?;
        let mut terminal = Terminal {
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
            }),
            editor,
            processes: process_runtime(out)?,
            holder: Holder::process("evoflux chat"),
            interrupted: false,
        };
        let live = match terminal.open(&args.session).await? {
            Ok(live) => live,
            Err(exit) => return Ok(exit),
        };
        terminal.opened(&live, args.session.session.is_some()).await;
        eprintln!(
            "{}",
            style.paint(
                "2",
                "/help lists commands · Alt-Enter inserts a newline · Ctrl-C cancels a turn · Ctrl-D exits"
            )
        );
        let processes = terminal.processes.clone();
        super::run(&mut terminal, live, &processes).await
    })
}

/// What `/mode` and `/lead` chose for the next new session.
#[derive(Debug, Default)]
pub(super) struct Next {
    pub(super) mode: Option<AppMode>,
    pub(super) lead: Option<String>,
}

/// What `/new` opens: the mode and lead `/mode` and `/lead` chose, else
/// the current session's mode and the command line's lead; a Coding
/// session keeps the current repositories.
pub(super) fn new_session_args(base: &SessionArgs, next: &Next, current: &Session) -> SessionArgs {
    let mode = next.mode.unwrap_or(current.mode());
    let workspaces = match (mode, current.mode()) {
        (AppMode::Work, _) => Vec::new(),
        (AppMode::Coding, AppMode::Coding) => current.workspace.roots().to_vec(),
        (AppMode::Coding, AppMode::Work) => base.sources.workspaces.clone(),
    };
    SessionArgs {
        mode: Some(mode),
        lead: next.lead.clone().or_else(|| base.lead.clone()),
        session: None,
        sources: crate::cli::SourceArgs { workspaces },
        ..base.clone()
    }
}

/// The chat at a terminal, as the loop sees it ([`Console`]).
pub(super) struct Terminal<'a> {
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
    /// This chat, as the leases of its turns name it.
    holder: Holder,
    /// Ctrl-C was pressed at the prompt: a second one ends the chat.
    interrupted: bool,
}

impl Console for Terminal<'_> {
    /// Ctrl-C cancels the running turn (as does a cancelled approval
    /// prompt) and the chat goes on; SIGTERM or SIGHUP ends it.
    const CTRL_C: CtrlC = CtrlC::CancelsTurn;

    fn events(&self) -> &dyn EventSink {
        self.view.as_ref()
    }

    async fn next(&mut self, live: &mut Hosted) -> anyhow::Result<Said> {
        let read = tokio::select! {
            read = self.editor.read("› ", ReadKind::Message) => read,
            () = terminate_signal() => return Ok(Said::End),
        };
        let line = match read {
            Read::Eof => return Ok(Said::End),
            Read::Interrupted if self.interrupted => return Ok(Said::End),
            Read::Interrupted => {
                self.interrupted = true;
                eprintln!(
                    "{}",
                    self.view
                        .style()
                        .paint("2", "(Ctrl-C again or Ctrl-D exits)")
                );
                return Ok(Said::Handled);
            }
            Read::Line(line) => line,
        };
        self.interrupted = false;
        if line.trim().is_empty() {
            return Ok(Said::Handled);
        }
        match slash::parse(&line) {
            Ok(Input::Message(message)) => Ok(Said::Message(message)),
            Ok(Input::Command(command)) => Ok(match self.command(live, command).await? {
                Flow::Continue => Said::Handled,
                Flow::Exit => Said::End,
            }),
            // A prompt command of the session (`/review`, an MCP prompt)
            // is a message the harness expands.
            Err(_) if live.names_prompt_command(&line).await => Ok(Said::Message(line)),
            Err(e) => {
                eprintln!("{e}");
                Ok(Said::Handled)
            }
        }
    }

    async fn completed(&mut self, live: &Hosted, outcome: TurnOutcome) {
        // What the turn's end means is the harness's to say.
        self.out.diagnostics(&outcome.diagnostics());
        self.status(live).await;
    }

    // The view showed the turn_cancelled event.
    fn stopped(&self) {}
}

impl Terminal<'_> {
    async fn open(&self, args: &SessionArgs) -> anyhow::Result<Result<Hosted, Exit>> {
        open_hosted(
            self.out,
            args,
            self.view.clone(),
            self.approver.clone(),
            &self.processes,
            &self.holder,
        )
        .await
    }

    /// After a session opened: history, completion and `/show` follow it; a
    /// resumed one replays its conversation.
    async fn opened(&mut self, live: &Hosted, replay: bool) {
        let shown = live
            .with(|harness: &mut Harness| {
                Box::pin(async move {
                    let skills: Vec<String> = harness
                        .invocable_skills()
                        .into_iter()
                        .map(|(name, _)| name.to_owned())
                        .collect();
                    let question = harness.pending_question().await.ok().flatten();
                    (harness.messages().to_vec(), skills, question)
                }) as BoxFuture<'_, Opened>
            })
            .await;
        let Ok((messages, skills, question)) = shown else {
            return;
        };
        self.editor.history(history_file(&self.dirs, &live.session));
        self.editor.set_completions(Completions {
            skills,
            root: live.session.workspace.roots().first().cloned(),
            prompts: live.prompt_commands().await.unwrap_or_default(),
            resources: live.resources().await,
        });
        self.view.load(&messages);
        if replay {
            self.view.replay(&messages, Some(REPLAY_ENTRIES));
        }
        if let Some(q) = question {
            eprintln!("The agent asked: {}", q.question);
        }
    }

    /// The status line after a turn: session, mode, lead, model, tokens.
    async fn status(&self, live: &Hosted) {
        let s = &live.session;
        let id = s.id.to_string();
        let usage = live
            .with(|harness: &mut Harness| {
                Box::pin(async move { harness.usage().await.ok() }) as BoxFuture<'_, Option<Usage>>
            })
            .await
            .ok()
            .flatten();
        let tokens = match usage {
            Some(u) => format!(
                "{} in / {} out tokens · {} calls · {}",
                u.input_tokens,
                u.output_tokens,
                u.requests,
                u.cost_label()
            ),
            None => "usage unknown".to_owned(),
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

    async fn command(&mut self, live: &mut Hosted, command: SlashCommand) -> anyhow::Result<Flow> {
        let style = self.view.style();
        match command {
            SlashCommand::Help => eprint!(
                "{}{}",
                slash::help(),
                slash::prompts_help(&live.prompt_commands().await?)
            ),
            SlashCommand::Exit => return Ok(Flow::Exit),
            SlashCommand::New => {
                let args = self.new_session_args(&live.session);
                self.switch(live, args, false).await?;
            }
            SlashCommand::Sessions => self.sessions(live).await?,
            SlashCommand::Resume(Some(id)) => {
                let args = self.reopen_args(id, None);
                self.switch(live, args, true).await?;
            }
            SlashCommand::Resume(None) => self.sessions(live).await?,
            SlashCommand::Model(Some(model)) => {
                let args = self.reopen_args(live.session.id.to_string(), Some(model));
                self.switch(live, args, false).await?;
            }
            SlashCommand::Model(None) => {
                for choice in super::model_choices(&self.dirs)? {
                    eprintln!("  {:<40} {}", choice.reference, choice.source.as_str());
                }
                eprintln!("/model PROVIDER:MODEL switches to one (any other model can be typed)");
            }
            SlashCommand::Mode(mode) => {
                self.next.mode = Some(mode);
                self.fresh_or_next(live, &format!("{mode} mode")).await?;
            }
            SlashCommand::Lead(lead) => {
                self.next.lead = Some(lead.clone());
                self.fresh_or_next(live, &format!("lead {lead}")).await?;
            }
            SlashCommand::Skills => {
                let skills = live.skills().await?;
                if skills.is_empty() {
                    eprintln!("no skills can be invoked in this session");
                }
                for (name, description) in skills {
                    eprintln!("  ${name:<24} {}", clip(&description, 100));
                }
            }
            SlashCommand::Tools => {
                let tools = live.tools().await?;
                for (name, description) in tools {
                    let first = description.lines().next().unwrap_or_default();
                    eprintln!("  {name:<28} {}", clip(first, 100));
                }
            }
            SlashCommand::Cost => match live.usage().await? {
                Ok(u) => eprintln!("{}", crate::commands::sessions::usage_line(&u)),
                Err(e) => eprintln!("cannot read this session's usage: {e}"),
            },
            SlashCommand::Compact => {
                live.compact().await?;
                eprintln!("{}", super::COMPACTED);
            }
            SlashCommand::Surface(surface) => eprintln!("{}", live.surface(surface).await?),
            SlashCommand::Diff => diff(&live.session, style),
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
            SlashCommand::History => {
                let messages = live
                    .with(|harness: &mut Harness| {
                        let messages = harness.messages().to_vec();
                        Box::pin(async move { messages }) as BoxFuture<'_, Vec<Message>>
                    })
                    .await?;
                self.view.replay(&messages, None);
            }
        }
        let _ = std::io::stdout().flush();
        Ok(Flow::Continue)
    }

    /// `/mode` and `/lead`: a session that holds no message yet is replaced
    /// by one with the new choice (and removed); otherwise the choice waits
    /// for `/new`, since a persisted session's mode and lead are fixed.
    async fn fresh_or_next(&mut self, live: &mut Hosted, what: &str) -> anyhow::Result<()> {
        if !live.is_fresh().await? {
            eprintln!("this session's mode and lead are fixed; /new starts a session with {what}");
            return Ok(());
        }
        let old = live.session.id;
        let args = self.new_session_args(&live.session);
        if self.switch(live, args, false).await? {
            super::remove_fresh(&self.dirs, old).await;
        }
        Ok(())
    }

    /// What `/new` opens: the mode and lead `/mode` and `/lead` chose, else
    /// the current session's mode and the command line's lead; a Coding
    /// session keeps the current repositories.
    fn new_session_args(&self, current: &Session) -> SessionArgs {
        new_session_args(&self.base, &self.next, current)
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
        live: &mut Hosted,
        args: SessionArgs,
        replay: bool,
    ) -> anyhow::Result<bool> {
        let old = live.session.id;
        match self.open(&args).await? {
            Ok(new) => {
                live.host.close().await;
                // The old session closes: its commands and previews stop.
                if new.session.id != old {
                    self.processes.close_session(old).await;
                }
                *live = new;
                self.opened(live, replay).await;
                Ok(true)
            }
            Err(_) => {
                eprintln!("still in session {old}");
                Ok(false)
            }
        }
    }

    /// The most recently active top-level sessions (delegated children
    /// are reached through their parent), each with its title and when it
    /// was last active.
    async fn sessions(&self, live: &Hosted) -> anyhow::Result<()> {
        let top = super::recent_sessions(&self.dirs, SESSIONS_SHOWN + 1).await?;
        if top.is_empty() {
            eprintln!("no sessions yet");
        }
        for s in top.iter().take(SESSIONS_SHOWN as usize) {
            let mark = if s.session.id == live.session.id {
                "*"
            } else {
                " "
            };
            eprintln!("{mark} {}", repl_row(s));
        }
        if top.len() > SESSIONS_SHOWN as usize {
            eprintln!("  … more: evoflux sessions list");
        }
        eprintln!("/resume ID continues one");
        Ok(())
    }
}

/// How many sessions `/sessions` lists.
const SESSIONS_SHOWN: u32 = 20;

/// A session as `/sessions` shows it: its id (what `/resume` takes), when
/// it was last active (local time), its title, then mode, lead, what it
/// cost with its children and its workspace.
pub(super) fn repl_row(summary: &evoflux_harness::SessionSummary) -> String {
    let s = &summary.session;
    let title = match &s.title {
        Some(title) => format!("“{}”", clip(title, 48)),
        None => "(untitled)".to_owned(),
    };
    format!(
        "{}  {}  {title}  {}  {}  {}  {}",
        s.id,
        local_time(s.updated_at_ms),
        s.mode().as_str(),
        s.lead.as_deref().unwrap_or("-"),
        summary.usage_with_children.cost_label(),
        crate::commands::sessions::roots_label(s)
    )
}

/// `2026-12-06 20:14` in the local time zone; the milliseconds as written
/// when they are no time chrono can show.
pub(super) fn local_time(ms: i64) -> String {
    use chrono::TimeZone as _;
    match chrono::Local.timestamp_millis_opt(ms) {
        chrono::LocalResult::Single(t) | chrono::LocalResult::Ambiguous(t, _) => {
            t.format("%Y-%m-%d %H:%M").to_string()
        }
        chrono::LocalResult::None => ms.to_string(),
    }
}

/// What a session shows when it opens: its conversation, the skills the
/// user may invoke, and the question it waits on.
type Opened = (
    Vec<Message>,
    Vec<String>,
    Option<evoflux_harness::PendingQuestion>,
);

/// What reopens the persisted session `id` (its mode, lead and workspace
/// are its own), switching it to `model` when given.
pub(super) fn reopen_args(base: &SessionArgs, id: String, model: Option<String>) -> SessionArgs {
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
pub(super) fn history_file(dirs: &Dirs, session: &Session) -> PathBuf {
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
fn diff(session: &Session, style: Style) {
    match diff_report(session, matches!(style, Style::Ansi)) {
        Ok(report) => {
            for (root, text) in report {
                eprintln!("{}", style.paint("1", &root));
                print!("{text}");
            }
        }
        Err(e) => eprintln!("{e}"),
    }
}

/// Each repository of a Coding session with its `git status --short` and
/// working-tree diff (or why there is none), coloured by git when
/// `color`; what `/diff` shows in both chats.
pub(super) fn diff_report(session: &Session, color: bool) -> Result<Vec<(String, String)>, String> {
    if session.mode() != AppMode::Coding {
        return Err(
            "/diff is for Coding sessions: a Work session's folder is not a repository".into(),
        );
    }
    let color = if color {
        "--color=always"
    } else {
        "--color=never"
    };
    let mut out = Vec::new();
    for root in session.workspace.roots() {
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
        let mut text = match git(&["status", "--short"]) {
            Ok(o) if o.status.success() => {
                let status = String::from_utf8_lossy(&o.stdout).into_owned();
                if status.trim().is_empty() {
                    out.push((root.display().to_string(), "  no changes\n".to_owned()));
                    continue;
                }
                status
            }
            Ok(o) => {
                out.push((
                    root.display().to_string(),
                    format!(
                        "  not a git repository: {}\n",
                        String::from_utf8_lossy(&o.stderr).trim()
                    ),
                ));
                continue;
            }
            Err(e) => return Err(format!("cannot run git: {e}")),
        };
        if let Ok(o) = git(&["diff", "--no-ext-diff", "--no-textconv", color, "HEAD"])
            .or_else(|_| git(&["diff", "--no-ext-diff", "--no-textconv", color]))
        {
            text.push_str(&String::from_utf8_lossy(&o.stdout));
        }
        out.push((root.display().to_string(), text));
    }
    Ok(out)
}

/// Approvals asked at the chat's prompt. Ctrl-C there denies the call and
/// cancels the turn.
#[derive(Debug)]
struct TerminalApprover {
    editor: LineEditor,
}

impl Approver for TerminalApprover {
    fn approve<'a>(
        &'a self,
        request: &'a ApprovalRequest,
    ) -> evoflux_harness::approval::ApprovalFuture<'a> {
        Box::pin(async move {
            eprintln!("{}", approval_question(request));
            match self.editor.read("approve? ", ReadKind::Answer).await {
                Read::Line(answer) => Decided::by_user(approval_answer(request, &answer)),
                // Ctrl-C: the call is denied by the cancellation, which the
                // session host carries out before the turn goes on.
                Read::Interrupted => Decided {
                    decision: denied(request),
                    by: DecidedBy::Cancellation,
                },
                Read::Eof => Decided::by_user(denied(request)),
            }
        })
    }

    fn elicit<'a>(
        &'a self,
        request: &'a evoflux_harness::approval::ElicitationAsk,
    ) -> evoflux_harness::approval::ElicitationFuture<'a> {
        use crate::frontend::prompts::{Typed, fill_form};
        let editor = &self.editor;
        Box::pin(fill_form(request, move |prompt| async move {
            match editor.read(&prompt, ReadKind::Answer).await {
                Read::Line(line) => Typed::Line(line),
                Read::Interrupted => Typed::Interrupted,
                Read::Eof => Typed::Eof,
            }
        }))
    }
}
