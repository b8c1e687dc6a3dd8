//! Our own conversation vocabulary.
//!
//! Every provider translates these types to and from its wire format at its
//! own boundary, so the harness, the store and the scripted provider never
//! see an OpenAI or Anthropic shape. They serialize (tagged by `role`) so a
//! transcript can be stored and a script can be written by hand.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::events::CallPurpose;

/// One message of a conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "snake_case")]
pub enum Message {
    /// Instructions from the harness. Providers with a separate system field
    /// (Anthropic) lift every system message into it, in order.
    System { content: String },
    /// What the user said, with any images or audio they attached.
    User {
        content: String,
        /// Images or audio attached to the message, in order. Absent from
        /// stored transcripts written before media existed.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        media: Vec<Media>,
    },
    /// What the model said: text, tool calls, or both.
    Assistant {
        #[serde(default, skip_serializing_if = "String::is_empty")]
        content: String,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<ToolCall>,
        /// What the provider produced besides text and calls: items its
        /// wire needs back verbatim in later requests (reasoning, server
        /// tool blocks) and records of provider-run tools for the user.
        /// Empty for most answers, and absent from stored transcripts
        /// written before it existed.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        provider_items: Vec<ProviderItem>,
    },
    /// The result of one tool call, answering the call with the same id.
    Tool {
        tool_call_id: String,
        content: String,
        /// The tool failed; providers that can say so (Anthropic) mark it.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        is_error: bool,
        /// Images or audio the tool returned (an MCP tool's image
        /// content), in order. Each wire carries them as far as it can and
        /// names them in text where it cannot.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        media: Vec<Media>,
    },
}

impl Message {
    pub fn system(content: impl Into<String>) -> Self {
        Message::System {
            content: content.into(),
        }
    }

    pub fn user(content: impl Into<String>) -> Self {
        Message::User {
            content: content.into(),
            media: Vec::new(),
        }
    }

    /// A user message with images or audio attached.
    pub fn user_with_media(content: impl Into<String>, media: Vec<Media>) -> Self {
        Message::User {
            content: content.into(),
            media,
        }
    }

    pub fn assistant(content: impl Into<String>) -> Self {
        Message::Assistant {
            content: content.into(),
            tool_calls: Vec::new(),
            provider_items: Vec::new(),
        }
    }

    /// An assistant turn that calls tools (and carries no provider items).
    pub fn tool_calls(content: impl Into<String>, tool_calls: Vec<ToolCall>) -> Self {
        Message::Assistant {
            content: content.into(),
            tool_calls,
            provider_items: Vec::new(),
        }
    }

    pub fn tool_result(tool_call_id: impl Into<String>, content: impl Into<String>) -> Self {
        Message::Tool {
            tool_call_id: tool_call_id.into(),
            content: content.into(),
            is_error: false,
            media: Vec::new(),
        }
    }

    /// The media a user or tool message carries (none for the others).
    pub fn media(&self) -> &[Media] {
        match self {
            Message::User { media, .. } | Message::Tool { media, .. } => media,
            Message::System { .. } | Message::Assistant { .. } => &[],
        }
    }
}

/// What kind of media a [`Media`] is. Closed: a wire decides per kind
/// whether the model can take it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MediaKind {
    Image,
    Audio,
}

impl MediaKind {
    /// The word used in placeholders and listings ("image", "audio").
    pub fn label(self) -> &'static str {
        match self {
            MediaKind::Image => "image",
            MediaKind::Audio => "audio",
        }
    }

    /// The word for several ("images", "audio").
    pub fn plural(self) -> &'static str {
        match self {
            MediaKind::Image => "images",
            MediaKind::Audio => "audio",
        }
    }
}

/// An image or audio clip in the conversation: inline, base64-encoded, as
/// MCP, ACP and every model wire carry it, so a transcript holds the bytes
/// the model saw.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Media {
    pub kind: MediaKind,
    /// The MIME type (`image/png`, `audio/wav`).
    pub mime_type: String,
    /// The bytes, base64 (standard alphabet, padded).
    pub data: String,
    /// A name for the user (a file name), when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Where it came from (an MCP resource URI, a file path), when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
}

impl Media {
    pub fn new(kind: MediaKind, mime_type: impl Into<String>, data: impl Into<String>) -> Self {
        Media {
            kind,
            mime_type: mime_type.into(),
            data: data.into(),
            name: None,
            source: None,
        }
    }

    /// The decoded size in bytes, computed from the base64 length (no
    /// decoding).
    pub fn byte_len(&self) -> usize {
        let data = self.data.trim_end();
        let pad = data.bytes().rev().take_while(|b| *b == b'=').count();
        (data.len() / 4 * 3 + (data.len() % 4) * 3 / 4).saturating_sub(pad)
    }

    /// The `data:` URL of this media (what OpenAI's `image_url` and a web
    /// page's `<img>` take).
    pub fn data_url(&self) -> String {
        format!("data:{};base64,{}", self.mime_type, self.data)
    }

    /// A short description for text: `image: image/png, 12 KB` (with the
    /// name when there is one).
    pub fn describe(&self) -> String {
        let size = human_size(self.byte_len());
        match &self.name {
            Some(name) => format!("{}: {name}, {}, {size}", self.kind.label(), self.mime_type),
            None => format!("{}: {}, {size}", self.kind.label(), self.mime_type),
        }
    }

    /// The text a wire sends instead of this media, saying why:
    /// `[image: image/png, 12 KB — this model does not accept images]`.
    pub fn placeholder(&self, reason: &str) -> String {
        format!("[{} — {reason}]", self.describe())
    }
}

/// A message's text as a front end shows it: the text, then one
/// `[image: image/png, 12 KB]` line per media item (a terminal cannot show
/// the image; the line says it is there).
pub fn text_with_media_notes(content: &str, media: &[Media]) -> String {
    let mut text = content.to_owned();
    for item in media {
        if !text.is_empty() {
            text.push('\n');
        }
        text.push_str(&media_note(&item.describe()));
    }
    text
}

/// The media of one message on one line, as a one-line summary (a tool
/// call's line in `sessions show` or the line chat) names them:
/// `[image: shot-1.png, image/png, 12 KB] [audio: …]`; empty when there
/// are none. The same note [`text_with_media_notes`] writes per line.
pub fn media_notes_inline<'a>(descriptions: impl IntoIterator<Item = &'a str>) -> String {
    descriptions
        .into_iter()
        .map(media_note)
        .collect::<Vec<_>>()
        .join(" ")
}

/// One media item's note in text: its description in brackets.
fn media_note(description: &str) -> String {
    format!("[{description}]")
}

/// A tool result's [`Media`] as an event names it: what it is, its note
/// for text, and where the stored transcript keeps its bytes (entry `seq`,
/// item `index`), so the event stays small and a view that can show
/// images fetches them (`GET /api/sessions/{id}/media/{seq}/{index}`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MediaRef {
    /// The transcript entry (the tool message) that holds the bytes.
    pub seq: u64,
    /// The item's place in that message's `media`.
    pub index: usize,
    pub kind: MediaKind,
    pub mime_type: String,
    /// The decoded size in bytes.
    pub bytes: usize,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// [`Media::describe`]: what a view that cannot show it says instead.
    pub description: String,
}

impl MediaRef {
    /// The references to `media`, the media of transcript entry `seq`.
    pub fn of_entry(seq: u64, media: &[Media]) -> Vec<MediaRef> {
        media
            .iter()
            .enumerate()
            .map(|(index, m)| MediaRef {
                seq,
                index,
                kind: m.kind,
                mime_type: m.mime_type.clone(),
                bytes: m.byte_len(),
                name: m.name.clone(),
                description: m.describe(),
            })
            .collect()
    }
}

fn human_size(bytes: usize) -> String {
    if bytes < 1024 {
        format!("{bytes} B")
    } else if bytes < 1024 * 1024 {
        format!("{} KB", bytes.div_ceil(1024))
    } else {
        format!("{:.1} MB", bytes as f64 / (1024.0 * 1024.0))
    }
}

/// A tool call the model asked for, complete: its arguments are parsed JSON.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The provider's id for the call; the tool result must echo it.
    pub id: String,
    pub name: String,
    /// The arguments as a JSON value (an object for every well-behaved model).
    #[serde(default = "empty_object")]
    pub arguments: Value,
}

fn empty_object() -> Value {
    Value::Object(serde_json::Map::new())
}

/// Something a provider produced besides text and function calls. Closed:
/// each kind says which wire reads it back, and every other wire ignores
/// it, so a transcript can move between providers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ProviderItem {
    /// A reasoning item of the OpenAI Responses API. With `store: false`
    /// the server keeps nothing, so the next request must carry the item
    /// (its `encrypted_content`) back before the calls it led to.
    Reasoning {
        /// The server's item id; kept for the record, never sent back
        /// (an id refers to server state that `store: false` never made).
        id: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        encrypted_content: Option<String>,
        /// The reasoning summary texts, when the server gave any.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        summary: Vec<String>,
    },
    /// An Anthropic server-tool content block (`server_tool_use`,
    /// `web_search_tool_result`), exactly as streamed: the Messages API
    /// wants it back verbatim in the assistant turn that produced it, and
    /// in its place among the text blocks, because a paused turn
    /// (`pause_turn`) continues from the last block sent back.
    AnthropicBlock {
        block: Value,
        /// How many bytes of the message's text had streamed before the
        /// block: where it goes back between the text blocks.
        #[serde(default)]
        text_offset: usize,
    },
    /// A web search the provider ran, for the user: what it searched and
    /// what it found. No wire reads it back.
    WebSearch(WebSearch),
    /// A web page the answer cites. No wire reads it back.
    Citation(Citation),
}

/// A web search run by the provider.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct WebSearch {
    /// The provider's id for the search call.
    pub id: String,
    /// The query, when the provider says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub query: Option<String>,
    /// The pages found, in the provider's order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sources: Vec<WebSource>,
    /// Why the search failed, when it did (the provider's error code).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// One page a web search found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WebSource {
    pub url: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
}

/// A page the answer cites.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Citation {
    pub url: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The cited passage, when the provider quotes it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cited_text: Option<String>,
}

/// A tool a provider runs on its own side, materialized by each wire that
/// has it. Closed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProviderToolKind {
    /// Searching the web (Anthropic's server web-search tool, the
    /// Responses API's `web_search`).
    WebSearch,
}

/// How hard a reasoning model thinks before answering (the Responses
/// API's `reasoning.effort`). Providers without the notion ignore it.
pub use evoflux_core::config::ReasoningEffort;

/// A tool the model may call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolDefinition {
    pub name: String,
    pub description: String,
    /// JSON Schema of the arguments object.
    pub parameters: Value,
}

/// One model call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Request {
    /// The model name as the provider knows it (the part after `provider:`).
    pub model: String,
    pub messages: Vec<Message>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<ToolDefinition>,
    /// Upper bound on generated tokens. Anthropic requires one, so it falls
    /// back to `evoflux_model::anthropic::DEFAULT_MAX_TOKENS` there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f32>,
    /// Whether the model may answer in text or must call one of `tools`.
    #[serde(default, skip_serializing_if = "ToolChoice::is_auto")]
    pub tool_choice: ToolChoice,
    /// Routes this call to the provider's prompt cache of earlier calls
    /// with the same key (OpenAI's `prompt_cache_key`): the harness sends
    /// its session id, so one session's calls share a cache however many
    /// sessions run at once. Providers without such a field ignore it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_key: Option<String>,
    /// Tools the provider runs itself, offered beside `tools`. A wire
    /// without such a tool never gets one: the harness asks only for what
    /// `evoflux_model::Provider::provider_tools` lists.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub provider_tools: Vec<ProviderToolKind>,
    /// The reasoning effort to ask for; when unset, the provider's
    /// configured one (if any).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_effort: Option<ReasoningEffort>,
    /// Why the call is made: a turn's own call unless a side call marks
    /// it. Every wire sends the same either way; a scripted provider
    /// answers a title call from its script's `title:` instead of playing
    /// a turn, so a script's turns stay the turns' calls.
    #[serde(default, skip_serializing_if = "CallPurpose::is_turn")]
    pub purpose: CallPurpose,
    /// How the harness wants the provider's prompt cache used: where the
    /// part of the history that stays unchanged until its next rewrite
    /// ends, and how long the cache should keep it. Wires with explicit
    /// breakpoints (Anthropic) mark them from it; the others ignore it.
    #[serde(default, skip_serializing_if = "CacheHints::is_default")]
    pub cache: CacheHints,
}

/// Hints for a provider's prompt cache, from the harness's cost model.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CacheHints {
    /// The index in [`Request::messages`] of the last message of the
    /// history's stable part (old results already turned into receipts):
    /// the next rewrite of the history reads up to there from the cache.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub anchor: Option<usize>,
    #[serde(default, skip_serializing_if = "CacheRetention::is_short")]
    pub retention: CacheRetention,
}

impl CacheHints {
    pub fn is_default(&self) -> bool {
        *self == CacheHints::default()
    }
}

/// How long a provider should keep the stable part of a prompt cached.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CacheRetention {
    /// The provider's default lifetime (five minutes on the hosted wires).
    #[default]
    Short,
    /// The longer lifetime a wire sells at a higher write price
    /// (Anthropic's one hour), for a session whose pauses outlive the
    /// short one.
    Long,
}

impl CacheRetention {
    pub fn is_short(&self) -> bool {
        matches!(self, CacheRetention::Short)
    }
}

/// Whether a model call may end in text.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolChoice {
    /// Text or tool calls, as the model decides.
    #[default]
    Auto,
    /// At least one tool call; no final text. A turn that must end with a
    /// structured result uses it, and for a small local model it is what
    /// keeps the answer inside the tool-call grammar.
    Required,
}

impl ToolChoice {
    pub fn is_auto(&self) -> bool {
        matches!(self, ToolChoice::Auto)
    }
}

impl Request {
    pub fn new(model: impl Into<String>, messages: Vec<Message>) -> Self {
        Request {
            model: model.into(),
            messages,
            tools: Vec::new(),
            max_tokens: None,
            temperature: None,
            tool_choice: ToolChoice::Auto,
            cache_key: None,
            provider_tools: Vec::new(),
            reasoning_effort: None,
            purpose: CallPurpose::Turn,
            cache: CacheHints::default(),
        }
    }

    /// This request, marked as made for `purpose`.
    #[must_use]
    pub fn with_purpose(mut self, purpose: CallPurpose) -> Self {
        self.purpose = purpose;
        self
    }

    #[must_use]
    pub fn with_provider_tools(mut self, tools: Vec<ProviderToolKind>) -> Self {
        self.provider_tools = tools;
        self
    }

    #[must_use]
    pub fn with_tools(mut self, tools: Vec<ToolDefinition>) -> Self {
        self.tools = tools;
        self
    }

    #[must_use]
    pub fn with_max_tokens(mut self, max_tokens: u32) -> Self {
        self.max_tokens = Some(max_tokens);
        self
    }

    #[must_use]
    pub fn with_cache_key(mut self, key: impl Into<String>) -> Self {
        self.cache_key = Some(key.into());
        self
    }

    #[must_use]
    pub fn with_temperature(mut self, temperature: f32) -> Self {
        self.temperature = Some(temperature);
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_event_names_media_by_entry_and_place_with_the_note_text_writes() {
        let mut shot = Media::new(MediaKind::Image, "image/png", "iVBORw0KGgo=");
        shot.name = Some("screenshot-1.png".into());
        let clip = Media::new(MediaKind::Audio, "audio/wav", "UklGRg==");
        let refs = MediaRef::of_entry(7, &[shot.clone(), clip.clone()]);
        assert_eq!(
            (refs[1].seq, refs[1].index, refs[1].kind, refs[0].bytes),
            (7, 1, MediaKind::Audio, 8)
        );
        let json = serde_json::to_value(&refs[0]).unwrap();
        assert!(json.get("data").is_none(), "{json}");
        assert_eq!(json["name"], "screenshot-1.png");
        // One line or one per item: the same note.
        let inline = media_notes_inline(refs.iter().map(|r| r.description.as_str()));
        assert_eq!(
            inline,
            "[image: screenshot-1.png, image/png, 8 B] [audio: audio/wav, 4 B]"
        );
        assert_eq!(
            text_with_media_notes("", &[shot, clip]),
            inline.replace("] [", "]\n[")
        );
        assert_eq!(media_notes_inline([]), "");
    }

    #[test]
    fn messages_round_trip_tagged_by_role() {
        let m = Message::Assistant {
            content: String::new(),
            tool_calls: vec![ToolCall {
                id: "c1".into(),
                name: "read".into(),
                arguments: json!({"path": "a"}),
            }],
            provider_items: Vec::new(),
        };
        let v = serde_json::to_value(&m).unwrap();
        assert_eq!(
            v,
            json!({"role": "assistant", "tool_calls": [{"id": "c1", "name": "read", "arguments": {"path": "a"}}]})
        );
        assert_eq!(serde_json::from_value::<Message>(v).unwrap(), m);
        let t: Message =
            serde_json::from_value(json!({"role": "tool", "tool_call_id": "c1", "content": "x"}))
                .unwrap();
        assert_eq!(t, Message::tool_result("c1", "x"));
    }

    #[test]
    fn media_round_trip_and_transcripts_without_them_still_load() {
        let m = Message::user_with_media(
            "look",
            vec![Media {
                name: Some("dot.png".into()),
                ..Media::new(MediaKind::Image, "image/png", "AAAA")
            }],
        );
        let v = serde_json::to_value(&m).unwrap();
        assert_eq!(
            v,
            json!({"role": "user", "content": "look", "media": [
                {"kind": "image", "mime_type": "image/png", "data": "AAAA", "name": "dot.png"}
            ]})
        );
        assert_eq!(serde_json::from_value::<Message>(v).unwrap(), m);
        // Without media nothing new is written, and what was written
        // before media existed reads as a message without them.
        assert_eq!(
            serde_json::to_value(Message::user("hi")).unwrap(),
            json!({"role": "user", "content": "hi"})
        );
        let old: Message =
            serde_json::from_value(json!({"role": "user", "content": "hi"})).unwrap();
        assert_eq!(old, Message::user("hi"));
        assert!(old.media().is_empty());
    }

    #[test]
    fn media_sizes_and_placeholders_name_the_media() {
        // "AAAA" is 3 bytes; padding counts off.
        assert_eq!(
            Media::new(MediaKind::Image, "image/png", "AAAA").byte_len(),
            3
        );
        assert_eq!(
            Media::new(MediaKind::Image, "image/png", "AA==").byte_len(),
            1
        );
        let big = Media::new(MediaKind::Audio, "audio/wav", "A".repeat(16 * 1024));
        assert_eq!(
            big.placeholder("this model does not accept audio"),
            "[audio: audio/wav, 12 KB — this model does not accept audio]"
        );
        assert_eq!(
            Media::new(MediaKind::Image, "image/png", "AAAA").data_url(),
            "data:image/png;base64,AAAA"
        );
    }
}
