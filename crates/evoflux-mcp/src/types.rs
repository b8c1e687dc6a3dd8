//! Our own shapes of what MCP servers return, so no SDK type crosses the
//! crate boundary. They are read from the wire JSON (MCP 2025-11-25
//! `Tool`, `CallToolResult` and content blocks).

use evoflux_protocol::{Media, MediaKind};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// A tool as a server lists it (raw name, for `tools/call`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct McpTool {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// A JSON Schema object (default dialect 2020-12).
    #[serde(default = "empty_object_schema")]
    pub input_schema: Value,
}

fn empty_object_schema() -> Value {
    serde_json::json!({"type": "object"})
}

/// One content block of a tool result. Closed: the five kinds of MCP
/// 2025-11-25. A block of a kind this version does not define is kept as
/// text describing it, so a newer server never makes a call fail.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum McpContent {
    Text {
        text: String,
    },
    Image {
        data: String,
        mime_type: String,
    },
    Audio {
        data: String,
        mime_type: String,
    },
    /// A link to a resource the server can read (`uri`, `name`, …).
    ResourceLink {
        uri: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        name: Option<String>,
    },
    /// An embedded resource: `text` or base64 `blob` contents.
    Resource {
        uri: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        mime_type: Option<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        text: Option<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        blob: Option<String>,
    },
}

fn str_field(v: &Map<String, Value>, key: &str) -> Option<String> {
    v.get(key).and_then(Value::as_str).map(str::to_owned)
}

impl McpContent {
    /// Reads one wire content block.
    pub fn from_wire(block: &Value) -> McpContent {
        let Some(obj) = block.as_object() else {
            return McpContent::Text {
                text: block.to_string(),
            };
        };
        let s = |k: &str| str_field(obj, k);
        match obj.get("type").and_then(Value::as_str) {
            Some("text") => McpContent::Text {
                text: s("text").unwrap_or_default(),
            },
            Some("image") => McpContent::Image {
                data: s("data").unwrap_or_default(),
                mime_type: s("mimeType").unwrap_or_default(),
            },
            Some("audio") => McpContent::Audio {
                data: s("data").unwrap_or_default(),
                mime_type: s("mimeType").unwrap_or_default(),
            },
            Some("resource_link") => McpContent::ResourceLink {
                uri: s("uri").unwrap_or_default(),
                name: s("name"),
            },
            Some("resource") => {
                let r = obj.get("resource").and_then(Value::as_object);
                let rs = |k: &str| r.and_then(|r| str_field(r, k));
                McpContent::Resource {
                    uri: rs("uri").unwrap_or_default(),
                    mime_type: rs("mimeType"),
                    text: rs("text"),
                    blob: rs("blob"),
                }
            }
            _ => McpContent::Text {
                text: format!("[unsupported content block: {block}]"),
            },
        }
    }

    /// How the block reads to a model that receives text.
    pub fn to_text(&self) -> String {
        match self {
            McpContent::Text { text } => text.clone(),
            McpContent::Image { data, mime_type } => {
                format!("[image {mime_type}, {} base64 chars]", data.len())
            }
            McpContent::Audio { data, mime_type } => {
                format!("[audio {mime_type}, {} base64 chars]", data.len())
            }
            McpContent::ResourceLink { uri, name } => match name {
                Some(n) => format!("[resource link {n}: {uri}]"),
                None => format!("[resource link: {uri}]"),
            },
            McpContent::Resource {
                uri, text, blob, ..
            } => match (text, blob) {
                (Some(t), _) => t.clone(),
                (None, Some(b)) => format!("[resource {uri}, {} base64 chars]", b.len()),
                (None, None) => format!("[resource {uri}]"),
            },
        }
    }
}

/// The result of `tools/call`. `is_error` results are tool errors that go
/// back to the model; they are not [`crate::McpError`]s.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct McpToolResult {
    pub content: Vec<McpContent>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub structured_content: Option<Value>,
    pub is_error: bool,
}

impl McpToolResult {
    /// Reads a wire `CallToolResult`.
    pub fn from_wire(result: &Value) -> McpToolResult {
        let content = result
            .get("content")
            .and_then(Value::as_array)
            .map(|blocks| blocks.iter().map(McpContent::from_wire).collect())
            .unwrap_or_default();
        McpToolResult {
            content,
            structured_content: result.get("structuredContent").cloned(),
            is_error: result
                .get("isError")
                .and_then(Value::as_bool)
                .unwrap_or(false),
        }
    }

    /// The result as one text for the model: the content blocks joined by
    /// newlines, or the structured content when there are no blocks.
    pub fn to_text(&self) -> String {
        if self.content.is_empty() {
            return self
                .structured_content
                .as_ref()
                .map(Value::to_string)
                .unwrap_or_default();
        }
        self.content
            .iter()
            .map(McpContent::to_text)
            .collect::<Vec<_>>()
            .join("\n")
    }
}

impl McpContent {
    /// The block as conversation media: an image or audio block, or an
    /// embedded resource whose blob has an image or audio MIME type.
    /// `None` for text, links and other resources.
    pub fn to_media(&self) -> Option<Media> {
        match self {
            McpContent::Image { data, mime_type } => {
                Some(Media::new(MediaKind::Image, mime_type, data))
            }
            McpContent::Audio { data, mime_type } => {
                Some(Media::new(MediaKind::Audio, mime_type, data))
            }
            McpContent::Resource {
                uri,
                mime_type: Some(mime_type),
                blob: Some(blob),
                ..
            } => {
                let kind = if mime_type.starts_with("image/") {
                    MediaKind::Image
                } else if mime_type.starts_with("audio/") {
                    MediaKind::Audio
                } else {
                    return None;
                };
                Some(Media {
                    source: Some(uri.clone()),
                    ..Media::new(kind, mime_type, blob)
                })
            }
            McpContent::Text { .. }
            | McpContent::ResourceLink { .. }
            | McpContent::Resource { .. } => None,
        }
    }
}

impl McpToolResult {
    /// The result for the conversation: the text of every block that is
    /// not media (or the structured content when there are no blocks), and
    /// the images and audio, in order, for the tool message's `media`.
    /// Each wire then carries the media or names them in text.
    pub fn to_text_and_media(&self) -> (String, Vec<Media>) {
        if self.content.is_empty() {
            return (self.to_text(), Vec::new());
        }
        let mut texts = Vec::new();
        let mut media = Vec::new();
        for block in &self.content {
            match block.to_media() {
                Some(m) => media.push(m),
                None => texts.push(block.to_text()),
            }
        }
        (texts.join("\n"), media)
    }
}

/// A prompt as a server lists it (`prompts/list`): a template the user
/// invokes by name with the arguments it declares.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct McpPrompt {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The declared arguments, in the server's order (positional
    /// arguments map onto them in this order).
    #[serde(default)]
    pub arguments: Vec<McpPromptArgument>,
}

/// One declared argument of a prompt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct McpPromptArgument {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default)]
    pub required: bool,
}

/// What `prompts/get` returned: the messages the prompt expands to.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct McpPromptResult {
    pub description: Option<String>,
    /// `(role, content)` in order; the role is `user` or `assistant`.
    pub messages: Vec<(String, McpContent)>,
}

impl McpPromptResult {
    /// Reads a wire `GetPromptResult`.
    pub fn from_wire(result: &Value) -> McpPromptResult {
        let messages = result
            .get("messages")
            .and_then(Value::as_array)
            .map(|ms| {
                ms.iter()
                    .map(|m| {
                        let role = m
                            .get("role")
                            .and_then(Value::as_str)
                            .unwrap_or("user")
                            .to_owned();
                        let content = m.get("content").map_or(
                            McpContent::Text {
                                text: String::new(),
                            },
                            McpContent::from_wire,
                        );
                        (role, content)
                    })
                    .collect()
            })
            .unwrap_or_default();
        McpPromptResult {
            description: result
                .get("description")
                .and_then(Value::as_str)
                .map(str::to_owned),
            messages,
        }
    }
}

/// A resource as a server lists it (`resources/list`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct McpResource {
    pub uri: String,
    #[serde(default)]
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
}

/// One part of what `resources/read` returned: text, or binary contents
/// named by their size (never inlined as text).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct McpResourceContents {
    pub uri: String,
    pub mime_type: Option<String>,
    pub body: ResourceBody,
}

/// The body of one resource part. Closed: MCP has text and blob contents.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ResourceBody {
    Text {
        text: String,
    },
    /// Base64 contents, kept as sent.
    Blob {
        base64: String,
    },
}

impl McpResourceContents {
    /// Reads the `contents` of a wire `ReadResourceResult`.
    pub fn from_wire(result: &Value) -> Vec<McpResourceContents> {
        let Some(parts) = result.get("contents").and_then(Value::as_array) else {
            return Vec::new();
        };
        parts
            .iter()
            .filter_map(Value::as_object)
            .map(|obj| {
                let s = |k: &str| str_field(obj, k);
                let body = match (s("text"), s("blob")) {
                    (Some(text), _) => ResourceBody::Text { text },
                    (None, Some(base64)) => ResourceBody::Blob { base64 },
                    (None, None) => ResourceBody::Text {
                        text: String::new(),
                    },
                };
                McpResourceContents {
                    uri: s("uri").unwrap_or_default(),
                    mime_type: s("mimeType"),
                    body,
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reads_every_content_kind() {
        let r = McpToolResult::from_wire(&json!({
            "content": [
                {"type": "text", "text": "hi"},
                {"type": "image", "data": "AAAA", "mimeType": "image/png"},
                {"type": "audio", "data": "AA", "mimeType": "audio/wav"},
                {"type": "resource_link", "uri": "file:///x", "name": "x"},
                {"type": "resource", "resource": {"uri": "file:///y", "text": "body"}},
                {"type": "future-kind"}
            ],
            "isError": true
        }));
        assert!(r.is_error);
        assert_eq!(r.content.len(), 6);
        let text = r.to_text();
        assert!(text.starts_with("hi\n[image image/png, 4 base64 chars]"));
        assert!(text.contains("body"));
        assert!(text.contains("unsupported content block"));
    }

    #[test]
    fn structured_only() {
        let r = McpToolResult::from_wire(&json!({"structuredContent": {"a": 1}}));
        assert!(!r.is_error);
        assert_eq!(r.to_text(), r#"{"a":1}"#);
    }
}
