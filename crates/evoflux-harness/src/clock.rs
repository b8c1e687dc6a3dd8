//! Time, injectable so prompts and tests are deterministic.

use std::fmt;

/// The source of "now" for a run.
pub trait Clock: Send + Sync + fmt::Debug {
    /// Today's date in UTC, `YYYY-MM-DD`.
    fn today(&self) -> String;
}

/// The real clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn today(&self) -> String {
        chrono::Utc::now().format("%Y-%m-%d").to_string()
    }
}

/// A clock stopped at one date, for tests and reproducible demos.
#[derive(Debug, Clone)]
pub struct FixedClock(pub String);

impl Clock for FixedClock {
    fn today(&self) -> String {
        self.0.clone()
    }
}
