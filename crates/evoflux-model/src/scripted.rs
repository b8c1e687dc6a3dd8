//! A provider that replays a script of turns, for tests, demos and
//! reproducible bug reports.
//!
//! The script is a YAML file (JSON, being YAML, works too). Turn N answers
//! the Nth model call this provider receives; a turn may check the last
//! message of the conversation before answering, and the provider fails
//! with [`ScriptError`] naming the turn as soon as the conversation leaves
//! the script or asks for more turns than it has.
//!
//! ```yaml
//! context_window: 8192        # optional
//! turns:
//!   - expect:
//!       user: List the files  # the last message is this user message
//!     reply:
//!       text: Let me look.
//!       tool_calls:
//!         - name: ls
//!           arguments: {path: .}
//!           id: call_1        # optional; default call_<turn>_<n>
//!   - expect:
//!       tool_result: {contains: README.md}
//!     reply:
//!       text: There is a README.
//!       usage: {input_tokens: 120, output_tokens: 8}  # optional
//!       stop: end_turn                                 # optional
//! ```
//!
//! `expect` is optional. `user` and `tool_result` take either a string
//! (exact match) or `{contains: text}`.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use evoflux_core::config::{ProviderConfig, ProviderKind};
use serde::Deserialize;
use serde_json::Value;

use crate::error::{ProviderError, ScriptError, SetupError};
use crate::event::{StopReason, StreamEvent, Usage};
use crate::message::{Message, Request};
use crate::provider::{EventStream, Provider};

/// A whole script file.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Script {
    #[serde(default)]
    pub context_window: Option<u64>,
    pub turns: Vec<Turn>,
}

/// One scripted model call.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Turn {
    #[serde(default)]
    pub expect: Option<Expect>,
    pub reply: Reply,
}

/// What the last message of the conversation must be.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(try_from = "ExpectFields")]
pub enum Expect {
    User(TextMatch),
    ToolResult(TextMatch),
}

/// The written form of [`Expect`]: a mapping with exactly one key. (The
/// YAML library reads enums only from tags, which nobody writes by hand.)
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ExpectFields {
    #[serde(default)]
    user: Option<TextMatch>,
    #[serde(default)]
    tool_result: Option<TextMatch>,
}

impl TryFrom<ExpectFields> for Expect {
    type Error = String;
    fn try_from(f: ExpectFields) -> Result<Self, String> {
        match (f.user, f.tool_result) {
            (Some(m), None) => Ok(Expect::User(m)),
            (None, Some(m)) => Ok(Expect::ToolResult(m)),
            (Some(_), Some(_)) | (None, None) => {
                Err("expect needs exactly one of `user` or `tool_result`".to_owned())
            }
        }
    }
}

/// How a message's text is compared.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(untagged)]
pub enum TextMatch {
    Exact(String),
    Contains(Contains),
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Contains {
    pub contains: String,
}

impl TextMatch {
    fn matches(&self, text: &str) -> bool {
        match self {
            TextMatch::Exact(s) => s == text,
            TextMatch::Contains(c) => text.contains(&c.contains),
        }
    }

    fn describe(&self) -> String {
        match self {
            TextMatch::Exact(s) => format!("equal to {}", quote(s)),
            TextMatch::Contains(c) => format!("containing {}", quote(&c.contains)),
        }
    }
}

/// What the model says on a turn.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Reply {
    #[serde(default)]
    pub text: String,
    #[serde(default)]
    pub tool_calls: Vec<ScriptedCall>,
    #[serde(default)]
    pub usage: Option<Usage>,
    /// Defaults to `tool_use` when there are tool calls, else `end_turn`.
    #[serde(default)]
    pub stop: Option<StopReason>,
    /// Streams the text word by word with this many milliseconds between
    /// words, as a slow model would (for front ends' tests of streaming);
    /// at once when absent.
    #[serde(default)]
    pub word_delay_ms: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptedCall {
    #[serde(default)]
    pub id: Option<String>,
    pub name: String,
    #[serde(default)]
    pub arguments: Option<Value>,
    /// The argument text exactly as a model would stream it, instead of
    /// `arguments`: scripts malformed calls (text that is not JSON).
    #[serde(default)]
    pub raw_arguments: Option<String>,
}

impl Script {
    /// Parses script text; `path` is only for error messages.
    pub fn parse(path: &Path, text: &str) -> Result<Script, SetupError> {
        yaml_serde::from_str(text).map_err(|e| {
            let line = e.location().and_then(|l| u32::try_from(l.line()).ok());
            let message = e.to_string();
            let message = match message.find(" at line ") {
                Some(i) => message[..i].to_owned(),
                None => message,
            };
            SetupError::ScriptInvalid {
                path: path.to_owned(),
                line,
                message,
            }
        })
    }

    pub fn load(path: &Path) -> Result<Script, SetupError> {
        let text =
            std::fs::read_to_string(path).map_err(|source| SetupError::ScriptUnreadable {
                path: path.to_owned(),
                source,
            })?;
        Script::parse(path, &text)
    }
}

/// Replays a [`Script`], one turn per call.
#[derive(Debug)]
pub struct ScriptedProvider {
    name: String,
    path: PathBuf,
    script: Script,
    context_window: Option<u64>,
    /// Index of the next turn to play.
    next: Mutex<usize>,
}

impl ScriptedProvider {
    pub fn load(name: &str, path: &Path, config: &ProviderConfig) -> Result<Self, SetupError> {
        Ok(Self::new(
            name,
            path,
            Script::load(path)?,
            config.context_window,
        ))
    }

    /// `context_window` from config wins over the script's own.
    pub fn new(name: &str, path: &Path, script: Script, context_window: Option<u64>) -> Self {
        ScriptedProvider {
            name: name.to_owned(),
            path: path.to_owned(),
            context_window: context_window.or(script.context_window),
            script,
            next: Mutex::new(0),
        }
    }

    /// How many turns have been played.
    pub fn turns_played(&self) -> usize {
        *self
            .next
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The next turn's events, and the delay between its words.
    fn play(&self, request: &Request) -> Result<(Vec<StreamEvent>, Option<u64>), ScriptError> {
        let mut next = self
            .next
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let index = *next;
        let turn = self
            .script
            .turns
            .get(index)
            .ok_or_else(|| ScriptError::Exhausted {
                script: self.path.clone(),
                turns: self.script.turns.len(),
            })?;
        let number = index + 1;
        if let Some(expect) = &turn.expect {
            self.check(number, expect, request.messages.last())?;
        }
        *next += 1;
        Ok((
            reply_events(number, &turn.reply, request),
            turn.reply.word_delay_ms,
        ))
    }

    fn check(
        &self,
        turn: usize,
        expect: &Expect,
        last: Option<&Message>,
    ) -> Result<(), ScriptError> {
        let ok = match (expect, last) {
            (Expect::User(m), Some(Message::User { content })) => m.matches(content),
            (Expect::ToolResult(m), Some(Message::Tool { content, .. })) => m.matches(content),
            (Expect::User(_) | Expect::ToolResult(_), _) => false,
        };
        if ok {
            return Ok(());
        }
        let expected = match expect {
            Expect::User(m) => format!("a last user message {}", m.describe()),
            Expect::ToolResult(m) => format!("a last tool result {}", m.describe()),
        };
        let actual = match last {
            None => "no messages".to_owned(),
            Some(Message::System { content }) => {
                format!("a last system message {}", quote(content))
            }
            Some(Message::User { content }) => format!("a last user message {}", quote(content)),
            Some(Message::Assistant { content, .. }) => {
                format!("a last assistant message {}", quote(content))
            }
            Some(Message::Tool { content, .. }) => format!("a last tool result {}", quote(content)),
        };
        Err(ScriptError::Diverged {
            script: self.path.clone(),
            turn,
            expected,
            actual,
        })
    }
}

/// A short quoted excerpt for error messages.
fn quote(s: &str) -> String {
    const MAX: usize = 120;
    match s.char_indices().nth(MAX) {
        Some((i, _)) => format!("{:?}…", &s[..i]),
        None => format!("{s:?}"),
    }
}

/// About four characters per token: deterministic, and close enough for
/// demos that show usage.
fn estimate_tokens(chars: usize) -> u64 {
    u64::try_from(chars.div_ceil(4)).unwrap_or(u64::MAX)
}

fn reply_events(turn: usize, reply: &Reply, request: &Request) -> Vec<StreamEvent> {
    let mut events = Vec::new();
    if !reply.text.is_empty() {
        match reply.word_delay_ms {
            // Word by word: each piece keeps the whitespace before it.
            Some(_) => {
                let mut start = 0;
                for (i, c) in reply.text.char_indices() {
                    if c.is_whitespace() && i > start && !reply.text[start..i].trim().is_empty() {
                        events.push(StreamEvent::TextDelta {
                            text: reply.text[start..i].to_owned(),
                        });
                        start = i;
                    }
                }
                events.push(StreamEvent::TextDelta {
                    text: reply.text[start..].to_owned(),
                });
            }
            None => events.push(StreamEvent::TextDelta {
                text: reply.text.clone(),
            }),
        }
    }
    let mut calls = Vec::new();
    let mut output_chars = reply.text.len();
    for (i, c) in reply.tool_calls.iter().enumerate() {
        let id =
            c.id.clone()
                .unwrap_or_else(|| format!("call_{turn}_{}", i + 1));
        let text = match (&c.raw_arguments, &c.arguments) {
            (Some(raw), _) => raw.clone(),
            (None, Some(arguments)) => arguments.to_string(),
            (None, None) => "{}".to_owned(),
        };
        output_chars += c.name.len() + text.len();
        events.push(StreamEvent::ToolCallDelta {
            index: u32::try_from(i).unwrap_or(u32::MAX),
            id: Some(id.clone()),
            name: Some(c.name.clone()),
            arguments: text.clone(),
        });
        // The same assembly as a wire stream, so a malformed call reaches
        // the harness exactly as a real provider's would.
        calls.push(crate::assemble::assemble_one(&id, &c.name, &text));
    }
    events.extend(calls);
    let usage = reply.usage.unwrap_or_else(|| {
        let input_chars: usize = request
            .messages
            .iter()
            .map(|m| match m {
                Message::System { content }
                | Message::User { content }
                | Message::Tool { content, .. } => content.len(),
                Message::Assistant {
                    content,
                    tool_calls,
                } => {
                    content.len()
                        + tool_calls
                            .iter()
                            .map(|c| c.name.len() + c.arguments.to_string().len())
                            .sum::<usize>()
                }
            })
            .sum();
        Usage {
            input_tokens: estimate_tokens(input_chars),
            output_tokens: estimate_tokens(output_chars),
            cached_input_tokens: 0,
        }
    });
    events.push(StreamEvent::Usage { usage });
    let reason = reply.stop.unwrap_or(if reply.tool_calls.is_empty() {
        StopReason::EndTurn
    } else {
        StopReason::ToolUse
    });
    events.push(StreamEvent::Stop { reason });
    events.push(StreamEvent::Done);
    events
}

impl Provider for ScriptedProvider {
    fn name(&self) -> &str {
        &self.name
    }

    fn kind(&self) -> ProviderKind {
        ProviderKind::Scripted
    }

    fn context_window(&self) -> Option<u64> {
        self.context_window
    }

    fn stream(&self, request: Request) -> EventStream {
        let (items, delay): (Vec<Result<StreamEvent, ProviderError>>, Option<u64>) =
            match self.play(&request) {
                Ok((events, delay)) => (events.into_iter().map(Ok).collect(), delay),
                Err(e) => (vec![Err(ProviderError::Script(e))], None),
            };
        match delay {
            None => Box::pin(futures_util::stream::iter(items)),
            Some(ms) => {
                use futures_util::StreamExt as _;
                Box::pin(
                    futures_util::stream::iter(items).then(move |item| async move {
                        if let Ok(StreamEvent::TextDelta { .. }) = &item {
                            tokio::time::sleep(std::time::Duration::from_millis(ms)).await;
                        }
                        item
                    }),
                )
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_errors_carry_the_line() {
        let err = Script::parse(
            Path::new("s.yaml"),
            "turns:\n  - reply:\n      text: hi\n      colour: red\n",
        )
        .unwrap_err();
        match &err {
            SetupError::ScriptInvalid { line, message, .. } => {
                assert_eq!(*line, Some(4), "{message}");
                assert!(message.contains("colour"), "{message}");
            }
            other => panic!("unexpected {other:?}"),
        }
        assert_eq!(err.code(), "model/script-invalid");
    }

    #[test]
    fn expect_needs_exactly_one_key() {
        let err = Script::parse(
            Path::new("s.yaml"),
            "turns:\n  - expect: {user: a, tool_result: b}\n    reply: {text: x}\n",
        )
        .unwrap_err();
        assert!(err.to_string().contains("exactly one"), "{err}");
    }

    #[test]
    fn expect_forms() {
        let s = Script::parse(
            Path::new("s.yaml"),
            r#"{"turns": [
                {"expect": {"user": "hi"}, "reply": {"text": "a"}},
                {"expect": {"tool_result": {"contains": "x"}}, "reply": {}}
            ]}"#,
        )
        .unwrap();
        assert_eq!(
            s.turns[0].expect,
            Some(Expect::User(TextMatch::Exact("hi".into())))
        );
        assert_eq!(
            s.turns[1].expect,
            Some(Expect::ToolResult(TextMatch::Contains(Contains {
                contains: "x".into()
            })))
        );
    }
}
