//! Token usage, summed per session.

use serde::{Deserialize, Serialize};

/// Usage of one model call, or the running total of a session.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    pub requests: u64,
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cache_read_tokens: u64,
    pub cache_write_tokens: u64,
    /// Old tool results the projection owner replaced by receipts in the
    /// requests sent (counted per request).
    #[serde(default)]
    pub projected_results: u64,
    /// Characters those receipts saved.
    #[serde(default)]
    pub projection_saved_chars: u64,
}
