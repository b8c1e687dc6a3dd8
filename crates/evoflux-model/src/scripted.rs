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
//! A session's title side call (a request marked
//! [`crate::CallPurpose::Title`]) plays no turn: it is answered with the
//! script's `title:` when it has one (`title: Lisbon offsite`, or a reply
//! such as `title: {text: Lisbon offsite, word_delay_ms: 300}` for a slow
//! model), and with nothing otherwise, so the session keeps the title its first message
//! gave it. Either way the script's turns stay the turns' calls.
//!
//! `expect` is optional. `user` and `tool_result` take either a string
//! (exact match), `{contains: text}` or `{sha256: hex, excerpt: text}`.
//! A script written by `evoflux sessions export` also checks `system` and
//! `tools` (`{sha256: hex}` of the system prompt and of [`tools_text`]) and
//! `input` (every message since the previous reply, in order), and keeps
//! the recorded texts under `texts:` so a replay can show a diff.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use evoflux_core::config::{ProviderConfig, ProviderKind};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::{ProviderError, ScriptError, SetupError};
use crate::event::{StopReason, StreamEvent, Usage};
use crate::message::{Message, ProviderItem, ProviderToolKind, Request};
use crate::provider::{EventStream, Provider};

/// A whole script file.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Script {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_window: Option<u64>,
    /// Where an exported script came from (`evoflux sessions export`): the
    /// session, the date its prompts carried, its repositories. The
    /// provider never reads it; a replay does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recorded: Option<Value>,
    /// Recorded texts by SHA-256 (system prompts, tool lists, long tool
    /// results) that `expect` refers to, so a divergence shows a diff.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub texts: BTreeMap<String, String>,
    /// The provider-run tools this script's provider claims to have
    /// (`[web_search]`), so a test can drive a session whose provider
    /// searches the web; the replies say what the searches found.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub provider_tools: Vec<ProviderToolKind>,
    /// What the model answers when asked for the session's title; without
    /// it the title call gets an empty answer (see the module doc).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<ScriptTitle>,
    pub turns: Vec<Turn>,
}

/// A script's answer to the title call: the title, or a whole reply.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ScriptTitle {
    Text(String),
    Reply(Reply),
}

/// One scripted model call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Turn {
    /// Which session of a team made the call (`lead`, or a child's agent
    /// and number): for people reading the script.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expect: Option<Expect>,
    pub reply: Reply,
}

/// What the request of a turn must carry. Every check present must hold.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "ExpectFields", into = "ExpectFields")]
pub struct Expect {
    /// The last message of the conversation.
    pub last: Option<LastMessage>,
    /// SHA-256 of the system prompt as sent.
    pub system: Option<String>,
    /// SHA-256 of the tool list as [`tools_text`] writes it.
    pub tools: Option<String>,
    /// Every message after the last assistant message, in order.
    pub input: Option<Vec<LastMessage>>,
}

/// One message a turn checks: a user message or a tool result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "MessageFields", into = "MessageFields")]
pub enum LastMessage {
    User(TextMatch),
    ToolResult(TextMatch),
}

/// The written form of [`Expect`]. (The YAML library reads enums only from
/// tags, which nobody writes by hand.)
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct ExpectFields {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    user: Option<TextMatch>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    tool_result: Option<TextMatch>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    system: Option<Digest>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    tools: Option<Digest>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    input: Option<Vec<MessageFields>>,
}

/// The written form of [`LastMessage`]: a mapping with exactly one key.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct MessageFields {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    user: Option<TextMatch>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    tool_result: Option<TextMatch>,
}

impl TryFrom<MessageFields> for LastMessage {
    type Error = String;
    fn try_from(f: MessageFields) -> Result<Self, String> {
        match (f.user, f.tool_result) {
            (Some(m), None) => Ok(LastMessage::User(m)),
            (None, Some(m)) => Ok(LastMessage::ToolResult(m)),
            (Some(_), Some(_)) | (None, None) => {
                Err("a message check needs exactly one of `user` or `tool_result`".to_owned())
            }
        }
    }
}

impl From<LastMessage> for MessageFields {
    fn from(m: LastMessage) -> Self {
        match m {
            LastMessage::User(t) => MessageFields {
                user: Some(t),
                tool_result: None,
            },
            LastMessage::ToolResult(t) => MessageFields {
                user: None,
                tool_result: Some(t),
            },
        }
    }
}

impl TryFrom<ExpectFields> for Expect {
    type Error = String;
    fn try_from(f: ExpectFields) -> Result<Self, String> {
        let last = match (f.user, f.tool_result) {
            (Some(m), None) => Some(LastMessage::User(m)),
            (None, Some(m)) => Some(LastMessage::ToolResult(m)),
            (None, None) => None,
            (Some(_), Some(_)) => {
                return Err("expect needs exactly one of `user` or `tool_result`".to_owned());
            }
        };
        let input = f
            .input
            .map(|v| v.into_iter().map(LastMessage::try_from).collect())
            .transpose()?;
        if last.is_none() && input.is_none() && f.system.is_none() && f.tools.is_none() {
            return Err(
                "expect needs exactly one of `user` or `tool_result`, or `input`, `system` or `tools`"
                    .to_owned(),
            );
        }
        Ok(Expect {
            last,
            system: f.system.map(|d| d.sha256),
            tools: f.tools.map(|d| d.sha256),
            input,
        })
    }
}

impl From<Expect> for ExpectFields {
    fn from(e: Expect) -> Self {
        let (user, tool_result) = match e.last {
            Some(LastMessage::User(t)) => (Some(t), None),
            Some(LastMessage::ToolResult(t)) => (None, Some(t)),
            None => (None, None),
        };
        ExpectFields {
            user,
            tool_result,
            system: e.system.map(|sha256| Digest {
                sha256,
                excerpt: None,
            }),
            tools: e.tools.map(|sha256| Digest {
                sha256,
                excerpt: None,
            }),
            input: e
                .input
                .map(|v| v.into_iter().map(MessageFields::from).collect()),
        }
    }
}

/// How a message's text is compared.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum TextMatch {
    Exact(String),
    Contains(Contains),
    /// By SHA-256 of the text, for long or redacted texts; the excerpt is
    /// for people reading the script.
    Digest(Digest),
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Contains {
    pub contains: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Digest {
    pub sha256: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub excerpt: Option<String>,
}

impl TextMatch {
    fn matches(&self, text: &str) -> bool {
        match self {
            TextMatch::Exact(s) => s == text,
            TextMatch::Contains(c) => text.contains(&c.contains),
            TextMatch::Digest(d) => sha256(text) == d.sha256,
        }
    }

    fn describe(&self) -> String {
        match self {
            TextMatch::Exact(s) => format!("equal to {}", quote(s)),
            TextMatch::Contains(c) => format!("containing {}", quote(&c.contains)),
            TextMatch::Digest(d) => match &d.excerpt {
                Some(e) => format!("with SHA-256 {} (starting {})", d.sha256, quote(e)),
                None => format!("with SHA-256 {}", d.sha256),
            },
        }
    }
}

/// Lowercase hex SHA-256 of a text: the digest `expect` uses.
pub fn sha256(text: &str) -> String {
    evoflux_core::hash::sha256_hex(text.as_bytes()).to_string()
}

/// The tool list as one text, a few lines per tool: what `expect.tools`
/// hashes and what a replay diffs, so a changed description shows as one
/// changed line under its tool's name.
pub fn tools_text(tools: &[crate::message::ToolDefinition]) -> String {
    let mut out = String::new();
    for t in tools {
        out.push_str("tool ");
        out.push_str(&t.name);
        out.push('\n');
        for line in t.description.lines() {
            out.push_str("  | ");
            out.push_str(line);
            out.push('\n');
        }
        out.push_str("  parameters: ");
        out.push_str(
            &evoflux_core::hash::canonical_json(&t.parameters)
                .unwrap_or_else(|_| t.parameters.to_string()),
        );
        out.push('\n');
    }
    out
}

/// The messages after the last assistant message (the system message
/// aside): what a model call is given beyond what it answered before.
pub fn trailing_input(messages: &[Message]) -> &[Message] {
    let start = messages
        .iter()
        .rposition(|m| matches!(m, Message::Assistant { .. }))
        .map_or(0, |i| i + 1);
    let rest = &messages[start..];
    match rest.first() {
        Some(Message::System { .. }) => &rest[1..],
        _ => rest,
    }
}

/// What a script's placeholders stand for in this run, so a script
/// recorded in one directory replays in another: texts the harness sends
/// are compared after `value → placeholder` substitution, and replies are
/// played after `placeholder → value`. Shared with whoever drives the run,
/// which binds values it learns as the run goes (a child session's id).
#[derive(Debug, Default)]
pub struct Bindings {
    /// `(placeholder, value)`, longest value first.
    pairs: std::sync::RwLock<Vec<(String, String)>>,
}

impl Bindings {
    pub fn new(pairs: impl IntoIterator<Item = (String, String)>) -> Bindings {
        let b = Bindings::default();
        for (placeholder, value) in pairs {
            b.bind(placeholder, value);
        }
        b
    }

    /// Binds `placeholder` to `value` (an empty value binds nothing).
    pub fn bind(&self, placeholder: impl Into<String>, value: impl Into<String>) {
        let value = value.into();
        let placeholder = placeholder.into();
        if value.is_empty() || placeholder.is_empty() {
            return;
        }
        let mut pairs = self
            .pairs
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        pairs.retain(|(p, _)| *p != placeholder);
        pairs.push((placeholder, value));
        pairs.sort_by(|a, b| b.1.len().cmp(&a.1.len()).then_with(|| a.0.cmp(&b.0)));
    }

    fn pairs(&self) -> std::sync::RwLockReadGuard<'_, Vec<(String, String)>> {
        self.pairs
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Whether nothing is bound.
    pub fn is_empty(&self) -> bool {
        self.pairs().is_empty()
    }

    /// A text as a script writes it: values replaced by their placeholders,
    /// and the one field of a command observation that differs on every
    /// run (its `duration:` line) masked, so timing never diverges.
    pub fn to_script(&self, text: &str) -> String {
        let mut out = text.to_owned();
        for (placeholder, value) in self.pairs().iter() {
            if out.contains(value.as_str()) {
                out = out.replace(value.as_str(), placeholder);
            }
        }
        mask_durations(&out)
    }

    /// A script's text as this run needs it: placeholders replaced.
    pub fn from_script(&self, text: &str) -> String {
        let mut out = text.to_owned();
        for (placeholder, value) in self.pairs().iter() {
            if out.contains(placeholder.as_str()) {
                out = out.replace(placeholder.as_str(), value);
            }
        }
        out
    }

    /// [`Bindings::to_script`] over every string of a JSON value.
    pub fn value_to_script(&self, value: &Value) -> Value {
        map_strings(value, &|s| self.to_script(s))
    }

    /// [`Bindings::from_script`] over every string of a JSON value.
    pub fn value_from_script(&self, value: &Value) -> Value {
        map_strings(value, &|s| self.from_script(s))
    }
}

/// Replaces the value of every `duration: <n>s` line with `${duration}`.
fn mask_durations(text: &str) -> String {
    if !text.contains("duration: ") {
        return text.to_owned();
    }
    let mut out = String::with_capacity(text.len());
    for line in text.split_inclusive('\n') {
        let body = line.trim_end_matches('\n');
        let timed = body.strip_prefix("duration: ").is_some_and(|v| {
            v.strip_suffix('s').is_some_and(|n| {
                !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit() || b == b'.')
            })
        });
        if timed {
            out.push_str("duration: ${duration}");
            out.push_str(&line[body.len()..]);
        } else {
            out.push_str(line);
        }
    }
    out
}

/// `value` with `f` applied to every string in it (keys stay).
pub fn map_strings(value: &Value, f: &dyn Fn(&str) -> String) -> Value {
    match value {
        Value::String(s) => Value::String(f(s)),
        Value::Array(items) => Value::Array(items.iter().map(|v| map_strings(v, f)).collect()),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), map_strings(v, f)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// Which part of a request left the script.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScriptPart {
    /// The last message (`expect.user` / `expect.tool_result`).
    LastMessage,
    System,
    Tools,
    /// The `n`th (0-based) message of `expect.input`, or the count of them.
    Input(usize),
}

/// What the model says on a turn.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Reply {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub text: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ScriptedCall>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    /// Defaults to `tool_use` when there are tool calls, else `end_turn`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop: Option<StopReason>,
    /// Streams the text word by word with this many milliseconds between
    /// words, as a slow model would (for front ends' tests of streaming);
    /// at once when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub word_delay_ms: Option<u64>,
    /// What the provider produced besides text and calls (web searches,
    /// citations), streamed before the text.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub provider_items: Vec<ProviderItem>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptedCall {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<Value>,
    /// The argument text exactly as a model would stream it, instead of
    /// `arguments`: scripts malformed calls (text that is not JSON).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw_arguments: Option<String>,
}

impl Script {
    /// Parses script text; `path` is only for error messages.
    pub fn parse(path: &Path, text: &str) -> Result<Script, SetupError> {
        evoflux_core::nesting::check_yaml(text).map_err(|e| SetupError::ScriptInvalid {
            path: path.to_owned(),
            line: Some(e.line),
            message: e.to_string(),
            code: e.code(),
        })?;
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
                code: "model/script-invalid",
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
    bindings: std::sync::Arc<Bindings>,
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
            bindings: std::sync::Arc::default(),
            next: Mutex::new(0),
        }
    }

    /// Plays the script with its placeholders bound to this run's values.
    pub fn with_bindings(mut self, bindings: std::sync::Arc<Bindings>) -> Self {
        self.bindings = bindings;
        self
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
            self.check(number, expect, request)?;
        }
        *next += 1;
        let reply = self.bound_reply(&turn.reply);
        Ok((
            reply_events(number, &reply, request),
            turn.reply.word_delay_ms,
        ))
    }

    fn bound_reply(&self, reply: &Reply) -> Reply {
        if self.bindings.is_empty() {
            return reply.clone();
        }
        Reply {
            text: self.bindings.from_script(&reply.text),
            tool_calls: reply
                .tool_calls
                .iter()
                .map(|c| ScriptedCall {
                    id: c.id.clone(),
                    name: c.name.clone(),
                    arguments: c
                        .arguments
                        .as_ref()
                        .map(|a| self.bindings.value_from_script(a)),
                    raw_arguments: c
                        .raw_arguments
                        .as_ref()
                        .map(|r| self.bindings.from_script(r)),
                })
                .collect(),
            ..reply.clone()
        }
    }

    fn diverged(
        &self,
        turn: usize,
        part: ScriptPart,
        expected: String,
        actual: String,
        actual_text: Option<String>,
    ) -> ScriptError {
        ScriptError::Diverged {
            script: self.path.clone(),
            turn,
            part,
            expected,
            actual,
            actual_text,
        }
    }

    fn check(&self, turn: usize, expect: &Expect, request: &Request) -> Result<(), ScriptError> {
        if let Some(want) = &expect.system {
            let text = match request.messages.first() {
                Some(Message::System { content }) => self.bindings.to_script(content),
                _ => String::new(),
            };
            if sha256(&text) != *want {
                return Err(self.diverged(
                    turn,
                    ScriptPart::System,
                    format!("a system prompt with SHA-256 {want}"),
                    format!("a system prompt {}", quote(&text)),
                    Some(text),
                ));
            }
        }
        if let Some(want) = &expect.tools {
            let text = self.bindings.to_script(&tools_text(&request.tools));
            if sha256(&text) != *want {
                return Err(self.diverged(
                    turn,
                    ScriptPart::Tools,
                    format!("a tool list with SHA-256 {want}"),
                    format!(
                        "{} tool(s): {}",
                        request.tools.len(),
                        request
                            .tools
                            .iter()
                            .map(|t| t.name.as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                    Some(text),
                ));
            }
        }
        if let Some(want) = &expect.input {
            let got = trailing_input(&request.messages);
            for (i, check) in want.iter().enumerate() {
                let Some(message) = got.get(i) else {
                    return Err(self.diverged(
                        turn,
                        ScriptPart::Input(i),
                        format!(
                            "{} new message(s), the {} a {}",
                            want.len(),
                            ordinal(i + 1),
                            describe_check(check)
                        ),
                        format!("{} new message(s)", got.len()),
                        None,
                    ));
                };
                if !self.message_matches(check, message) {
                    return Err(self.diverged(
                        turn,
                        ScriptPart::Input(i),
                        format!(
                            "its {} new message to be a {}",
                            ordinal(i + 1),
                            describe_check(check)
                        ),
                        self.describe_message(Some(message)),
                        self.message_text(message),
                    ));
                }
            }
            if got.len() > want.len() {
                return Err(self.diverged(
                    turn,
                    ScriptPart::Input(want.len()),
                    format!("{} new message(s)", want.len()),
                    format!(
                        "{} new message(s), the last {}",
                        got.len(),
                        self.describe_message(got.last())
                    ),
                    None,
                ));
            }
        }
        if let Some(check) = &expect.last {
            let last = request.messages.last();
            if !last.is_some_and(|m| self.message_matches(check, m)) {
                return Err(self.diverged(
                    turn,
                    ScriptPart::LastMessage,
                    format!("a last {}", describe_check(check)),
                    self.describe_message(last),
                    last.and_then(|m| self.message_text(m)),
                ));
            }
        }
        Ok(())
    }

    fn message_matches(&self, check: &LastMessage, message: &Message) -> bool {
        match (check, message) {
            (LastMessage::User(m), Message::User { content, .. })
            | (LastMessage::ToolResult(m), Message::Tool { content, .. }) => {
                m.matches(&self.bindings.to_script(content))
            }
            (LastMessage::User(_) | LastMessage::ToolResult(_), _) => false,
        }
    }

    fn message_text(&self, message: &Message) -> Option<String> {
        match message {
            Message::User { content, .. } | Message::Tool { content, .. } => {
                Some(self.bindings.to_script(content))
            }
            Message::System { .. } | Message::Assistant { .. } => None,
        }
    }

    fn describe_message(&self, message: Option<&Message>) -> String {
        match message {
            None => "no messages".to_owned(),
            Some(Message::System { content }) => {
                format!("a last system message {}", quote(content))
            }
            Some(Message::User { content, .. }) => {
                format!(
                    "a user message {}",
                    quote(&self.bindings.to_script(content))
                )
            }
            Some(Message::Assistant { content, .. }) => {
                format!("an assistant message {}", quote(content))
            }
            Some(Message::Tool { content, .. }) => {
                format!("a tool result {}", quote(&self.bindings.to_script(content)))
            }
        }
    }
}

fn describe_check(check: &LastMessage) -> String {
    match check {
        LastMessage::User(m) => format!("user message {}", m.describe()),
        LastMessage::ToolResult(m) => format!("tool result {}", m.describe()),
    }
}

fn ordinal(n: usize) -> String {
    let suffix = match (n % 10, n % 100) {
        (1, 11) | (2, 12) | (3, 13) => "th",
        (1, _) => "st",
        (2, _) => "nd",
        (3, _) => "rd",
        _ => "th",
    };
    format!("{n}{suffix}")
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
    let mut events: Vec<StreamEvent> = reply
        .provider_items
        .iter()
        .map(|item| StreamEvent::ProviderItem { item: item.clone() })
        .collect();
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
                | Message::User { content, .. }
                | Message::Tool { content, .. } => content.len(),
                Message::Assistant {
                    content,
                    tool_calls,
                    provider_items: _,
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
            cache_write_input_tokens: 0,
            web_search_requests: 0,
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

/// The answer to a title call, and the delay between its words: the
/// script's title as a reply of its own (with its usage estimated as a
/// turn's is), or an empty answer that cost nothing.
fn title_events(title: Option<&ScriptTitle>, request: &Request) -> (Vec<StreamEvent>, Option<u64>) {
    let reply = match title {
        Some(ScriptTitle::Text(text)) => Reply {
            text: text.clone(),
            ..Reply::default()
        },
        Some(ScriptTitle::Reply(reply)) => reply.clone(),
        None => {
            let events = vec![
                StreamEvent::Stop {
                    reason: StopReason::EndTurn,
                },
                StreamEvent::Done,
            ];
            return (events, None);
        }
    };
    (reply_events(0, &reply, request), reply.word_delay_ms)
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

    fn provider_tools(&self) -> &[ProviderToolKind] {
        &self.script.provider_tools
    }

    fn stream(&self, request: Request) -> EventStream {
        let (items, delay): (Vec<Result<StreamEvent, ProviderError>>, Option<u64>) =
            match request.purpose {
                crate::CallPurpose::Title => {
                    let (events, delay) = title_events(self.script.title.as_ref(), &request);
                    (events.into_iter().map(Ok).collect(), delay)
                }
                // An MCP server's sampling request plays the script's next
                // turn, so a test scripts the model's answer to it.
                crate::CallPurpose::Turn
                | crate::CallPurpose::SkillResolution
                | crate::CallPurpose::Sampling => match self.play(&request) {
                    Ok((events, delay)) => (events.into_iter().map(Ok).collect(), delay),
                    Err(e) => (vec![Err(ProviderError::Script(e))], None),
                },
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
    fn hostile_nesting_is_refused_before_parsing() {
        let text = format!(
            "turns:\n  - reply:\n      text: {}{}\n",
            "[".repeat(100_000),
            "]".repeat(100_000)
        );
        let err = Script::parse(Path::new("s.yaml"), &text).unwrap_err();
        assert_eq!(err.code(), "yaml/too-deep");
        assert_eq!(err.to_diagnostic().locator.line, Some(3));
    }

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
    fn bindings_round_trip_and_mask_durations() {
        let b = Bindings::new([
            ("${workspace}".to_owned(), "/tmp/a/repo".to_owned()),
            ("${data}".to_owned(), "/tmp/a".to_owned()),
        ]);
        let text = "[Succeeded]\nduration: 0.01s\n\n/tmp/a/repo/x and /tmp/a/y\nduration: later\n";
        let script = b.to_script(text);
        assert_eq!(
            script,
            "[Succeeded]\nduration: ${duration}\n\n${workspace}/x and ${data}/y\nduration: later\n"
        );
        assert_eq!(b.from_script("${workspace}/x"), "/tmp/a/repo/x");
    }

    fn text(m: &Message) -> &str {
        match m {
            Message::Assistant { content, .. } => content,
            Message::System { .. } | Message::User { .. } | Message::Tool { .. } => "",
        }
    }

    #[tokio::test]
    async fn a_title_call_is_answered_by_the_script_s_title_and_plays_no_turn() {
        let path = Path::new("s.yaml");
        let titled = Script::parse(
            path,
            "title: Lisbon offsite\nturns:\n  - reply: {text: first}\n",
        )
        .unwrap();
        let provider = ScriptedProvider::new("s", path, titled, None);
        let ask = |purpose| {
            Request::new("m", vec![Message::user("Plan the offsite")]).with_purpose(purpose)
        };
        let title = crate::collect(provider.stream(ask(crate::CallPurpose::Title)))
            .await
            .unwrap();
        assert_eq!(text(&title.message), "Lisbon offsite");
        assert!(title.usage.is_some_and(|u| u.output_tokens > 0));
        assert_eq!(provider.turns_played(), 0);
        // The turn still gets the script's first reply.
        let turn = crate::collect(provider.stream(ask(crate::CallPurpose::Turn)))
            .await
            .unwrap();
        assert_eq!(text(&turn.message), "first");
        assert_eq!(provider.turns_played(), 1);

        // A reply form, for a slow model.
        let slow = Script::parse(
            path,
            "title: {text: Slow title, word_delay_ms: 1}\nturns: []\n",
        )
        .unwrap();
        let provider = ScriptedProvider::new("s", path, slow, None);
        let title = crate::collect(provider.stream(ask(crate::CallPurpose::Title)))
            .await
            .unwrap();
        assert_eq!(text(&title.message), "Slow title");

        // Without `title:` the answer is empty and costs nothing.
        let untitled = Script::parse(path, "turns: []\n").unwrap();
        let provider = ScriptedProvider::new("s", path, untitled, None);
        let title = crate::collect(provider.stream(ask(crate::CallPurpose::Title)))
            .await
            .unwrap();
        assert_eq!(text(&title.message), "");
        assert_eq!(title.usage, None);
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
            s.turns[0].expect.as_ref().and_then(|e| e.last.clone()),
            Some(LastMessage::User(TextMatch::Exact("hi".into())))
        );
        assert_eq!(
            s.turns[1].expect.as_ref().and_then(|e| e.last.clone()),
            Some(LastMessage::ToolResult(TextMatch::Contains(Contains {
                contains: "x".into()
            })))
        );
    }
}
