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
            // Searches are not counted here; their fee is in `cost_usd`.
            web_searches: 0,
        }
    }

    /// Input tokens neither read from nor written to the prompt cache.
    pub fn uncached_input_tokens(&self) -> u64 {
        self.tokens().uncached_input()
    }

    /// `self` and `other` added up.
    pub fn plus(&self, other: &Usage) -> Usage {
        self.zip(other, u64::saturating_add)
    }

    /// What was used since `earlier`, a total this one grew from.
    pub fn since(&self, earlier: &Usage) -> Usage {
        self.zip(earlier, u64::saturating_sub)
    }

    /// `f` applied to each count of `self` and `other`, the cost's
    /// picodollars included.
    fn zip(&self, other: &Usage, f: impl Fn(u64, u64) -> u64) -> Usage {
        Usage {
            requests: f(self.requests, other.requests),
            input_tokens: f(self.input_tokens, other.input_tokens),
            output_tokens: f(self.output_tokens, other.output_tokens),
            cache_read_tokens: f(self.cache_read_tokens, other.cache_read_tokens),
            cache_write_tokens: f(self.cache_write_tokens, other.cache_write_tokens),
            projected_results: f(self.projected_results, other.projected_results),
            projection_saved_chars: f(self.projection_saved_chars, other.projection_saved_chars),
            cost_usd: Usd::from_picos(f(self.cost_usd.picos(), other.cost_usd.picos())),
            unpriced_requests: f(self.unpriced_requests, other.unpriced_requests),
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
