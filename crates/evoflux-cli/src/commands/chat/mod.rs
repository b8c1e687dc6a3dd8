//! `evoflux chat`: the terminal UI over the harness's session engine.
//!
//! At a terminal, full screen ([`tui`], drawn by the `evoflux-tui` crate):
//! the transcript above, the composer always at the bottom, type-ahead
//! queued behind the running turn, approvals in one key, pickers. With
//! `--plain` (or stdout not a terminal, or `TERM=dumb`), the line mode
//! ([`terminal`]): a line editor with history per workspace,
//! bracketed paste and completion ([`editor`]); the agent's words as
//! streaming Markdown and numbered tool lines ([`view`]); slash commands
//! ([`slash`]); Ctrl-C cancels the running turn through the session host's
//! one cancellation path and returns to the prompt. With a pipe on stdin (or
//! `--json`) it stays a line-per-message reader for scripts ([`pipe`]).
//! Both run the one loop here ([`run`]); what differs between them is a
//! [`Console`]. The session logic is the harness's; this module only reads
//! keys and draws.

mod complete;
mod editor;
mod markdown;
mod pipe;
mod slash;
mod terminal;
mod tui;
mod view;

use std::sync::Arc;

use clap::Args;
use evoflux_harness::host::BoxFuture;
use evoflux_harness::prompt_commands::PromptCommand;
use evoflux_harness::sources::SourceWatch;
use evoflux_harness::{
    Approver, Event, EventSink, Harness, HarnessError, Holder, HostError, HostOptions, HostWiring,
    ProcessRuntime, Session, SessionHost, TurnEnd, TurnOptions, TurnOutcome,
};

use crate::frontend::session::{CliFront, OpenLease, SessionArgs, open};
use crate::frontend::signals::terminate_signal;
use crate::output::{Exit, Output};

#[derive(Debug, Args)]
pub struct ChatArgs {
    #[command(flatten)]
    pub session: SessionArgs,
    /// A line-by-line chat instead of the full-screen one: the terminal's
    /// own scrollback and selection, for screen readers and scripts.
    #[arg(long)]
    pub plain: bool,
}

pub fn chat(out: &Output, args: &ChatArgs) -> anyhow::Result<Exit> {
    use std::io::IsTerminal as _;
    if out.json || !std::io::stdin().is_terminal() {
        return pipe::chat(out, args);
    }
    let dumb = std::env::var("TERM").is_ok_and(|t| t == "dumb");
    if args.plain || dumb || !std::io::stdout().is_terminal() {
        return terminal::chat(out, args);
    }
    tui::chat(out, args)
}

/// The data directory of a chat at a terminal, once the user trusts the
/// workspace a new session opens in (asked before the screen is taken).
async fn starting(
    out: &Output,
    args: &ChatArgs,
) -> anyhow::Result<Result<evoflux_core::dirs::Dirs, Exit>> {
    let dirs = match super::resolve_dirs(out) {
        Ok(d) => d,
        Err(exit) => return Ok(Err(exit)),
    };
    if args.session.session.is_none()
        && let Err(exit) = crate::frontend::prompts::ask_trust(out, &args.session).await?
    {
        return Ok(Err(exit));
    }
    Ok(Ok(dirs))
}

/// What `/compact` says it did.
const COMPACTED: &str =
    "older turns are summarized at the next model call (recent turns and loaded skills are kept)";

/// The most recently active top-level sessions (delegated children are
/// reached through their parent): what `/sessions` and `/resume` list.
async fn recent_sessions(
    dirs: &evoflux_core::dirs::Dirs,
    limit: u32,
) -> anyhow::Result<Vec<evoflux_harness::SessionSummary>> {
    let store = super::app_context(dirs)?.open_store().await?;
    let page = evoflux_harness::SessionSummary::find(
        &store,
        &evoflux_harness::SessionQuery {
            limit: Some(limit),
            ..evoflux_harness::SessionQuery::default()
        },
    )
    .await?;
    Ok(page
        .into_iter()
        .filter(|s| s.session.parent.is_none())
        .collect())
}

/// Removes a session that `/mode` or `/lead` replaced before anything was
/// said in it.
async fn remove_fresh(dirs: &evoflux_core::dirs::Dirs, id: evoflux_core::ids::SessionId) {
    if let Ok(app) = super::app_context(dirs)
        && let Ok(store) = app.open_store().await
    {
        let _ = store.delete_session(id).await;
    }
}

/// `(name, description)` pairs kept past the harness's borrow.
fn owned(pairs: Vec<(&str, &str)>) -> Vec<(String, String)> {
    pairs
        .into_iter()
        .map(|(a, b)| (a.to_owned(), b.to_owned()))
        .collect()
}

/// The models `/model` offers.
fn model_choices(
    dirs: &evoflux_core::dirs::Dirs,
) -> anyhow::Result<Vec<evoflux_app::models::ModelChoice>> {
    Ok(super::app_context(dirs)?.model_choices()?)
}

/// What differs between the chat at a terminal and the chat reading a
/// pipe: how the user's next message is read (and which commands the
/// console carries out itself), what Ctrl-C does during a turn, and what is
/// shown after one. The loop that sends messages, runs `!commands` and
/// waits on turns is [`run`]'s, the same for both.
trait Console {
    /// What Ctrl-C does during a turn.
    const CTRL_C: CtrlC;

    /// Where the session's events go, and the host's refusals with them.
    fn events(&self) -> &dyn EventSink;

    /// Reads what the user says next; a command the console carries out
    /// itself is [`Said::Handled`].
    async fn next(&mut self, live: &mut Hosted) -> anyhow::Result<Said>;

    /// After a turn that completed.
    async fn completed(&mut self, live: &Hosted, outcome: TurnOutcome);

    /// A signal stopped the running turn and ends the chat.
    fn stopped(&self);
}

/// What the user said, as the loop sees it.
enum Said {
    /// A message for the model, or a `!command` for the shell.
    Message(String),
    /// Nothing for the loop: an empty line, or a command the console
    /// carried out.
    Handled,
    /// The chat ends.
    End,
}

/// What Ctrl-C does while a turn runs; SIGTERM or SIGHUP always stops the
/// turn and ends the chat.
#[derive(Debug, Clone, Copy)]
enum CtrlC {
    /// The turn is cancelled; the chat goes on.
    CancelsTurn,
    /// The turn is cancelled and the chat ends.
    EndsChat,
}

/// What a command asks of the loop.
enum Flow {
    Continue,
    Exit,
}

/// The chat: messages until the console says it ends, then the session's
/// host closes, every command and server it started stops, and the user
/// learns how to continue it (also after an error).
async fn run<C: Console>(
    console: &mut C,
    mut live: Hosted,
    processes: &ProcessRuntime,
) -> anyhow::Result<Exit> {
    let ended = converse(console, &mut live).await;
    live.host.close().await;
    processes.shutdown().await;
    // Said even when the chat ends with an error: what was said is stored.
    eprintln!(
        "session {} saved; continue it with `evoflux chat --session {}`",
        live.session.id, live.session.id
    );
    ended?;
    Ok(Exit::Ok)
}

/// The one chat loop: each message is a turn, each `!command` a shell
/// command under the session's lease.
async fn converse<C: Console>(console: &mut C, live: &mut Hosted) -> anyhow::Result<()> {
    loop {
        let message = match console.next(live).await? {
            Said::Message(message) => message,
            Said::Handled => continue,
            Said::End => return Ok(()),
        };
        if let Some(command) = message.strip_prefix('!') {
            user_command(live, command, console.events()).await?;
            continue;
        }
        match turn(console, live, message).await? {
            Flow::Continue => {}
            Flow::Exit => return Ok(()),
        }
    }
}

/// One turn, stopped by a signal through the host's one cancellation path,
/// which ends the turn's open calls and the turn itself.
async fn turn<C: Console>(console: &mut C, live: &Hosted, message: String) -> anyhow::Result<Flow> {
    let handle = match live
        .host
        .submit(Some(message), TurnOptions::default())
        .await
    {
        Ok(handle) => handle,
        Err(e @ (HostError::Busy | HostError::Lease(_))) => {
            refused(console.events(), &e);
            return Ok(Flow::Continue);
        }
        Err(e) => return Err(e.into()),
    };
    let mut quit = false;
    let ended = handle.ended();
    tokio::pin!(ended);
    let ended = loop {
        tokio::select! {
            ended = &mut ended => break ended,
            _ = tokio::signal::ctrl_c(), if !quit => {
                quit = match C::CTRL_C {
                    CtrlC::CancelsTurn => false,
                    CtrlC::EndsChat => true,
                };
                live.host.cancel();
            }
            () = terminate_signal(), if !quit => {
                quit = true;
                live.host.cancel();
            }
        }
    };
    match ended {
        Ok(TurnEnd::Completed(outcome)) => console.completed(live, outcome).await,
        Ok(TurnEnd::Cancelled) if quit => {
            console.stopped();
            return Ok(Flow::Exit);
        }
        // Ctrl-C, or another process took the session (the stream said so).
        Ok(TurnEnd::Cancelled) => {}
        // The event stream showed the error; the session stays usable for
        // the next message.
        Err(
            HostError::Turn(HarnessError::Provider(_) | HarnessError::Command(_))
            | HostError::Reopen(_),
        ) => {}
        Err(e) => return Err(e.into()),
    }
    Ok(Flow::Continue)
}

/// How long completion waits for the MCP servers' resource lists when a
/// session opens: a slow server leaves its resources out, never the chat
/// waiting.
const RESOURCE_LISTING: std::time::Duration = std::time::Duration::from_secs(2);

/// What `/surface` says: the session's surface and each MCP server it
/// hides, with the diagnostic's code and why.
fn surface_report(
    surface: evoflux_harness::SessionSurface,
    hidden: &[evoflux_core::Diagnostic],
) -> String {
    let mut text = match surface {
        evoflux_harness::SessionSurface::Standard => {
            "this session is on the standard surface: every granted MCP server is offered"
                .to_owned()
        }
        evoflux_harness::SessionSurface::WebBridge => {
            "this session is tagged for the browser surface (WebBridge): only MCP servers \
             that declare webbridge-safe are offered"
                .to_owned()
        }
    };
    for d in hidden {
        text.push_str(&format!("\n  [{}] {}", d.code, d.message));
    }
    text
}

/// The chat's open session: its [`SessionHost`] runs it (turns, the lease,
/// cancellation, approvals, changed sources, MCP start-up) as it runs the
/// server's and an editor's; the chat keeps what it shows of it.
struct Hosted {
    host: SessionHost,
    session: Session,
}

impl Hosted {
    /// The skills the user may invoke here, with their descriptions.
    async fn skills(&self) -> anyhow::Result<Vec<(String, String)>> {
        self.with(|harness: &mut Harness| {
            let skills = owned(harness.invocable_skills());
            Box::pin(async move { skills }) as BoxFuture<'_, Vec<(String, String)>>
        })
        .await
    }

    /// The prompt commands the user can type here (`/help`, completion).
    async fn prompt_commands(&self) -> anyhow::Result<Vec<PromptCommand>> {
        self.with(|harness: &mut Harness| {
            let commands = harness.prompt_commands();
            Box::pin(async move { commands }) as BoxFuture<'_, Vec<PromptCommand>>
        })
        .await
    }

    /// Whether `line` invokes one of the session's prompt commands.
    async fn names_prompt_command(&self, line: &str) -> bool {
        let line = line.to_owned();
        self.with(move |harness: &mut Harness| {
            let named = harness.names_prompt_command(&line);
            Box::pin(async move { named }) as BoxFuture<'_, bool>
        })
        .await
        .unwrap_or(false)
    }

    /// `@server:uri` candidates: the resources the session's MCP servers
    /// list, each server given at most [`RESOURCE_LISTING`].
    async fn resources(&self) -> Vec<String> {
        self.with(|harness: &mut Harness| {
            Box::pin(async move {
                tokio::time::timeout(RESOURCE_LISTING, harness.mcp_resources())
                    .await
                    .unwrap_or_default()
                    .into_iter()
                    .map(|(server, r)| format!("{server}:{}", r.uri))
                    .collect()
            }) as BoxFuture<'_, Vec<String>>
        })
        .await
        .unwrap_or_default()
    }

    /// The tools the model sees now, with their descriptions.
    async fn tools(&self) -> anyhow::Result<Vec<(String, String)>> {
        self.with(|harness: &mut Harness| {
            let tools = owned(harness.offered_tools());
            Box::pin(async move { tools }) as BoxFuture<'_, Vec<(String, String)>>
        })
        .await
    }

    /// The session's usage, its children included (`/cost`).
    async fn usage(&self) -> anyhow::Result<Result<evoflux_protocol::Usage, HarnessError>> {
        self.with(|harness: &mut Harness| {
            Box::pin(async move { harness.usage().await })
                as BoxFuture<'_, Result<evoflux_protocol::Usage, HarnessError>>
        })
        .await
    }

    /// `/surface`: tags the session for `surface` (when given) and says
    /// which surface it is on and the MCP servers that hides, with why.
    async fn surface(
        &mut self,
        surface: Option<evoflux_harness::SessionSurface>,
    ) -> anyhow::Result<String> {
        let (session, hidden) = self
            .with(move |harness: &mut Harness| {
                Box::pin(async move {
                    if let Some(surface) = surface {
                        harness.set_surface(surface).await?;
                    }
                    Ok((harness.session().clone(), harness.mcp_hidden()))
                })
                    as BoxFuture<
                        '_,
                        Result<
                            (Session, Vec<evoflux_core::Diagnostic>),
                            evoflux_harness::StoreError,
                        >,
                    >
            })
            .await??;
        self.session = session;
        Ok(surface_report(self.session.surface, &hidden))
    }

    /// `/compact`: older turns are summarized at the next model call.
    async fn compact(&self) -> anyhow::Result<()> {
        self.with(|harness: &mut Harness| {
            harness.request_compaction();
            Box::pin(async {}) as BoxFuture<'_, ()>
        })
        .await
    }

    /// Nothing has been said in the session yet (`/mode` and `/lead` may
    /// replace it).
    async fn is_fresh(&self) -> anyhow::Result<bool> {
        self.with(|harness: &mut Harness| {
            let fresh = !harness
                .messages()
                .iter()
                .any(|m| matches!(m, evoflux_protocol::Message::User { .. }));
            Box::pin(async move { fresh }) as BoxFuture<'_, bool>
        })
        .await
    }

    /// A `!command`, run under the session's lease like a turn.
    async fn run_command(
        &self,
        command: &str,
    ) -> Result<Result<evoflux_harness::ToolResult, HarnessError>, HostError> {
        let command = command.to_owned();
        self.host
            .exclusive(move |harness: &mut Harness| {
                Box::pin(async move { harness.user_command(&command).await })
                    as BoxFuture<'_, Result<evoflux_harness::ToolResult, HarnessError>>
            })
            .await
    }

    /// `f`'s answer from the session's harness, between turns.
    async fn with<R, F>(&self, f: F) -> anyhow::Result<R>
    where
        R: Send + 'static,
        F: for<'h> FnOnce(&'h mut Harness) -> BoxFuture<'h, R> + Send + 'static,
    {
        Ok(self.host.with(f).await?)
    }
}

/// Opens the session `args` name, wired to a host whose events go to
/// `events` and whose approvals `asker` puts to the user, and hosts it.
async fn open_hosted(
    out: &Output,
    args: &SessionArgs,
    events: Arc<dyn EventSink>,
    asker: Arc<dyn Approver>,
    processes: &ProcessRuntime,
    holder: &Holder,
) -> anyhow::Result<Result<Hosted, Exit>> {
    let wiring = HostWiring::new(events, Some(asker));
    let harness = match open(
        out,
        args,
        wiring.events(),
        wiring.approver(),
        processes,
        OpenLease::PerTurn,
    )
    .await?
    {
        Ok((harness, _)) => harness,
        Err(exit) => return Ok(Err(exit)),
    };
    let dirs = match super::resolve_dirs(out) {
        Ok(d) => d,
        Err(exit) => return Ok(Err(exit)),
    };
    let app = super::app_context(&dirs)?;
    let session = harness.session().clone();
    // Changed agents, skills, plugins or config apply from the next
    // message, as in every front end.
    let sources = match SourceWatch::start(&app.source_roots(session.workspace.roots())) {
        Ok(watch) => Some(watch),
        Err(e) => {
            tracing::warn!(error = %e, "cannot watch the sources; changes apply to new sessions");
            None
        }
    };
    let front = Arc::new(CliFront::new(out, args, processes)?);
    let host = SessionHost::start(
        harness,
        wiring,
        front,
        HostOptions {
            holder: Some(holder.clone()),
            sources,
        },
    );
    Ok(Ok(Hosted { host, session }))
}

/// Says why the host refused a message (another process runs a turn on
/// the session): the chat goes on.
fn refused(events: &dyn EventSink, e: &HostError) {
    events.emit(&Event::Error {
        code: e.code().to_owned(),
        message: e.to_string(),
    });
}

/// A `!command`: run under the session's lease like a turn, its result
/// printed; `Ok(false)` when the host refused it (said).
async fn user_command(
    live: &Hosted,
    command: &str,
    events: &dyn EventSink,
) -> anyhow::Result<bool> {
    match live.run_command(command).await {
        Ok(result) => {
            println!("{}", result?.content);
            Ok(true)
        }
        Err(e @ (HostError::Busy | HostError::Lease(_) | HostError::Reopen(_))) => {
            refused(events, &e);
            Ok(false)
        }
        Err(e) => Err(e.into()),
    }
}
