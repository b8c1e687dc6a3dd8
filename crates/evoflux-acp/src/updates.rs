//! evoflux's events and ACP's `session/update` notifications, both ways:
//! what a session of `evoflux acp` streams to its client, and what a
//! remote agent streams into the dispatching session's events.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use agent_client_protocol::v1::schema::{
    ContentBlock, ContentChunk, Plan, PlanEntry, PlanEntryPriority, PlanEntryStatus,
    SessionInfoUpdate, SessionUpdate, TextContent, ToolCall, ToolCallContent, ToolCallId,
    ToolCallLocation, ToolCallStatus, ToolCallUpdate, ToolCallUpdateFields, ToolKind,
};
use evoflux_graph::tool::{BuiltinExecutor, ToolExecutor};
use evoflux_harness::tools::todo::{TodoList, TodoStatus};
use evoflux_harness::{ActionClass, Event, ToolDefinition};
use evoflux_protocol::events::McpServerState;
use evoflux_protocol::{Media, MediaKind, Message};
use serde_json::Value;

/// What the client is told about each tool of a session: its kind (from
/// the tool's action class, never its name) and where its path arguments
/// point.
#[derive(Debug, Clone, Default)]
pub(crate) struct ToolShapes {
    tools: HashMap<String, ToolDefinition>,
    /// The session's first root, against which relative paths resolve.
    root: PathBuf,
}

impl ToolShapes {
    pub(crate) fn new<'a>(
        tools: impl IntoIterator<Item = &'a ToolDefinition>,
        root: &Path,
    ) -> Self {
        ToolShapes {
            tools: tools
                .into_iter()
                .map(|t| (t.name.clone(), t.clone()))
                .collect(),
            root: root.to_path_buf(),
        }
    }

    fn kind(&self, tool: &str) -> ToolKind {
        match self.tools.get(tool).map(|t| t.behavior.action_class) {
            Some(ActionClass::Read) => ToolKind::Read,
            Some(ActionClass::Write | ActionClass::Artifact) => ToolKind::Edit,
            Some(ActionClass::Execute | ActionClass::Verify) => ToolKind::Execute,
            Some(ActionClass::Network) => ToolKind::Fetch,
            Some(ActionClass::Dispatch | ActionClass::Ask) => ToolKind::Think,
            None => ToolKind::Other,
        }
    }

    /// Whether `tool` is the session's task list (`todo`): by its
    /// built-in executor, never its name.
    pub(crate) fn is_todo(&self, tool: &str) -> bool {
        self.tools.get(tool).is_some_and(|t| {
            matches!(
                t.executor,
                Some(ToolExecutor::Builtin {
                    executor: BuiltinExecutor::Todo
                })
            )
        })
    }

    fn locations(&self, tool: &str, arguments: &Value) -> Vec<ToolCallLocation> {
        let Some(definition) = self.tools.get(tool) else {
            return Vec::new();
        };
        evoflux_harness::tool_paths::path_arguments(definition, arguments)
            .into_iter()
            .map(|p| ToolCallLocation::new(self.root.join(p)))
            .collect()
    }

    /// The notification that shows a tool call starting.
    pub(crate) fn started(&self, call_id: &str, tool: &str, arguments: &Value) -> ToolCall {
        let locations = self.locations(tool, arguments);
        let title = match locations.first() {
            Some(l) => format!("{tool} {}", shown(&l.path, &self.root)),
            None => tool.to_owned(),
        };
        ToolCall::new(ToolCallId::new(call_id.to_owned()), title)
            .kind(self.kind(tool))
            .status(ToolCallStatus::InProgress)
            .locations(locations)
            .raw_input(arguments.clone())
    }
}

fn shown(path: &Path, root: &Path) -> String {
    path.strip_prefix(root)
        .unwrap_or(path)
        .display()
        .to_string()
}

fn text(text: impl Into<String>) -> ContentBlock {
    ContentBlock::Text(TextContent::new(text.into()))
}

fn ended(call_id: &str, is_error: bool, content: &str) -> ToolCallUpdate {
    ToolCallUpdate::new(
        ToolCallId::new(call_id.to_owned()),
        ToolCallUpdateFields::new()
            .status(if is_error {
                ToolCallStatus::Failed
            } else {
                ToolCallStatus::Completed
            })
            .content(vec![ToolCallContent::from(content.to_owned())]),
    )
}

/// The plan a successful `todo` call with `arguments` leaves, as ACP's
/// `plan` update: the whole list each time (as the protocol asks), each
/// task with its status; `todo` has no priorities, so every entry is
/// medium. A cancelled task is no longer part of the plan and is left
/// out. `None` for a call that only read the list.
pub(crate) fn plan_of(arguments: &Value) -> Option<SessionUpdate> {
    arguments.get("todos")?;
    let mut list = TodoList::default();
    if list.apply(arguments).is_error {
        return None;
    }
    let entries = list
        .items()
        .iter()
        .filter_map(|item| {
            let status = match item.status {
                TodoStatus::Pending => PlanEntryStatus::Pending,
                TodoStatus::InProgress => PlanEntryStatus::InProgress,
                TodoStatus::Completed => PlanEntryStatus::Completed,
                TodoStatus::Cancelled => return None,
            };
            Some(PlanEntry::new(
                item.content.clone(),
                PlanEntryPriority::Medium,
                status,
            ))
        })
        .collect();
    Some(SessionUpdate::Plan(Plan::new(entries)))
}

/// What the client is told of an MCP server's state change: only what
/// keeps its tools away (failed, missing, waiting for a login or
/// credentials, skipped), as a thought naming the server and why.
pub(crate) fn mcp_notice(
    server: &str,
    state: McpServerState,
    error: Option<&str>,
) -> Option<String> {
    let what = match state {
        McpServerState::Starting | McpServerState::Ready | McpServerState::Stopped => return None,
        McpServerState::Failed => "failed",
        McpServerState::Skipped => "is not run",
        McpServerState::NeedsCredentials => "waits for its plugin's credentials",
        McpServerState::NeedsLogin => "waits for a login (`evoflux mcp login`)",
        McpServerState::Missing => "does not exist",
    };
    Some(match error {
        Some(e) => format!("MCP server `{server}` {what}: {e}"),
        None => format!("MCP server `{server}` {what}"),
    })
}

/// A thought chunk of `message`.
pub(crate) fn thought(message: String) -> SessionUpdate {
    SessionUpdate::AgentThoughtChunk(ContentChunk::new(text(message)))
}

/// The update a client sees for `event`, if any. A child session's tool
/// calls are shown under ids of their own (`<dispatch call>/<call>`), so
/// an editor sees the work a dispatch does as it happens.
pub(crate) fn update_of(event: &Event, tools: &ToolShapes) -> Option<SessionUpdate> {
    match event {
        Event::MessageDelta { text: t } => Some(SessionUpdate::AgentMessageChunk(
            ContentChunk::new(text(t.clone())),
        )),
        Event::ToolStarted {
            call_id,
            tool,
            arguments,
        } => Some(SessionUpdate::ToolCall(
            tools.started(call_id, tool, arguments),
        )),
        Event::ToolEnded {
            call_id,
            is_error,
            content,
            ..
        } => Some(SessionUpdate::ToolCallUpdate(ended(
            call_id, *is_error, content,
        ))),
        Event::CommandEnded {
            process_id,
            command,
            is_error,
            ..
        } => Some(SessionUpdate::AgentThoughtChunk(ContentChunk::new(text(
            format!(
                "background command {process_id} `{command}` {}",
                if *is_error { "failed" } else { "finished" }
            ),
        )))),
        Event::InputRequested {
            question, options, ..
        } => {
            let mut shown = question.clone();
            for option in options {
                shown.push_str(&format!("\n- {option}"));
            }
            Some(SessionUpdate::AgentMessageChunk(ContentChunk::new(text(
                shown,
            ))))
        }
        Event::Warning { code, message } | Event::GraphInvalid { code, message, .. } => {
            Some(SessionUpdate::AgentThoughtChunk(ContentChunk::new(text(
                format!("{message} [{code}]"),
            ))))
        }
        Event::SessionTitled { title } => Some(SessionUpdate::SessionInfoUpdate(
            SessionInfoUpdate::new().title(title.clone()),
        )),
        Event::PreviewStarted {
            preview_id, url, ..
        } => Some(thought(format!("preview {preview_id} serving at {url}"))),
        Event::PreviewStopped { preview_id } => {
            Some(thought(format!("preview {preview_id} stopped")))
        }
        Event::SourcesApplied { .. } => Some(SessionUpdate::AgentThoughtChunk(ContentChunk::new(
            text("changed agents, skills, plugins or config apply from this prompt".to_owned()),
        ))),
        Event::Child { call_id, event } => match event.as_ref() {
            Event::ToolStarted {
                call_id: inner,
                tool,
                arguments,
            } => Some(SessionUpdate::ToolCall(tools.started(
                &format!("{call_id}/{inner}"),
                tool,
                arguments,
            ))),
            Event::ToolEnded {
                call_id: inner,
                is_error,
                content,
                ..
            } => Some(SessionUpdate::ToolCallUpdate(ended(
                &format!("{call_id}/{inner}"),
                *is_error,
                content,
            ))),
            _ => None,
        },
        Event::McpServer {
            server,
            state,
            error,
            ..
        } => mcp_notice(server, *state, error.as_deref()).map(thought),
        // An MCP server's log line during a call, already rate-limited.
        Event::ToolLog {
            server, message, ..
        } => Some(thought(format!("[{server}] {message}"))),
        // Progress has no place in ACP's tool call update; a form is put
        // to the client by the approver (`elicitation/create`), its answer
        // is the client's own.
        Event::ToolProgress { .. }
        | Event::ElicitationRequested { .. }
        | Event::ElicitationAnswered { .. } => None,
        Event::SessionStarted { .. }
        | Event::TurnStarted { .. }
        | Event::WebSearch { .. }
        | Event::Citation { .. }
        | Event::TurnCancelled { .. }
        | Event::ApprovalRequested { .. }
        | Event::ApprovalDecided { .. }
        | Event::TurnFailed { .. }
        | Event::ModelSwitched { .. }
        | Event::ContextCompacted { .. }
        | Event::TurnCompleted { .. }
        | Event::ModelCallCompleted { .. }
        | Event::Error { .. }
        | Event::DispatchStarted { .. }
        | Event::DispatchEnded { .. }
        | Event::TaskCancelled { .. }
        | Event::TaskUpdate { .. }
        | Event::ToolsActivated { .. } => None,
    }
}

/// A stored conversation as the updates `session/load` replays: what the
/// user said, what the agent said, each tool call with its result.
pub(crate) fn history(messages: &[Message], tools: &ToolShapes) -> Vec<SessionUpdate> {
    let mut updates = Vec::new();
    // The `todo` calls seen, by id, whose successful result is a plan.
    let mut todos: HashMap<&str, &Value> = HashMap::new();
    for message in messages {
        match message {
            Message::System { .. } => {}
            Message::User { content, .. } => updates.push(SessionUpdate::UserMessageChunk(
                ContentChunk::new(text(content.clone())),
            )),
            Message::Assistant {
                content,
                tool_calls,
                ..
            } => {
                if !content.is_empty() {
                    updates.push(SessionUpdate::AgentMessageChunk(ContentChunk::new(text(
                        content.clone(),
                    ))));
                }
                for call in tool_calls {
                    if tools.is_todo(&call.name) {
                        todos.insert(call.id.as_str(), &call.arguments);
                    }
                    updates.push(SessionUpdate::ToolCall(tools.started(
                        &call.id,
                        &call.name,
                        &call.arguments,
                    )));
                }
            }
            Message::Tool {
                tool_call_id,
                content,
                is_error,
                ..
            } => {
                updates.push(SessionUpdate::ToolCallUpdate(ended(
                    tool_call_id,
                    *is_error,
                    content,
                )));
                if let Some(plan) = todos
                    .remove(tool_call_id.as_str())
                    .filter(|_| !*is_error)
                    .and_then(plan_of)
                {
                    updates.push(plan);
                }
            }
        }
    }
    updates
}

/// A prompt block evoflux cannot take, by its place in `prompt`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("prompt[{index}].{field}: {problem}")]
pub(crate) struct InvalidBlock {
    pub(crate) index: usize,
    pub(crate) field: &'static str,
    pub(crate) problem: String,
}

impl InvalidBlock {
    pub(crate) const CODE: &'static str = "acp/prompt-block-invalid";
}

/// What a client's prompt becomes: its text (text as it is, an embedded
/// text resource with its URI, a link by its URI), and its images and
/// audio as the user message's media, in order. An image or audio block
/// whose MIME type is not of its kind, or whose data is not base64, is
/// refused naming its place; what evoflux cannot read otherwise (a binary
/// resource that is not an image) is named in the text, never dropped
/// silently.
pub(crate) fn prompt_input(blocks: &[ContentBlock]) -> Result<(String, Vec<Media>), InvalidBlock> {
    use agent_client_protocol::v1::schema::EmbeddedResourceResource;
    let mut parts = Vec::new();
    let mut media = Vec::new();
    for (index, block) in blocks.iter().enumerate() {
        match block {
            ContentBlock::Text(t) => parts.push(t.text.clone()),
            ContentBlock::ResourceLink(link) => {
                parts.push(format!("[{}]({})", link.name, link.uri))
            }
            ContentBlock::Image(image) => media.push(media_of(
                index,
                MediaKind::Image,
                (&image.mime_type, &image.data),
                image.uri.clone(),
            )?),
            ContentBlock::Audio(audio) => media.push(media_of(
                index,
                MediaKind::Audio,
                (&audio.mime_type, &audio.data),
                None,
            )?),
            ContentBlock::Resource(resource) => match &resource.resource {
                EmbeddedResourceResource::TextResourceContents(r) => {
                    parts.push(format!("<file uri=\"{}\">\n{}\n</file>", r.uri, r.text));
                }
                EmbeddedResourceResource::BlobResourceContents(b)
                    if b.mime_type
                        .as_deref()
                        .is_some_and(|m| m.starts_with("image/")) =>
                {
                    let mime = b.mime_type.as_deref().unwrap_or_default();
                    media.push(media_of(
                        index,
                        MediaKind::Image,
                        (mime, &b.blob),
                        Some(b.uri.clone()),
                    )?);
                }
                other => parts.push(format!("[a resource evoflux cannot read: {other:?}]")),
            },
            other => parts.push(format!(
                "[content evoflux cannot read: {}]",
                serde_json::to_value(other)
                    .ok()
                    .and_then(|v| v.get("type").and_then(Value::as_str).map(str::to_owned))
                    .unwrap_or_else(|| "unknown".to_owned())
            )),
        }
    }
    Ok((parts.join("\n\n"), media))
}

/// One image or audio block (its MIME type and base64 data) as media, both
/// checked; `source` is where it came from.
fn media_of(
    index: usize,
    kind: MediaKind,
    (mime_type, data): (&str, &str),
    source: Option<String>,
) -> Result<Media, InvalidBlock> {
    let prefix = format!("{}/", kind.label());
    if !mime_type.starts_with(&prefix) {
        return Err(InvalidBlock {
            index,
            field: "mimeType",
            problem: format!("`{mime_type}` is not an {} type ({prefix}…)", kind.label()),
        });
    }
    use base64::Engine as _;
    if data.is_empty()
        || base64::engine::general_purpose::STANDARD
            .decode(data)
            .is_err()
    {
        return Err(InvalidBlock {
            index,
            field: "data",
            problem: format!("the {} is not base64 data", kind.label()),
        });
    }
    let mut media = Media::new(kind, mime_type, data);
    media.source = source;
    Ok(media)
}

/// What a remote agent's updates mean to the dispatching session, with
/// the tool calls it has shown so far. Agents repeat themselves: a second
/// `tool_call` for an id already shown is an update of that call (never a
/// second `tool_started`), and a call's end is told once, so the lead's
/// stream shows each remote call started once and ended at most once.
#[derive(Debug, Default)]
pub(crate) struct RemoteCalls {
    /// Each call shown, by id: its title (what its end is named by when
    /// the update carries none) and whether its end was told.
    calls: HashMap<String, RemoteCall>,
}

#[derive(Debug)]
struct RemoteCall {
    title: String,
    ended: bool,
}

/// The events one update of a remote agent becomes, and whether it starts
/// a new stretch of the agent's message (a new tool call: the final
/// message is the text after the last one).
#[derive(Debug, Default, PartialEq)]
pub(crate) struct RemoteEvents {
    pub(crate) events: Vec<Event>,
    pub(crate) new_stretch: bool,
}

impl RemoteCalls {
    pub(crate) fn events_of(&mut self, update: &SessionUpdate) -> RemoteEvents {
        let mut out = RemoteEvents::default();
        match update {
            SessionUpdate::AgentMessageChunk(chunk) => {
                if let ContentBlock::Text(t) = &chunk.content {
                    out.events.push(Event::MessageDelta {
                        text: t.text.clone(),
                    });
                }
            }
            SessionUpdate::ToolCall(call) => {
                let id = call.tool_call_id.to_string();
                if let Some(known) = self.calls.get_mut(&id) {
                    // A repeat: what it adds is an update of the call.
                    if !call.title.is_empty() {
                        known.title = call.title.clone();
                    }
                } else {
                    self.calls.insert(
                        id.clone(),
                        RemoteCall {
                            title: call.title.clone(),
                            ended: false,
                        },
                    );
                    out.events.push(Event::ToolStarted {
                        call_id: id.clone(),
                        tool: call.title.clone(),
                        arguments: call.raw_input.clone().unwrap_or(Value::Null),
                    });
                    out.new_stretch = true;
                }
                self.end(&id, call.status, &call.content, &mut out);
            }
            SessionUpdate::ToolCallUpdate(update) => {
                let id = update.tool_call_id.to_string();
                let call = self.calls.entry(id.clone()).or_insert_with(|| RemoteCall {
                    title: String::new(),
                    ended: false,
                });
                if let Some(title) = &update.fields.title {
                    call.title = title.clone();
                }
                if let Some(status) = update.fields.status {
                    let content = update.fields.content.as_deref().unwrap_or_default();
                    self.end(&id, status, content, &mut out);
                }
            }
            _ => {}
        }
        out
    }

    /// The end of call `id` when `status` is one and it was not told yet.
    fn end(
        &mut self,
        id: &str,
        status: ToolCallStatus,
        content: &[ToolCallContent],
        out: &mut RemoteEvents,
    ) {
        let is_error = match status {
            ToolCallStatus::Completed => false,
            ToolCallStatus::Failed => true,
            // Pending, running, or a status of a later protocol: not an end.
            _ => return,
        };
        let Some(call) = self.calls.get_mut(id).filter(|c| !c.ended) else {
            return;
        };
        call.ended = true;
        let content = content
            .iter()
            .filter_map(|c| match c {
                ToolCallContent::Content(c) => match &c.content {
                    ContentBlock::Text(t) => Some(t.text.clone()),
                    _ => None,
                },
                _ => None,
            })
            .collect::<Vec<_>>()
            .join("\n");
        out.events.push(Event::ToolEnded {
            call_id: id.to_owned(),
            tool: call.title.clone(),
            status: evoflux_harness::ToolStatus::of(is_error),
            is_error,
            content,
            metadata: None,
            media: Vec::new(),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agent_client_protocol::v1::schema::ResourceLink;

    #[test]
    fn a_remote_tool_call_starts_a_new_stretch_of_the_message_and_its_end_is_an_event() {
        let mut calls = RemoteCalls::default();
        let chunk = SessionUpdate::AgentMessageChunk(ContentChunk::new(text("Looking")));
        let seen = calls.events_of(&chunk);
        assert_eq!(
            seen.events,
            [Event::MessageDelta {
                text: "Looking".into()
            }]
        );
        assert!(!seen.new_stretch);
        let call = SessionUpdate::ToolCall(
            ToolCall::new(ToolCallId::new("t1"), "Read src/lib.rs")
                .raw_input(serde_json::json!({"path": "src/lib.rs"})),
        );
        let seen = calls.events_of(&call);
        assert!(seen.new_stretch);
        assert!(
            matches!(&seen.events[..], [Event::ToolStarted { call_id, .. }] if call_id == "t1")
        );
        // A status that is not an end says nothing yet.
        let running = SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
            ToolCallId::new("t1"),
            ToolCallUpdateFields::new().status(ToolCallStatus::InProgress),
        ));
        assert!(calls.events_of(&running).events.is_empty());
        let failed = SessionUpdate::ToolCallUpdate(ended("t1", true, "no such file"));
        let seen = calls.events_of(&failed);
        assert!(matches!(
            &seen.events[..],
            [Event::ToolEnded { is_error: true, content, tool, .. }]
                if content == "no such file" && tool == "Read src/lib.rs"
        ));
    }

    #[test]
    fn a_repeated_tool_call_is_started_once_and_ended_once() {
        let mut calls = RemoteCalls::default();
        let call = || {
            SessionUpdate::ToolCall(
                ToolCall::new(ToolCallId::new("t1"), "Run tests")
                    .status(ToolCallStatus::InProgress),
            )
        };
        let done = || SessionUpdate::ToolCallUpdate(ended("t1", false, "ok"));
        let mut events = Vec::new();
        let mut stretches = 0;
        for update in [call(), call(), done(), call(), done()] {
            let seen = calls.events_of(&update);
            stretches += usize::from(seen.new_stretch);
            events.extend(seen.events);
        }
        // A repeated `tool_call` that carries the end ends the call once.
        let completed = SessionUpdate::ToolCall(
            ToolCall::new(ToolCallId::new("t2"), "Read").status(ToolCallStatus::Completed),
        );
        for _ in 0..2 {
            let seen = calls.events_of(&completed);
            stretches += usize::from(seen.new_stretch);
            events.extend(seen.events);
        }
        let kinds: Vec<(&str, &str)> = events
            .iter()
            .map(|e| match e {
                Event::ToolStarted { call_id, .. } => ("started", call_id.as_str()),
                Event::ToolEnded { call_id, .. } => ("ended", call_id.as_str()),
                _ => ("other", ""),
            })
            .collect();
        assert_eq!(
            kinds,
            [
                ("started", "t1"),
                ("ended", "t1"),
                ("started", "t2"),
                ("ended", "t2")
            ]
        );
        assert_eq!(stretches, 2);
    }

    #[test]
    fn a_prompt_keeps_text_and_names_links_in_order() {
        let blocks = vec![
            text("Fix the bug"),
            ContentBlock::ResourceLink(ResourceLink::new("lib.rs", "file:///r/src/lib.rs")),
        ];
        assert_eq!(
            prompt_input(&blocks).unwrap(),
            (
                "Fix the bug\n\n[lib.rs](file:///r/src/lib.rs)".to_owned(),
                Vec::new()
            )
        );
    }

    #[test]
    fn a_tool_s_kind_comes_from_its_action_class_and_its_paths_from_its_schema() {
        let shapes = ToolShapes::new(std::iter::empty(), Path::new("/r"));
        let call = shapes.started("c1", "unknown_tool", &serde_json::json!({"path": "a"}));
        assert_eq!(call.kind, ToolKind::Other);
        assert!(call.locations.is_empty());
        assert_eq!(call.status, ToolCallStatus::InProgress);
    }

    #[test]
    fn images_and_audio_become_media_and_bad_ones_are_refused_by_place() {
        use agent_client_protocol::v1::schema::{AudioContent, ImageContent};
        let blocks = vec![
            text("what is this?"),
            ContentBlock::Image(
                ImageContent::new("aGVsbG8=", "image/png").uri("file:///a.png".to_owned()),
            ),
            ContentBlock::Audio(AudioContent::new("aGVsbG8=", "audio/wav")),
        ];
        let (said, media) = prompt_input(&blocks).unwrap();
        assert_eq!(said, "what is this?");
        assert_eq!(media.len(), 2);
        assert_eq!(media[0].kind, MediaKind::Image);
        assert_eq!(media[0].mime_type, "image/png");
        assert_eq!(media[0].source.as_deref(), Some("file:///a.png"));
        assert_eq!(media[1].kind, MediaKind::Audio);
        let bad = prompt_input(&[
            text("x"),
            ContentBlock::Image(ImageContent::new("aGVsbG8=", "text/plain")),
        ])
        .unwrap_err();
        assert_eq!((bad.index, bad.field), (1, "mimeType"));
        let bad = prompt_input(&[ContentBlock::Image(ImageContent::new(
            "not base64!",
            "image/png",
        ))])
        .unwrap_err();
        assert_eq!((bad.index, bad.field), (0, "data"));
    }

    #[test]
    fn a_todo_call_is_a_plan_without_its_cancelled_tasks() {
        let plan = plan_of(&serde_json::json!({"todos": [
            {"content": "read", "status": "completed"},
            {"content": "fix", "status": "in_progress"},
            {"content": "later", "status": "pending"},
            {"content": "dropped", "status": "cancelled"}
        ]}));
        let Some(SessionUpdate::Plan(plan)) = plan else {
            panic!("{plan:?}");
        };
        let entries: Vec<(&str, PlanEntryStatus, PlanEntryPriority)> = plan
            .entries
            .iter()
            .map(|e| (e.content.as_str(), e.status.clone(), e.priority.clone()))
            .collect();
        assert_eq!(
            entries,
            [
                (
                    "read",
                    PlanEntryStatus::Completed,
                    PlanEntryPriority::Medium
                ),
                (
                    "fix",
                    PlanEntryStatus::InProgress,
                    PlanEntryPriority::Medium
                ),
                ("later", PlanEntryStatus::Pending, PlanEntryPriority::Medium),
            ]
        );
        // A read of the list, or a call the tool refuses, is no plan.
        assert!(plan_of(&serde_json::json!({})).is_none());
        assert!(
            plan_of(&serde_json::json!({"todos": [{"content": "", "status": "pending"}]}))
                .is_none()
        );
    }

    #[test]
    fn only_a_server_that_keeps_its_tools_away_is_a_notice() {
        assert!(mcp_notice("s", McpServerState::Ready, None).is_none());
        assert!(mcp_notice("s", McpServerState::Starting, None).is_none());
        let failed =
            mcp_notice("s", McpServerState::Failed, Some("mcp/start-failed: gone")).unwrap();
        assert!(
            failed.contains("`s`") && failed.contains("mcp/start-failed"),
            "{failed}"
        );
        assert!(mcp_notice("s", McpServerState::Skipped, None).is_some());
    }
}
