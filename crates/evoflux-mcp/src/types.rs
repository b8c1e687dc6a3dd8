//! Our own shapes of what MCP servers return, so no SDK type crosses the
//! crate boundary. They are read from the wire JSON (MCP 2025-11-25
//! `Tool`, `CallToolResult` and content blocks).

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
