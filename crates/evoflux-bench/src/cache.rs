//! The simulated prompt caches of the providers.
//!
//! Tokens are estimated as canonical bytes / 4 (see [`crate::prompt`] for
//! the canonical bytes); the figures are comparable between harnesses,
//! not equal to a real tokenizer's.
//!
//! **OpenAI** (Chat Completions and Responses) caches automatically: every
//! prompt it has seen can serve a later one. A request's cached tokens are
//! the longest common prefix, in canonical bytes, with any earlier prompt
//! of the session, rounded down to a multiple of [`OPENAI_INCREMENT`]
//! tokens, and nothing below [`MIN_CACHED_TOKENS`] (OpenAI's documented
//! 1,024-token minimum and 128-token increments). Routing by
//! `prompt_cache_key` and cache expiry are not simulated: the fake behaves
//! like a cache that always lands on the same machine within a run.
//!
//! **Anthropic** caches only where the request asks: a `cache_control`
//! breakpoint writes the prefix ending at its block. A later request reads
//! the longest prefix that an earlier request wrote, found by looking from
//! each of its own breakpoints back over at most [`ANTHROPIC_LOOKBACK`]
//! block boundaries (the API's lookback window). Cache writes are the
//! tokens from the end of that read up to the request's last breakpoint;
//! everything after the last breakpoint is plain input. Prefixes shorter
//! than [`MIN_CACHED_TOKENS`] are never written (the API's minimum for
//! Sonnet and Opus models). Time-to-live is not simulated.

use std::collections::HashSet;
use std::hash::{DefaultHasher, Hash, Hasher};

use crate::prompt::Prompt;

/// The shortest prefix either provider caches.
pub const MIN_CACHED_TOKENS: u64 = 1024;
/// OpenAI reports cache hits in steps of this many tokens.
pub const OPENAI_INCREMENT: u64 = 128;
/// How many block boundaries before a breakpoint Anthropic checks for an
/// earlier cache entry.
pub const ANTHROPIC_LOOKBACK: usize = 20;

/// The estimated tokens of a whole prompt of `bytes` canonical bytes.
pub fn tokens(bytes: usize) -> u64 {
    (bytes as u64).div_ceil(4)
}

/// The whole tokens inside a prefix of `bytes` bytes (never more than
/// [`tokens`] of the whole).
fn prefix_tokens(bytes: usize) -> u64 {
    bytes as u64 / 4
}

/// What one request's prompt cost.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CacheUsage {
    /// All input tokens of the prompt (cached ones included).
    pub input: u64,
    /// Read from the cache.
    pub cached: u64,
    /// Written to the cache (Anthropic only).
    pub written: u64,
}

/// The cache of one session (one fake server run).
#[derive(Debug, Default)]
pub struct PrefixCache {
    /// Every prompt an OpenAI wire has sent, canonical bytes.
    openai_seen: Vec<Vec<u8>>,
    /// Prefixes Anthropic breakpoints wrote: (byte length, chained hash).
    anthropic_written: HashSet<(usize, u64)>,
}

/// Length of the common prefix of `a` and `b`, comparing 256-byte chunks
/// as slices first so it stays fast in a debug build.
pub fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    let n = a.len().min(b.len());
    let mut i = 0;
    const CHUNK: usize = 256;
    while i + CHUNK <= n && a[i..i + CHUNK] == b[i..i + CHUNK] {
        i += CHUNK;
    }
    while i < n && a[i] == b[i] {
        i += 1;
    }
    i
}

impl PrefixCache {
    /// Accounts an OpenAI request (Chat Completions or Responses) and
    /// remembers its prompt.
    pub fn openai(&mut self, prompt: &Prompt) -> CacheUsage {
        let bytes = prompt.canonical();
        let longest = self
            .openai_seen
            .iter()
            .map(|seen| common_prefix(seen, &bytes))
            .max()
            .unwrap_or(0);
        let common = prefix_tokens(longest);
        let cached = if common >= MIN_CACHED_TOKENS {
            common / OPENAI_INCREMENT * OPENAI_INCREMENT
        } else {
            0
        };
        self.openai_seen.push(bytes.clone());
        CacheUsage {
            input: tokens(bytes.len()),
            cached,
            written: 0,
        }
    }

    /// Accounts an Anthropic request and writes its breakpoints' prefixes.
    pub fn anthropic(&mut self, prompt: &Prompt) -> CacheUsage {
        // The end offset and chained hash of the prefix ending at each
        // block, computed in one pass.
        let mut ends = Vec::with_capacity(prompt.blocks.len());
        let mut end = 0usize;
        let mut chain = 0u64;
        for b in &prompt.blocks {
            let mut h = DefaultHasher::new();
            chain.hash(&mut h);
            b.bytes.hash(&mut h);
            chain = h.finish();
            end += b.bytes.len();
            ends.push((end, chain));
        }
        let breakpoints: Vec<usize> = prompt
            .blocks
            .iter()
            .enumerate()
            .filter(|(_, b)| b.breakpoint)
            .map(|(i, _)| i)
            .collect();
        let read = breakpoints
            .iter()
            .flat_map(|&b| (b.saturating_sub(ANTHROPIC_LOOKBACK - 1)..=b).rev())
            .filter(|&i| self.anthropic_written.contains(&ends[i]))
            .map(|i| ends[i].0)
            .max()
            .unwrap_or(0);
        let last = breakpoints.last().map(|&b| ends[b].0).unwrap_or(0);
        let cacheable = |bytes: usize| prefix_tokens(bytes) >= MIN_CACHED_TOKENS;
        let written = if last > read && cacheable(last) {
            prefix_tokens(last) - prefix_tokens(read)
        } else {
            0
        };
        for &b in &breakpoints {
            if cacheable(ends[b].0) {
                self.anthropic_written.insert(ends[b]);
            }
        }
        CacheUsage {
            input: tokens(end),
            cached: prefix_tokens(read),
            written,
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::Wire;
    use serde_json::{Value, json};

    /// A text of exactly `n` bytes.
    fn text(n: usize, fill: char) -> String {
        std::iter::repeat_n(fill, n).collect()
    }

    fn chat(system: &str, messages: &[Value]) -> Prompt {
        let mut all = vec![json!({"role": "system", "content": system})];
        all.extend_from_slice(messages);
        Prompt::parse(Wire::Chat, &json!({"messages": all})).unwrap()
    }

    #[test]
    fn the_same_prefix_twice_is_cached_up_to_the_last_whole_increment() {
        let mut cache = PrefixCache::default();
        let system = text(10_000, 's');
        let first = chat(&system, &[json!({"role": "user", "content": "one"})]);
        let u = cache.openai(&first);
        assert_eq!(u.cached, 0, "nothing was seen before");
        assert_eq!(u.input, tokens(first.canonical().len()));

        let second = chat(&system, &[json!({"role": "user", "content": "two"})]);
        let u = cache.openai(&second);
        // The prompts agree up to the user message's text.
        let common = common_prefix(&first.canonical(), &second.canonical());
        let expected = (common as u64 / 4) / 128 * 128;
        assert!(common > 10_000 && common < second.canonical().len());
        assert_eq!(u.cached, expected);
        assert_eq!(u.cached % 128, 0);
        assert!(u.cached >= 2432, "{u:?}");
        assert!(u.cached < u.input);
    }

    #[test]
    fn a_changed_system_prompt_shares_no_cache() {
        let mut cache = PrefixCache::default();
        let user = json!({"role": "user", "content": text(20_000, 'u')});
        cache.openai(&chat("system A", std::slice::from_ref(&user)));
        let u = cache.openai(&chat("system B", &[user]));
        assert_eq!(u.cached, 0);
        assert!(u.input > 5_000);
    }

    #[test]
    fn a_short_common_prefix_is_below_the_minimum() {
        let mut cache = PrefixCache::default();
        let system = text(3_000, 's'); // 750 tokens
        cache.openai(&chat(&system, &[json!({"role": "user", "content": "a"})]));
        let u = cache.openai(&chat(&system, &[json!({"role": "user", "content": "b"})]));
        assert_eq!(u.cached, 0);
    }

    fn anthropic(system: &str, messages: Value) -> Prompt {
        Prompt::parse(
            Wire::Anthropic,
            &json!({
                "system": [{"type": "text", "text": system, "cache_control": {"type": "ephemeral"}}],
                "messages": messages,
            }),
        )
        .unwrap()
    }

    fn user(text: &str, mark: bool) -> Value {
        let mut block = json!({"type": "text", "text": text});
        if mark {
            block["cache_control"] = json!({"type": "ephemeral"});
        }
        json!({"role": "user", "content": [block]})
    }

    #[test]
    fn anthropic_reads_only_what_an_earlier_breakpoint_wrote() {
        let mut cache = PrefixCache::default();
        let system = text(8_000, 's');
        let big = text(8_000, 'a');
        // First call: writes the system prefix and the whole conversation.
        let first = anthropic(&system, json!([user(&big, true)]));
        let u = cache.anthropic(&first);
        let whole = first.canonical().len();
        assert_eq!(u.cached, 0);
        assert_eq!(u.written, whole as u64 / 4);
        assert_eq!(u.input, tokens(whole));

        // Second call extends the conversation; its newest message carries
        // the breakpoint. It reads everything the first call wrote.
        let reply =
            json!({"role": "assistant", "content": [{"type": "text", "text": text(6_000, 'r')}]});
        let second = anthropic(
            &system,
            json!([user(&big, false), reply.clone(), user("more", true)]),
        );
        let u = cache.anthropic(&second);
        assert_eq!(u.cached, whole as u64 / 4);
        let second_len = second.canonical().len();
        assert_eq!(u.written, second_len as u64 / 4 - whole as u64 / 4);

        // Without a breakpoint after the system prompt nothing past it is
        // read, even though the bytes match: only breakpoints read.
        let mut unmarked = PrefixCache::default();
        unmarked.anthropic(&first);
        let third = Prompt::parse(
            Wire::Anthropic,
            &json!({
                "system": [{"type": "text", "text": system}],
                "messages": [user(&big, false), reply, user("more", false)],
            }),
        )
        .unwrap();
        let u = unmarked.anthropic(&third);
        assert_eq!((u.cached, u.written), (0, 0));
    }

    #[test]
    fn anthropic_reads_the_system_prefix_when_the_conversation_differs() {
        let mut cache = PrefixCache::default();
        let system = text(8_000, 's');
        cache.anthropic(&anthropic(&system, json!([user(&text(5_000, 'a'), true)])));
        let other = anthropic(&system, json!([user(&text(5_000, 'b'), true)]));
        let u = cache.anthropic(&other);
        // The system block (with its "system:" prefix) is the shared,
        // written prefix.
        assert_eq!(u.cached, other.blocks[0].bytes.len() as u64 / 4);
        assert_eq!(u.written, other.canonical().len() as u64 / 4 - u.cached);
    }

    #[test]
    fn anthropic_writes_nothing_below_the_minimum() {
        let mut cache = PrefixCache::default();
        let u = cache.anthropic(&anthropic("short", json!([user("hi", true)])));
        assert_eq!((u.cached, u.written), (0, 0));
    }

    #[test]
    fn anthropic_looks_back_at_most_twenty_blocks_from_a_breakpoint() {
        let system = text(8_000, 's');
        let first = json!([user(&text(4_000, 'a'), true)]);
        // The same conversation, `extra` short blocks longer, marked only
        // at its end and not after the system prompt.
        let later = |extra: usize| {
            let mut blocks = vec![json!({"type": "text", "text": text(4_000, 'a')})];
            for i in 0..extra {
                let mut b = json!({"type": "text", "text": format!("note {i}")});
                if i + 1 == extra {
                    b["cache_control"] = json!({"type": "ephemeral"});
                }
                blocks.push(b);
            }
            Prompt::parse(
                Wire::Anthropic,
                &json!({
                    "system": [{"type": "text", "text": system}],
                    "messages": [{"role": "user", "content": blocks}],
                }),
            )
            .unwrap()
        };
        let written = |cache: &mut PrefixCache| {
            let p = anthropic(&system, first.clone());
            cache.anthropic(&p);
            p.canonical().len() as u64 / 4
        };
        // 19 blocks later: the written prefix ends 19 boundaries before
        // the breakpoint, inside the window of 20 (the breakpoint's own
        // and 19 before it).
        let mut near = PrefixCache::default();
        let whole = written(&mut near);
        assert_eq!(near.anthropic(&later(19)).cached, whole);
        // 20 blocks later it is out of reach, and so is the system
        // prompt's prefix: nothing is read.
        let mut far = PrefixCache::default();
        written(&mut far);
        assert_eq!(far.anthropic(&later(20)).cached, 0);
    }
}
