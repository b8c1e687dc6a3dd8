//! What model calls cost: prices per model and exact sums.
//!
//! Prices are written as people read them on a provider's price page, in US
//! dollars per million tokens, and held as whole picodollars (10⁻¹² USD)
//! per token. A dollar amount is a whole number of picodollars too, so the
//! cost of a session is exactly the sum of the costs of its calls, however
//! they are added up (per call, per turn, per session, per tree of
//! sessions): no float rounding drifts between the figures a user compares.
//!
//! The built-in table covers well-known hosted models. `config.toml`'s
//! `[prices]` adds or overrides entries (see [`PriceTable::lookup`]). A
//! model with no price is *unpriced*: its calls are counted apart, never
//! shown as free.

use std::collections::BTreeMap;
use std::fmt;

use crate::config::ProviderKind;
use serde::{Deserialize, Serialize};

/// Picodollars in one US dollar.
const PICOS_PER_USD: f64 = 1e12;

/// An amount of US dollars, exact to the picodollar.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Usd(u64);

impl Usd {
    pub const ZERO: Usd = Usd(0);

    pub const fn from_picos(picos: u64) -> Usd {
        Usd(picos)
    }

    pub const fn picos(self) -> u64 {
        self.0
    }

    /// Dollars as written in a config file; `None` for a negative, NaN,
    /// infinite or unrepresentably large amount.
    pub fn from_dollars(dollars: f64) -> Option<Usd> {
        let picos = (dollars * PICOS_PER_USD).round();
        // u64::MAX as f64 rounds up to 2^64, which does not fit.
        (dollars.is_finite() && picos >= 0.0 && picos < u64::MAX as f64)
            .then_some(Usd(picos as u64))
    }

    /// The amount in dollars, for JSON and display.
    pub fn dollars(self) -> f64 {
        self.0 as f64 / PICOS_PER_USD
    }

    pub const fn saturating_add(self, other: Usd) -> Usd {
        Usd(self.0.saturating_add(other.0))
    }
}

impl std::iter::Sum for Usd {
    fn sum<I: Iterator<Item = Usd>>(iter: I) -> Usd {
        iter.fold(Usd::ZERO, Usd::saturating_add)
    }
}

/// `$0.0123`: four decimals, more when the amount is below a cent so a
/// cheap call does not read as free.
impl fmt::Display for Usd {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let d = self.dollars();
        if self.0 == 0 {
            f.write_str("$0.00")
        } else if d >= 0.01 {
            write!(f, "${d:.4}")
        } else {
            write!(f, "${d:.6}")
        }
    }
}

impl Serialize for Usd {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(self.dollars())
    }
}

impl<'de> Deserialize<'de> for Usd {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let dollars = f64::deserialize(d)?;
        Usd::from_dollars(dollars).ok_or_else(|| {
            serde::de::Error::custom(format!("{dollars} is not an amount of dollars"))
        })
    }
}

/// The tokens of one or more model calls, split the way providers price
/// them. `cached_input` and `cache_write_input` are parts of `input`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TokenCounts {
    pub input: u64,
    pub cached_input: u64,
    pub cache_write_input: u64,
    pub output: u64,
    /// Searches the provider ran with its own web search tool.
    pub web_searches: u64,
}

impl TokenCounts {
    /// Input tokens read neither from nor into the cache.
    pub fn uncached_input(&self) -> u64 {
        self.input
            .saturating_sub(self.cached_input)
            .saturating_sub(self.cache_write_input)
    }
}

/// The price of one model, in picodollars per token. Written and read in
/// config files as a [`PriceEntry`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Price {
    pub input: u64,
    pub cached_input: u64,
    pub cache_write_input: u64,
    pub output: u64,
    /// Picodollars per search of the provider's web search tool, billed
    /// apart from the tokens it adds.
    pub web_search: u64,
}

impl Price {
    /// A price from dollars per million tokens (the built-in table's and
    /// the config file's unit), or the name of the first field (as a
    /// config file writes it) that is not a valid amount.
    pub fn per_million(
        input: f64,
        cached_input: f64,
        cache_write: f64,
        output: f64,
    ) -> Result<Price, &'static str> {
        // Dollars per million tokens, divided by a million, are dollars
        // per token; held as picodollars.
        let per_token = |field: &'static str, usd_per_million: f64| {
            Usd::from_dollars(usd_per_million / 1e6)
                .map(Usd::picos)
                .ok_or(field)
        };
        let input = per_token("input", input)?;
        let output = per_token("output", output)?;
        Ok(Price {
            input,
            cached_input: per_token("cached_input", cached_input)?,
            cache_write_input: per_token("cache_write", cache_write)?,
            output,
            web_search: 0,
        })
    }

    /// This price with web searches at `usd_per_thousand` dollars per
    /// 1,000 searches (the providers' unit), or the field's name when it
    /// is not a valid amount.
    pub fn with_web_search(self, usd_per_thousand: f64) -> Result<Price, &'static str> {
        let per_search = Usd::from_dollars(usd_per_thousand / 1e3).ok_or("web_search")?;
        Ok(Price {
            web_search: per_search.picos(),
            ..self
        })
    }

    /// What `tokens` cost at this price.
    pub fn cost(&self, tokens: &TokenCounts) -> Usd {
        let part = |n: u64, price: u64| Usd(n.saturating_mul(price));
        [
            part(tokens.uncached_input(), self.input),
            part(tokens.cached_input, self.cached_input),
            part(tokens.cache_write_input, self.cache_write_input),
            part(tokens.output, self.output),
            part(tokens.web_searches, self.web_search),
        ]
        .into_iter()
        .sum()
    }
}

impl Serialize for Price {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let per_million = |picos: u64| picos as f64 / 1e6;
        PriceEntry {
            input: per_million(self.input),
            output: per_million(self.output),
            cached_input: Some(per_million(self.cached_input)),
            cache_write: Some(per_million(self.cache_write_input)),
            web_search: (self.web_search > 0).then(|| self.web_search as f64 / 1e9),
        }
        .serialize(s)
    }
}

impl<'de> Deserialize<'de> for Price {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        PriceEntry::deserialize(d)?.price().map_err(|field| {
            serde::de::Error::custom(format!("`{field}` is not an amount of dollars"))
        })
    }
}

/// One `[prices."<key>"]` table of `config.toml`, in dollars per million
/// tokens. Cache reads and writes cost what plain input costs unless said.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct PriceEntry {
    pub input: f64,
    pub output: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached_input: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_write: Option<f64>,
    /// Dollars per 1,000 searches of the provider's web search tool;
    /// unset, searches cost nothing beyond their tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub web_search: Option<f64>,
}

impl PriceEntry {
    /// The exact price, or the name of the field that is not a valid
    /// amount.
    pub fn price(&self) -> Result<Price, &'static str> {
        Price::per_million(
            self.input,
            self.cached_input.unwrap_or(self.input),
            self.cache_write.unwrap_or(self.input),
            self.output,
        )?
        .with_web_search(self.web_search.unwrap_or(0.0))
    }
}

/// Built-in prices of well-known hosted models, by the provider kind that
/// serves them, in dollars per million tokens: (model, input, cached
/// input, cache write, output), then dollars per 1,000 searches of the
/// provider's web search tool. Overridden by `[prices]`; a dated snapshot
/// (`claude-sonnet-4-20250514`, `gpt-4o-2024-08-06`) costs what its model
/// costs.
const BUILT_IN: [(ProviderKind, &[PriceRow]); 2] = [
    (ProviderKind::Openai, OPENAI),
    (ProviderKind::Anthropic, ANTHROPIC),
];

/// (model, input, cached input, cache write, output, per 1,000 searches).
type PriceRow = (&'static str, f64, f64, f64, f64, f64);

const OPENAI: &[PriceRow] = &[
    // OpenAI: cached input is discounted, cache writes cost nothing extra;
    // a web search is $25 per 1,000 on gpt-4o and gpt-4.1 (its content
    // free), $10 on the reasoning models (its content billed as input).
    ("gpt-5", 1.25, 0.125, 1.25, 10.0, 10.0),
    ("gpt-5-mini", 0.25, 0.025, 0.25, 2.0, 10.0),
    ("gpt-5-nano", 0.05, 0.005, 0.05, 0.40, 10.0),
    ("gpt-4.1", 2.0, 0.50, 2.0, 8.0, 25.0),
    ("gpt-4.1-mini", 0.40, 0.10, 0.40, 1.60, 25.0),
    ("gpt-4.1-nano", 0.10, 0.025, 0.10, 0.40, 25.0),
    ("gpt-4o", 2.50, 1.25, 2.50, 10.0, 25.0),
    ("gpt-4o-mini", 0.15, 0.075, 0.15, 0.60, 25.0),
    ("o3", 2.0, 0.50, 2.0, 8.0, 10.0),
    ("o4-mini", 1.10, 0.275, 1.10, 4.40, 10.0),
];

const ANTHROPIC: &[PriceRow] = &[
    // Anthropic: a cache read is a tenth of input, a 5-minute cache write
    // a quarter more, a web search $10 per 1,000.
    ("claude-opus-4-5", 5.0, 0.50, 6.25, 25.0, 10.0),
    ("claude-opus-4-1", 15.0, 1.50, 18.75, 75.0, 10.0),
    ("claude-opus-4", 15.0, 1.50, 18.75, 75.0, 10.0),
    ("claude-sonnet-4-5", 3.0, 0.30, 3.75, 15.0, 10.0),
    ("claude-sonnet-4", 3.0, 0.30, 3.75, 15.0, 10.0),
    ("claude-3-7-sonnet", 3.0, 0.30, 3.75, 15.0, 10.0),
    ("claude-haiku-4-5", 1.0, 0.10, 1.25, 5.0, 10.0),
    ("claude-3-5-haiku", 0.80, 0.08, 1.0, 4.0, 10.0),
];

/// Where a price came from, for `info` and for a user wondering why a
/// figure is what it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PriceSource {
    /// `[prices."provider:model"]`.
    ConfigModelRef,
    /// `[prices."provider:*"]`: every model of one provider.
    ConfigProvider,
    /// `[prices."model"]`: the model on any provider.
    ConfigModel,
    /// The built-in table.
    BuiltIn,
    /// A model run in-process costs nothing per token.
    Local,
}

/// The prices a session's calls are costed with: the user's entries over
/// the built-in table.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PriceTable {
    /// `[prices]` keys, checked: `provider:model`, `provider:*` or `model`.
    configured: BTreeMap<String, Price>,
}

impl PriceTable {
    pub fn new(configured: BTreeMap<String, Price>) -> PriceTable {
        PriceTable { configured }
    }

    /// The price of `model` on `provider`. First `[prices."provider:model"]`,
    /// then `[prices."provider:*"]`, then `[prices."model"]`, then the
    /// built-in table (remote providers only). `local` models cost nothing;
    /// anything else unlisted is unpriced (`None`).
    pub fn lookup(
        &self,
        provider: &str,
        kind: crate::config::ProviderKind,
        model: &str,
    ) -> Option<(Price, PriceSource)> {
        use crate::config::ProviderKind;
        let configured = |key: &str| self.configured.get(key).copied();
        if let Some(p) = configured(&format!("{provider}:{model}")) {
            return Some((p, PriceSource::ConfigModelRef));
        }
        if let Some(p) = configured(&format!("{provider}:*")) {
            return Some((p, PriceSource::ConfigProvider));
        }
        if let Some(p) = configured(model).or_else(|| snapshot_of(model).and_then(configured)) {
            return Some((p, PriceSource::ConfigModel));
        }
        match kind {
            ProviderKind::Openai | ProviderKind::Anthropic => built_in(model)
                .or_else(|| snapshot_of(model).and_then(built_in))
                .map(|p| (p, PriceSource::BuiltIn)),
            ProviderKind::Local => Some((
                Price::per_million(0.0, 0.0, 0.0, 0.0).ok()?,
                PriceSource::Local,
            )),
            ProviderKind::Scripted => None,
        }
    }
}

/// The models the built-in table prices for providers of `kind`, in its
/// order: what a model picker offers for a configured provider.
pub fn built_in_models(kind: ProviderKind) -> impl Iterator<Item = &'static str> {
    BUILT_IN
        .iter()
        .filter(move |(k, _)| *k == kind)
        .flat_map(|(_, rows)| rows.iter().map(|(name, ..)| *name))
}

fn built_in(model: &str) -> Option<Price> {
    BUILT_IN
        .iter()
        .flat_map(|(_, rows)| rows.iter())
        .find(|(name, ..)| *name == model)
        .and_then(|&(_, i, c, w, o, search)| {
            Price::per_million(i, c, w, o)
                .and_then(|p| p.with_web_search(search))
                .ok()
        })
}

/// The model a dated snapshot name stands for: `gpt-4o-2024-08-06` →
/// `gpt-4o`, `claude-sonnet-4-20250514` → `claude-sonnet-4`,
/// `claude-3-7-sonnet-latest` → `claude-3-7-sonnet`. Only a date or
/// `latest` is cut, so `gpt-4o-mini` never reads as `gpt-4o`.
fn snapshot_of(model: &str) -> Option<&str> {
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if let Some(base) = model.strip_suffix("-latest") {
        return Some(base);
    }
    // -YYYYMMDD
    if let Some((base, date)) = model.rsplit_once('-')
        && date.len() == 8
        && digits(date)
    {
        return Some(base);
    }
    // -YYYY-MM-DD
    let mut parts = model.rsplitn(4, '-');
    let (d, m, y, base) = (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
    (y.len() == 4 && m.len() == 2 && d.len() == 2 && digits(y) && digits(m) && digits(d))
        .then_some(base)
}

/// Whether `key` is a valid `[prices]` key: `provider:model`,
/// `provider:*` or a bare model name, without whitespace.
pub fn is_price_key(key: &str) -> bool {
    !key.is_empty()
        && !key.chars().any(char::is_whitespace)
        && match key.split_once(':') {
            Some((provider, model)) => !provider.is_empty() && !model.is_empty(),
            None => true,
        }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ProviderKind;

    fn tokens(input: u64, cached: u64, write: u64, output: u64) -> TokenCounts {
        TokenCounts {
            input,
            cached_input: cached,
            cache_write_input: write,
            output,
            web_searches: 0,
        }
    }

    #[test]
    fn costs_are_exact_picodollars() {
        let p = Price::per_million(3.0, 0.30, 3.75, 15.0).unwrap();
        assert_eq!(p.input, 3_000_000);
        // 1,000 uncached, 10,000 read, 2,000 written, 500 out.
        let c = p.cost(&tokens(13_000, 10_000, 2_000, 500));
        let expected = 1_000 * 3_000_000 + 10_000 * 300_000 + 2_000 * 3_750_000 + 500 * 15_000_000;
        assert_eq!(c.picos(), expected);
        assert_eq!(c.to_string(), "$0.0210");
        // Web searches: per search, apart from tokens ($10 per 1,000 is a
        // cent each, 10^10 picodollars).
        let p = p.with_web_search(10.0).unwrap();
        let searched = p.cost(&TokenCounts {
            web_searches: 3,
            ..tokens(13_000, 10_000, 2_000, 500)
        });
        assert_eq!(searched.picos(), expected + 3 * 10_000_000_000);
        let table = PriceTable::default();
        let fee = |m: &str, k| table.lookup("p", k, m).map(|(p, _)| p.web_search);
        assert_eq!(
            fee("claude-sonnet-4-5", ProviderKind::Anthropic),
            Some(10_000_000_000)
        );
        assert_eq!(
            fee("gpt-4o-2024-08-06", ProviderKind::Openai),
            Some(25_000_000_000)
        );
        assert_eq!(fee("gpt-5", ProviderKind::Openai), Some(10_000_000_000));
        // The sum of parts is the cost of the whole, exactly.
        let a = p.cost(&tokens(7_000, 5_000, 1_000, 200));
        let b = p.cost(&tokens(6_000, 5_000, 1_000, 300));
        assert_eq!([a, b].into_iter().sum::<Usd>(), c);
    }

    #[test]
    fn lookup_prefers_the_most_specific_configured_key_then_the_built_in_table() {
        let mine = Price::per_million(1.0, 1.0, 1.0, 1.0).unwrap();
        let wild = Price::per_million(2.0, 2.0, 2.0, 2.0).unwrap();
        let bare = Price::per_million(4.0, 4.0, 4.0, 4.0).unwrap();
        let table = PriceTable::new(BTreeMap::from([
            ("azure:gpt-4o".to_owned(), mine),
            ("ollama:*".to_owned(), wild),
            ("gpt-4o-mini".to_owned(), bare),
        ]));
        let open = ProviderKind::Openai;
        assert_eq!(
            table.lookup("azure", open, "gpt-4o"),
            Some((mine, PriceSource::ConfigModelRef))
        );
        assert_eq!(
            table.lookup("ollama", open, "llama3:8b"),
            Some((wild, PriceSource::ConfigProvider))
        );
        assert_eq!(
            table.lookup("openai", open, "gpt-4o-mini-2024-07-18"),
            Some((bare, PriceSource::ConfigModel))
        );
        let (p, src) = table.lookup("openai", open, "gpt-4o-2024-08-06").unwrap();
        assert_eq!(
            (p.input, p.cached_input, p.output, src),
            (2_500_000, 1_250_000, 10_000_000, PriceSource::BuiltIn)
        );
        let (p, _) = table
            .lookup(
                "anthropic",
                ProviderKind::Anthropic,
                "claude-sonnet-4-20250514",
            )
            .unwrap();
        assert_eq!(p.cache_write_input, 3_750_000);
        // Unknown hosted models and scripted ones are unpriced; local is free.
        assert_eq!(table.lookup("openai", open, "gpt-4o-audio-preview"), None);
        assert_eq!(
            table.lookup("scripted", ProviderKind::Scripted, "s.yaml"),
            None
        );
        let (free, src) = table
            .lookup("local", ProviderKind::Local, "smollm2")
            .unwrap();
        assert_eq!(
            (free.cost(&tokens(10, 0, 0, 10)), src),
            (Usd::ZERO, PriceSource::Local)
        );
    }

    #[test]
    fn snapshots_cut_only_dates() {
        assert_eq!(snapshot_of("gpt-4o-2024-08-06"), Some("gpt-4o"));
        assert_eq!(
            snapshot_of("claude-sonnet-4-20250514"),
            Some("claude-sonnet-4")
        );
        assert_eq!(
            snapshot_of("claude-3-7-sonnet-latest"),
            Some("claude-3-7-sonnet")
        );
        assert_eq!(snapshot_of("gpt-4o-mini"), None);
        assert_eq!(snapshot_of("o3"), None);
    }

    #[test]
    fn entries_check_every_amount() {
        let e = PriceEntry {
            input: 2.0,
            output: -1.0,
            cached_input: None,
            cache_write: None,
            web_search: None,
        };
        assert_eq!(e.price(), Err("output"));
        let e = PriceEntry {
            input: 2.0,
            output: 8.0,
            cached_input: Some(0.5),
            cache_write: None,
            web_search: Some(-3.0),
        };
        assert_eq!(e.price(), Err("web_search"));
        let e = PriceEntry {
            web_search: None,
            ..e
        };
        let p = e.price().unwrap();
        assert_eq!((p.cached_input, p.cache_write_input), (500_000, 2_000_000));
        assert_eq!(p.web_search, 0, "unset: searches cost only their tokens");
        assert!(
            is_price_key("openai:gpt-4o") && is_price_key("ollama:*") && is_price_key("gpt-4o")
        );
        assert!(!is_price_key("") && !is_price_key(":x") && !is_price_key("a b"));
    }
}
