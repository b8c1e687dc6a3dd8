//! Session and run ids: UUIDv7, time-sortable, from one injectable source.
//!
//! Production code takes ids from [`Ids::system`]; tests inject
//! [`Ids::sequential`] so that transcripts, snapshots and stored rows are
//! reproducible while keeping the same shape (valid, ordered UUIDv7s).

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// Something that hands out fresh UUIDv7 values.
pub trait IdSource: Send + Sync + fmt::Debug {
    fn next_uuid(&self) -> Uuid;
}

/// Real UUIDv7s from the clock and the system RNG.
#[derive(Debug, Default)]
pub struct SystemIds;

impl IdSource for SystemIds {
    fn next_uuid(&self) -> Uuid {
        Uuid::now_v7()
    }
}

/// Deterministic UUIDv7s: the n-th id has timestamp `base_ms + n` and `n`
/// in its random bits, so ids are distinct, valid and ordered.
#[derive(Debug)]
pub struct SequentialIds {
    base_ms: u64,
    next: AtomicU64,
}

impl SequentialIds {
    pub fn new(base_ms: u64) -> Self {
        SequentialIds {
            base_ms,
            next: AtomicU64::new(0),
        }
    }
}

impl IdSource for SequentialIds {
    fn next_uuid(&self) -> Uuid {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        let mut random = [0u8; 10];
        random[2..].copy_from_slice(&n.to_be_bytes());
        uuid::Builder::from_unix_timestamp_millis(self.base_ms + n, &random).into_uuid()
    }
}

/// The one place ids come from.
#[derive(Debug, Clone)]
pub struct Ids(Arc<dyn IdSource>);

impl Default for Ids {
    fn default() -> Self {
        Ids::system()
    }
}

impl Ids {
    pub fn system() -> Self {
        Ids(Arc::new(SystemIds))
    }

    /// Deterministic ids for tests, starting at 2026-01-01T00:00:00Z.
    pub fn sequential() -> Self {
        Ids(Arc::new(SequentialIds::new(1_767_225_600_000)))
    }

    pub fn from_source(source: Arc<dyn IdSource>) -> Self {
        Ids(source)
    }

    pub fn session_id(&self) -> SessionId {
        SessionId(self.0.next_uuid())
    }

    pub fn run_id(&self) -> RunId {
        RunId(self.0.next_uuid())
    }
}

macro_rules! uuid_id {
    ($(#[$doc:meta])* $name:ident, $what:literal) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        #[serde(transparent)]
        pub struct $name(Uuid);

        impl $name {
            pub fn as_uuid(&self) -> Uuid {
                self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                fmt::Display::fmt(&self.0.hyphenated(), f)
            }
        }

        impl FromStr for $name {
            type Err = ParseIdError;
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                Uuid::parse_str(s.trim())
                    .map($name)
                    .map_err(|_| ParseIdError { what: $what, given: s.to_owned() })
            }
        }
    };
}

uuid_id!(
    /// Identifies a session for its whole life.
    SessionId,
    "session id"
);
uuid_id!(
    /// Identifies one run (one task or one fleet execution).
    RunId,
    "run id"
);

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "`{given}` is not a valid {what}: expected a UUID such as 019a0000-0000-7000-8000-000000000000"
)]
pub struct ParseIdError {
    pub what: &'static str,
    pub given: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn system_ids_are_v7_and_distinct() {
        let ids = Ids::system();
        let a = ids.session_id();
        let b = ids.session_id();
        assert_ne!(a, b);
        assert_eq!(a.as_uuid().get_version_num(), 7);
    }

    #[test]
    fn sequential_ids_are_deterministic_ordered_v7() {
        let one = Ids::sequential();
        let two = Ids::sequential();
        let a: Vec<String> = (0..3).map(|_| one.session_id().to_string()).collect();
        let b: Vec<String> = (0..3).map(|_| two.session_id().to_string()).collect();
        assert_eq!(a, b);
        assert!(a[0] < a[1] && a[1] < a[2]);
        let parsed: SessionId = a[0].parse().unwrap();
        assert_eq!(parsed.as_uuid().get_version_num(), 7);
        assert_eq!(a[0], "019b76da-a800-7000-8000-000000000000");
    }

    #[test]
    fn parse_errors_name_the_kind() {
        let e = "nope".parse::<RunId>().unwrap_err();
        assert_eq!(e.what, "run id");
        assert!(e.to_string().contains("`nope`"));
    }
}
