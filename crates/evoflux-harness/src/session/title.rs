//! A session's title from its model (issue #48): after the first turn
//! that completes, one short side call asks the session's model for a few
//! words naming the conversation. Until then — and for good when the call
//! fails, answers nothing usable, or is not made — the session keeps the
//! title the store gave it from its first user message.
//!
//! The call runs in a task of its own after `turn_completed`, so the turn
//! never waits for it and a failure never fails a turn. Its usage counts
//! with the session's (not the finished turn's) and is reported as a
//! `model_call_completed` event with purpose `title`. A rename always
//! wins: the store sets a model's title only over a message title.
//!
//! A front end asks for it ([`Harness::with_model_titles`]): the server
//! does, since it outlives the turn; a one-shot `evoflux run` does not,
//! since its process ends with the turn and would cut the call off.
//! Which providers are asked is decided by their kind: `scripted` never
//! (a script's turns are the turn's calls, so a title call would take one
//! and tests would depend on it) and `local` never (the in-process model
//! would be busy with a title while the next turn waits); `openai` and
//! `anthropic` are.

use std::sync::Arc;

use evoflux_core::config::ProviderKind;
use evoflux_model::{Message, Provider, Request, StreamEvent};
use evoflux_store::TitleSource;
use futures_util::StreamExt;

use super::Harness;
use crate::events::Event;
use crate::hooks::CallPurpose;

/// What the model is told.
const TITLE_PROMPT: &str = "Write a short title (at most six words) for the conversation \
     below, in its language. Reply with the title only: no quotes, no final period.";

/// How much of the first message and the reply the model sees.
const EXCERPT_CHARS: usize = 2_000;

/// Whether a provider of `kind` is asked for titles (see the module doc).
fn asks_for_titles(kind: ProviderKind) -> bool {
    match kind {
        ProviderKind::Openai | ProviderKind::Anthropic => true,
        ProviderKind::Local | ProviderKind::Scripted => false,
    }
}

fn excerpt(text: &str) -> String {
    text.chars().take(EXCERPT_CHARS).collect()
}

impl Harness {
    /// This harness, asking (`true`) or not asking its model for the
    /// session's title after the first turn. Off unless a front end asks.
    pub fn with_model_titles(mut self, on: bool) -> Harness {
        self.model_titles = on;
        self
    }

    /// After a completed turn: when this was the session's first (one user
    /// message so far) and its title is still the message's, starts the
    /// title call in the background. Children are not titled by a model:
    /// the list shows them under their parent.
    pub(super) async fn title_after_first_turn(&self, reply: &str) {
        if !self.model_titles
            || self.session.parent.is_some()
            || !asks_for_titles(self.model.provider.kind())
            || reply.trim().is_empty()
        {
            return;
        }
        let mut users = self.recorder.messages.iter().filter_map(|m| match m {
            Message::User { content } => Some(content),
            Message::System { .. } | Message::Assistant { .. } | Message::Tool { .. } => None,
        });
        let (Some(first), None) = (users.next(), users.next()) else {
            return;
        };
        let store = self.recorder.store.clone();
        let id = self.session.id;
        match store.title_source(id).await {
            Ok(Some(TitleSource::Message)) => {}
            Ok(Some(TitleSource::Model | TitleSource::User) | None) | Err(_) => return,
        }
        let request = Request::new(
            &self.model.name,
            vec![
                Message::system(TITLE_PROMPT),
                Message::user(format!(
                    "User: {}\n\nAssistant: {}",
                    excerpt(first),
                    excerpt(reply)
                )),
            ],
        );
        let provider: Arc<dyn Provider> = self.model.provider.clone();
        let events = self.recorder.events.clone();
        let price = self.model.price;
        let model = self.model.name.clone();
        tokio::spawn(async move {
            let mut stream = provider.stream(request);
            let mut answer = String::new();
            while let Some(event) = stream.next().await {
                match event {
                    Ok(StreamEvent::TextDelta { text }) => answer.push_str(&text),
                    Ok(StreamEvent::Usage { usage }) => {
                        let usage = super::model_call::call_usage(
                            usage,
                            &crate::hooks::ContextStats::default(),
                            price.as_ref(),
                        );
                        if store.add_usage(id, usage).await.is_ok() {
                            events.emit(&Event::ModelCallCompleted {
                                model: model.clone(),
                                purpose: CallPurpose::Title,
                                usage,
                            });
                        }
                    }
                    Ok(StreamEvent::Done) => break,
                    Ok(
                        StreamEvent::ToolCallDelta { .. }
                        | StreamEvent::ToolCall { .. }
                        | StreamEvent::InvalidToolCall { .. }
                        | StreamEvent::ProviderItem { .. }
                        | StreamEvent::Stop { .. },
                    ) => {}
                    // The message's title stays.
                    Err(_) => return,
                }
            }
            let title = answer.trim().trim_matches(['"', '\'', '“', '”', '*', '#']);
            let _ = store.set_model_title(id, title).await;
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_remote_providers_are_asked() {
        assert!(asks_for_titles(ProviderKind::Openai));
        assert!(asks_for_titles(ProviderKind::Anthropic));
        assert!(!asks_for_titles(ProviderKind::Scripted));
        assert!(!asks_for_titles(ProviderKind::Local));
    }
}
