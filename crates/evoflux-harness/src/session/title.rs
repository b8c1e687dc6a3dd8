//! A session's title from its model (issue #48): after the first turn
//! that completes, one short side call asks the session's model for a few
//! words naming the conversation. Until then — and for good when the call
//! fails, answers nothing usable, or is not made — the session keeps the
//! title the store gave it from its first user message.
//!
//! The call runs in a task of its own after `turn_completed`, so the turn
//! never waits for it and a failure never fails a turn. Its usage counts
//! with the session's (not the finished turn's) and is reported as a
//! `model_call_completed` event with purpose `title`; a title it stores is
//! reported as `session_titled`, so a front end showing the session list
//! updates the entry at once. A rename always wins: the store sets a
//! model's title only over a message title.
//!
//! Its cost is bounded: the model sees at most [`EXCERPT_CHARS`] of the
//! first message and of the reply and may write [`TITLE_MAX_TOKENS`]
//! tokens, and the call is not made when, priced at its worst, it would
//! take the session past `[limits] max_cost_usd` (the limit the turn's own
//! calls stop at; an unpriced model's calls count nothing against it, as
//! a turn's do).
//!
//! A front end asks for it ([`Harness::with_model_titles`]): the server
//! does, since it outlives the turn; a one-shot `evoflux run` does not,
//! since its process ends with the turn. Closing the session
//! ([`Harness::shutdown`], which the session host calls before it stops)
//! waits for a title call still under way, at most [`TITLE_WAIT`], so a
//! session closed right after its first turn is still titled and its
//! events are emitted before the host's last one.
//!
//! Which providers are asked is decided by their kind: `openai` and
//! `anthropic` are; `scripted` is too (the request is marked
//! [`CallPurpose::Title`], which a script answers from its `title:`
//! without playing a turn); `local` never (the in-process model would be
//! busy with a title while the next turn waits for it).

use std::sync::Arc;
use std::time::Duration;

use evoflux_core::config::ProviderKind;
use evoflux_core::price::{Price, TokenCounts, Usd};
use evoflux_model::{Message, Provider, Request};
use evoflux_store::TitleSource;

use super::Harness;
use crate::events::Event;
use crate::hooks::CallPurpose;

/// What the model is told.
const TITLE_PROMPT: &str = "Write a short title (at most six words) for the conversation \
     below, in its language. Reply with the title only: no quotes, no final period.";

/// How much of the first message, and of the reply, the model sees.
pub(super) const EXCERPT_CHARS: usize = 1_000;

/// The most tokens the model may write for a title.
pub(super) const TITLE_MAX_TOKENS: u32 = 32;

/// How long closing a session waits for its title call.
pub(super) const TITLE_WAIT: Duration = Duration::from_secs(3);

/// Whether the harness asks for titles, and the call under way.
#[derive(Debug, Default)]
pub(super) struct Titles {
    on: bool,
    pending: std::sync::Mutex<Option<tokio::task::JoinHandle<()>>>,
}

impl Titles {
    fn pending(&self) -> std::sync::MutexGuard<'_, Option<tokio::task::JoinHandle<()>>> {
        self.pending
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Waits for the call under way, if any, at most `wait`; past that it
    /// goes on alone (its title still lands if the process lives on).
    async fn settle(&self, wait: Duration) {
        let task = self.pending().take();
        if let Some(task) = task {
            let _ = tokio::time::timeout(wait, task).await;
        }
    }
}

/// Whether a provider of `kind` is asked for titles (see the module doc).
fn asks_for_titles(kind: ProviderKind) -> bool {
    match kind {
        ProviderKind::Openai | ProviderKind::Anthropic | ProviderKind::Scripted => true,
        ProviderKind::Local => false,
    }
}

fn excerpt(text: &str) -> String {
    text.chars().take(EXCERPT_CHARS).collect()
}

/// What a side call (the title, a sampling request) costs at most at
/// `price`: every character of its input counted as a token (more than any
/// tokenizer makes of text), and every token it may write.
pub(super) fn worst_cost(price: &Price, request: &Request) -> Usd {
    let input: usize = request
        .messages
        .iter()
        .map(|m| match m {
            Message::System { content } | Message::User { content, .. } => content.chars().count(),
            Message::Assistant { content, .. } | Message::Tool { content, .. } => {
                content.chars().count()
            }
        })
        .sum();
    price.cost(&TokenCounts {
        input: u64::try_from(input).unwrap_or(u64::MAX),
        output: u64::from(request.max_tokens.unwrap_or(TITLE_MAX_TOKENS)),
        ..TokenCounts::default()
    })
}

/// The request of the title call for a conversation that began with
/// `first` and was answered with `reply`.
fn title_request(model: &str, first: &str, reply: &str) -> Request {
    Request::new(
        model,
        vec![
            Message::system(TITLE_PROMPT),
            Message::user(format!(
                "User: {}\n\nAssistant: {}",
                excerpt(first),
                excerpt(reply)
            )),
        ],
    )
    .with_max_tokens(TITLE_MAX_TOKENS)
    .with_purpose(CallPurpose::Title)
}

impl Harness {
    /// This harness, asking (`true`) or not asking its model for the
    /// session's title after the first turn. Off unless a front end asks.
    pub fn with_model_titles(mut self, on: bool) -> Harness {
        self.titles.on = on;
        self
    }

    /// After a completed turn: when this was the session's first (one user
    /// message so far) and its title is still the message's, starts the
    /// title call in the background. Children are not titled by a model:
    /// the list shows them under their parent.
    pub(super) async fn title_after_first_turn(&self, reply: &str) {
        if !self.titles.on
            || self.session.parent.is_some()
            || !asks_for_titles(self.model.provider.kind())
            || reply.trim().is_empty()
        {
            return;
        }
        let mut users = self.recorder.messages.iter().filter_map(|m| match m {
            Message::User { content, .. } => Some(content),
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
        let request = title_request(&self.model.name, first, reply);
        if !self.title_within_limit(&request).await {
            return;
        }
        let provider: Arc<dyn Provider> = self.model.provider.clone();
        let events = self.recorder.events.clone();
        let price = self.model.price;
        let model = self.model.name.clone();
        let task = tokio::spawn(async move {
            let answer = crate::side_call::collect(provider.stream(request)).await;
            for usage in answer.usage {
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
            if answer.failure.is_some() {
                // The message's title stays.
                return;
            }
            let title = answer
                .text
                .trim()
                .trim_matches(['"', '\'', '“', '”', '*', '#']);
            if let Ok(Some(title)) = store.set_model_title(id, title).await {
                events.emit(&Event::SessionTitled { title });
            }
        });
        *self.titles.pending() = Some(task);
    }

    /// Whether the title call, priced at its worst, leaves the session
    /// within `[limits] max_cost_usd` (always, without a limit or a price).
    async fn title_within_limit(&self, request: &Request) -> bool {
        super::ledger::side_call_within_limit(
            &self.recorder.store,
            self.root,
            self.limits.max_cost,
            self.model.price.as_ref(),
            request,
        )
        .await
        .unwrap_or(false)
    }

    /// Waits for the title call under way, if any, at most [`TITLE_WAIT`].
    pub(super) async fn settle_title(&self) {
        self.titles.settle(TITLE_WAIT).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remote_and_scripted_providers_are_asked_local_ones_not() {
        assert!(asks_for_titles(ProviderKind::Openai));
        assert!(asks_for_titles(ProviderKind::Anthropic));
        assert!(asks_for_titles(ProviderKind::Scripted));
        assert!(!asks_for_titles(ProviderKind::Local));
    }

    #[tokio::test]
    async fn closing_waits_for_the_title_call_but_not_forever() {
        use std::sync::atomic::{AtomicBool, Ordering};
        let titles = Titles::default();
        // Nothing under way: nothing to wait for.
        titles.settle(Duration::from_secs(60)).await;

        let done = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&done);
        *titles.pending() = Some(tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(100)).await;
            flag.store(true, Ordering::SeqCst);
        }));
        titles.settle(Duration::from_secs(60)).await;
        assert!(done.load(Ordering::SeqCst), "the call was waited for");
        assert!(titles.pending().is_none());

        *titles.pending() = Some(tokio::spawn(async {
            tokio::time::sleep(Duration::from_secs(3600)).await;
        }));
        let started = std::time::Instant::now();
        titles.settle(Duration::from_millis(50)).await;
        assert!(started.elapsed() < Duration::from_secs(10));
    }

    #[test]
    fn the_title_call_is_small_and_marked() {
        let long = "word ".repeat(2_000);
        let request = title_request("m", &long, &long);
        assert_eq!(request.max_tokens, Some(TITLE_MAX_TOKENS));
        assert_eq!(request.purpose, CallPurpose::Title);
        assert!(request.tools.is_empty());
        let chars: usize = request
            .messages
            .iter()
            .map(|m| match m {
                Message::System { content } | Message::User { content, .. } => content.len(),
                Message::Assistant { .. } | Message::Tool { .. } => 0,
            })
            .sum();
        assert!(
            chars <= TITLE_PROMPT.len() + 2 * EXCERPT_CHARS + 32,
            "{chars}"
        );
        // A dollar per million tokens each way: 2,000 characters of input
        // at most, plus the 32 tokens it may write.
        let price = Price::per_million(1.0, 1.0, 1.0, 1.0).unwrap();
        let worst = worst_cost(&price, &request);
        assert!(
            worst
                >= price.cost(&TokenCounts {
                    input: 2 * EXCERPT_CHARS as u64,
                    output: u64::from(TITLE_MAX_TOKENS),
                    ..TokenCounts::default()
                })
        );
        assert!(worst < Usd::from_dollars(0.01).unwrap());
    }
}
