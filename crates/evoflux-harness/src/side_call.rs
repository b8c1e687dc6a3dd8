//! A side call's answer, read off its stream: the one reading every side
//! call uses — the implicit skill resolver's decision
//! ([`crate::skills::resolution`]), a session's title ([`crate::session`]'s
//! `title`) and a compaction's summary ([`crate::compaction`]). None
//! streams anything to the user or takes tool calls; the resolver and the
//! title count every usage report the provider sent with the session's,
//! even when the stream failed after it.

use evoflux_model::{EventStream, ProviderError, StreamEvent, Usage};
use futures_util::StreamExt;

/// What a side call answered.
#[derive(Debug, Default)]
pub(crate) struct Collected {
    /// Every text delta, in order.
    pub text: String,
    /// Each usage report, in order: what the call cost.
    pub usage: Vec<Usage>,
    /// The error that ended the stream early, if one did.
    pub failure: Option<ProviderError>,
}

/// Reads `stream` until it is done or fails.
pub(crate) async fn collect(mut stream: EventStream) -> Collected {
    let mut out = Collected::default();
    while let Some(event) = stream.next().await {
        match event {
            Ok(StreamEvent::TextDelta { text }) => out.text.push_str(&text),
            Ok(StreamEvent::Usage { usage }) => out.usage.push(usage),
            Ok(StreamEvent::Done) => break,
            Ok(
                StreamEvent::ToolCallDelta { .. }
                | StreamEvent::ToolCall { .. }
                | StreamEvent::InvalidToolCall { .. }
                | StreamEvent::ProviderItem { .. }
                | StreamEvent::Stop { .. },
            ) => {}
            Err(e) => {
                out.failure = Some(e);
                break;
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn usage(output_tokens: u64) -> Usage {
        Usage {
            input_tokens: 1,
            output_tokens,
            cached_input_tokens: 0,
            cache_write_input_tokens: 0,
            web_search_requests: 0,
        }
    }

    #[tokio::test]
    async fn text_and_usage_are_kept_and_a_failure_ends_the_reading() {
        let events: Vec<Result<StreamEvent, ProviderError>> = vec![
            Ok(StreamEvent::TextDelta {
                text: "Lisbon ".into(),
            }),
            Ok(StreamEvent::TextDelta {
                text: "offsite".into(),
            }),
            Ok(StreamEvent::Usage { usage: usage(2) }),
            Err(ProviderError::Protocol {
                provider: "p".into(),
                detail: "cut".into(),
            }),
            Ok(StreamEvent::TextDelta {
                text: "never read".into(),
            }),
        ];
        let got = collect(Box::pin(futures_util::stream::iter(events))).await;
        assert_eq!(got.text, "Lisbon offsite");
        assert_eq!(got.usage, [usage(2)]);
        assert!(got.failure.is_some());

        let done: Vec<Result<StreamEvent, ProviderError>> = vec![
            Ok(StreamEvent::TextDelta { text: "a".into() }),
            Ok(StreamEvent::Done),
            Ok(StreamEvent::TextDelta { text: "b".into() }),
        ];
        let got = collect(Box::pin(futures_util::stream::iter(done))).await;
        assert_eq!(got.text, "a");
        assert!(got.failure.is_none());
    }
}
