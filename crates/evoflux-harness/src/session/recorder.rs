//! Recording: every message goes to the durable transcript (with its
//! metadata beside it) and to the conversation, and a tool result's event
//! carries exactly what was stored.

use std::collections::HashMap;
use std::sync::Arc;

use crate::metadata::ResultMetadata;
use evoflux_core::ids::SessionId;
use evoflux_model::{Message, ToolCall};
use evoflux_store::Store;

use crate::error::HarnessError;
use crate::events::{Event, EventSink, ToolResult};

/// The session's record: the store, the conversation as the model sees it,
/// the event sink, and the stored metadata of tool results by call id (for
/// context hooks: projection, receipts).
#[derive(Debug)]
pub(crate) struct Recorder {
    pub(crate) store: Store,
    pub(crate) session_id: SessionId,
    pub(crate) events: Arc<dyn EventSink>,
    pub(crate) messages: Vec<Message>,
    pub(crate) result_metadata: Arc<HashMap<String, ResultMetadata>>,
}

impl Recorder {
    /// Persists the messages hooks added for good (synthetic skill
    /// activation pairs) and emits their tool events, so a live view shows
    /// them like any call.
    pub(crate) async fn persist_durable(
        &mut self,
        durable: Vec<crate::hooks::DurableMessage>,
    ) -> Result<(), HarnessError> {
        for d in durable {
            if let Message::Assistant { tool_calls, .. } = &d.message {
                for c in tool_calls {
                    self.events.emit(&Event::ToolStarted {
                        call_id: c.id.clone(),
                        tool: c.name.clone(),
                        arguments: c.arguments.clone(),
                    });
                }
            }
            // A result's event follows its entry: it names the entry that
            // keeps its media (its `seq`, known once it is stored).
            let ended = match &d.message {
                Message::Tool {
                    tool_call_id,
                    content,
                    is_error,
                    media,
                } => Some((
                    tool_call_id.clone(),
                    *is_error,
                    evoflux_protocol::message::text_with_media_notes(content, media),
                    evoflux_protocol::MediaRef::of_entry(0, media),
                )),
                Message::Assistant { .. } | Message::System { .. } | Message::User { .. } => None,
            };
            let seq = self.append(d.message, d.metadata.as_ref()).await?;
            if let Some((call_id, is_error, content, mut media)) = ended {
                for m in &mut media {
                    m.seq = seq;
                }
                let tool = self.tool_name_of(&call_id).unwrap_or_default();
                self.events.emit(&Event::ToolEnded {
                    call_id,
                    tool,
                    status: crate::events::ToolStatus::of(is_error),
                    is_error,
                    content,
                    metadata: d.metadata,
                    media,
                });
            }
        }
        Ok(())
    }

    /// The name of the call `tool_call_id` in the conversation.
    fn tool_name_of(&self, tool_call_id: &str) -> Option<String> {
        self.messages.iter().rev().find_map(|m| match m {
            Message::Assistant { tool_calls, .. } => tool_calls
                .iter()
                .find(|c| c.id == tool_call_id)
                .map(|c| c.name.clone()),
            Message::System { .. } | Message::User { .. } | Message::Tool { .. } => None,
        })
    }

    /// Appends one message to the durable transcript (with its metadata
    /// beside it) and to the conversation; a tool result's metadata is
    /// also kept for hooks that read it.
    pub(crate) async fn append(
        &mut self,
        message: Message,
        metadata: Option<&ResultMetadata>,
    ) -> Result<u64, HarnessError> {
        let entry = match metadata {
            Some(meta) => {
                let entry = self
                    .store
                    .append_with_artifact(self.session_id, &message, &meta.to_stored())
                    .await?;
                if let Message::Tool { tool_call_id, .. } = &message {
                    Arc::make_mut(&mut self.result_metadata)
                        .insert(tool_call_id.clone(), meta.clone());
                }
                entry
            }
            None => self.store.append_message(self.session_id, &message).await?,
        };
        self.messages.push(message);
        Ok(entry.seq)
    }

    /// Stores a model call's `reply` with what the call was given and its
    /// usage, in one transaction, and adds the reply to the conversation.
    pub(crate) async fn record_reply(
        &mut self,
        reply: Message,
        sent: &evoflux_store::RequestParts,
        usage: evoflux_store::Usage,
    ) -> Result<(), HarnessError> {
        self.store
            .record_model_call(self.session_id, &reply, sent, usage)
            .await?;
        self.messages.push(reply);
        Ok(())
    }

    /// Persists a tool result (with its metadata beside it) and emits the
    /// matching event with exactly that metadata.
    pub(crate) async fn record(
        &mut self,
        call: &ToolCall,
        result: ToolResult,
    ) -> Result<(), HarnessError> {
        let status = crate::events::ToolStatus::of(result.is_error);
        self.record_as(call, result, status).await
    }

    /// [`Recorder::record`] with the status the event reports (a call the
    /// user cancelled is stored as an error the model reads, and ends
    /// `cancelled`).
    pub(crate) async fn record_as(
        &mut self,
        call: &ToolCall,
        result: ToolResult,
        status: crate::events::ToolStatus,
    ) -> Result<(), HarnessError> {
        let message = Message::Tool {
            tool_call_id: call.id.clone(),
            content: result.content.clone(),
            is_error: result.is_error,
            media: result.media.clone(),
        };
        let seq = self.append(message, result.metadata.as_ref()).await?;
        self.events.emit(&Event::ToolEnded {
            call_id: call.id.clone(),
            tool: call.name.clone(),
            status,
            is_error: result.is_error,
            // Front ends show text; the media are named in it.
            content: evoflux_protocol::message::text_with_media_notes(
                &result.content,
                &result.media,
            ),
            metadata: result.metadata,
            media: evoflux_protocol::MediaRef::of_entry(seq, &result.media),
        });
        Ok(())
    }
}
