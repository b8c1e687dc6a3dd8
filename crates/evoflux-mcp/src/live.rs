//! What a server sends back while one of our tool calls runs: progress,
//! log messages, sampling and elicitation requests — in our own types, and
//! routed to the call (and so the session) they belong to.
//!
//! A connection is shared by every session that uses its server, so a
//! server's request cannot simply go "to the user": it goes to the call in
//! flight on that connection. Each call registers a [`CallContext`] (whose
//! session it is, and that session's [`CallListener`]) for its lifetime
//! (`InFlight::register`); progress is matched by the call's
//! `progressToken`, a request by the call whose response stream carried it
//! (Streamable HTTP) or else by the only session with calls in flight. A
//! request nobody owns — no call in flight, or calls of several sessions —
//! is refused with a reason the server reads ([`Unrouted`]), never guessed.
//!
//! Floods are bounded here, once for every front end: progress of one call
//! is coalesced to at most one event per [`PROGRESS_EVERY`] (the last one
//! and a finished one always pass), log messages of one connection pass at
//! most [`LOG_BURST`] at once and [`LOG_PER_SECOND`] after that, and every
//! text is cut to [`MAX_TEXT`] characters.

use std::collections::BTreeSet;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::{Map, Value};

/// Progress of one call is passed on at most this often.
pub const PROGRESS_EVERY: Duration = Duration::from_millis(100);
/// Log messages a connection may send at once before the rate applies.
pub const LOG_BURST: u32 = 20;
/// Log messages a connection may send per second after its burst.
pub const LOG_PER_SECOND: u32 = 5;
/// Progress notifications kept for calls whose token is not known yet.
const EARLY_PROGRESS: usize = 32;
/// The longest message, log line or preview passed on, in characters.
pub const MAX_TEXT: usize = 2000;

/// A boxed future, as [`CallListener`] returns them.
pub type BoxFuture<'a, T> = std::pin::Pin<Box<dyn std::future::Future<Output = T> + Send + 'a>>;

/// `notifications/progress` of a call.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct McpProgress {
    pub progress: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub total: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// The eight syslog levels of MCP logging, least severe first. Closed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum McpLogLevel {
    Debug,
    Info,
    Notice,
    Warning,
    Error,
    Critical,
    Alert,
    Emergency,
}

impl McpLogLevel {
    pub const fn as_str(self) -> &'static str {
        match self {
            McpLogLevel::Debug => "debug",
            McpLogLevel::Info => "info",
            McpLogLevel::Notice => "notice",
            McpLogLevel::Warning => "warning",
            McpLogLevel::Error => "error",
            McpLogLevel::Critical => "critical",
            McpLogLevel::Alert => "alert",
            McpLogLevel::Emergency => "emergency",
        }
    }
}

/// `notifications/message`: one log message of a server.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct McpLog {
    pub level: McpLogLevel,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub logger: Option<String>,
    /// The message's `data`: its text, or its JSON when it is not a string.
    pub message: String,
}

/// Who wrote a sampling message. Closed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SamplingRole {
    User,
    Assistant,
}

/// One message of a sampling request, as text (an image or audio block
/// is a placeholder naming it: evoflux samples text only).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SamplingMessage {
    pub role: SamplingRole,
    pub text: String,
}

/// `sampling/createMessage`, as evoflux answers it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SamplingRequest {
    pub messages: Vec<SamplingMessage>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub system_prompt: Option<String>,
    pub max_tokens: u32,
}

impl SamplingRequest {
    /// What the user is shown before approving: the system prompt and the
    /// last message, cut to [`MAX_TEXT`].
    pub fn preview(&self) -> String {
        let mut out = String::new();
        if let Some(system) = &self.system_prompt {
            out.push_str(&format!("system: {system}\n"));
        }
        if let Some(last) = self.messages.last() {
            let who = match last.role {
                SamplingRole::User => "user",
                SamplingRole::Assistant => "assistant",
            };
            out.push_str(&format!("{who}: {}", last.text));
        }
        cut(&out)
    }
}

/// The model's answer to a sampling request.
#[derive(Debug, Clone, PartialEq)]
pub struct SamplingAnswer {
    pub text: String,
    /// The model that answered.
    pub model: String,
}

/// `elicitation/create` in form mode.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ElicitationRequest {
    pub message: String,
    /// The requested schema: an object of primitive properties (string,
    /// number, integer, boolean, enums), as the MCP spec restricts it.
    pub schema: Value,
}

/// The user's answer to an elicitation. Closed: the spec's three actions.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "action", rename_all = "snake_case")]
pub enum ElicitationAnswer {
    /// The fields the user filled in (checked against the schema before
    /// they are sent).
    Accept { content: Map<String, Value> },
    /// The user, or a front end that cannot ask, said no; `reason` is
    /// sent to the server in the result's `_meta`.
    Decline {
        #[serde(skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
    /// The user dismissed the question without answering.
    Cancel,
}

/// Checks `content` against the elicitation's schema; the errors name
/// each field that does not fit.
pub fn validate_elicitation(schema: &Value, content: &Map<String, Value>) -> Result<(), String> {
    let validator = jsonschema::validator_for(schema)
        .map_err(|e| format!("the server's requested schema is not valid JSON Schema: {e}"))?;
    let instance = Value::Object(content.clone());
    let errors: Vec<String> = validator
        .iter_errors(&instance)
        .map(|e| {
            let at = e.instance_path().to_string();
            match at.is_empty() {
                true => e.to_string(),
                false => format!("{at}: {e}"),
            }
        })
        .collect();
    match errors.is_empty() {
        true => Ok(()),
        false => Err(errors.join("; ")),
    }
}

/// One field of an elicitation form, as a front end that asks field by
/// field (a terminal) puts it: [`form_fields`] reads them off the schema,
/// [`FormField::read`] turns what the user typed into the field's value.
#[derive(Debug, Clone, PartialEq)]
pub struct FormField {
    pub name: String,
    /// The property's `title`, else its name.
    pub title: String,
    pub description: Option<String>,
    pub required: bool,
    pub default: Option<Value>,
    pub kind: FieldKind,
}

/// What a form field takes: MCP's restricted schema. Closed.
#[derive(Debug, Clone, PartialEq)]
pub enum FieldKind {
    Text,
    Number,
    Integer,
    Boolean,
    /// One of these values (`enum`, `oneOf` consts), with their labels.
    Choice(Vec<(String, String)>),
    /// Any of these values (an array of an enum), with their labels.
    Choices(Vec<(String, String)>),
}

fn options(list: Option<&Vec<Value>>, labels: Option<&Vec<Value>>) -> Vec<(String, String)> {
    list.map(|values| {
        values
            .iter()
            .enumerate()
            .filter_map(|(i, v)| {
                // `enum` values, or `oneOf`/`anyOf` entries `{const, title}`.
                let (value, title) = match v {
                    Value::String(s) => (s.clone(), None),
                    Value::Object(o) => (
                        o.get("const")?.as_str()?.to_owned(),
                        o.get("title").and_then(Value::as_str).map(str::to_owned),
                    ),
                    _ => return None,
                };
                let label = title
                    .or_else(|| {
                        labels
                            .and_then(|l| l.get(i))
                            .and_then(Value::as_str)
                            .map(str::to_owned)
                    })
                    .unwrap_or_else(|| value.clone());
                Some((value, label))
            })
            .collect()
    })
    .unwrap_or_default()
}

/// The fields of an elicitation's schema, one per property.
pub fn form_fields(schema: &Value) -> Vec<FormField> {
    let required: BTreeSet<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return Vec::new();
    };
    properties
        .iter()
        .map(|(name, p)| {
            let text = |key: &str| p.get(key).and_then(Value::as_str).map(str::to_owned);
            let list = |key: &str| p.get(key).and_then(Value::as_array);
            let kind = match p.get("type").and_then(Value::as_str) {
                Some("boolean") => FieldKind::Boolean,
                Some("number") => FieldKind::Number,
                Some("integer") => FieldKind::Integer,
                Some("array") => {
                    let items = p.get("items");
                    let of = |key: &str| items.and_then(|i| i.get(key)).and_then(Value::as_array);
                    FieldKind::Choices(options(
                        of("enum").or_else(|| of("anyOf")).or_else(|| of("oneOf")),
                        None,
                    ))
                }
                _ if list("enum").is_some() => {
                    FieldKind::Choice(options(list("enum"), list("enumNames")))
                }
                _ if list("oneOf").is_some() => FieldKind::Choice(options(list("oneOf"), None)),
                _ => FieldKind::Text,
            };
            FormField {
                name: name.clone(),
                title: text("title").unwrap_or_else(|| name.clone()),
                description: text("description"),
                required: required.contains(name.as_str()),
                default: p.get("default").cloned(),
                kind,
            }
        })
        .collect()
}

impl FormField {
    /// The question for this field, with what it accepts.
    pub fn prompt(&self) -> String {
        let accepts = match &self.kind {
            FieldKind::Text => String::new(),
            FieldKind::Number => " (a number)".to_owned(),
            FieldKind::Integer => " (a whole number)".to_owned(),
            FieldKind::Boolean => " (y/n)".to_owned(),
            FieldKind::Choice(options) | FieldKind::Choices(options) => {
                let listed: Vec<String> = options
                    .iter()
                    .enumerate()
                    .map(|(i, (_, label))| format!("{}. {label}", i + 1))
                    .collect();
                let how = match self.kind {
                    FieldKind::Choices(_) => "numbers, comma-separated",
                    _ => "a number",
                };
                format!(" ({how}: {})", listed.join(", "))
            }
        };
        let default = match &self.default {
            Some(Value::String(s)) => format!(" [{s}]"),
            Some(v) => format!(" [{v}]"),
            None => String::new(),
        };
        let required = if self.required { " *" } else { "" };
        let about = match &self.description {
            Some(d) if *d != self.title => format!(" — {d}"),
            Some(_) | None => String::new(),
        };
        format!("{}{required}{about}{accepts}{default}: ", self.title)
    }

    /// What `typed` means for this field: its value, `None` when left empty
    /// without a default (allowed only for an optional field), or why it
    /// does not fit.
    pub fn read(&self, typed: &str) -> Result<Option<Value>, String> {
        let typed = typed.trim();
        if typed.is_empty() {
            return match (&self.default, self.required) {
                (Some(d), _) => Ok(Some(d.clone())),
                (None, false) => Ok(None),
                (None, true) => Err(format!("`{}` is required", self.title)),
            };
        }
        let pick = |options: &[(String, String)], one: &str| -> Result<Value, String> {
            let by_number = one
                .parse::<usize>()
                .ok()
                .and_then(|n| n.checked_sub(1))
                .and_then(|i| options.get(i));
            let by_name = options
                .iter()
                .find(|(v, label)| v == one || label.eq_ignore_ascii_case(one));
            by_number
                .or(by_name)
                .map(|(v, _)| Value::String(v.clone()))
                .ok_or_else(|| format!("`{one}` is not one of the choices"))
        };
        match &self.kind {
            FieldKind::Text => Ok(Some(Value::String(typed.to_owned()))),
            FieldKind::Number => typed
                .parse::<f64>()
                .ok()
                .and_then(serde_json::Number::from_f64)
                .map(|n| Some(Value::Number(n)))
                .ok_or_else(|| format!("`{typed}` is not a number")),
            FieldKind::Integer => typed
                .parse::<i64>()
                .map(|n| Some(Value::from(n)))
                .map_err(|_| format!("`{typed}` is not a whole number")),
            FieldKind::Boolean => match typed.to_ascii_lowercase().as_str() {
                "y" | "yes" | "true" => Ok(Some(Value::Bool(true))),
                "n" | "no" | "false" => Ok(Some(Value::Bool(false))),
                _ => Err(format!("`{typed}`: answer y or n")),
            },
            FieldKind::Choice(options) => pick(options, typed).map(Some),
            FieldKind::Choices(options) => typed
                .split(',')
                .map(|one| pick(options, one.trim()))
                .collect::<Result<Vec<_>, _>>()
                .map(|values| Some(Value::Array(values))),
        }
    }
}

/// What a session does with what a server sends during its call. The
/// harness implements it per call; calls here never block (`progress`,
/// `log`) or await the user (`sample`, `elicit`).
pub trait CallListener: Send + Sync + fmt::Debug {
    fn progress(&self, progress: McpProgress);
    fn log(&self, log: McpLog);
    /// Answers a sampling request, or refuses it with a reason the server
    /// reads.
    fn sample(&self, request: SamplingRequest) -> BoxFuture<'_, Result<SamplingAnswer, String>>;
    fn elicit(&self, request: ElicitationRequest) -> BoxFuture<'_, ElicitationAnswer>;
}

/// What one call brings to its connection for its lifetime.
#[derive(Debug, Clone)]
pub struct CallContext {
    /// The session the call belongs to: requests are routed only when
    /// their owner is unambiguous.
    pub owner: String,
    pub listener: Arc<dyn CallListener>,
}

/// Why a server's request was not routed to a session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unrouted {
    /// No call of evoflux's is in flight on the connection.
    NoCall,
    /// Calls of several sessions are in flight: which user should answer
    /// is unknown.
    Ambiguous,
}

impl Unrouted {
    /// The stable code of the warning a refusal is logged with.
    pub const fn code(self) -> &'static str {
        match self {
            Unrouted::NoCall => crate::codes::REQUEST_UNROUTED,
            Unrouted::Ambiguous => crate::codes::REQUEST_AMBIGUOUS,
        }
    }

    /// The reason the server reads.
    pub fn reason(self, method: &str) -> String {
        match self {
            Unrouted::NoCall => format!(
                "evoflux answers {method} only during one of its tool calls on this connection, \
                 for the session that made it; none is in flight"
            ),
            Unrouted::Ambiguous => format!(
                "tool calls of several evoflux sessions are in flight on this connection, so \
                 which user should answer {method} is unknown; send it on the calling request's \
                 stream, or while one session calls"
            ),
        }
    }
}

/// Where a request arrived, as the transport can tell.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Arrival {
    /// On the response stream of this request id (Streamable HTTP).
    OnCall(String),
    /// On a stream tied to no request, or a transport that cannot tell.
    Unknown,
}

struct Entry {
    key: u64,
    context: CallContext,
    request_id: Option<String>,
    progress_token: Option<String>,
    last_progress: Option<Instant>,
    /// Progress held back by [`PROGRESS_EVERY`], sent when the call ends.
    held: Option<McpProgress>,
}

/// The log rate of one connection (a token bucket).
struct LogRate {
    tokens: f64,
    at: Instant,
    dropped: u64,
}

/// The calls in flight on one connection.
pub(crate) struct InFlight {
    next: AtomicU64,
    calls: Mutex<Vec<Entry>>,
    /// Progress that arrived before its call's token was recorded: a fast
    /// server reports progress before the sending task resumes to record
    /// it (`Registration::sent`). Kept, at most [`EARLY_PROGRESS`], only
    /// while some call has no token yet; locked after `calls`.
    early: Mutex<Vec<(String, McpProgress)>>,
    logs: Mutex<LogRate>,
    /// Progress and log messages read from the transport and not yet
    /// delivered: each is delivered in read order, and a call that got
    /// its answer first takes them before it ends.
    pub(crate) order: Arc<crate::progress_order::ReadOrder>,
}

impl Default for InFlight {
    fn default() -> Self {
        InFlight {
            next: AtomicU64::new(0),
            calls: Mutex::new(Vec::new()),
            early: Mutex::new(Vec::new()),
            logs: Mutex::new(LogRate {
                tokens: f64::from(LOG_BURST),
                at: Instant::now(),
                dropped: 0,
            }),
            order: Arc::default(),
        }
    }
}

impl fmt::Debug for InFlight {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("InFlight")
            .field("calls", &self.lock().len())
            .finish()
    }
}

/// Removes a call's registration when the call ends (or is dropped).
pub(crate) struct Registration {
    in_flight: Arc<InFlight>,
    key: u64,
}

impl Registration {
    /// The request's id and progress token, once it was sent.
    /// Progress that came before this was recorded is passed on now.
    pub(crate) fn sent(&self, request_id: String, progress_token: String) {
        let early = {
            let mut calls = self.in_flight.lock();
            if let Some(e) = calls.iter_mut().find(|e| e.key == self.key) {
                e.request_id = Some(request_id);
                e.progress_token = Some(progress_token.clone());
            }
            let mut early = self.in_flight.early();
            let (mine, others): (Vec<_>, Vec<_>) = early
                .drain(..)
                .partition(|(token, _)| *token == progress_token);
            if calls.iter().any(|e| e.progress_token.is_none()) {
                *early = others;
            }
            mine
        };
        for (token, progress) in early {
            self.in_flight.progress(&token, progress);
        }
    }

    /// The call got its answer: the progress and log messages the server
    /// sent before it (read before the answer, dispatched on tasks of
    /// their own) reach this call before it ends
    /// ([`crate::progress_order`]).
    pub(crate) async fn answered(&self) {
        self.in_flight.order.delivered_so_far().await;
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        let removed = {
            let mut calls = self.in_flight.lock();
            let removed = calls
                .iter()
                .position(|e| e.key == self.key)
                .map(|i| calls.remove(i));
            if calls.iter().all(|e| e.progress_token.is_some()) {
                self.in_flight.early().clear();
            }
            removed
        };
        // The last progress a coalescing held back is still told.
        if let Some(Entry {
            context,
            held: Some(p),
            ..
        }) = removed
        {
            context.listener.progress(p);
        }
    }
}

impl InFlight {
    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Entry>> {
        self.calls.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn early(&self) -> std::sync::MutexGuard<'_, Vec<(String, McpProgress)>> {
        self.early.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Registers a call's context until the returned guard drops.
    pub(crate) fn register(self: &Arc<Self>, context: CallContext) -> Registration {
        let key = self.next.fetch_add(1, Ordering::Relaxed);
        self.lock().push(Entry {
            key,
            context,
            request_id: None,
            progress_token: None,
            last_progress: None,
            held: None,
        });
        Registration {
            in_flight: Arc::clone(self),
            key,
        }
    }

    /// Passes progress to the call whose token it names, coalesced.
    pub(crate) fn progress(&self, token: &str, mut progress: McpProgress) {
        progress.message = progress.message.map(|m| cut(&m));
        let listener = {
            let mut calls = self.lock();
            let Some(entry) = calls
                .iter_mut()
                .find(|e| e.progress_token.as_deref() == Some(token))
            else {
                // Its call may be sent but not recorded yet.
                if calls.iter().any(|e| e.progress_token.is_none()) {
                    let mut early = self.early();
                    if early.len() < EARLY_PROGRESS {
                        early.push((token.to_owned(), progress));
                    }
                    return;
                }
                tracing::debug!(token, "progress for no call in flight; dropped");
                return;
            };
            let now = Instant::now();
            let finished = progress.total.is_some_and(|t| progress.progress >= t);
            let due = entry
                .last_progress
                .is_none_or(|at| now.duration_since(at) >= PROGRESS_EVERY);
            if !(due || finished) {
                entry.held = Some(progress);
                return;
            }
            entry.last_progress = Some(now);
            entry.held = None;
            Arc::clone(&entry.context.listener)
        };
        listener.progress(progress);
    }

    /// The listener a request (or notification) that arrived as `arrival`
    /// belongs to.
    pub(crate) fn route(&self, arrival: &Arrival) -> Result<Arc<dyn CallListener>, Unrouted> {
        let calls = self.lock();
        if let Arrival::OnCall(id) = arrival
            && let Some(e) = calls.iter().find(|e| e.request_id.as_ref() == Some(id))
        {
            return Ok(Arc::clone(&e.context.listener));
        }
        let owners: BTreeSet<&str> = calls.iter().map(|e| e.context.owner.as_str()).collect();
        match (owners.len(), calls.first()) {
            (1, Some(first)) => Ok(Arc::clone(&first.context.listener)),
            (0, _) | (_, None) => Err(Unrouted::NoCall),
            _ => Err(Unrouted::Ambiguous),
        }
    }

    /// Whether another log message may pass now; a message that passes
    /// after some were dropped says how many.
    pub(crate) fn admit_log(&self, mut log: McpLog) -> Option<McpLog> {
        let mut rate = self.logs.lock().unwrap_or_else(|p| p.into_inner());
        let now = Instant::now();
        let refill = now.duration_since(rate.at).as_secs_f64() * f64::from(LOG_PER_SECOND);
        rate.tokens = (rate.tokens + refill).min(f64::from(LOG_BURST));
        rate.at = now;
        if rate.tokens < 1.0 {
            rate.dropped += 1;
            return None;
        }
        rate.tokens -= 1.0;
        log.message = cut(&log.message);
        if rate.dropped > 0 {
            log.message = format!(
                "{} ({} earlier messages of this server were dropped: too many at once)",
                log.message, rate.dropped
            );
            rate.dropped = 0;
        }
        Some(log)
    }
}

/// `text` cut to [`MAX_TEXT`] characters, marked when cut.
pub fn cut(text: &str) -> String {
    match text.char_indices().nth(MAX_TEXT) {
        None => text.to_owned(),
        Some((at, _)) => format!("{}… [cut at {MAX_TEXT} characters]", &text[..at]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Default)]
    struct Seen(Mutex<Vec<McpProgress>>);

    impl CallListener for Seen {
        fn progress(&self, progress: McpProgress) {
            self.0.lock().unwrap().push(progress);
        }
        fn log(&self, _log: McpLog) {}
        fn sample(&self, _r: SamplingRequest) -> BoxFuture<'_, Result<SamplingAnswer, String>> {
            Box::pin(async { Err("no".to_owned()) })
        }
        fn elicit(&self, _r: ElicitationRequest) -> BoxFuture<'_, ElicitationAnswer> {
            Box::pin(async { ElicitationAnswer::Cancel })
        }
    }

    fn context(owner: &str, seen: &Arc<Seen>) -> CallContext {
        CallContext {
            owner: owner.to_owned(),
            listener: Arc::clone(seen) as Arc<dyn CallListener>,
        }
    }

    fn step(progress: f64) -> McpProgress {
        McpProgress {
            progress,
            total: Some(10.0),
            message: None,
        }
    }

    #[test]
    fn requests_go_to_the_only_session_in_flight_and_are_refused_otherwise() {
        let in_flight = Arc::new(InFlight::default());
        assert_eq!(
            in_flight.route(&Arrival::Unknown).err(),
            Some(Unrouted::NoCall)
        );
        let (a, b) = (Arc::new(Seen::default()), Arc::new(Seen::default()));
        let first = in_flight.register(context("s1", &a));
        first.sent("1".into(), "t1".into());
        let _same = in_flight.register(context("s1", &a));
        assert!(in_flight.route(&Arrival::Unknown).is_ok());
        let other = in_flight.register(context("s2", &b));
        other.sent("2".into(), "t2".into());
        assert_eq!(
            in_flight.route(&Arrival::Unknown).err(),
            Some(Unrouted::Ambiguous)
        );
        // The stream a request came on names its call.
        assert!(in_flight.route(&Arrival::OnCall("2".into())).is_ok());
        drop(other);
        assert!(in_flight.route(&Arrival::Unknown).is_ok());
    }

    #[test]
    fn progress_is_coalesced_and_the_last_held_one_is_told_at_the_end() {
        let in_flight = Arc::new(InFlight::default());
        let seen = Arc::new(Seen::default());
        let call = in_flight.register(context("s", &seen));
        call.sent("1".into(), "t".into());
        for i in 0..5 {
            in_flight.progress("t", step(f64::from(i)));
        }
        in_flight.progress("other", step(1.0));
        assert_eq!(seen.0.lock().unwrap().len(), 1);
        drop(call);
        let got = seen.0.lock().unwrap().clone();
        assert_eq!(got.len(), 2);
        assert_eq!(got[1].progress, 4.0);
    }

    #[test]
    fn progress_before_its_call_is_recorded_is_told_once_it_is() {
        let in_flight = Arc::new(InFlight::default());
        let seen = Arc::new(Seen::default());
        let call = in_flight.register(context("s", &seen));
        // A fast server's progress, before `sent` ran, and another call's.
        in_flight.progress("t", step(1.0));
        in_flight.progress("other", step(1.0));
        assert!(seen.0.lock().unwrap().is_empty());
        call.sent("1".into(), "t".into());
        assert_eq!(seen.0.lock().unwrap().clone(), [step(1.0)]);
        // Every token is known: nothing is kept any more.
        assert!(in_flight.early().is_empty());
        in_flight.progress("late", step(2.0));
        assert!(in_flight.early().is_empty());
        drop(call);
        assert_eq!(seen.0.lock().unwrap().len(), 1);
    }

    #[test]
    fn a_log_flood_is_cut_and_counted() {
        let in_flight = InFlight::default();
        let log = |m: &str| McpLog {
            level: McpLogLevel::Info,
            logger: None,
            message: m.to_owned(),
        };
        let passed = (0..100)
            .filter(|_| in_flight.admit_log(log("x")).is_some())
            .count();
        assert_eq!(passed, LOG_BURST as usize);
        std::thread::sleep(Duration::from_millis(250));
        let next = in_flight.admit_log(log(&"y".repeat(5000))).unwrap();
        assert!(
            next.message
                .contains("earlier messages of this server were dropped")
        );
        assert!(next.message.contains("cut at 2000 characters"));
    }

    #[test]
    fn a_forms_fields_are_read_off_its_schema_and_typed_answers_fit_them() {
        let schema = serde_json::json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "title": "Name"},
                "age": {"type": "integer", "default": 42},
                "ok": {"type": "boolean"},
                "pet": {"type": "string", "enum": ["p1", "p2"], "enumNames": ["Cats", "Dogs"]},
                "hero": {"type": "string", "oneOf": [{"const": "h1", "title": "Superman"}]},
                "fish": {"type": "array", "items": {"anyOf": [
                    {"const": "f1", "title": "Tuna"}, {"const": "f2", "title": "Trout"}]}}
            },
            "required": ["name"]
        });
        let fields = form_fields(&schema);
        let field = |n: &str| fields.iter().find(|f| f.name == n).unwrap();
        assert!(field("name").required);
        assert!(field("name").read("").is_err());
        assert_eq!(field("name").read(" Ada ").unwrap(), Some("Ada".into()));
        assert_eq!(field("age").read("").unwrap(), Some(42.into()));
        assert!(field("age").read("4.5").is_err());
        assert_eq!(field("ok").read("y").unwrap(), Some(true.into()));
        assert_eq!(field("ok").read("").unwrap(), None);
        assert_eq!(field("pet").read("2").unwrap(), Some("p2".into()));
        assert_eq!(field("pet").read("cats").unwrap(), Some("p1".into()));
        assert!(field("pet").read("9").is_err());
        assert_eq!(field("hero").read("Superman").unwrap(), Some("h1".into()));
        assert_eq!(
            field("fish").read("1, 2").unwrap(),
            Some(serde_json::json!(["f1", "f2"]))
        );
        assert!(field("pet").prompt().contains("1. Cats, 2. Dogs"));
    }

    #[test]
    fn elicitation_content_is_checked_against_its_schema() {
        let schema = serde_json::json!({
            "type": "object",
            "properties": {"name": {"type": "string"}, "n": {"type": "integer", "maximum": 5}},
            "required": ["name"]
        });
        let ok = serde_json::json!({"name": "Ada", "n": 3});
        assert!(validate_elicitation(&schema, ok.as_object().unwrap()).is_ok());
        let bad = serde_json::json!({"n": 9});
        let err = validate_elicitation(&schema, bad.as_object().unwrap()).unwrap_err();
        assert!(err.contains("name") && err.contains("/n"), "{err}");
    }
}
