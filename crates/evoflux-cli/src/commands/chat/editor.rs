//! The chat's line editor on its own thread.
//!
//! One thread owns the terminal's input (rustyline: Emacs keys, history,
//! bracketed paste, completion), so the prompt and an approval asked in the
//! middle of a turn never read the same keys twice. The async side sends a
//! request and awaits its answer.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use rustyline::completion::{Completer, Pair};
use rustyline::error::ReadlineError;
use rustyline::highlight::Highlighter;
use rustyline::hint::Hinter;
use rustyline::history::{DefaultHistory, History as _};
use rustyline::validate::Validator;
use rustyline::{Cmd, Config, Editor, EventHandler, KeyCode, KeyEvent, Modifiers};
use tokio::sync::oneshot;

use super::complete::{Completions, complete};

/// What one read returned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Read {
    Line(String),
    /// Ctrl-C.
    Interrupted,
    /// Ctrl-D on an empty line, or the terminal went away.
    Eof,
}

/// What is being read: a message (history and completion) or a short
/// answer to a question the turn asks (neither).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadKind {
    Message,
    Answer,
}

enum Request {
    Read {
        prompt: String,
        kind: ReadKind,
        reply: oneshot::Sender<Read>,
    },
    /// Messages are recalled from and saved to this file from now on.
    History(PathBuf),
}

/// Most history entries kept per workspace.
const HISTORY_SIZE: usize = 2_000;

/// The handle the chat and its approver read through.
#[derive(Debug, Clone)]
pub struct LineEditor {
    requests: std::sync::mpsc::Sender<Request>,
    completions: Arc<Mutex<Completions>>,
}

impl std::fmt::Debug for Request {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Request::Read { prompt, kind, .. } => f
                .debug_struct("Read")
                .field("prompt", prompt)
                .field("kind", kind)
                .finish(),
            Request::History(path) => f.debug_tuple("History").field(path).finish(),
        }
    }
}

impl LineEditor {
    /// Starts the editor thread (no history until [`LineEditor::history`]).
    pub fn start() -> anyhow::Result<LineEditor> {
        let completions = Arc::new(Mutex::new(Completions::default()));
        let config = Config::builder()
            .max_history_size(HISTORY_SIZE)?
            .auto_add_history(false)
            .history_ignore_dups(true)?
            .bracketed_paste(true)
            .completion_type(rustyline::CompletionType::List)
            .build();
        let helper = ChatHelper {
            completions: Arc::clone(&completions),
            active: std::sync::atomic::AtomicBool::new(true),
        };
        let mut editor: Editor<ChatHelper, DefaultHistory> = Editor::with_config(config)?;
        editor.set_helper(Some(helper));
        // Alt-Enter inserts a newline; Enter sends.
        editor.bind_sequence(
            KeyEvent(KeyCode::Enter, Modifiers::ALT),
            EventHandler::Simple(Cmd::Newline),
        );
        let (requests, rx) = std::sync::mpsc::channel::<Request>();
        std::thread::Builder::new()
            .name("evoflux-chat-editor".into())
            .spawn(move || serve(editor, rx))?;
        Ok(LineEditor {
            requests,
            completions,
        })
    }

    /// Reads one line after `prompt`.
    pub async fn read(&self, prompt: &str, kind: ReadKind) -> Read {
        let (reply, answer) = oneshot::channel();
        let request = Request::Read {
            prompt: prompt.to_owned(),
            kind,
            reply,
        };
        if self.requests.send(request).is_err() {
            return Read::Eof;
        }
        answer.await.unwrap_or(Read::Eof)
    }

    /// Recalls and saves messages in `path` from now on (one file per
    /// workspace; created with its folder on the first message).
    pub fn history(&self, path: PathBuf) {
        let _ = self.requests.send(Request::History(path));
    }

    /// What completion offers from now on.
    pub fn set_completions(&self, completions: Completions) {
        if let Ok(mut c) = self.completions.lock() {
            *c = completions;
        }
    }
}

fn serve(
    mut editor: Editor<ChatHelper, DefaultHistory>,
    requests: std::sync::mpsc::Receiver<Request>,
) {
    let mut warned = false;
    let mut history: Option<PathBuf> = None;
    while let Ok(request) = requests.recv() {
        let (prompt, kind, reply) = match request {
            Request::History(path) => {
                if history.as_ref() != Some(&path) {
                    let _ = editor.clear_history();
                    if path.exists()
                        && let Err(e) = editor.load_history(&path)
                    {
                        eprintln!(
                            "warning: cannot read the chat history {}: {e}",
                            path.display()
                        );
                    }
                    history = Some(path);
                }
                continue;
            }
            Request::Read {
                prompt,
                kind,
                reply,
            } => (prompt, kind, reply),
        };
        if let Some(h) = editor.helper() {
            h.active.store(
                kind == ReadKind::Message,
                std::sync::atomic::Ordering::Relaxed,
            );
        }
        let read = match editor.readline(&prompt) {
            Ok(line) => {
                if kind == ReadKind::Message && !line.trim().is_empty() {
                    let _ = editor.history_mut().add(&line);
                    if let Some(history) = &history
                        && let Err(e) = append(&mut editor, history)
                        && !warned
                    {
                        warned = true;
                        eprintln!(
                            "warning: cannot save the chat history {}: {e}",
                            history.display()
                        );
                    }
                }
                Read::Line(line)
            }
            Err(ReadlineError::Interrupted) => Read::Interrupted,
            Err(ReadlineError::Eof) => Read::Eof,
            Err(e) => {
                eprintln!("cannot read the terminal: {e}");
                Read::Eof
            }
        };
        let _ = reply.send(read);
    }
}

/// Appends the newest entry to the history file (private to the user).
fn append(
    editor: &mut Editor<ChatHelper, DefaultHistory>,
    path: &std::path::Path,
) -> anyhow::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    editor.append_history(path)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))?;
    }
    Ok(())
}

/// Completion for the editor; silent while an answer is read.
struct ChatHelper {
    completions: Arc<Mutex<Completions>>,
    active: std::sync::atomic::AtomicBool,
}

impl Completer for ChatHelper {
    type Candidate = Pair;

    fn complete(
        &self,
        line: &str,
        pos: usize,
        _ctx: &rustyline::Context<'_>,
    ) -> rustyline::Result<(usize, Vec<Pair>)> {
        if !self.active.load(std::sync::atomic::Ordering::Relaxed) {
            return Ok((pos, Vec::new()));
        }
        let data = self
            .completions
            .lock()
            .map(|c| c.clone())
            .unwrap_or_default();
        let (start, found) = complete(line, pos, &data);
        Ok((
            start,
            found
                .into_iter()
                .map(|(display, replacement)| Pair {
                    display,
                    replacement,
                })
                .collect(),
        ))
    }
}

impl Hinter for ChatHelper {
    type Hint = String;
}

impl Highlighter for ChatHelper {}

impl Validator for ChatHelper {}

impl rustyline::Helper for ChatHelper {}
