//! The time and size bounds of one model call of a remote provider.
//!
//! A call can fail slowly in four ways, each bounded on its own and named
//! for what happened: no connection, a server that accepts and never
//! answers, a stream that stalls midway, and a call that, retries
//! included, runs past its deadline. The reply's size is capped too, so a
//! runaway or hostile server cannot fill memory and the transcript.
//!
//! Retries must not multiply the bounds. Until its reply begins a call
//! has [`CallBounds::answer_within`] in total, every attempt and backoff
//! included: an attempt waits for the response only until then, and no
//! retry is waited for that would end later (see [`crate::retry`]). On
//! the defaults a server that never answers is given up after 120 s, not
//! after five attempts of 120 s each. The worst cases, on the defaults:
//!
//! - nothing answers: 120 s (`first_byte`);
//! - the response began but nothing was shown and then the stream went
//!   silent: 120 s for the window plus one stall of 90 s (`idle`), since
//!   a stream that has begun may think silently but not forever;
//! - a reply that streams: 600 s (`call`), however it trickles.

use std::time::Duration;

use evoflux_core::config::ProviderLimits;

/// Bounds of one model call; [`CallBounds::default`] for a provider that
/// configures none.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CallBounds {
    pub connect: Duration,
    /// From the call's start to the response's first byte, every attempt
    /// and backoff included: a model may think for a while before it
    /// streams, but not for minutes in silence, and a retry does not
    /// start the wait over.
    pub first_byte: Duration,
    /// Silence between two pieces of a streamed reply.
    pub idle: Duration,
    /// The whole call, every attempt and backoff included.
    pub call: Duration,
    pub max_response_bytes: u64,
}

impl Default for CallBounds {
    fn default() -> Self {
        CallBounds {
            connect: Duration::from_secs(10),
            first_byte: Duration::from_secs(120),
            idle: Duration::from_secs(90),
            call: Duration::from_secs(600),
            max_response_bytes: 16 * 1024 * 1024,
        }
    }
}

impl CallBounds {
    /// How long a call has for its reply to begin, retries included: the
    /// first-byte bound, or the whole call's when that is shorter, so that
    /// no retry is waited for that the call's deadline would cut short
    /// (a rate limit is then reported as one, not as a timeout).
    pub fn answer_within(&self) -> Duration {
        self.first_byte.min(self.call)
    }

    /// The defaults with what `[providers.<name>.limits]` sets. A zero is
    /// taken as the smallest bound there is (one second, one MiB), never
    /// as "no limit".
    pub fn from_limits(limits: &ProviderLimits) -> CallBounds {
        let d = CallBounds::default();
        let secs = |v: Option<u64>, default: Duration| {
            v.map_or(default, |s| Duration::from_secs(s.max(1)))
        };
        CallBounds {
            connect: secs(limits.connect_timeout_secs, d.connect),
            first_byte: secs(limits.first_byte_timeout_secs, d.first_byte),
            idle: secs(limits.idle_timeout_secs, d.idle),
            call: secs(limits.call_timeout_secs, d.call),
            max_response_bytes: limits.max_response_mib.map_or(d.max_response_bytes, |m| {
                m.max(1).saturating_mul(1024 * 1024)
            }),
        }
    }

    /// Bounds in milliseconds, for tests of each failure.
    #[doc(hidden)]
    pub fn millis(
        connect: u64,
        first_byte: u64,
        idle: u64,
        call: u64,
        max_bytes: u64,
    ) -> CallBounds {
        CallBounds {
            connect: Duration::from_millis(connect),
            first_byte: Duration::from_millis(first_byte),
            idle: Duration::from_millis(idle),
            call: Duration::from_millis(call),
            max_response_bytes: max_bytes,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_override_defaults_and_zero_is_not_unlimited() {
        let b = CallBounds::from_limits(&ProviderLimits {
            idle_timeout_secs: Some(5),
            call_timeout_secs: Some(0),
            max_response_mib: Some(2),
            ..ProviderLimits::default()
        });
        assert_eq!(b.idle, Duration::from_secs(5));
        assert_eq!(b.call, Duration::from_secs(1));
        assert_eq!(b.max_response_bytes, 2 * 1024 * 1024);
        assert_eq!(b.first_byte, CallBounds::default().first_byte);
        assert_eq!(b.answer_within(), Duration::from_secs(1));
    }

    #[test]
    fn by_default_a_reply_must_begin_within_two_minutes_retries_included() {
        assert_eq!(
            CallBounds::default().answer_within(),
            Duration::from_secs(120)
        );
    }
}
