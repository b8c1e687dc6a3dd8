//! Priced input: what a session's input tokens cost on real models, in
//! input-token equivalents, so harnesses that cache differently (OpenAI
//! discounts every cached token; Anthropic charges more to write the cache
//! and little to read it) compare on what a user pays.
//!
//! The prices come from evoflux's built-in table (`evoflux_core::price`),
//! never copied here: when the table changes, the figures follow.

use evoflux_core::config::ProviderKind;
use evoflux_core::price::{Price, PriceTable};
use serde::Serialize;

use crate::Wire;

/// A model a row is priced for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PricedModel {
    /// Cached input at a tenth of input.
    Gpt5,
    /// Cached input at a quarter.
    Gpt41,
    /// Cached input at half.
    Gpt4o,
    /// Cache reads at a tenth, 5-minute cache writes at 1.25×.
    ClaudeSonnet4,
}

impl PricedModel {
    pub const ALL: [PricedModel; 4] = [
        PricedModel::Gpt5,
        PricedModel::Gpt41,
        PricedModel::Gpt4o,
        PricedModel::ClaudeSonnet4,
    ];

    /// The model's key in the built-in price table.
    pub const fn key(self) -> &'static str {
        match self {
            PricedModel::Gpt5 => "gpt-5",
            PricedModel::Gpt41 => "gpt-4.1",
            PricedModel::Gpt4o => "gpt-4o",
            PricedModel::ClaudeSonnet4 => "claude-sonnet-4",
        }
    }

    const fn provider(self) -> (&'static str, ProviderKind) {
        match self {
            PricedModel::Gpt5 | PricedModel::Gpt41 | PricedModel::Gpt4o => {
                ("openai", ProviderKind::Openai)
            }
            PricedModel::ClaudeSonnet4 => ("anthropic", ProviderKind::Anthropic),
        }
    }

    /// Whether a session on `wire` can be priced as this model: its cache
    /// figures are the simulation of this model's provider.
    pub const fn serves(self, wire: Wire) -> bool {
        match (self, wire) {
            (PricedModel::Gpt5 | PricedModel::Gpt41 | PricedModel::Gpt4o, w) => {
                matches!(w, Wire::Chat | Wire::Responses)
            }
            (PricedModel::ClaudeSonnet4, w) => matches!(w, Wire::Anthropic),
        }
    }

    /// The built-in price, `None` if the table no longer lists the model.
    pub fn price(self) -> Option<Price> {
        let (provider, kind) = self.provider();
        PriceTable::default()
            .lookup(provider, kind, self.key())
            .map(|(price, _)| price)
    }
}

/// Written as its price-table key (`gpt-4.1`), which no serde renaming
/// spells.
impl Serialize for PricedModel {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.key())
    }
}

/// The input tokens of a session, split the way providers bill them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct InputTokens {
    pub uncached: u64,
    pub cached: u64,
    pub cache_written: u64,
}

/// What `tokens` cost at `price`, in tokens of plain input: uncached +
/// cached × cached price / input price + written × write price / input
/// price. `None` for a model whose input is free (nothing to compare in).
pub fn input_equivalents(price: &Price, tokens: InputTokens) -> Option<f64> {
    if price.input == 0 {
        return None;
    }
    let per_input = |picos: u64| picos as f64 / price.input as f64;
    Some(
        tokens.uncached as f64
            + tokens.cached as f64 * per_input(price.cached_input)
            + tokens.cache_written as f64 * per_input(price.cache_write_input),
    )
}

/// One row's priced input on one model.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PricedInput {
    pub model: PricedModel,
    /// Input-token equivalents.
    pub tokens: f64,
}

/// The row's priced input on every model that serves `wire` and that the
/// price table lists.
pub fn priced(wire: Wire, tokens: InputTokens) -> Vec<PricedInput> {
    PricedModel::ALL
        .into_iter()
        .filter(|m| m.serves(wire))
        .filter_map(|model| {
            let price = model.price()?;
            Some(PricedInput {
                model,
                tokens: input_equivalents(&price, tokens)?,
            })
        })
        .collect()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    const TOKENS: InputTokens = InputTokens {
        uncached: 100_000,
        cached: 1_000_000,
        cache_written: 40_000,
    };

    fn on(wire: Wire, model: PricedModel) -> Option<f64> {
        priced(wire, TOKENS)
            .into_iter()
            .find(|p| p.model == model)
            .map(|p| p.tokens)
    }

    fn close(a: Option<f64>, b: f64) -> bool {
        a.is_some_and(|a| (a - b).abs() < 1e-6)
    }

    #[test]
    fn every_model_is_in_the_built_in_table() {
        for m in PricedModel::ALL {
            assert!(m.price().is_some(), "{} is not priced", m.key());
        }
    }

    #[test]
    fn openai_wires_price_cached_tokens_at_their_discount() {
        // gpt-5: cached at $0.125 against $1.25 (a tenth); gpt-4.1: $0.50
        // against $2 (a quarter); gpt-4o: $1.25 against $2.50 (half).
        // OpenAI reports no cache writes; were some counted, they cost
        // plain input.
        for wire in [Wire::Chat, Wire::Responses] {
            assert!(close(
                on(wire, PricedModel::Gpt5),
                100_000.0 + 100_000.0 + 40_000.0
            ));
            assert!(close(
                on(wire, PricedModel::Gpt41),
                100_000.0 + 250_000.0 + 40_000.0
            ));
            assert!(close(
                on(wire, PricedModel::Gpt4o),
                100_000.0 + 500_000.0 + 40_000.0
            ));
            assert_eq!(on(wire, PricedModel::ClaudeSonnet4), None);
        }
    }

    #[test]
    fn anthropic_prices_reads_at_a_tenth_and_writes_at_a_quarter_more() {
        assert!(close(
            on(Wire::Anthropic, PricedModel::ClaudeSonnet4),
            100_000.0 + 100_000.0 + 50_000.0
        ));
        assert_eq!(on(Wire::Anthropic, PricedModel::Gpt5), None);
    }

    #[test]
    fn free_input_has_no_equivalent() {
        let free = Price::per_million(0.0, 0.0, 0.0, 0.0).unwrap();
        assert_eq!(input_equivalents(&free, TOKENS), None);
    }
}
