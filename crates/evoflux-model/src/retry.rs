//! Retries with exponential backoff and jitter.
//!
//! A model call is retried only while nothing has been yielded to the
//! consumer: once a text delta has been shown, replaying the request would
//! show it twice, so a later failure is returned as it is. Transport errors,
//! 5xx and 429 are retried; a 429's `retry-after` is honoured up to a cap.
//! A server that asks for a longer wait is not retried at all: waiting the
//! cap and asking again would only be refused again, so the rate limit is
//! reported at once, with the wait the server named.
//!
//! Retries never outlast the call's [`AnswerWindow`]: no wait is slept that
//! would end after it. Without that bound the attempts multiplied the
//! per-attempt timeout (a server that never answered cost 120 s per
//! attempt plus backoff: 484 s before the user saw an error), and a long
//! `retry-after` slept inside the call's deadline ended as a timeout
//! instead of the rate limit it was.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use futures_util::StreamExt;
use rand::Rng;
use tokio::time::Instant;

use crate::error::ProviderError;
use crate::provider::EventStream;

/// How often and how patiently to retry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Total attempts, the first included (1 means never retry).
    pub max_attempts: u32,
    /// Delay before the first retry; doubled for each later one.
    pub base: Duration,
    /// Upper bound of the backoff delay and of an honoured `retry-after`.
    pub cap: Duration,
}

impl Default for RetryPolicy {
    /// Five attempts, 250 ms doubling, capped at 30 s: about 4 s of backoff
    /// in total for a flaky server, and a polite wait for a rate limit.
    fn default() -> Self {
        RetryPolicy {
            max_attempts: 5,
            base: Duration::from_millis(250),
            cap: Duration::from_secs(30),
        }
    }
}

impl RetryPolicy {
    /// A policy that never retries.
    pub const NONE: RetryPolicy = RetryPolicy {
        max_attempts: 1,
        base: Duration::ZERO,
        cap: Duration::ZERO,
    };

    /// The backoff before retry number `retry` (1 for the first retry),
    /// before jitter: `base * 2^(retry-1)`, at most `cap`.
    pub fn backoff(&self, retry: u32) -> Duration {
        let factor = 2u32.saturating_pow(retry.saturating_sub(1));
        self.base.saturating_mul(factor).min(self.cap)
    }

    /// The wait before retry number `retry` after `error`: the server's
    /// `retry-after` when it gave one, otherwise the backoff with ±10 %
    /// jitter so that many clients do not retry in lockstep. `None` when
    /// the server asks for more than `cap`: that call is not retried.
    pub fn delay(&self, retry: u32, error: &ProviderError) -> Option<Duration> {
        match error.retry_after() {
            Some(after) => (after <= self.cap).then_some(after),
            None => {
                let jitter = rand::rng().random_range(0.9..=1.1);
                Some(self.backoff(retry).mul_f64(jitter).min(self.cap))
            }
        }
    }
}

/// How long a call has for its reply to begin, every attempt and backoff
/// included, counted from its start (its first poll). All the bounds of a
/// call share the start, so they agree on how long it has run.
#[derive(Debug, Clone)]
pub struct AnswerWindow {
    started: Arc<OnceLock<Instant>>,
    within: Duration,
}

impl AnswerWindow {
    pub fn new(within: Duration) -> Self {
        AnswerWindow {
            started: Arc::new(OnceLock::new()),
            within,
        }
    }

    /// When the call started: the first time this (or a clone) was asked.
    pub fn started(&self) -> Instant {
        *self.started.get_or_init(Instant::now)
    }

    /// The instant `after` the start, for any bound of the call.
    pub fn after_start(&self, after: Duration) -> Instant {
        let start = self.started();
        // A bound of u64::MAX seconds from config must not overflow: a
        // century is as good as never for one call.
        start
            .checked_add(after)
            .unwrap_or_else(|| start + Duration::from_secs(100 * 365 * 24 * 3600))
    }

    /// When the reply must have begun.
    pub fn deadline(&self) -> Instant {
        self.after_start(self.within)
    }
}

/// Something that waits. Tests inject one that records and returns at once.
pub type SleepFn = dyn Fn(Duration) -> Pin<Box<dyn Future<Output = ()> + Send>> + Send + Sync;

/// A shareable sleeper; [`Sleeper::tokio`] really sleeps.
#[derive(Clone)]
pub struct Sleeper(Arc<SleepFn>);

impl Sleeper {
    pub fn tokio() -> Self {
        Sleeper(Arc::new(|d| Box::pin(tokio::time::sleep(d))))
    }

    pub fn new<F, Fut>(f: F) -> Self
    where
        F: Fn(Duration) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        Sleeper(Arc::new(move |d| Box::pin(f(d))))
    }

    pub async fn sleep(&self, d: Duration) {
        (self.0)(d).await;
    }
}

impl Default for Sleeper {
    fn default() -> Self {
        Sleeper::tokio()
    }
}

impl fmt::Debug for Sleeper {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Sleeper")
    }
}

struct RetryState<F> {
    attempt: F,
    current: Option<EventStream>,
    attempts: u32,
    yielded: bool,
    finished: bool,
    policy: RetryPolicy,
    sleeper: Sleeper,
    window: AnswerWindow,
}

impl<F> RetryState<F> {
    /// The wait before retrying after `error`, or `None` when the error
    /// is to be returned: something was shown, the error is final, the
    /// attempts are spent, the server asks for a longer wait than the
    /// policy allows, or the wait would end past the answer window.
    fn retry_wait(&self, error: &ProviderError) -> Option<Duration> {
        if self.yielded || !error.is_retryable() || self.attempts >= self.policy.max_attempts {
            return None;
        }
        let wait = self.policy.delay(self.attempts, error)?;
        let resume = Instant::now().checked_add(wait)?;
        (resume < self.window.deadline()).then_some(wait)
    }
}

/// Runs `attempt` (one full request each time) until it yields an event,
/// fails with an error that is not retryable, runs out of attempts, or
/// would retry past `window`.
pub fn with_retries<F>(
    policy: RetryPolicy,
    sleeper: Sleeper,
    window: AnswerWindow,
    attempt: F,
) -> EventStream
where
    F: FnMut() -> EventStream + Send + 'static,
{
    let state = RetryState {
        attempt,
        current: None,
        attempts: 0,
        yielded: false,
        finished: false,
        policy,
        sleeper,
        window,
    };
    Box::pin(futures_util::stream::unfold(state, |mut s| async move {
        loop {
            if s.finished {
                return None;
            }
            // The window counts from the first attempt's start.
            let _ = s.window.started();
            let stream = match s.current.as_mut() {
                Some(stream) => stream,
                None => {
                    s.attempts += 1;
                    s.current.insert((s.attempt)())
                }
            };
            match stream.next().await {
                Some(Ok(event)) => {
                    s.yielded = true;
                    return Some((Ok(event), s));
                }
                Some(Err(error)) => {
                    if let Some(wait) = s.retry_wait(&error) {
                        s.current = None;
                        s.sleeper.sleep(wait).await;
                        continue;
                    }
                    s.finished = true;
                    return Some((Err(error), s));
                }
                None => return None,
            }
        }
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::StreamEvent;
    use std::sync::Mutex;

    fn recording() -> (Sleeper, Arc<Mutex<Vec<Duration>>>) {
        let log = Arc::new(Mutex::new(Vec::new()));
        let l = log.clone();
        let sleeper = Sleeper::new(move |d| {
            l.lock().unwrap().push(d);
            async {}
        });
        (sleeper, log)
    }

    fn server_err() -> ProviderError {
        ProviderError::Server {
            provider: "t".into(),
            status: Some(500),
            detail: "boom".into(),
        }
    }

    #[test]
    fn backoff_doubles_and_caps() {
        let p = RetryPolicy {
            max_attempts: 10,
            base: Duration::from_millis(100),
            cap: Duration::from_millis(500),
        };
        assert_eq!(p.backoff(1), Duration::from_millis(100));
        assert_eq!(p.backoff(2), Duration::from_millis(200));
        assert_eq!(p.backoff(3), Duration::from_millis(400));
        assert_eq!(p.backoff(4), Duration::from_millis(500));
        assert_eq!(p.backoff(40), Duration::from_millis(500));
        let d = p.delay(2, &server_err()).unwrap();
        assert!(d >= Duration::from_millis(180) && d <= Duration::from_millis(220));
        assert_eq!(
            p.delay(1, &limited(Duration::from_millis(500))),
            Some(Duration::from_millis(500))
        );
        assert_eq!(p.delay(1, &limited(Duration::from_secs(3600))), None);
    }

    fn limited(after: Duration) -> ProviderError {
        ProviderError::RateLimit {
            provider: "t".into(),
            retry_after: Some(after),
            detail: String::new(),
        }
    }

    fn window() -> AnswerWindow {
        AnswerWindow::new(Duration::from_secs(60))
    }

    /// A stream of attempts that each fail with `error`, counting them.
    fn failing(error: ProviderError) -> (impl FnMut() -> EventStream, Arc<Mutex<u32>>) {
        let calls = Arc::new(Mutex::new(0));
        let c = calls.clone();
        let attempt = move || {
            *c.lock().unwrap() += 1;
            Box::pin(futures_util::stream::iter(vec![Err(error.clone())])) as EventStream
        };
        (attempt, calls)
    }

    #[tokio::test]
    async fn a_longer_wait_than_the_cap_is_reported_at_once() {
        let (sleeper, log) = recording();
        let error = limited(Duration::from_secs(3600));
        let (attempt, calls) = failing(error.clone());
        let out: Vec<_> = with_retries(RetryPolicy::default(), sleeper, window(), attempt)
            .collect()
            .await;
        assert_eq!(out, vec![Err(error)]);
        assert_eq!(*calls.lock().unwrap(), 1);
        assert!(log.lock().unwrap().is_empty());
    }

    #[tokio::test]
    async fn no_wait_is_slept_past_the_answer_window() {
        let log = Arc::new(Mutex::new(Vec::new()));
        let l = log.clone();
        // Really sleeps, so the window sees the time pass.
        let sleeper = Sleeper::new(move |d| {
            l.lock().unwrap().push(d);
            tokio::time::sleep(d)
        });
        // Each wait fits the cap (30 s); a second one would end past the
        // 300 ms window.
        let error = limited(Duration::from_millis(200));
        let (attempt, calls) = failing(error.clone());
        let w = AnswerWindow::new(Duration::from_millis(300));
        let out: Vec<_> = with_retries(RetryPolicy::default(), sleeper, w, attempt)
            .collect()
            .await;
        assert_eq!(out, vec![Err(error)]);
        assert_eq!(*calls.lock().unwrap(), 2);
        assert_eq!(*log.lock().unwrap(), vec![Duration::from_millis(200)]);
    }

    #[tokio::test]
    async fn retries_until_success_then_passes_through() {
        let (sleeper, log) = recording();
        let mut calls = 0;
        let s = with_retries(RetryPolicy::default(), sleeper, window(), move || {
            calls += 1;
            let items: Vec<Result<StreamEvent, ProviderError>> = if calls < 3 {
                vec![Err(server_err())]
            } else {
                vec![Ok(StreamEvent::Done)]
            };
            Box::pin(futures_util::stream::iter(items)) as EventStream
        });
        let out: Vec<_> = s.collect().await;
        assert_eq!(out, vec![Ok(StreamEvent::Done)]);
        assert_eq!(log.lock().unwrap().len(), 2);
    }

    #[tokio::test]
    async fn gives_up_after_max_attempts_and_never_after_yielding() {
        let (sleeper, log) = recording();
        let policy = RetryPolicy {
            max_attempts: 3,
            ..RetryPolicy::default()
        };
        let s = with_retries(policy, sleeper.clone(), window(), || {
            Box::pin(futures_util::stream::iter(vec![Err(server_err())])) as EventStream
        });
        let out: Vec<_> = s.collect().await;
        assert_eq!(out, vec![Err(server_err())]);
        assert_eq!(log.lock().unwrap().len(), 2);

        log.lock().unwrap().clear();
        let s = with_retries(policy, sleeper, window(), || {
            Box::pin(futures_util::stream::iter(vec![
                Ok(StreamEvent::TextDelta { text: "a".into() }),
                Err(server_err()),
            ])) as EventStream
        });
        let out: Vec<_> = s.collect().await;
        assert_eq!(out.len(), 2);
        assert!(log.lock().unwrap().is_empty());
    }
}
