//! Retries with exponential backoff and jitter.
//!
//! A model call is retried only while nothing has been yielded to the
//! consumer: once a text delta has been shown, replaying the request would
//! show it twice, so a later failure is returned as it is. Transport errors,
//! 5xx and 429 are retried; a 429's `retry-after` is honoured up to a cap so
//! a hostile or confused server cannot park the agent for an hour.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;
use rand::Rng;

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
    /// `retry-after` (capped) when it gave one, otherwise the backoff with
    /// ±10 % jitter so that many clients do not retry in lockstep.
    pub fn delay(&self, retry: u32, error: &ProviderError) -> Duration {
        match error.retry_after() {
            Some(after) => after.min(self.cap),
            None => {
                let jitter = rand::rng().random_range(0.9..=1.1);
                self.backoff(retry).mul_f64(jitter).min(self.cap)
            }
        }
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
}

/// Runs `attempt` (one full request each time) until it yields an event,
/// fails with an error that is not retryable, or runs out of attempts.
pub fn with_retries<F>(policy: RetryPolicy, sleeper: Sleeper, attempt: F) -> EventStream
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
    };
    Box::pin(futures_util::stream::unfold(state, |mut s| async move {
        loop {
            if s.finished {
                return None;
            }
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
                    if !s.yielded && error.is_retryable() && s.attempts < s.policy.max_attempts {
                        let wait = s.policy.delay(s.attempts, &error);
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
        let d = p.delay(2, &server_err());
        assert!(d >= Duration::from_millis(180) && d <= Duration::from_millis(220));
        let limited = ProviderError::RateLimit {
            provider: "t".into(),
            retry_after: Some(Duration::from_secs(3600)),
            detail: String::new(),
        };
        assert_eq!(p.delay(1, &limited), Duration::from_millis(500));
    }

    #[tokio::test]
    async fn retries_until_success_then_passes_through() {
        let (sleeper, log) = recording();
        let mut calls = 0;
        let s = with_retries(RetryPolicy::default(), sleeper, move || {
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
        let s = with_retries(policy, sleeper.clone(), || {
            Box::pin(futures_util::stream::iter(vec![Err(server_err())])) as EventStream
        });
        let out: Vec<_> = s.collect().await;
        assert_eq!(out, vec![Err(server_err())]);
        assert_eq!(log.lock().unwrap().len(), 2);

        log.lock().unwrap().clear();
        let s = with_retries(policy, sleeper, || {
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
