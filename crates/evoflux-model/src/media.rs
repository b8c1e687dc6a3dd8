//! Which images and audio a model call may carry, decided once for every
//! wire.
//!
//! A user message or a tool result can hold [`Media`]. Whether the model
//! behind a provider takes it is data (the wire's default, overridden per
//! provider by `images = …` / `audio = …`), and so are the formats and the
//! sizes a request may carry. [`fit`] applies all of it before a wire
//! renders the request: every media item the model cannot take, or that is
//! too large, is replaced by a line of text naming it and saying why
//! (`[image: image/png, 12 KB — this model does not accept images]`), so
//! nothing is dropped silently and each wire renders only what it can send.

use evoflux_core::config::{ProviderConfig, ProviderKind, WireApi};

use crate::message::{Media, MediaKind, Message, Request};

/// The largest single image or clip sent to a model, decoded (Anthropic
/// refuses images over 5 MB; OpenAI allows more).
pub const MAX_MEDIA_BYTES: usize = 5 * 1024 * 1024;

/// The most media one request carries, decoded: the newest media are kept
/// first, older ones beyond it become placeholders.
pub const MAX_REQUEST_MEDIA_BYTES: usize = 20 * 1024 * 1024;

/// The image formats every wire with images accepts.
pub const IMAGE_MIME_TYPES: &[&str] = &["image/png", "image/jpeg", "image/gif", "image/webp"];

/// The audio formats of Chat Completions' `input_audio` (its `format`).
pub const AUDIO_MIME_TYPES: &[&str] = &["audio/wav", "audio/x-wav", "audio/mpeg", "audio/mp3"];

/// What a provider's model accepts besides text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MediaSupport {
    pub images: bool,
    pub audio: bool,
    /// Whether the wire can carry audio at all (only Chat Completions can);
    /// `audio = true` on another wire still gets placeholders.
    wire_audio: bool,
}

impl MediaSupport {
    /// Text only: the local model, and a provider configured so.
    pub const NONE: MediaSupport = MediaSupport {
        images: false,
        audio: false,
        wire_audio: false,
    };

    /// Everything the vocabulary has: the scripted provider, which sends
    /// nothing anywhere and keeps media for its matchers and transcripts.
    pub const ALL: MediaSupport = MediaSupport {
        images: true,
        audio: true,
        wire_audio: true,
    };

    /// The provider's support: its wire's default, then the config's
    /// `images` / `audio` over it. Defaults: Chat Completions, Responses
    /// and Anthropic take images; only Chat Completions can carry audio,
    /// and only when `audio = true` (few models take it); `local` takes
    /// neither whatever the config says.
    pub fn of(config: &ProviderConfig) -> MediaSupport {
        let (images, wire_audio) = match config.kind {
            ProviderKind::Openai => match config.wire_api.unwrap_or_default() {
                WireApi::ChatCompletions => (true, true),
                WireApi::Responses => (true, false),
            },
            ProviderKind::Anthropic => (true, false),
            ProviderKind::Local => return MediaSupport::NONE,
            ProviderKind::Scripted => return MediaSupport::ALL,
        };
        MediaSupport {
            images: config.images.unwrap_or(images),
            audio: wire_audio && config.audio.unwrap_or(false),
            wire_audio,
        }
    }

    fn accepts(self, kind: MediaKind) -> bool {
        match kind {
            MediaKind::Image => self.images,
            MediaKind::Audio => self.audio && self.wire_audio,
        }
    }
}

/// Why one media item is not sent, as its placeholder says.
fn refusal(media: &Media, support: MediaSupport, budget_left: usize) -> Option<String> {
    let kind = media.kind.label();
    if !support.accepts(media.kind) {
        return Some(format!(
            "this model does not accept {}",
            media.kind.plural()
        ));
    }
    let formats = match media.kind {
        MediaKind::Image => IMAGE_MIME_TYPES,
        MediaKind::Audio => AUDIO_MIME_TYPES,
    };
    if !formats.contains(&media.mime_type.to_ascii_lowercase().as_str()) {
        return Some(format!(
            "{} is not a format models take for {} ({})",
            media.mime_type,
            media.kind.plural(),
            formats.join(", ")
        ));
    }
    let bytes = media.byte_len();
    if bytes > MAX_MEDIA_BYTES {
        return Some(format!(
            "larger than the {} MB limit per {kind}",
            MAX_MEDIA_BYTES / (1024 * 1024)
        ));
    }
    if bytes > budget_left {
        return Some(format!(
            "over the {} MB of media one request carries",
            MAX_REQUEST_MEDIA_BYTES / (1024 * 1024)
        ));
    }
    None
}

/// `request` with every media item `support` does not take replaced by a
/// placeholder line appended to its message's text. Newest messages are
/// served first from the per-request budget.
pub fn fit(mut request: Request, support: MediaSupport) -> Request {
    fit_messages(&mut request.messages, support);
    request
}

/// [`fit`] over a message list.
pub fn fit_messages(messages: &mut [Message], support: MediaSupport) {
    let mut budget = MAX_REQUEST_MEDIA_BYTES;
    for message in messages.iter_mut().rev() {
        let (content, media) = match message {
            Message::User { content, media } | Message::Tool { content, media, .. } => {
                (content, media)
            }
            Message::System { .. } | Message::Assistant { .. } => continue,
        };
        if media.is_empty() {
            continue;
        }
        let mut kept = Vec::with_capacity(media.len());
        for item in std::mem::take(media) {
            match refusal(&item, support, budget) {
                Some(reason) => {
                    if !content.is_empty() {
                        content.push('\n');
                    }
                    content.push_str(&item.placeholder(&reason));
                }
                None => {
                    budget -= item.byte_len();
                    kept.push(item);
                }
            }
        }
        *media = kept;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn png(bytes: usize) -> Media {
        // 3 bytes per 4 base64 chars.
        Media::new(MediaKind::Image, "image/png", "A".repeat(bytes / 3 * 4))
    }

    fn config(kind: ProviderKind) -> ProviderConfig {
        ProviderConfig {
            kind,
            base_url: None,
            api_key_env: None,
            context_window: None,
            model_path: None,
            limits: Default::default(),
            wire_api: None,
            reasoning_effort: None,
            images: None,
            audio: None,
        }
    }

    #[test]
    fn defaults_follow_the_wire_and_config_overrides_them() {
        let chat = MediaSupport::of(&config(ProviderKind::Openai));
        assert!(chat.images && !chat.audio);
        let anthropic = MediaSupport::of(&config(ProviderKind::Anthropic));
        assert!(anthropic.images && !anthropic.audio);
        assert_eq!(
            MediaSupport::of(&config(ProviderKind::Local)),
            MediaSupport::NONE
        );
        let text_only = ProviderConfig {
            images: Some(false),
            ..config(ProviderKind::Openai)
        };
        assert!(!MediaSupport::of(&text_only).images);
        let audio = ProviderConfig {
            audio: Some(true),
            ..config(ProviderKind::Openai)
        };
        assert!(MediaSupport::of(&audio).audio);
        // Anthropic has no audio block: the override cannot make one.
        let anthropic_audio = ProviderConfig {
            audio: Some(true),
            ..config(ProviderKind::Anthropic)
        };
        assert!(!MediaSupport::of(&anthropic_audio).accepts(MediaKind::Audio));
    }

    #[test]
    fn refused_media_become_placeholders_naming_them() {
        let mut messages = vec![Message::user_with_media("look", vec![png(12 * 1024)])];
        fit_messages(&mut messages, MediaSupport::NONE);
        assert_eq!(
            messages[0],
            Message::user("look\n[image: image/png, 12 KB — this model does not accept images]")
        );
    }

    #[test]
    fn oversized_and_unknown_formats_are_refused_with_the_reason() {
        let tiff = Media::new(MediaKind::Image, "image/tiff", "AAAA");
        let mut messages = vec![Message::user_with_media(
            "",
            vec![png(MAX_MEDIA_BYTES + 3), tiff, png(30)],
        )];
        fit_messages(&mut messages, MediaSupport::ALL);
        let Message::User { content, media } = &messages[0] else {
            panic!("{:?}", messages[0]);
        };
        assert_eq!(media.len(), 1);
        let lines: Vec<&str> = content.lines().collect();
        assert!(lines[0].contains("limit per image"), "{content}");
        assert!(lines[1].contains("image/tiff is not a format"), "{content}");
    }

    #[test]
    fn the_request_budget_keeps_the_newest_media() {
        let big = || png(MAX_MEDIA_BYTES - 3);
        let mut messages: Vec<Message> = (0..5)
            .map(|i| Message::user_with_media(format!("m{i}"), vec![big()]))
            .collect();
        fit_messages(&mut messages, MediaSupport::ALL);
        assert!(messages[0].media().is_empty());
        assert!(messages[1..].iter().all(|m| m.media().len() == 1));
        let Message::User { content, .. } = &messages[0] else {
            panic!()
        };
        assert!(
            content.contains("of media one request carries"),
            "{content}"
        );
    }
}
