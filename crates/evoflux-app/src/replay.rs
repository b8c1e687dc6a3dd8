//! Record, export, replay: any session becomes a deterministic regression
//! test.
//!
//! Every model call records what it was given beyond the transcript (the
//! system prompt by section, the tool list, the new messages; see
//! `evoflux_store::RequestParts`). [`export`] turns a session (its
//! children included, in the order the provider saw their calls) into a
//! scripted-provider script: each reply as recorded, each request's parts
//! as `expect` checks by content hash, the recorded texts beside them so a
//! divergence can be shown as a diff. Paths and ids that differ from run to
//! run are written as placeholders (`${workspace}`, `${data}`,
//! `${session}`, `${child1}`…), and values of credentials are redacted.
//!
//! [`replay`] plays such a script against the current build in a fresh
//! workspace (a checkout of the recorded commit, with the project's
//! sources taken from the working tree, or a directory the caller names),
//! and reports the first divergence: which step, which session, which
//! part, and a diff whose hunks name the system section, tool or heading
//! they fall in. What shaped each recorded prompt beyond its parts (its
//! date, the provider's context window, the skill resolver's mode and
//! decision; see `evoflux_store::PromptShaping`) is written beside the
//! turns, and the replay sets each again call by call: the date from a
//! clock that reads the step being played, the context window from the
//! provider, the resolver's decision from a stand-in resolver. A replay
//! never calls a real model: the only providers it builds are the scripted
//! one and that stand-in.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use evoflux_core::AppMode;
use evoflux_core::config::ResolverMode;
use evoflux_core::ids::SessionId;
// The one rule of which names hold keys.
use evoflux_core::secret_name::is_key_like as key_like;
use evoflux_graph::Definition;
use evoflux_graph::connection::ConnectionDefinition;
use evoflux_model::scripted::{
    Bindings, Digest, Expect, LastMessage, Reply, Script, ScriptPart, ScriptedCall,
    ScriptedProvider, TextMatch, Turn, map_strings, sha256, tools_text,
};
use evoflux_model::{Message, ProviderError, ScriptError};
use evoflux_store::{RecordedRequest, Session, Store, StoreError};
use serde::{Deserialize, Serialize};

use evoflux_harness::{Event, EventSink, HarnessError, ModelClient, NonInteractive, TurnOptions};

use crate::scratch::Scratch;
use crate::{AppContext, SessionBuilder, SessionError, SessionOptions};

mod played;
use played::{ReplayClock, ReplayProvider, Steps};

/// The format of [`Recording`]; a replay refuses other values.
pub const RECORDING_FORMAT: u32 = 1;
/// A user message longer than this is checked by hash, not written out.
pub const USER_INLINE_BYTES: usize = 4096;
/// A tool result longer than this is checked by hash with an excerpt.
pub const TOOL_RESULT_INLINE_BYTES: usize = 512;
/// Characters of an excerpt beside a hash.
pub const EXCERPT_CHARS: usize = 160;
/// Recorded texts up to this size are kept in the script for diffs.
pub const TEXT_KEPT_BYTES: usize = 64 * 1024;
/// Environment values shorter than this are never treated as secrets (too
/// likely to occur by chance).
pub const SECRET_MIN_CHARS: usize = 8;

/// What an exported script says about where it came from (the script's
/// `recorded:` section).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Recording {
    pub format: u32,
    pub session: String,
    pub mode: AppMode,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lead: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The date the session's prompts carried; a replay's clock stops there.
    pub date: String,
    /// The session's roots (Coding repositories, or the Work folder).
    pub roots: Vec<RecordedRoot>,
    /// Each turn of the lead, in order.
    pub prompts: Vec<RecordedPrompt>,
    /// Where each system section starts, by the system text's hash.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub sections: BTreeMap<String, Vec<SectionStart>>,
    /// Credentials found and replaced by `[redacted: NAME]`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub redacted: Vec<Redaction>,
    /// What shaped each model call's prompt, one per step in order (empty
    /// in a script exported before they were kept: the replay then uses
    /// `date` for every call, no context window and no resolver; a call
    /// recorded before the rest was kept has only its day).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub calls: Vec<RecordedStep>,
}

/// What shaped one recorded call's prompt beyond its parts
/// (`evoflux_store::PromptShaping` and the call's date).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RecordedStep {
    /// The date the call's prompt carried: a session that crossed midnight
    /// has two.
    pub day: String,
    /// The model the call went to (`provider:model`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The provider's context window, which sized the skill catalog.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_window: Option<u64>,
    /// The bytes the skill catalog was given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub catalog_budget_bytes: Option<u64>,
    /// How the skill resolver ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolver: Option<ResolverMode>,
    /// The skill the resolver loaded for the call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolved: Option<String>,
}

/// One turn of the lead: the user's text and the schema its result had
/// to match.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RecordedPrompt {
    pub text: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<serde_json::Value>,
}

/// A root of the recorded session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RecordedRoot {
    pub placeholder: String,
    pub path: PathBuf,
    /// The commit the repository was at when the session opened.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
}

/// The first line (1-based) of one system section in the joined prompt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SectionStart {
    pub owner: String,
    pub line: usize,
}

/// One credential value replaced in an export.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Redaction {
    /// The step (1-based model call) it was found in.
    pub step: usize,
    /// The variable or credential it came from.
    pub name: String,
    /// Where: `system`, `tools`, `input`, `reply`, `prompt`, `model`.
    pub part: String,
}

/// Values that must never be written into a script: credentials and the
/// values of key variables, by the name they came from.
#[derive(Debug, Clone, Default)]
pub struct Secrets {
    values: Vec<(String, String)>,
}

impl Secrets {
    /// The values of `named` variables (the providers' `api_key_env`, a
    /// server's secrets) and of every variable whose name says it holds a
    /// key (`*_KEY`, `*_TOKEN`, `*_SECRET`, `*PASSWORD*`), from `vars`.
    pub fn from_vars(
        vars: impl IntoIterator<Item = (String, String)>,
        named: &[String],
    ) -> Secrets {
        let mut values: Vec<(String, String)> = vars
            .into_iter()
            // A value the config or a credential store names is a secret
            // whatever its length; a key-like variable from a length up.
            .filter(|(name, value)| {
                !value.is_empty()
                    && (named.contains(name)
                        || (key_like(name) && value.chars().count() >= SECRET_MIN_CHARS))
            })
            .collect();
        // Longest first, so a value containing another is replaced whole.
        values.sort_by(|a, b| b.1.len().cmp(&a.1.len()).then_with(|| a.0.cmp(&b.0)));
        values.dedup_by(|a, b| a.1 == b.1);
        Secrets { values }
    }

    /// `text` with every secret replaced by `[redacted: NAME]`, and the
    /// names replaced.
    pub fn redact(&self, text: &str) -> (String, Vec<String>) {
        let mut out = text.to_owned();
        let mut names = Vec::new();
        for (name, value) in &self.values {
            if out.contains(value.as_str()) {
                out = out.replace(value.as_str(), &format!("[redacted: {name}]"));
                names.push(name.clone());
            }
        }
        (out, names)
    }
}

/// The secrets of `app`'s environment: every provider's `api_key_env` the
/// config names (whatever the variable is called), every key-like
/// variable of `vars`, and the stored credentials of every installed
/// plugin (enabled or not: a session may have run while it was).
pub fn secrets(app: &AppContext, vars: impl IntoIterator<Item = (String, String)>) -> Secrets {
    let plugins = app.plugins();
    let mut stored = Vec::new();
    for p in plugins.list().plugins {
        let file = plugins.paths().credentials_file(&p.installation.id);
        if let Ok(values) = evoflux_plugins::credentials::CredentialValues::read(&file) {
            for (key, text) in values.texts() {
                stored.push((
                    format!("plugin {} credential {key}", p.installation.name),
                    text.to_owned(),
                ));
            }
        }
    }
    let mut named: Vec<String> = Vec::new();
    match app.compile(&[]) {
        Ok(graph) => {
            if let Some(loaded) = crate::selected_config(&graph).0 {
                named.extend(
                    loaded
                        .config
                        .providers
                        .values()
                        .filter_map(|p| p.api_key_env.clone()),
                );
            }
            // Literal credentials written into MCP server definitions:
            // auth-like headers and key-like environment values.
            for node in &graph.nodes {
                let (kind, values) = match &node.definition {
                    Definition::Connection(ConnectionDefinition::Stdio { env, .. }) => ("env", env),
                    Definition::Connection(
                        ConnectionDefinition::StreamableHttp { headers, .. }
                        | ConnectionDefinition::Sse { headers, .. },
                    ) => ("header", headers),
                    Definition::Config(_)
                    | Definition::Sandbox(_)
                    | Definition::Tool(_)
                    | Definition::Channel(_)
                    | Definition::Schedule(_)
                    | Definition::Eval(_)
                    | Definition::RemoteAgent(_)
                    | Definition::Document { .. } => continue,
                };
                for (key, value) in values {
                    let auth = key.eq_ignore_ascii_case("authorization") || key_like(key);
                    if auth && !value.contains("${") {
                        stored.push((
                            format!("connection {} {kind} {key}", node.slot.name),
                            value.clone(),
                        ));
                    }
                }
            }
        }
        Err(e) => tracing::warn!(error = %e, "cannot read the config for the export's secrets"),
    }
    named.extend(stored.iter().map(|(n, _)| n.clone()));
    Secrets::from_vars(vars.into_iter().chain(stored), &named)
}

/// Why an export or a replay could not run.
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    #[error(
        "session {session} has no recorded model requests: it was recorded by an older evoflux, or never called a model; only sessions recorded by this version can be exported"
    )]
    NothingRecorded { session: SessionId },
    #[error(
        "{}: not a script exported by `evoflux sessions export` (it has no valid `recorded:` section: {detail})",
        .path.display()
    )]
    NotExported { path: PathBuf, detail: String },
    #[error(
        "the recorded session worked in {} but recorded no git commit for it; pass the directory to replay in",
        .root.display()
    )]
    NoWorkspace { root: PathBuf },
    #[error("cannot check out commit {commit} of {}: {detail}", .repository.display())]
    Checkout {
        repository: PathBuf,
        commit: String,
        detail: String,
    },
    #[error("{}: {source}", .path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("the transcript of session {session} has no model reply at entry {seq}")]
    MissingReply { session: SessionId, seq: u64 },
    #[error("cannot write the script: {0}")]
    Write(String),
    #[error(transparent)]
    Scratch(#[from] crate::scratch::ScratchError),
    #[error(transparent)]
    Setup(#[from] evoflux_model::SetupError),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Session(#[from] SessionError),
    #[error(transparent)]
    Harness(#[from] HarnessError),
}

impl ReplayError {
    pub fn code(&self) -> &'static str {
        match self {
            ReplayError::NothingRecorded { .. } => "replay/nothing-recorded",
            ReplayError::NotExported { .. } => "replay/not-exported",
            ReplayError::NoWorkspace { .. } => "replay/no-workspace",
            ReplayError::Checkout { .. } => "replay/checkout-failed",
            ReplayError::Io { .. } => "replay/io",
            ReplayError::MissingReply { .. } => "replay/missing-reply",
            ReplayError::Write(_) => "replay/write-failed",
            ReplayError::Scratch(crate::scratch::ScratchError::Io { .. }) => "replay/io",
            ReplayError::Scratch(crate::scratch::ScratchError::Store(e)) => e.code(),
            ReplayError::Setup(e) => e.code(),
            ReplayError::Store(e) => e.code(),
            ReplayError::Session(e) => e.code(),
            ReplayError::Harness(e) => e.code(),
        }
    }
}

/// An exported script and what the export did.
#[derive(Debug)]
pub struct Export {
    pub script: Script,
    pub recording: Recording,
}

impl Export {
    /// The script as YAML, with a header saying what it is.
    pub fn to_yaml(&self) -> Result<String, ReplayError> {
        let body =
            yaml_serde::to_string(&self.script).map_err(|e| ReplayError::Write(e.to_string()))?;
        Ok(format!(
            "# evoflux session {} exported as a scripted-provider script.\n\
             # Replay it with `evoflux sessions replay FILE`: every reply below is played\n\
             # back and every request is checked against what was recorded.\n{body}",
            self.recording.session
        ))
    }

    pub fn steps(&self) -> usize {
        self.script.turns.len()
    }
}

/// The placeholders of a session tree: the lead's roots (with the commits
/// recorded for them), the data dir, the lead's id and its children's ids
/// in the order they were opened.
fn recorded_bindings(
    data_dir: &Path,
    lead: &Session,
    children: &[&Session],
    commits: &[(PathBuf, String)],
) -> (Bindings, Vec<RecordedRoot>) {
    let bindings = Bindings::default();
    let mut roots = Vec::new();
    for (i, root) in lead.workspace.roots().iter().enumerate() {
        let placeholder = root_placeholder(i);
        bindings.bind(placeholder.clone(), root.to_string_lossy());
        roots.push(RecordedRoot {
            placeholder,
            path: root.clone(),
            commit: commits
                .iter()
                .find(|(r, _)| r == root)
                .map(|(_, c)| c.clone()),
        });
    }
    bindings.bind("${session}", lead.id.to_string());
    for (i, child) in children.iter().enumerate() {
        bindings.bind(format!("${{child{}}}", i + 1), child.id.to_string());
    }
    bindings.bind("${data}", data_dir.to_string_lossy());
    (bindings, roots)
}

fn root_placeholder(i: usize) -> String {
    match i {
        0 => "${workspace}".to_owned(),
        n => format!("${{workspace{}}}", n + 1),
    }
}

/// The children of a tree (the lead excluded) in the order they opened.
fn children_in_order(tree: &[Session]) -> Vec<&Session> {
    let mut children: Vec<&Session> = tree.iter().skip(1).collect();
    children.sort_by_key(|s| (s.created_at_ms, s.id.to_string()));
    children
}

/// Writes a session (and its children) as a scripted-provider script.
pub async fn export(
    store: &Store,
    id: SessionId,
    secrets: &Secrets,
) -> Result<Export, ReplayError> {
    let tree = store.session_tree(id).await?;
    let ids: Vec<SessionId> = tree.iter().map(|s| s.id).collect();
    let requests = store.model_requests(&ids).await?;
    if requests.is_empty() {
        return Err(ReplayError::NothingRecorded { session: id });
    }
    let lead = &tree[0];
    let children = children_in_order(&tree);
    let commits = store.session_commits(id).await?;
    let (bindings, roots) = recorded_bindings(store.data_dir(), lead, &children, &commits);
    let mut transcripts = BTreeMap::new();
    for s in &tree {
        transcripts.insert(s.id, store.transcript(s.id).await?);
    }
    let labels: BTreeMap<SessionId, String> = std::iter::once((id, "lead".to_owned()))
        .chain(children.iter().enumerate().map(|(i, s)| {
            (
                s.id,
                format!("child{} ({})", i + 1, s.lead.as_deref().unwrap_or("agent")),
            )
        }))
        .collect();
    let mut writer = Writer {
        bindings: &bindings,
        secrets,
        texts: BTreeMap::new(),
        sections: BTreeMap::new(),
        redacted: Vec::new(),
        step: 0,
    };
    let mut turns = Vec::new();
    let mut prompts = Vec::new();
    let mut calls = Vec::new();
    for request in &requests {
        writer.step += 1;
        let shaping = &request.parts.shaping;
        calls.push(RecordedStep {
            day: request.parts.day.clone(),
            model: shaping.model.as_deref().map(|m| writer.clean(m, "model")),
            context_window: shaping.context_window,
            catalog_budget_bytes: shaping.catalog_budget_bytes,
            resolver: shaping.resolver,
            resolved: shaping.resolved.clone(),
        });
        if request.session_id == id
            && let Some(text) = &request.parts.turn_input
        {
            prompts.push(RecordedPrompt {
                text: writer.clean(text, "prompt"),
                output_schema: request.parts.turn_output_schema.clone(),
            });
        }
        let reply = transcripts
            .get(&request.session_id)
            .and_then(|t| t.iter().find(|e| e.seq == request.reply_seq))
            .map(|e| &e.message);
        // Provider items (encrypted reasoning, server-tool blocks, search
        // records) are not exported: they are the recording provider's
        // own, and a scripted replay has no such provider to give them to.
        let Some(Message::Assistant {
            content,
            tool_calls,
            provider_items: _,
        }) = reply
        else {
            return Err(ReplayError::MissingReply {
                session: request.session_id,
                seq: request.reply_seq,
            });
        };
        turns.push(Turn {
            session: labels.get(&request.session_id).cloned(),
            expect: Some(writer.expect(request)),
            reply: Reply {
                text: writer.clean(content, "reply"),
                tool_calls: tool_calls
                    .iter()
                    .map(|c| ScriptedCall {
                        id: Some(c.id.clone()),
                        name: c.name.clone(),
                        arguments: Some(writer.clean_value(&c.arguments, "reply")),
                        raw_arguments: None,
                    })
                    .collect(),
                ..Reply::default()
            },
        });
    }
    let recording = Recording {
        format: RECORDING_FORMAT,
        session: id.to_string(),
        mode: lead.mode(),
        lead: lead.lead.clone(),
        model: lead.model.clone(),
        date: requests
            .first()
            .map(|r| r.parts.day.clone())
            .unwrap_or_default(),
        roots,
        prompts,
        sections: writer.sections,
        redacted: writer.redacted,
        calls,
    };
    let script = Script {
        // The lead's first window, for a run of the script as a model;
        // a replay takes each call's own.
        context_window: requests
            .first()
            .and_then(|r| r.parts.shaping.context_window),
        recorded: Some(
            serde_json::to_value(&recording).map_err(|e| ReplayError::Write(e.to_string()))?,
        ),
        texts: writer.texts,
        provider_tools: Vec::new(),
        title: None,
        turns,
    };
    Ok(Export { script, recording })
}

/// Writes the parts of requests: placeholders in, secrets out, texts kept.
struct Writer<'a> {
    bindings: &'a Bindings,
    secrets: &'a Secrets,
    texts: BTreeMap<String, String>,
    sections: BTreeMap<String, Vec<SectionStart>>,
    redacted: Vec<Redaction>,
    step: usize,
}

impl Writer<'_> {
    fn note(&mut self, names: Vec<String>, part: &str) {
        for name in names {
            let r = Redaction {
                step: self.step,
                name,
                part: part.to_owned(),
            };
            if !self.redacted.contains(&r) {
                self.redacted.push(r);
            }
        }
    }

    /// A text as the script writes it.
    fn clean(&mut self, text: &str, part: &str) -> String {
        let (out, names) = self.secrets.redact(&self.bindings.to_script(text));
        self.note(names, part);
        out
    }

    /// [`Writer::clean`] over every string of a JSON value.
    fn clean_value(&mut self, value: &serde_json::Value, part: &str) -> serde_json::Value {
        let names = std::cell::RefCell::new(Vec::new());
        let out = map_strings(value, &|s| {
            let (out, found) = self.secrets.redact(&self.bindings.to_script(s));
            names.borrow_mut().extend(found);
            out
        });
        self.note(names.into_inner(), part);
        out
    }

    /// The hash of a part as sent (placeholders in), its text kept.
    fn keep(&mut self, text: &str, part: &str) -> String {
        self.digest(&self.bindings.to_script(text), part).0
    }

    /// The hash of a text with its placeholders in, and the text as the
    /// script keeps it (redacted; under `texts` when not too long).
    fn digest(&mut self, normalized: &str, part: &str) -> (String, String) {
        let sha = sha256(normalized);
        let (clean, names) = self.secrets.redact(normalized);
        self.note(names, part);
        if clean.len() <= TEXT_KEPT_BYTES {
            self.texts.insert(sha.clone(), clean.clone());
        }
        (sha, clean)
    }

    fn expect(&mut self, request: &RecordedRequest) -> Expect {
        let parts = &request.parts;
        let mut system = String::new();
        let mut starts = Vec::new();
        for (i, part) in parts.system.iter().enumerate() {
            if i > 0 {
                system.push_str("\n\n");
            }
            starts.push(SectionStart {
                owner: part.owner.clone(),
                line: system.matches('\n').count() + 1,
            });
            system.push_str(&part.text);
        }
        let system_sha = self.keep(&system, "system");
        self.sections.insert(system_sha.clone(), starts);
        let tools_sha = self.keep(&tools_text(&parts.tools), "tools");
        let input = parts
            .input
            .iter()
            .map(|m| match m {
                Message::User { content, .. } => Some(LastMessage::User(
                    self.text_match(content, USER_INLINE_BYTES),
                )),
                Message::Tool { content, .. } => Some(LastMessage::ToolResult(
                    self.text_match(content, TOOL_RESULT_INLINE_BYTES),
                )),
                // Not in a request's tail as the loop builds it; a tail
                // that has one is not checked message by message.
                Message::System { .. } | Message::Assistant { .. } => None,
            })
            .collect::<Option<Vec<_>>>();
        Expect {
            last: None,
            system: Some(system_sha),
            tools: Some(tools_sha),
            input,
        }
    }

    /// A short text without secrets as it is; any other by its digest.
    fn text_match(&mut self, text: &str, inline: usize) -> TextMatch {
        let normalized = self.bindings.to_script(text);
        if normalized.len() <= inline && self.secrets.redact(&normalized).1.is_empty() {
            return TextMatch::Exact(normalized);
        }
        let (sha, clean) = self.digest(&normalized, "input");
        TextMatch::Digest(Digest {
            sha256: sha,
            excerpt: Some(clean.chars().take(EXCERPT_CHARS).collect()),
        })
    }
}

/// How to replay.
#[derive(Debug, Clone, Default)]
pub struct ReplayOptions {
    /// Directories to replay in instead of fresh checkouts, one per
    /// recorded root in order (a Work session: a folder whose files are
    /// copied into the replay's session folder).
    pub workspaces: Vec<PathBuf>,
    /// Keep the scratch directory (checkouts, the replay's store) and say
    /// where it is.
    pub keep: bool,
    /// Redacted from what the report shows of this build's requests.
    pub secrets: Secrets,
}

/// Which part of the run left the recording.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DivergedPart {
    /// The user message or tool result named by `expect.user/tool_result`.
    LastMessage,
    SystemPrompt,
    ToolList,
    /// A message given to the model since its previous reply (0-based).
    Input {
        index: usize,
    },
    /// This build made a model call the recording did not have.
    ExtraCall,
    /// This build stopped before making every recorded call.
    MissingCalls {
        made: usize,
    },
    /// A turn failed in this build (the error is the `actual`).
    TurnFailed,
}

/// The first place a replay left the recording.
#[derive(Debug, Clone, Serialize)]
pub struct Divergence {
    /// The model call (1-based, across the team) it happened at.
    pub step: usize,
    /// Which session made it (`lead`, `child1 (agent)`).
    pub session: Option<String>,
    pub part: DivergedPart,
    pub expected: String,
    pub actual: String,
    /// A unified diff of the recorded text against this build's, with each
    /// hunk naming the system section, tool or heading it falls in.
    pub diff: Option<String>,
}

/// What a replay found.
#[derive(Debug, Clone, Serialize)]
pub struct ReplayReport {
    pub session: String,
    /// Model calls recorded.
    pub steps: usize,
    /// Model calls this build made that matched.
    pub matched: usize,
    pub turns: usize,
    pub divergence: Option<Divergence>,
    /// The directories the replay ran in.
    pub workspaces: Vec<PathBuf>,
    /// The scratch directory, when kept.
    pub kept: Option<PathBuf>,
    #[serde(skip)]
    pub elapsed: Duration,
}

impl ReplayReport {
    pub fn matched_all(&self) -> bool {
        self.divergence.is_none()
    }
}

/// Binds each child's id to its placeholder as the child opens.
#[derive(Debug)]
struct ReplayEvents {
    bindings: Arc<Bindings>,
    children: AtomicUsize,
}

impl EventSink for ReplayEvents {
    fn emit(&self, event: &Event) {
        let mut event = event;
        while let Event::Child { event: inner, .. } = event {
            event = inner;
        }
        if let Event::DispatchStarted {
            child_session_id, ..
        } = event
        {
            let n = self.children.fetch_add(1, Ordering::SeqCst) + 1;
            self.bindings
                .bind(format!("${{child{n}}}"), child_session_id.clone());
        }
    }
}

/// A root as a script may name it: an absolute path, a commit id, a
/// `${workspace…}` placeholder. A script can come from anyone, and these
/// reach `git` and every text of the replay.
fn check_root(script: &Path, i: usize, root: &RecordedRoot) -> Result<(), ReplayError> {
    let bad = |detail: String| ReplayError::NotExported {
        path: script.to_owned(),
        detail,
    };
    if root.placeholder != root_placeholder(i) {
        return Err(bad(format!(
            "root {} has the placeholder `{}`; an export writes `{}`",
            i + 1,
            root.placeholder,
            root_placeholder(i)
        )));
    }
    if let Some(commit) = &root.commit
        && !(matches!(commit.len(), 40 | 64) && commit.bytes().all(|b| b.is_ascii_hexdigit()))
    {
        return Err(bad(format!("`{commit}` is not a git commit id")));
    }
    if !root.path.is_absolute() {
        return Err(bad(format!(
            "root `{}` is not an absolute path",
            root.path.display()
        )));
    }
    Ok(())
}

/// Reads an exported script and its recording.
pub fn load(path: &Path) -> Result<(Script, Recording), ReplayError> {
    let script = Script::load(path)?;
    let not_exported = |detail: String| ReplayError::NotExported {
        path: path.to_owned(),
        detail,
    };
    let value = script
        .recorded
        .clone()
        .ok_or_else(|| not_exported("missing".to_owned()))?;
    let recording: Recording =
        serde_json::from_value(value).map_err(|e| not_exported(e.to_string()))?;
    if recording.format != RECORDING_FORMAT {
        return Err(not_exported(format!(
            "format {} (this evoflux reads {RECORDING_FORMAT})",
            recording.format
        )));
    }
    Ok((script, recording))
}

/// Replays the script at `path` against this build.
pub async fn replay(
    app: &AppContext,
    path: &Path,
    options: &ReplayOptions,
) -> Result<ReplayReport, ReplayError> {
    let started = Instant::now();
    let (script, recording) = load(path)?;
    let scratch = Scratch::open("evoflux-replay-").await?;
    let bindings = Arc::new(Bindings::default());
    bindings.bind("${data}", scratch.data_dir.to_string_lossy());
    let mut app = app.clone();
    let mut roots = Vec::new();
    match recording.mode {
        AppMode::Coding => {
            for (i, root) in recording.roots.iter().enumerate() {
                check_root(path, i, root)?;
                let dir = match (options.workspaces.get(i), &root.commit) {
                    (Some(dir), _) => canonical(&app.cwd.join(dir))?,
                    (None, Some(commit)) => {
                        let dest = scratch.root.join(format!("repo{}", i + 1)).join(
                            root.path
                                .file_name()
                                .unwrap_or_else(|| "repository".as_ref()),
                        );
                        checkout(&root.path, commit, &dest)?;
                        overlay_sources(&root.path, &dest)?;
                        app.inherit_trust(&root.path, &dest)?;
                        dest
                    }
                    (None, None) => {
                        return Err(ReplayError::NoWorkspace {
                            root: root.path.clone(),
                        });
                    }
                };
                bindings.bind(root.placeholder.clone(), dir.to_string_lossy());
                roots.push(dir);
            }
        }
        AppMode::Work => {}
    }
    let steps = script.turns.len();
    let label = format!("scripted:{}", path.display());
    let played = Arc::new(Steps {
        script: Arc::new(
            ScriptedProvider::new("scripted", path, script.clone(), None)
                .with_bindings(Arc::clone(&bindings)),
        ),
        calls: recording.calls.clone(),
        date: recording.date.clone(),
    });
    let provider = Arc::new(ReplayProvider {
        steps: Arc::clone(&played),
        first: Arc::default(),
    });
    let opened = SessionBuilder::new(
        &app,
        SessionOptions {
            mode: Some(recording.mode),
            workspaces: roots.clone(),
            lead: recording.lead.clone(),
            model: Some(label.clone()),
            ..SessionOptions::default()
        },
    )
    .store(scratch.store.clone())
    .clock(Arc::new(ReplayClock(Arc::clone(&played))))
    .resolver(played.resolver())
    .events(Arc::new(ReplayEvents {
        bindings: Arc::clone(&bindings),
        children: AtomicUsize::new(0),
    }))
    // A script may come from anyone: nothing it asks for is approved, as
    // in `evoflux run`. A call the recorded user approved is denied here
    // and shows as a divergence at the next step.
    .approver(Arc::new(NonInteractive))
    .processes(scratch.processes.clone())
    .reuse_model(ModelClient {
        label,
        provider: provider.clone(),
    })
    .open()
    .await?;
    let mut harness = opened.harness;
    let session = harness.session().clone();
    bindings.bind("${session}", session.id.to_string());
    if recording.mode == AppMode::Work {
        let folder = session
            .workspace
            .roots()
            .first()
            .cloned()
            .unwrap_or_default();
        if let Some(from) = options.workspaces.first() {
            copy_dir(&app.cwd.join(from), &folder)?;
        }
        bindings.bind("${workspace}", folder.to_string_lossy());
        roots.push(folder);
    }
    let mut divergence = None;
    let mut turns = 0;
    for prompt in &recording.prompts {
        turns += 1;
        let text = bindings.from_script(&prompt.text);
        let options = TurnOptions {
            output_schema: prompt.output_schema.clone(),
            ..TurnOptions::default()
        };
        let outcome = harness.turn(Some(&text), options).await;
        // The first divergence is the one to show, whoever's call it was:
        // a child's reaches this turn only through its lead.
        if let Some(first) = provider.first_divergence() {
            divergence = Some(diverged(&script, &recording, first));
            break;
        }
        match outcome {
            Ok(_) => {}
            Err(HarnessError::Provider(ProviderError::Script(e))) => {
                divergence = Some(diverged(&script, &recording, e));
                break;
            }
            Err(e) => {
                divergence = Some(Divergence {
                    step: played.script.turns_played() + 1,
                    session: None,
                    part: DivergedPart::TurnFailed,
                    expected: "the turn to run as recorded".to_owned(),
                    actual: format!("{e} [{}]", e.code()),
                    diff: None,
                });
                break;
            }
        }
    }
    let made = played.script.turns_played();
    if divergence.is_none() && made < steps {
        divergence = Some(Divergence {
            step: made + 1,
            session: script.turns.get(made).and_then(|t| t.session.clone()),
            part: DivergedPart::MissingCalls { made },
            expected: format!("{steps} model call(s), as recorded"),
            actual: format!("this build stopped after {made}"),
            diff: None,
        });
    }
    if let Some(d) = &mut divergence {
        let clean = |s: &str| options.secrets.redact(s).0;
        d.expected = clean(&d.expected);
        d.actual = clean(&d.actual);
        d.diff = d.diff.as_deref().map(clean);
    }
    harness.shutdown().await;
    let kept = scratch.close(options.keep).await;
    Ok(ReplayReport {
        session: recording.session.clone(),
        steps,
        matched: match &divergence {
            Some(d) => d.step.saturating_sub(1),
            None => steps,
        },
        turns,
        divergence,
        workspaces: roots,
        kept,
        elapsed: started.elapsed(),
    })
}

fn diverged(script: &Script, recording: &Recording, e: ScriptError) -> Divergence {
    match e {
        ScriptError::Exhausted { turns, .. } => Divergence {
            step: turns + 1,
            session: None,
            part: DivergedPart::ExtraCall,
            expected: format!("{turns} model call(s), as recorded"),
            actual: format!("this build made a model call number {}", turns + 1),
            diff: None,
        },
        ScriptError::Diverged {
            turn,
            part,
            expected,
            actual,
            actual_text,
            ..
        } => {
            let recorded = script.turns.get(turn.saturating_sub(1));
            let expect = recorded.and_then(|t| t.expect.as_ref());
            let (part, recorded_text, sections) = match part {
                ScriptPart::System => {
                    let sha = expect.and_then(|e| e.system.clone()).unwrap_or_default();
                    (
                        DivergedPart::SystemPrompt,
                        script.texts.get(&sha).cloned(),
                        recording.sections.get(&sha).cloned().unwrap_or_default(),
                    )
                }
                ScriptPart::Tools => {
                    let sha = expect.and_then(|e| e.tools.clone()).unwrap_or_default();
                    (
                        DivergedPart::ToolList,
                        script.texts.get(&sha).cloned(),
                        Vec::new(),
                    )
                }
                ScriptPart::Input(index) => {
                    let check = expect
                        .and_then(|e| e.input.as_ref())
                        .and_then(|i| i.get(index));
                    (
                        DivergedPart::Input { index },
                        check.and_then(|c| recorded_text(script, c)),
                        Vec::new(),
                    )
                }
                ScriptPart::LastMessage => (
                    DivergedPart::LastMessage,
                    expect
                        .and_then(|e| e.last.as_ref())
                        .and_then(|c| recorded_text(script, c)),
                    Vec::new(),
                ),
            };
            let diff = match (recorded_text, actual_text) {
                (Some(old), Some(new)) => Some(unified_diff(&old, &new, &sections)),
                _ => None,
            };
            Divergence {
                step: turn,
                session: recorded.and_then(|t| t.session.clone()),
                part,
                expected,
                actual,
                diff,
            }
        }
    }
}

fn recorded_text(script: &Script, check: &LastMessage) -> Option<String> {
    let m = match check {
        LastMessage::User(m) | LastMessage::ToolResult(m) => m,
    };
    match m {
        TextMatch::Exact(s) => Some(s.clone()),
        TextMatch::Contains(_) => None,
        TextMatch::Digest(d) => script.texts.get(&d.sha256).cloned(),
    }
}

/// Lines of context around each change.
const DIFF_CONTEXT: usize = 3;

/// A unified diff of `old` (recorded) against `new` (this build), each
/// hunk headed by where it falls: the system section (from `sections`),
/// the tool (`tool NAME` lines of a tool list) and the nearest heading.
pub fn unified_diff(old: &str, new: &str, sections: &[SectionStart]) -> String {
    let diff = similar::TextDiff::from_lines(old, new);
    let old_lines: Vec<&str> = old.lines().collect();
    let mut out = String::from("--- recorded\n+++ this build\n");
    for group in diff.grouped_ops(DIFF_CONTEXT) {
        let (Some(first), Some(last)) = (group.first(), group.last()) else {
            continue;
        };
        let old_start = first.old_range().start;
        let old_len = last.old_range().end - old_start;
        let new_start = first.new_range().start;
        let new_len = last.new_range().end - new_start;
        // Where the first change is: the line it replaces or follows.
        let changed = group
            .iter()
            .find(|op| !matches!(op.tag(), similar::DiffTag::Equal))
            .map_or(old_start, |op| op.old_range().start);
        out.push_str(&format!(
            "@@ -{},{old_len} +{},{new_len} @@{}\n",
            old_start + 1,
            new_start + 1,
            hunk_place(&old_lines, changed, sections)
        ));
        for op in &group {
            for change in diff.iter_changes(op) {
                let sign = match change.tag() {
                    similar::ChangeTag::Equal => ' ',
                    similar::ChangeTag::Delete => '-',
                    similar::ChangeTag::Insert => '+',
                };
                out.push(sign);
                out.push_str(change.value().trim_end_matches('\n'));
                out.push('\n');
            }
        }
    }
    out
}

/// ` section OWNER · HEADING` for the (0-based) line `at` of `lines`.
fn hunk_place(lines: &[&str], at: usize, sections: &[SectionStart]) -> String {
    let mut place = Vec::new();
    if let Some(s) = sections.iter().rev().find(|s| s.line <= at + 1) {
        place.push(format!("section {}", s.owner));
    }
    let upto = (at + 1).min(lines.len());
    let before = lines[..upto].iter().rev();
    if let Some(tool) = before.clone().find_map(|l| l.strip_prefix("tool ")) {
        place.push(format!("tool {tool}"));
    }
    if let Some(heading) = before
        .clone()
        .find(|l| l.starts_with('#') || (l.starts_with('<') && !l.starts_with("</")))
    {
        place.push(heading.trim().to_owned());
    }
    if place.is_empty() {
        String::new()
    } else {
        format!(" {}", place.join(" · "))
    }
}

fn canonical(path: &Path) -> Result<PathBuf, ReplayError> {
    std::fs::canonicalize(path).map_err(|source| ReplayError::Io {
        path: path.to_owned(),
        source,
    })
}

/// A clone of `repository` at `commit` in `dest`, sharing its objects.
fn checkout(repository: &Path, commit: &str, dest: &Path) -> Result<(), ReplayError> {
    let failed = |detail: String| ReplayError::Checkout {
        repository: repository.to_owned(),
        commit: commit.to_owned(),
        detail,
    };
    if let Some(parent) = dest.parent() {
        std::fs::create_dir_all(parent).map_err(|source| ReplayError::Io {
            path: parent.to_owned(),
            source,
        })?;
    }
    let run = |args: &[&std::ffi::OsStr]| -> Result<(), ReplayError> {
        let out = evoflux_core::git::command()
            .args(args)
            .env("GIT_TERMINAL_PROMPT", "0")
            .output()
            .map_err(|e| failed(format!("cannot run git: {e}")))?;
        if out.status.success() {
            Ok(())
        } else {
            Err(failed(
                String::from_utf8_lossy(&out.stderr).trim().to_owned(),
            ))
        }
    };
    if !repository.is_dir() {
        return Err(failed("the repository is not a directory here".to_owned()));
    }
    run(&[
        "clone".as_ref(),
        "--quiet".as_ref(),
        "--shared".as_ref(),
        "--no-checkout".as_ref(),
        "--".as_ref(),
        repository.as_os_str(),
        dest.as_os_str(),
    ])?;
    run(&[
        "-C".as_ref(),
        dest.as_os_str(),
        "checkout".as_ref(),
        "--quiet".as_ref(),
        "--detach".as_ref(),
        commit.as_ref(),
    ])
}

/// Takes the project's sources (`.evoflux/` and the skill roots) from the
/// live repository into the checkout: a replay runs the current agents,
/// skills and config against the recorded repository state.
fn overlay_sources(live: &Path, checkout: &Path) -> Result<(), ReplayError> {
    for sub in evoflux_graph::discover::project_source_dirs() {
        let from = live.join(sub);
        let to = checkout.join(sub);
        if to.exists() {
            std::fs::remove_dir_all(&to).map_err(|source| ReplayError::Io {
                path: to.clone(),
                source,
            })?;
        }
        if from.is_dir() {
            copy_dir(&from, &to)?;
        }
    }
    Ok(())
}

/// [`crate::tree_copy::copy_tree`], failing as a replay does.
fn copy_dir(from: &Path, to: &Path) -> Result<(), ReplayError> {
    crate::tree_copy::copy_tree(from, to).map_err(|e| ReplayError::Io {
        path: e.path,
        source: e.source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_redacted_by_name_longest_first() {
        let s = Secrets::from_vars(
            [
                ("OPENAI_API_KEY".to_owned(), "sk-live-1234567890".to_owned()),
                ("HOME".to_owned(), "/home/someone".to_owned()),
                ("SHORT_TOKEN".to_owned(), "abc".to_owned()),
                ("MY_VAR".to_owned(), "value-of-my-var".to_owned()),
            ],
            &["MY_VAR".to_owned()],
        );
        let (out, names) =
            s.redact("key sk-live-1234567890 in /home/someone, value-of-my-var, abc");
        assert_eq!(
            out,
            "key [redacted: OPENAI_API_KEY] in /home/someone, [redacted: MY_VAR], abc"
        );
        assert_eq!(names, ["OPENAI_API_KEY", "MY_VAR"]);
    }

    #[test]
    fn hunks_name_the_section_and_heading() {
        let old = "You are a lead.\n\n# Skills\n- alpha: does a\n- beta: does b\n\nToday is x.";
        let new = "You are a lead.\n\n# Skills\n- alpha: does A now\n- beta: does b\n\nToday is x.";
        let sections = [
            SectionStart {
                owner: "agent-prompt".into(),
                line: 1,
            },
            SectionStart {
                owner: "skill-catalog".into(),
                line: 3,
            },
        ];
        let d = unified_diff(old, new, &sections);
        assert!(
            d.contains("@@ -1,7 +1,7 @@ section skill-catalog · # Skills"),
            "{d}"
        );
        assert!(d.contains("-- alpha: does a\n+- alpha: does A now"), "{d}");
    }

    #[test]
    fn tool_hunks_name_the_tool() {
        let old = "tool read\n  | Reads a file.\n  parameters: {}\ntool write\n  | Writes a file.\n  parameters: {}\n";
        let new = "tool read\n  | Reads a file.\n  parameters: {}\ntool write\n  | Writes or replaces a file.\n  parameters: {}\n";
        let d = unified_diff(old, new, &[]);
        assert!(d.contains("tool write"), "{d}");
        assert!(d.contains("+  | Writes or replaces a file."), "{d}");
    }

    #[test]
    fn git_head_reads_loose_and_packed_refs() {
        let dir = tempfile::tempdir().unwrap();
        let git = dir.path().join(".git");
        std::fs::create_dir_all(git.join("refs/heads")).unwrap();
        std::fs::write(git.join("HEAD"), "ref: refs/heads/main\n").unwrap();
        let id = "0123456789abcdef0123456789abcdef01234567";
        std::fs::write(
            git.join("packed-refs"),
            format!("# pack-refs with: peeled\n{id} refs/heads/main\n"),
        )
        .unwrap();
        assert_eq!(
            evoflux_core::trust::git_head(dir.path()).as_deref(),
            Some(id)
        );
        let loose = "89abcdef0123456789abcdef0123456789abcdef";
        std::fs::write(git.join("refs/heads/main"), format!("{loose}\n")).unwrap();
        assert_eq!(
            evoflux_core::trust::git_head(dir.path()).as_deref(),
            Some(loose)
        );
        // A folder inside the repository is recorded at the repository's
        // commit; one outside any repository, not at all.
        let sub = dir.path().join("sub");
        assert_eq!(
            evoflux_harness::session::git_heads(std::slice::from_ref(&sub)),
            [(sub, loose.to_owned())]
        );
        let elsewhere = tempfile::tempdir().unwrap();
        assert_eq!(
            evoflux_harness::session::git_heads(&[elsewhere.path().to_path_buf()]),
            Vec::new()
        );
    }
}
