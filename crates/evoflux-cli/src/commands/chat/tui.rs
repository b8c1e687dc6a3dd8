//! The chat at a terminal, full screen: the session host runs the session
//! as it does for every front end; this module wires its events and
//! approvals into the screen ([`evoflux_tui::App`]) and carries out what
//! the screen asks (send, queue, cancel, decide, switch sessions). It
//! holds no session logic.
//!
//! One loop selects over the terminal's input, the session's events and
//! approvals, the running turn's end, a redraw timer while something on
//! screen moves, and SIGTERM/SIGHUP. Frames are drawn at most every 16 ms,
//! so a fast stream costs one frame per interval, not one per token.

use std::collections::HashMap;
use std::io::Write as _;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossterm::event::{
    DisableBracketedPaste, DisableMouseCapture, EnableBracketedPaste, EnableMouseCapture,
    Event as TermEvent, EventStream, KeyboardEnhancementFlags, PopKeyboardEnhancementFlags,
    PushKeyboardEnhancementFlags,
};
use crossterm::terminal::{
    EnterAlternateScreen, LeaveAlternateScreen, disable_raw_mode, enable_raw_mode,
};
use evoflux_core::dirs::Dirs;
use evoflux_harness::approval::{
    ApprovalSubject, ElicitationAnswer, ElicitationAsk, Elicited, Remember,
};
use evoflux_harness::host::BoxFuture;
use evoflux_harness::{
    ApprovalDecision, ApprovalRequest, Approver, Decided, DecidedBy, Event, EventSink, Harness,
    HarnessError, Holder, HostError, ProcessRuntime, TurnEnd, TurnOptions,
};
use evoflux_protocol::metadata::ResultMetadata;
use evoflux_protocol::{Message, Usage};
use evoflux_tui::app::{
    ApprovalAnswer, ApprovalPrompt, ApprovalSubject as Subject, PickerKind, Remembers,
};
use evoflux_tui::picker::PickerItem;
use evoflux_tui::tools::ToolShapes;
use evoflux_tui::transcript::NoticeKind;
use evoflux_tui::{Action, App, Theme};
use futures_util::StreamExt as _;
use ratatui::Terminal;
use ratatui::backend::CrosstermBackend;
use tokio::sync::{mpsc, oneshot};

use super::complete::{Completions, complete};
use super::slash::{self, Input, SlashCommand};
use super::terminal::{Next, diff_report, local_time, new_session_args, reopen_args};
use super::{ChatArgs, Hosted, open_hosted};
use crate::frontend::prompts::denied;
use crate::frontend::runtime;
use crate::frontend::session::{SessionArgs, process_runtime};
use crate::frontend::signals::terminate_signal;
use crate::output::{Exit, Output};

/// The shortest time between two frames.
const FRAME: Duration = Duration::from_millis(16);
/// How often a moving clock or spinner is redrawn.
const TICK: Duration = Duration::from_millis(100);
/// Sessions `/resume` and `/sessions` list.
const SESSIONS_LISTED: u32 = 200;

/// What reaches the loop from the session and the process.
#[derive(Debug)]
enum Incoming {
    Event(Event),
    Approval(ApprovalRequest, oneshot::Sender<Decided>),
    /// An MCP server's form, asked field by field over the composer.
    Form(ElicitationAsk, oneshot::Sender<Elicited>),
}

/// The form being answered, one field at a time: first whether to fill
/// it in at all, then each of its fields.
struct Form {
    request: ElicitationAsk,
    fields: Vec<evoflux_mcp::live::FormField>,
    /// `None` while asking whether to fill it in; then the field asked.
    at: Option<usize>,
    content: serde_json::Map<String, serde_json::Value>,
    reply: oneshot::Sender<Elicited>,
}

/// The session's events, into the loop.
#[derive(Debug)]
struct ChannelSink(mpsc::UnboundedSender<Incoming>);

impl EventSink for ChannelSink {
    fn emit(&self, event: &Event) {
        let _ = self.0.send(Incoming::Event(event.clone()));
    }
}

/// Approvals, put to the screen; an answer never given (the chat ended)
/// denies by cancellation.
#[derive(Debug)]
struct ScreenApprover(mpsc::UnboundedSender<Incoming>);

impl Approver for ScreenApprover {
    fn approve<'a>(
        &'a self,
        request: &'a ApprovalRequest,
    ) -> evoflux_harness::approval::ApprovalFuture<'a> {
        let (tx, rx) = oneshot::channel();
        let sent = self.0.send(Incoming::Approval(request.clone(), tx)).is_ok();
        Box::pin(async move {
            let cancelled = Decided {
                decision: denied(request),
                by: DecidedBy::Cancellation,
            };
            if !sent {
                return cancelled;
            }
            rx.await.unwrap_or(cancelled)
        })
    }

    fn elicit<'a>(
        &'a self,
        request: &'a ElicitationAsk,
    ) -> evoflux_harness::approval::ElicitationFuture<'a> {
        let (tx, rx) = oneshot::channel();
        let sent = self.0.send(Incoming::Form(request.clone(), tx)).is_ok();
        Box::pin(async move {
            let cancelled = Elicited {
                answer: ElicitationAnswer::Cancel,
                by: DecidedBy::Cancellation,
            };
            if !sent {
                return cancelled;
            }
            rx.await.unwrap_or(cancelled)
        })
    }
}

/// The terminal in full-screen mode; put back as it was when dropped, a
/// panic included.
struct Screen {
    terminal: Terminal<CrosstermBackend<std::io::Stdout>>,
    enhanced: bool,
}

impl Screen {
    fn enter() -> anyhow::Result<Screen> {
        enable_raw_mode()?;
        let mut stdout = std::io::stdout();
        crossterm::execute!(
            stdout,
            EnterAlternateScreen,
            EnableBracketedPaste,
            EnableMouseCapture
        )?;
        // Shift-Enter as its own key where the terminal can say so.
        let enhanced = crossterm::terminal::supports_keyboard_enhancement().unwrap_or(false);
        if enhanced {
            crossterm::execute!(
                stdout,
                PushKeyboardEnhancementFlags(KeyboardEnhancementFlags::DISAMBIGUATE_ESCAPE_CODES)
            )?;
        }
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            restore(enhanced);
            previous(info);
        }));
        let terminal = Terminal::new(CrosstermBackend::new(stdout))?;
        Ok(Screen { terminal, enhanced })
    }
}

impl Drop for Screen {
    fn drop(&mut self) {
        restore(self.enhanced);
        let _ = self.terminal.show_cursor();
    }
}

fn restore(enhanced: bool) {
    let mut stdout = std::io::stdout();
    if enhanced {
        let _ = crossterm::execute!(stdout, PopKeyboardEnhancementFlags);
    }
    let _ = crossterm::execute!(
        stdout,
        DisableMouseCapture,
        DisableBracketedPaste,
        LeaveAlternateScreen
    );
    let _ = disable_raw_mode();
    let _ = stdout.flush();
}

/// `evoflux chat`, full screen.
pub(super) fn chat(out: &Output, args: &ChatArgs) -> anyhow::Result<Exit> {
    let rt = runtime()?;
    rt.block_on(async {
        let dirs = match super::starting(out, args).await? {
            Ok(dirs) => dirs,
            Err(exit) => return Ok(exit),
        };
        let (tx, rx) = mpsc::unbounded_channel();
        let processes = process_runtime(out)?;
        let mut chat = Chat {
            out,
            dirs,
            base: SessionArgs {
                session: None,
                ..args.session.clone()
            },
            next: Next::default(),
            events: Arc::new(ChannelSink(tx.clone())),
            approver: Arc::new(ScreenApprover(tx.clone())),
            processes,
            holder: Holder::process("evoflux chat"),
            app: App::new(Theme::detect()),
            approvals: Vec::new(),
            forms: std::collections::VecDeque::new(),
            turn: None,
        };
        // Opened before the screen is taken, so what goes wrong reads as
        // it does in every command.
        let live = match chat.open(&args.session).await? {
            Ok(live) => live,
            Err(exit) => return Ok(exit),
        };
        chat.opened(&live).await;
        let (logs_tx, logs_rx) = mpsc::unbounded_channel();
        let captured = crate::frontend::logs::capture(logs_tx);
        let mut screen = Screen::enter()?;
        let mut live = live;
        let ended = chat.run(&mut screen, &mut live, rx, logs_rx).await;
        drop(screen);
        drop(captured);
        live.host.close().await;
        chat.processes.shutdown().await;
        eprintln!(
            "session {} saved; continue it with `evoflux chat --session {}`",
            live.session.id, live.session.id
        );
        ended?;
        Ok(Exit::Ok)
    })
}

/// The running turn's end.
type TurnEnded = std::pin::Pin<Box<dyn Future<Output = Result<TurnEnd, HostError>> + Send>>;

struct Chat<'a> {
    out: &'a Output,
    dirs: Dirs,
    /// The command line's arguments (without a session): what a new or
    /// reopened session starts from.
    base: SessionArgs,
    next: Next,
    events: Arc<ChannelSink>,
    approver: Arc<ScreenApprover>,
    processes: ProcessRuntime,
    holder: Holder,
    app: App,
    /// Approvals the screen asks, with where their answers go.
    approvals: Vec<(ApprovalRequest, oneshot::Sender<Decided>)>,
    /// MCP forms: the one answered now first, the others waiting.
    forms: std::collections::VecDeque<Form>,
    turn: Option<TurnEnded>,
}

/// What the loop does after an action.
enum Flow {
    Continue,
    Quit,
}

impl Chat<'_> {
    async fn open(&self, args: &SessionArgs) -> anyhow::Result<Result<Hosted, Exit>> {
        open_hosted(
            self.out,
            args,
            self.events.clone(),
            self.approver.clone(),
            &self.processes,
            &self.holder,
        )
        .await
    }

    /// A session opened: its conversation, tools, usage, completion and
    /// the question it waits on go to the screen.
    async fn opened(&mut self, live: &Hosted) {
        type Opened = (
            Vec<Message>,
            HashMap<String, ResultMetadata>,
            ToolShapes,
            Option<Usage>,
            Vec<String>,
            Option<evoflux_harness::PendingQuestion>,
        );
        let shown = live
            .with(|harness: &mut Harness| {
                Box::pin(async move {
                    let shapes = shapes_of(harness);
                    let skills: Vec<String> = harness
                        .invocable_skills()
                        .into_iter()
                        .map(|(name, _)| name.to_owned())
                        .collect();
                    let usage = harness.usage().await.ok();
                    let question = harness.pending_question().await.ok().flatten();
                    // What the store keeps beside results: diffs, exits.
                    let metadata: HashMap<String, ResultMetadata> = harness
                        .store()
                        .transcript(harness.session().id)
                        .await
                        .unwrap_or_default()
                        .into_iter()
                        .filter_map(|entry| match (entry.message, entry.artifact) {
                            (Message::Tool { tool_call_id, .. }, Some(meta)) => {
                                serde_json::from_value(meta).ok().map(|m| (tool_call_id, m))
                            }
                            _ => None,
                        })
                        .collect();
                    (
                        harness.messages().to_vec(),
                        metadata,
                        shapes,
                        usage,
                        skills,
                        question,
                    )
                }) as BoxFuture<'_, Opened>
            })
            .await;
        let Ok((messages, metadata, shapes, usage, skills, question)) = shown else {
            return;
        };
        self.app
            .open_session_with(shapes, &messages, &metadata, usage.unwrap_or_default());
        let s = &live.session;
        let status = self.app.status();
        status.session_id = s.id.to_string();
        status.title.clone_from(&s.title);
        status.mode = s.mode().to_string();
        status.lead = s.lead.clone().unwrap_or_default();
        status.model = s.model.clone().unwrap_or_default();
        let completions = Completions {
            skills,
            root: s.workspace.roots().first().cloned(),
            prompts: live.prompt_commands().await.unwrap_or_default(),
            resources: live.resources().await,
        };
        self.app
            .set_completer(Box::new(move |line, pos| complete(line, pos, &completions)));
        let history = super::terminal::history_file(&self.dirs, s);
        self.app.composer().set_history(read_history(&history));
        if let Some(q) = question {
            self.app.apply(&Event::InputRequested {
                call_id: q.call_id,
                question: q.question,
                options: q.options,
            });
        }
    }

    async fn run(
        &mut self,
        screen: &mut Screen,
        live: &mut Hosted,
        mut incoming: mpsc::UnboundedReceiver<Incoming>,
        mut logs: mpsc::UnboundedReceiver<String>,
    ) -> anyhow::Result<()> {
        let mut keys = EventStream::new();
        let mut tick = tokio::time::interval(TICK);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        let mut dirty = true;
        // A key is drawn at once: what the user types never waits for the
        // stream's next frame.
        let mut keyed = false;
        let mut last_frame = Instant::now() - FRAME;
        let mut frame_due = Box::pin(tokio::time::sleep(Duration::ZERO));
        loop {
            if dirty && (keyed || last_frame.elapsed() >= FRAME) {
                // The interval counts from a frame's start, so a frame that
                // takes a while does not stretch it.
                last_frame = Instant::now();
                screen.terminal.draw(|f| self.app.draw(f))?;
                dirty = false;
                keyed = false;
            } else if dirty {
                frame_due
                    .as_mut()
                    .reset(tokio::time::Instant::from_std(last_frame + FRAME));
            }
            let animating = self.app.animating();
            let turn = async {
                match self.turn.as_mut() {
                    Some(t) => t.await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                biased;
                ended = turn => {
                    self.turn = None;
                    if let Some(next) = self.turn_ended(ended)
                        && let Flow::Quit = self.say(screen, live, next).await?
                    {
                        return Ok(());
                    }
                    dirty = true;
                }
                key = keys.next() => {
                    let Some(key) = key else { return Ok(()) };
                    let action = match key? {
                        TermEvent::Key(k) => self.app.key(k),
                        TermEvent::Paste(text) => {
                            self.app.paste(&text);
                            None
                        }
                        TermEvent::Mouse(m) => {
                            self.app.mouse(m);
                            None
                        }
                        TermEvent::Resize(..) => {
                            screen.terminal.autoresize()?;
                            None
                        }
                        TermEvent::FocusGained | TermEvent::FocusLost => None,
                    };
                    dirty = true;
                    keyed = true;
                    if let Some(action) = action
                        && let Flow::Quit = self.act(screen, live, action).await?
                    {
                        return Ok(());
                    }
                }
                got = incoming.recv() => {
                    match got {
                        Some(Incoming::Event(event)) => self.app.apply(&event),
                        Some(Incoming::Approval(request, reply)) => self.ask(request, reply),
                        Some(Incoming::Form(request, reply)) => self.form(request, reply),
                        None => return Ok(()),
                    }
                    dirty = true;
                }
                Some(line) = logs.recv() => {
                    self.app.notice(NoticeKind::Warning, line);
                    dirty = true;
                }
                _ = tick.tick(), if animating => dirty = true,
                () = &mut frame_due, if dirty => {}
                () = terminate_signal() => {
                    live.host.cancel();
                    if let Some(turn) = self.turn.take() {
                        let _ = turn.await;
                    }
                    return Ok(());
                }
            }
        }
    }

    /// Puts an approval on the screen.
    fn ask(&mut self, request: ApprovalRequest, reply: oneshot::Sender<Decided>) {
        let subject = match &request.subject {
            ApprovalSubject::Call => Subject::Call,
            ApprovalSubject::OutsideSandbox { justification } => Subject::OutsideSandbox {
                justification: justification.clone(),
            },
            ApprovalSubject::Control { path, control } => Subject::Control {
                path: path.clone(),
                control: control.clone(),
            },
            ApprovalSubject::Sampling {
                server,
                preview,
                max_tokens,
            } => Subject::Sampling {
                server: server.clone(),
                preview: preview.clone(),
                max_tokens: *max_tokens,
            },
        };
        let remembers = match request.subject.remember() {
            Remember::Never => Remembers::Never,
            Remember::Session => Remembers::Session,
            Remember::SessionOrWorkspace => Remembers::SessionOrWorkspace,
        };
        self.app.ask_approval(ApprovalPrompt {
            call_id: request.call_id.clone(),
            tool: request.tool.clone(),
            arguments: request.arguments.clone(),
            subject,
            workdir: workdir_of(&request),
            remembers,
        });
        self.approvals.push((request, reply));
    }

    /// Puts an MCP server's form on the screen (after the one answered
    /// now, if any).
    fn form(&mut self, request: ElicitationAsk, reply: oneshot::Sender<Elicited>) {
        let fields = evoflux_mcp::live::form_fields(&request.schema);
        self.forms.push_back(Form {
            request,
            fields,
            at: None,
            content: serde_json::Map::new(),
            reply,
        });
        if self.forms.len() == 1 {
            self.ask_form();
        }
    }

    /// Asks what the first form waits for.
    fn ask_form(&mut self) {
        let Some(form) = self.forms.front() else {
            self.app.end_form();
            return;
        };
        match form.at.and_then(|i| form.fields.get(i)) {
            None => self.app.ask_field(format!(
                "The MCP server {} asks (during {}): {}\nFill in its form? y / n (Esc \
                 cancels)",
                form.request.server, form.request.tool, form.request.message
            )),
            Some(field) => self.app.ask_field(field.prompt()),
        }
    }

    /// What was typed at the first form's question.
    fn form_answer(&mut self, typed: &str) {
        let Some(form) = self.forms.front_mut() else {
            return;
        };
        let next = match form.at {
            None if matches!(typed.trim(), "y" | "Y" | "yes") => Some(0),
            None => {
                self.finish_form(ElicitationAnswer::Decline { reason: None });
                return;
            }
            Some(i) => match form.fields.get(i).map(|f| (f.name.clone(), f.read(typed))) {
                Some((name, Ok(value))) => {
                    if let Some(value) = value {
                        form.content.insert(name, value);
                    }
                    Some(i + 1)
                }
                Some((_, Err(why))) => {
                    self.app
                        .notice(NoticeKind::Error, format!("{why}; try again"));
                    Some(i)
                }
                None => None,
            },
        };
        match next {
            Some(i) if i < form.fields.len() => {
                form.at = Some(i);
                self.ask_form();
            }
            Some(_) | None => {
                let answer = ElicitationAnswer::Accept {
                    content: std::mem::take(&mut form.content),
                };
                let answer = match form.request.check(&answer) {
                    Ok(()) => answer,
                    Err(why) => {
                        self.app.notice(
                            NoticeKind::Error,
                            format!("the answer does not fit the form: {why}; it was declined"),
                        );
                        ElicitationAnswer::Decline {
                            reason: Some(format!("the user's answer did not fit the form: {why}")),
                        }
                    }
                };
                self.finish_form(answer);
            }
        }
    }

    /// Sends the first form's answer and asks the next form, if any.
    fn finish_form(&mut self, answer: ElicitationAnswer) {
        if let Some(form) = self.forms.pop_front() {
            let _ = form.reply.send(Elicited {
                answer,
                by: DecidedBy::User,
            });
        }
        self.app.end_form();
        self.ask_form();
    }

    /// Carries out what the screen asks.
    async fn act(
        &mut self,
        screen: &mut Screen,
        live: &mut Hosted,
        action: Action,
    ) -> anyhow::Result<Flow> {
        match action {
            Action::Submit(text) => return self.say(screen, live, text).await,
            Action::Cancel => {
                // An approval waiting is denied by the cancellation, which
                // the host then carries out.
                if self.approvals.is_empty() {
                    live.host.cancel();
                }
                for (request, reply) in self.approvals.drain(..) {
                    let _ = reply.send(Decided {
                        decision: denied(&request),
                        by: DecidedBy::Cancellation,
                    });
                }
                self.app.hint("cancelling…");
            }
            Action::Decide { call_id, answer } => {
                let Some(at) = self
                    .approvals
                    .iter()
                    .position(|(request, _)| request.call_id == call_id)
                else {
                    return Ok(Flow::Continue);
                };
                let (request, reply) = self.approvals.remove(at);
                let decided = match answer {
                    ApprovalAnswer::Once => Decided::by_user(ApprovalDecision::Approved),
                    ApprovalAnswer::ForSession => {
                        Decided::by_user(ApprovalDecision::ApprovedForSession)
                    }
                    ApprovalAnswer::ForWorkspace => {
                        Decided::by_user(ApprovalDecision::ApprovedForWorkspace)
                    }
                    ApprovalAnswer::Deny(reason) => Decided::by_user(match reason {
                        Some(reason) => ApprovalDecision::Denied {
                            reason: format!("The user denied `{}`: {reason}", request.tool),
                        },
                        None => denied(&request),
                    }),
                    ApprovalAnswer::Cancel => Decided {
                        decision: denied(&request),
                        by: DecidedBy::Cancellation,
                    },
                };
                let _ = reply.send(decided);
            }
            Action::Picked { kind, value } => match kind {
                PickerKind::Session => {
                    let args = reopen_args(&self.base, value, None);
                    self.switch(screen, live, args).await?;
                }
                PickerKind::Model => {
                    let args = reopen_args(&self.base, live.session.id.to_string(), Some(value));
                    self.switch(screen, live, args).await?;
                }
                // The screen sends an answer as a message.
                PickerKind::Answer => {}
            },
            Action::FormAnswer(typed) => self.form_answer(&typed),
            Action::FormCancel => self.finish_form(ElicitationAnswer::Cancel),
            Action::Quit => return Ok(Flow::Quit),
        }
        Ok(Flow::Continue)
    }

    /// What the user said: a command, a `!command`, or a message.
    async fn say(
        &mut self,
        screen: &mut Screen,
        live: &mut Hosted,
        text: String,
    ) -> anyhow::Result<Flow> {
        append_history(
            &super::terminal::history_file(&self.dirs, &live.session),
            &text,
        );
        match slash::parse(&text) {
            Ok(Input::Command(command)) => self.command(screen, live, command).await,
            Ok(Input::Message(message)) => {
                if let Some(command) = message.strip_prefix('!') {
                    self.user_command(live, command).await;
                    return Ok(Flow::Continue);
                }
                self.send(live, message).await?;
                Ok(Flow::Continue)
            }
            // A prompt command of the session (`/review`, an MCP prompt)
            // is a message the harness expands.
            Err(_) if live.names_prompt_command(&text).await => {
                self.send(live, text).await?;
                Ok(Flow::Continue)
            }
            Err(e) => {
                self.app.notice(NoticeKind::Error, e.to_string());
                Ok(Flow::Continue)
            }
        }
    }

    /// Sends a message: a turn starts (or the host says why not).
    async fn send(&mut self, live: &Hosted, message: String) -> anyhow::Result<()> {
        match live
            .host
            .submit(Some(message), TurnOptions::default())
            .await
        {
            Ok(handle) => {
                self.app.turn_started();
                self.turn = Some(Box::pin(handle.ended()));
            }
            Err(e @ (HostError::Busy | HostError::Lease(_))) => {
                self.app
                    .notice(NoticeKind::Error, format!("{e} [{}]", e.code()));
            }
            Err(e) => return Err(e.into()),
        }
        Ok(())
    }

    /// The turn ended: approvals it left are gone; the next queued
    /// message, which the loop sends as if typed now.
    fn turn_ended(&mut self, ended: Result<TurnEnd, HostError>) -> Option<String> {
        for (request, _) in self.approvals.drain(..) {
            self.app.approval_closed(&request.call_id);
        }
        match ended {
            Ok(TurnEnd::Completed(_) | TurnEnd::Cancelled) => {}
            // The event stream showed the error; the session takes the
            // next message.
            Err(
                HostError::Turn(HarnessError::Provider(_) | HarnessError::Command(_))
                | HostError::Reopen(_),
            ) => {}
            Err(e) => self
                .app
                .notice(NoticeKind::Error, format!("{e} [{}]", e.code())),
        }
        self.app.turn_ended()
    }

    /// A `!command`, run under the session's lease like a turn.
    async fn user_command(&mut self, live: &Hosted, command: &str) {
        let shown = command.to_owned();
        match live.run_command(command).await {
            Ok(Ok(result)) => self.app.notice(
                if result.is_error {
                    NoticeKind::Warning
                } else {
                    NoticeKind::Info
                },
                format!("$ {shown}\n{}", result.content),
            ),
            Ok(Err(e)) => self.app.notice(NoticeKind::Error, e.to_string()),
            Err(e) => self
                .app
                .notice(NoticeKind::Error, format!("{e} [{}]", e.code())),
        }
    }

    async fn command(
        &mut self,
        screen: &mut Screen,
        live: &mut Hosted,
        command: SlashCommand,
    ) -> anyhow::Result<Flow> {
        match command {
            SlashCommand::Help => {
                let prompts = live.prompt_commands().await?;
                self.app.notice(
                    NoticeKind::Info,
                    format!("{}\n{}", help(), slash::prompts_help(&prompts))
                        .trim_end()
                        .to_owned(),
                );
            }
            SlashCommand::Exit => return Ok(Flow::Quit),
            SlashCommand::New => {
                let args = new_session_args(&self.base, &self.next, &live.session);
                self.switch(screen, live, args).await?;
            }
            SlashCommand::Sessions | SlashCommand::Resume(None) => self.pick_session(live).await?,
            SlashCommand::Resume(Some(id)) => {
                let args = reopen_args(&self.base, id, None);
                self.switch(screen, live, args).await?;
            }
            SlashCommand::Model(Some(model)) => {
                let args = reopen_args(&self.base, live.session.id.to_string(), Some(model));
                self.switch(screen, live, args).await?;
            }
            SlashCommand::Model(None) => {
                let current = live.session.model.clone().unwrap_or_default();
                let items = super::model_choices(&self.dirs)?
                    .into_iter()
                    .map(|c| PickerItem {
                        detail: if c.reference == current {
                            format!("{} · current", c.source.as_str())
                        } else {
                            c.source.as_str().to_owned()
                        },
                        label: c.reference.clone(),
                        value: c.reference,
                    })
                    .collect();
                self.app.pick(PickerKind::Model, "Switch the model", items);
            }
            SlashCommand::Mode(mode) => {
                self.next.mode = Some(mode);
                self.fresh_or_next(screen, live, &format!("{mode} mode"))
                    .await?;
            }
            SlashCommand::Lead(lead) => {
                self.next.lead = Some(lead.clone());
                self.fresh_or_next(screen, live, &format!("lead {lead}"))
                    .await?;
            }
            SlashCommand::Skills => {
                let skills = listed(live.skills().await?);
                self.app.notice(
                    NoticeKind::Info,
                    if skills.is_empty() {
                        "no skills can be invoked in this session".to_owned()
                    } else {
                        format!("Skills ($name or /skill:name):\n{skills}")
                    },
                );
            }
            SlashCommand::Tools => {
                let tools = listed(live.tools().await?);
                self.app
                    .notice(NoticeKind::Info, format!("Tools the model sees:\n{tools}"));
            }
            SlashCommand::Cost => match live.usage().await? {
                Ok(u) => self
                    .app
                    .notice(NoticeKind::Info, crate::commands::sessions::usage_line(&u)),
                Err(e) => self.app.notice(
                    NoticeKind::Error,
                    format!("cannot read this session's usage: {e}"),
                ),
            },
            SlashCommand::Compact => {
                live.compact().await?;
                self.app.notice(NoticeKind::Info, super::COMPACTED);
            }
            SlashCommand::Surface(surface) => {
                let report = live.surface(surface).await?;
                self.app.notice(NoticeKind::Info, report);
            }
            SlashCommand::Diff => match diff_report(&live.session, false) {
                Ok(report) => {
                    for (root, text) in report {
                        self.app
                            .notice(NoticeKind::Info, format!("{root}\n{}", text.trim_end()));
                    }
                }
                Err(e) => self.app.notice(NoticeKind::Error, e),
            },
            SlashCommand::Show(n) => {
                if !self.app.transcript().expand(n) {
                    self.app.notice(
                        NoticeKind::Info,
                        match n {
                            Some(_) => {
                                "no tool call has that number; each call's line ends with #N"
                            }
                            None => "no tool has run in this session yet",
                        },
                    );
                }
            }
            SlashCommand::History => self.app.hint("the whole conversation is above: PgUp, Home"),
        }
        Ok(Flow::Continue)
    }

    /// `/resume` without an id, `/sessions`: the recent top-level
    /// sessions in a searchable picker, titled and dated.
    async fn pick_session(&mut self, live: &Hosted) -> anyhow::Result<()> {
        let items: Vec<PickerItem> = super::recent_sessions(&self.dirs, SESSIONS_LISTED)
            .await?
            .iter()
            .map(|summary| {
                let s = &summary.session;
                let id = s.id.to_string();
                let current = if s.id == live.session.id {
                    " · current"
                } else {
                    ""
                };
                PickerItem {
                    label: s.title.clone().unwrap_or_else(|| "(untitled)".to_owned()),
                    detail: format!(
                        "{} · {} · {} · {}{current}",
                        local_time(s.updated_at_ms),
                        s.mode().as_str(),
                        summary.usage_with_children.cost_label(),
                        &id[id.len().saturating_sub(8)..],
                    ),
                    value: id,
                }
            })
            .collect();
        if items.is_empty() {
            self.app.notice(NoticeKind::Info, "no sessions yet");
        } else {
            self.app
                .pick(PickerKind::Session, "Resume a session", items);
        }
        Ok(())
    }

    /// `/mode` and `/lead`: a session that holds no message yet is replaced
    /// by one with the new choice (and removed); otherwise the choice waits
    /// for `/new`, since a persisted session's mode and lead are fixed.
    async fn fresh_or_next(
        &mut self,
        screen: &mut Screen,
        live: &mut Hosted,
        what: &str,
    ) -> anyhow::Result<()> {
        if !live.is_fresh().await? {
            self.app.notice(
                NoticeKind::Info,
                format!(
                    "this session's mode and lead are fixed; /new starts a session with {what}"
                ),
            );
            return Ok(());
        }
        let old = live.session.id;
        let args = new_session_args(&self.base, &self.next, &live.session);
        if self.switch(screen, live, args).await? {
            super::remove_fresh(&self.dirs, old).await;
        }
        Ok(())
    }

    /// Opens the session `args` name in place of the current one; on
    /// failure the current one stays. `true` when it switched.
    async fn switch(
        &mut self,
        screen: &mut Screen,
        live: &mut Hosted,
        args: SessionArgs,
    ) -> anyhow::Result<bool> {
        if self.turn.is_some() {
            self.app.notice(
                NoticeKind::Info,
                "a turn is running: switch sessions after it ends (Esc cancels it)",
            );
            return Ok(false);
        }
        let old = live.session.id;
        // Opening may say what went wrong on stderr: the screen is drawn
        // again whole afterwards.
        let opened = self.open(&args).await;
        screen.terminal.clear()?;
        match opened? {
            Ok(new) => {
                live.host.close().await;
                // The old session closes: its commands and previews stop.
                if new.session.id != old {
                    self.processes.close_session(old).await;
                }
                *live = new;
                self.opened(live).await;
                Ok(true)
            }
            Err(_) => {
                self.app.notice(
                    NoticeKind::Error,
                    format!("could not open that session; still in session {old}"),
                );
                Ok(false)
            }
        }
    }
}

/// How the screen shows `harness`'s tools.
fn shapes_of(harness: &Harness) -> ToolShapes {
    ToolShapes::new(harness.tools().iter().map(|t| &t.definition))
}

/// Where an approval's command would run.
fn workdir_of(request: &ApprovalRequest) -> Option<String> {
    request.workdir.as_ref().map(|d| d.display().to_string())
}

/// `name  description` rows.
fn listed(pairs: Vec<(String, String)>) -> String {
    pairs
        .into_iter()
        .map(|(name, description)| {
            let first = description.lines().next().unwrap_or_default();
            format!("  {name:<28} {}", crate::frontend::printer::clip(first, 90))
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// `/help`: the commands and the keys of the full-screen chat.
fn help() -> String {
    let mut text = slash::commands_help();
    text.push_str(
        "Keys: Enter sends (queues while a turn runs) · Shift-Enter, Alt-Enter or Ctrl-J: newline · \
         Up/Down: history · Tab: complete /commands, @files, $skills · Esc or Ctrl-C: cancel the turn · \
         PgUp/PgDn, wheel: scroll · Ctrl-F: search · Ctrl-O: show every call's output · \
         Ctrl-D or Ctrl-C twice: exit\n`!command` runs a shell command in the session's workspace.",
    );
    text
}

/// The history file's entries, oldest first (the line editor's format:
/// one entry per line; rustyline's header line skipped).
fn read_history(path: &std::path::Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .map(|text| {
            text.lines()
                .filter(|l| !l.starts_with("#V2"))
                .map(unescape_history)
                .collect()
        })
        .unwrap_or_default()
}

/// Appends one entry to the history file the line mode shares.
fn append_history(path: &std::path::Path, entry: &str) {
    if entry.trim().is_empty() {
        return;
    }
    if let Some(dir) = path.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    let new = !path.exists();
    if let Ok(mut f) = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
    {
        if new {
            let _ = writeln!(f, "#V2");
        }
        let _ = writeln!(f, "{}", escape_history(entry));
    }
}

/// rustyline's V2 history escapes: `\n` and `\\`.
fn escape_history(entry: &str) -> String {
    entry.replace('\\', "\\\\").replace('\n', "\\n")
}

fn unescape_history(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match (c, chars.clone().next()) {
            ('\\', Some('n')) => {
                out.push('\n');
                chars.next();
            }
            ('\\', Some('\\')) => {
                out.push('\\');
                chars.next();
            }
            _ => out.push(c),
        }
    }
    out
}
