//! Token usage and cost, summed per session.

use evoflux_core::price::{TokenCounts, Usd};
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
    /// What the priced requests cost, in US dollars.
    #[serde(default)]
    pub cost_usd: Usd,
    /// Requests made on a model with no known price: their cost is not in
    /// `cost_usd`, so a total with any is a lower bound.
    #[serde(default)]
    pub unpriced_requests: u64,
}

impl Usage {
    /// The tokens as prices split them.
    pub fn tokens(&self) -> TokenCounts {
        TokenCounts {
            input: self.input_tokens,
            cached_input: self.cache_read_tokens,
            cache_write_input: self.cache_write_tokens,
            output: self.output_tokens,
        }
    }

    /// Input tokens neither read from nor written to the prompt cache.
    pub fn uncached_input_tokens(&self) -> u64 {
        self.tokens().uncached_input()
    }

    /// `self` and `other` added up.
    pub fn plus(&self, other: &Usage) -> Usage {
        Usage {
            requests: self.requests + other.requests,
            input_tokens: self.input_tokens + other.input_tokens,
            output_tokens: self.output_tokens + other.output_tokens,
            cache_read_tokens: self.cache_read_tokens + other.cache_read_tokens,
            cache_write_tokens: self.cache_write_tokens + other.cache_write_tokens,
            projected_results: self.projected_results + other.projected_results,
            projection_saved_chars: self.projection_saved_chars + other.projection_saved_chars,
            cost_usd: self.cost_usd.saturating_add(other.cost_usd),
            unpriced_requests: self.unpriced_requests + other.unpriced_requests,
        }
    }

    /// What was used since `earlier`, a total this one grew from.
    pub fn since(&self, earlier: &Usage) -> Usage {
        Usage {
            requests: self.requests.saturating_sub(earlier.requests),
            input_tokens: self.input_tokens.saturating_sub(earlier.input_tokens),
            output_tokens: self.output_tokens.saturating_sub(earlier.output_tokens),
            cache_read_tokens: self
                .cache_read_tokens
                .saturating_sub(earlier.cache_read_tokens),
            cache_write_tokens: self
                .cache_write_tokens
                .saturating_sub(earlier.cache_write_tokens),
            projected_results: self
                .projected_results
                .saturating_sub(earlier.projected_results),
            projection_saved_chars: self
                .projection_saved_chars
                .saturating_sub(earlier.projection_saved_chars),
            cost_usd: evoflux_core::price::Usd::from_picos(
                self.cost_usd
                    .picos()
                    .saturating_sub(earlier.cost_usd.picos()),
            ),
            unpriced_requests: self
                .unpriced_requests
                .saturating_sub(earlier.unpriced_requests),
        }
    }

    /// The cost as people read it: `$0.0123`, `≥ $0.0123` when some
    /// requests had no price, `unpriced` when none had one.
    pub fn cost_label(&self) -> String {
        match (self.unpriced_requests, self.requests) {
            (0, _) => self.cost_usd.to_string(),
            (u, r) if u == r => "unpriced".to_owned(),
            _ => format!("≥ {}", self.cost_usd),
        }
    }
}
