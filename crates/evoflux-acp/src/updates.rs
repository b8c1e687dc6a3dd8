//! evoflux's events and ACP's `session/update` notifications, both ways:
//! what a session of `evoflux acp` streams to its client, and what a
//! remote agent streams into the dispatching session's events.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use agent_client_protocol::v1::schema::{
    ContentBlock, ContentChunk, SessionInfoUpdate, SessionUpdate, TextContent, ToolCall,
    ToolCallContent, ToolCallId, ToolCallLocation, ToolCallStatus, ToolCallUpdate,
    ToolCallUpdateFields, ToolKind,
};
use evoflux_harness::{ActionClass, Event, ToolDefinition};
use evoflux_protocol::Message;
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
        Event::SessionStarted { .. }
        | Event::TurnStarted { .. }
        | Event::WebSearch { .. }
        | Event::Citation { .. }
        | Event::TurnCancelled { .. }
        | Event::ApprovalRequested { .. }
        | Event::ApprovalDecided { .. }
        | Event::TurnFailed { .. }
        | Event::ModelSwitched { .. }
        | Event::McpServer { .. }
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
    for message in messages {
        match message {
            Message::System { .. } => {}
            Message::User { content } => updates.push(SessionUpdate::UserMessageChunk(
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
            } => updates.push(SessionUpdate::ToolCallUpdate(ended(
                tool_call_id,
                *is_error,
                content,
            ))),
        }
    }
    updates
}

/// The text of a content block a client sent: text as it is, an embedded
/// text resource with its URI, a link by its URI; what evoflux cannot
/// read (images, audio, binary resources) is named, not dropped silently.
pub(crate) fn prompt_text(blocks: &[ContentBlock]) -> String {
    use agent_client_protocol::v1::schema::EmbeddedResourceResource;
    let mut parts = Vec::new();
    for block in blocks {
        match block {
            ContentBlock::Text(t) => parts.push(t.text.clone()),
            ContentBlock::ResourceLink(link) => {
                parts.push(format!("[{}]({})", link.name, link.uri))
            }
            ContentBlock::Resource(resource) => match &resource.resource {
                EmbeddedResourceResource::TextResourceContents(r) => {
                    parts.push(format!("<file uri=\"{}\">\n{}\n</file>", r.uri, r.text));
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
    parts.join("\n\n")
}

/// What a remote agent's update means to the dispatching session: an
/// event for its stream, and whether it starts a new stretch of the
/// agent's message (a tool call: the final message is the text after the
/// last one).
pub(crate) fn event_of(update: &SessionUpdate) -> Option<(Event, bool)> {
    match update {
        SessionUpdate::AgentMessageChunk(chunk) => match &chunk.content {
            ContentBlock::Text(t) => Some((
                Event::MessageDelta {
                    text: t.text.clone(),
                },
                false,
            )),
            _ => None,
        },
        SessionUpdate::ToolCall(call) => Some((
            Event::ToolStarted {
                call_id: call.tool_call_id.to_string(),
                tool: call.title.clone(),
                arguments: call.raw_input.clone().unwrap_or(Value::Null),
            },
            true,
        )),
        SessionUpdate::ToolCallUpdate(update) => {
            let status = update.fields.status?;
            let is_error = match status {
                ToolCallStatus::Completed => false,
                ToolCallStatus::Failed => true,
                _ => return None,
            };
            let content = update
                .fields
                .content
                .iter()
                .flatten()
                .filter_map(|c| match c {
                    ToolCallContent::Content(c) => match &c.content {
                        ContentBlock::Text(t) => Some(t.text.clone()),
                        _ => None,
                    },
                    _ => None,
                })
                .collect::<Vec<_>>()
                .join("\n");
            Some((
                Event::ToolEnded {
                    call_id: update.tool_call_id.to_string(),
                    tool: update.fields.title.clone().unwrap_or_default(),
                    status: evoflux_harness::ToolStatus::of(is_error),
                    is_error,
                    content,
                    metadata: None,
                },
                false,
            ))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agent_client_protocol::v1::schema::ResourceLink;

    #[test]
    fn a_remote_tool_call_starts_a_new_stretch_of_the_message_and_its_end_is_an_event() {
        let chunk = SessionUpdate::AgentMessageChunk(ContentChunk::new(text("Looking")));
        let (event, new_stretch) = event_of(&chunk).expect("an event");
        assert_eq!(
            event,
            Event::MessageDelta {
                text: "Looking".into()
            }
        );
        assert!(!new_stretch);
        let call = SessionUpdate::ToolCall(
            ToolCall::new(ToolCallId::new("t1"), "Read src/lib.rs")
                .raw_input(serde_json::json!({"path": "src/lib.rs"})),
        );
        let (event, new_stretch) = event_of(&call).expect("an event");
        assert!(new_stretch);
        assert!(matches!(event, Event::ToolStarted { ref call_id, .. } if call_id == "t1"));
        let failed = SessionUpdate::ToolCallUpdate(ended("t1", true, "no such file"));
        let (event, _) = event_of(&failed).expect("an event");
        assert!(matches!(
            event,
            Event::ToolEnded { is_error: true, ref content, .. } if content == "no such file"
        ));
        // A status that is not an end says nothing yet.
        let running = SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
            ToolCallId::new("t1"),
            ToolCallUpdateFields::new().status(ToolCallStatus::InProgress),
        ));
        assert!(event_of(&running).is_none());
    }

    #[test]
    fn a_prompt_keeps_text_and_names_links_in_order() {
        let blocks = vec![
            text("Fix the bug"),
            ContentBlock::ResourceLink(ResourceLink::new("lib.rs", "file:///r/src/lib.rs")),
        ];
        assert_eq!(
            prompt_text(&blocks),
            "Fix the bug\n\n[lib.rs](file:///r/src/lib.rs)"
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
}
