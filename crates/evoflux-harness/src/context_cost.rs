//! What rewriting the history costs, in priced input tokens: the model the
//! `tool-context-projection` owner decides its epochs with.
//!
//! Turning an old tool result into a receipt saves its tokens on every
//! later call, but a provider's prompt cache serves only an unchanged
//! prefix: the call that rewrites a result pays again, at the uncached (or
//! cache-write) price, for everything after it. So the history is
//! rewritten rarely and in batches — *epochs* — and only when it pays.
//!
//! When it pays is a rent-or-buy question whose answer depends on a future
//! nobody knows (how many calls the session still makes). Carrying the
//! results that could be receipts costs *rent* on every call: their tokens
//! at the cache-read price. Rewriting them *buys* the saving once, at the
//! price of sending the tail after the first rewritten result again. The
//! break-even rule — rewrite as soon as the rent paid since the last epoch
//! reaches what the rewrite costs now — never pays more than twice the best
//! schedule in hindsight, needs no guess of the session's length, and on
//! the benchmark sessions lands within 2% of the best schedule (see
//! docs/BENCHMARKS.md, "Context economics").
//!
//! The decision is a pure function of the transcript: the epochs are
//! replayed over the batches every request, so a resumed or replayed
//! session sends the same requests it sent before.
//!
//! What differs between providers is data, not code: [`CacheRules`] (how a
//! wire caches: automatic prefixes or explicit breakpoints, granularity,
//! minimum size, lifetime) and [`CacheRates`] (what a cached and an
//! uncached token cost against a plain one, from the price table).

use std::time::Duration;

use evoflux_core::config::ProviderKind;
use evoflux_core::price::Price;

/// How a provider's prompt cache finds a prefix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CacheKind {
    /// Every prompt is cached; a request reads its longest earlier prefix,
    /// in steps of `granularity_tokens` (OpenAI: 128).
    Automatic { granularity_tokens: u64 },
    /// Only prefixes ending at a marked block are written; a request reads
    /// one it can reach from one of its own marks within the wire's
    /// lookback (Anthropic: four marks,
    /// [`evoflux_model::anthropic::MAX_CACHE_BREAKPOINTS`], and 20 blocks).
    Breakpoints,
    /// The prefix is reused on the machine itself (a local model's
    /// key-value cache): nothing is priced, only prefill time is spent.
    Local,
}

/// A longer cache lifetime a wire sells at a higher write price.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LongRetention {
    pub ttl: Duration,
    /// A long-lived write's price against a plain input token (Anthropic's
    /// one hour: 2×).
    pub write_rate: f64,
}

/// One wire's prompt-cache rules, as data.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CacheRules {
    pub kind: CacheKind,
    /// Shorter prefixes are never cached (OpenAI and Anthropic: 1,024).
    pub min_cacheable_tokens: u64,
    /// How long an unused entry lives (five minutes on both hosted wires).
    pub ttl: Duration,
    pub long: Option<LongRetention>,
    /// Rates assumed when the model has no price in the table.
    pub default_rates: CacheRates,
}

impl CacheRules {
    /// The rules of the wire a provider kind speaks. A scripted provider
    /// stands in for a hosted one in tests and demos, so it follows
    /// OpenAI's rules.
    pub const fn for_provider(kind: ProviderKind) -> CacheRules {
        match kind {
            ProviderKind::Openai | ProviderKind::Scripted => CacheRules {
                kind: CacheKind::Automatic {
                    granularity_tokens: 128,
                },
                min_cacheable_tokens: 1_024,
                ttl: Duration::from_secs(5 * 60),
                long: None,
                // Between GPT-5's 10% and GPT-4o's 50%.
                default_rates: CacheRates {
                    read: 0.25,
                    miss: 1.0,
                },
            },
            ProviderKind::Anthropic => CacheRules {
                kind: CacheKind::Breakpoints,
                min_cacheable_tokens: 1_024,
                ttl: Duration::from_secs(5 * 60),
                long: Some(LongRetention {
                    ttl: Duration::from_secs(60 * 60),
                    write_rate: 2.0,
                }),
                default_rates: CacheRates {
                    read: 0.1,
                    miss: 1.25,
                },
            },
            ProviderKind::Local => CacheRules {
                kind: CacheKind::Local,
                min_cacheable_tokens: 0,
                ttl: Duration::MAX,
                long: None,
                default_rates: CacheRates {
                    read: 0.0,
                    miss: 1.0,
                },
            },
        }
    }

    /// The rates of a model at `price` on this wire (the wire's defaults
    /// for an unpriced model or one priced at nothing).
    pub fn rates(&self, price: Option<&Price>) -> CacheRates {
        match (self.kind, price) {
            (CacheKind::Local, _) | (_, None) => self.default_rates,
            (_, Some(p)) if p.input == 0 => self.default_rates,
            (CacheKind::Automatic { .. }, Some(p)) => CacheRates {
                read: p.cached_input as f64 / p.input as f64,
                miss: 1.0,
            },
            (CacheKind::Breakpoints, Some(p)) => CacheRates {
                read: p.cached_input as f64 / p.input as f64,
                miss: p.cache_write_input as f64 / p.input as f64,
            },
        }
    }

    /// The tokens of a `prefix`-token prefix a request can read: rounded
    /// down to the granularity, none below the minimum.
    pub fn cacheable(&self, prefix: u64) -> u64 {
        if prefix < self.min_cacheable_tokens {
            return 0;
        }
        match self.kind {
            CacheKind::Automatic { granularity_tokens } if granularity_tokens > 0 => {
                prefix / granularity_tokens * granularity_tokens
            }
            CacheKind::Automatic { .. } | CacheKind::Breakpoints | CacheKind::Local => prefix,
        }
    }

    /// Whether the long lifetime pays for a session whose last pause
    /// between calls was `gap`: the entry would have expired under the
    /// short lifetime but not under the long one, so the next such pause
    /// reads at the cache price instead of writing again.
    pub fn long_pays(&self, gap: Duration) -> bool {
        self.long
            .is_some_and(|long| gap > self.ttl && gap <= long.ttl)
    }
}

/// What a token costs against a plain uncached input token.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CacheRates {
    /// A token read from the cache (0.1 for GPT-5 and Anthropic, 0.5 for
    /// GPT-4o).
    pub read: f64,
    /// A token the cache could not serve: plain input (1.0), or written to
    /// the cache where writes are billed (Anthropic: 1.25).
    pub miss: f64,
}

/// One tool-call batch of a transcript, in estimated tokens: the
/// assistant message with its calls and their results, as sent exact and
/// as sent with every result that may become a receipt turned into one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct BatchTokens {
    pub exact: u64,
    pub projected: u64,
}

impl BatchTokens {
    pub fn saving(self) -> u64 {
        self.exact.saturating_sub(self.projected)
    }
}

/// Where a request's history stands: the batches before `boundary` are
/// sent with receipts; why it moved last.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Epochs {
    pub boundary: usize,
    /// How many times the boundary moved (rewrites of the history).
    pub rewrites: u32,
    /// The rent paid since the last epoch, in priced tokens.
    pub rent: f64,
}

/// The input to the epoch replay.
#[derive(Debug, Clone, Copy)]
pub struct EpochModel<'a> {
    pub rules: &'a CacheRules,
    pub rates: CacheRates,
    /// Tokens before the first batch (system prompt, tools, the opening
    /// messages).
    pub head_tokens: u64,
    /// The batches that always stay exact at the end.
    pub keep_recent: usize,
}

impl EpochModel<'_> {
    /// Replays the epochs over `batches`, oldest first, as the requests of
    /// the session made them: one request after each batch.
    pub fn replay(&self, batches: &[BatchTokens]) -> Epochs {
        let mut epochs = Epochs::default();
        for sent in 1..=batches.len() {
            self.step(&mut epochs, &batches[..sent]);
        }
        epochs
    }

    /// The decision of the request that carries `batches`: move the
    /// boundary to just before the recent batches, or keep it.
    fn step(&self, epochs: &mut Epochs, batches: &[BatchTokens]) {
        let candidate = batches.len().saturating_sub(self.keep_recent);
        if candidate <= epochs.boundary {
            return;
        }
        let movable = &batches[epochs.boundary..candidate];
        let saving: u64 = movable.iter().map(|b| b.saving()).sum();
        if saving == 0 {
            // Nothing there would change: moving costs nothing.
            epochs.boundary = candidate;
            return;
        }
        let rent_now = self.rates.read * saving as f64;
        let cost = self.rewrite_cost(batches, epochs.boundary, candidate);
        epochs.rent += rent_now;
        if epochs.rent >= cost {
            epochs.boundary = candidate;
            epochs.rewrites += 1;
            epochs.rent = 0.0;
        }
    }

    /// What rewriting batches `from..to` costs on this request beyond not
    /// rewriting them: the previous request's tail from the first
    /// rewritten batch on is no longer read from the cache but sent again
    /// (and written, where writes are billed), in its new form; this
    /// request's own saving on those results is taken off.
    pub fn rewrite_cost(&self, batches: &[BatchTokens], from: usize, to: usize) -> f64 {
        let previous = batches.len().saturating_sub(1);
        let before: u64 =
            self.head_tokens + batches[..from].iter().map(|b| b.projected).sum::<u64>();
        let previous_len: u64 = before
            + batches[from..previous.max(from)]
                .iter()
                .enumerate()
                .map(|(i, b)| if from + i < to { b.projected } else { b.exact })
                .sum::<u64>();
        let cached_before = self.rules.cacheable(before);
        let cached_previous = self.rules.cacheable(previous_len);
        let resent = cached_previous.saturating_sub(cached_before);
        let saving_now: u64 = batches[from..to].iter().map(|b| b.saving()).sum();
        (self.rates.miss - self.rates.read) * resent as f64 - self.rates.read * saving_now as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn openai(read: f64) -> (CacheRules, CacheRates) {
        let rules = CacheRules::for_provider(ProviderKind::Openai);
        (rules, CacheRates { read, miss: 1.0 })
    }

    /// The thirty-step benchmark's shape: 14 KB results (3,600 tokens)
    /// whose receipts take 200.
    fn reads(n: usize) -> Vec<BatchTokens> {
        vec![
            BatchTokens {
                exact: 3_660,
                projected: 260
            };
            n
        ]
    }

    #[test]
    fn nothing_is_rewritten_while_the_rent_is_below_the_rewrite() {
        let (rules, rates) = openai(0.1);
        let model = EpochModel {
            rules: &rules,
            rates,
            head_tokens: 3_700,
            keep_recent: 3,
        };
        // Four batches: one result could be a receipt, but rewriting it
        // would send the three exact ones again for a saving of 340
        // tokens a call.
        assert_eq!(model.replay(&reads(4)).boundary, 0);
        let e = model.replay(&reads(30));
        assert!(e.boundary > 0 && e.boundary <= 27, "{e:?}");
        // Epochs, not a boundary that follows every batch.
        assert!(e.rewrites >= 2 && e.rewrites <= 6, "{e:?}");
    }

    #[test]
    fn a_dearer_cache_read_rewrites_more_often() {
        let count = |read| {
            let (rules, rates) = openai(read);
            EpochModel {
                rules: &rules,
                rates,
                head_tokens: 3_700,
                keep_recent: 3,
            }
            .replay(&reads(30))
            .rewrites
        };
        assert!(count(0.5) > count(0.25), "{} {}", count(0.5), count(0.25));
        assert!(count(0.25) > count(0.1), "{} {}", count(0.25), count(0.1));
    }

    #[test]
    fn a_free_cache_read_never_pays_for_a_rewrite() {
        let rules = CacheRules::for_provider(ProviderKind::Local);
        let model = EpochModel {
            rules: &rules,
            rates: rules.rates(None),
            head_tokens: 3_700,
            keep_recent: 3,
        };
        assert_eq!(model.replay(&reads(60)).rewrites, 0);
    }

    #[test]
    fn small_results_move_the_boundary_for_free() {
        let (rules, rates) = openai(0.1);
        let model = EpochModel {
            rules: &rules,
            rates,
            head_tokens: 3_700,
            keep_recent: 3,
        };
        let small = vec![
            BatchTokens {
                exact: 90,
                projected: 90
            };
            10
        ];
        let e = model.replay(&small);
        assert_eq!((e.boundary, e.rewrites), (7, 0));
    }

    #[test]
    fn a_prompt_below_the_cacheable_minimum_costs_nothing_to_rewrite() {
        let (rules, rates) = openai(0.5);
        let model = EpochModel {
            rules: &rules,
            rates,
            head_tokens: 100,
            keep_recent: 1,
        };
        let batches = vec![
            BatchTokens {
                exact: 300,
                projected: 50
            };
            3
        ];
        // Nothing was cached (under 1,024 tokens): the rewrite only saves.
        assert!(model.rewrite_cost(&batches, 0, 2) < 0.0);
        assert_eq!(model.replay(&batches).boundary, 2);
    }

    #[test]
    fn rates_come_from_the_price_table_or_the_wires_defaults() {
        let gpt5 = Price::per_million(1.25, 0.125, 1.25, 10.0).unwrap();
        let sonnet = Price::per_million(3.0, 0.30, 3.75, 15.0).unwrap();
        let openai = CacheRules::for_provider(ProviderKind::Openai);
        let anthropic = CacheRules::for_provider(ProviderKind::Anthropic);
        let r = openai.rates(Some(&gpt5));
        assert!((r.read - 0.1).abs() < 1e-9 && (r.miss - 1.0).abs() < 1e-9);
        let r = anthropic.rates(Some(&sonnet));
        assert!((r.read - 0.1).abs() < 1e-9 && (r.miss - 1.25).abs() < 1e-9);
        assert_eq!(openai.rates(None), openai.default_rates);
        assert_eq!(openai.cacheable(1_000), 0);
        assert_eq!(openai.cacheable(1_300), 1_280);
    }

    #[test]
    fn the_long_lifetime_pays_only_for_pauses_between_the_two() {
        let anthropic = CacheRules::for_provider(ProviderKind::Anthropic);
        assert!(!anthropic.long_pays(Duration::from_secs(30)));
        assert!(anthropic.long_pays(Duration::from_secs(10 * 60)));
        assert!(!anthropic.long_pays(Duration::from_secs(2 * 60 * 60)));
        let openai = CacheRules::for_provider(ProviderKind::Openai);
        assert!(!openai.long_pays(Duration::from_secs(10 * 60)));
    }
}
