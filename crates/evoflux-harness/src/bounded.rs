//! Bounded views of long text, shared by the context owners (offload,
//! projection, compaction). Every cut is made on a character boundary and
//! says how much it left out: nothing is ever dropped silently.

/// The first `chars` characters of `text`.
pub fn head(text: &str, chars: usize) -> &str {
    match text.char_indices().nth(chars) {
        Some((at, _)) => &text[..at],
        None => text,
    }
}

/// The last `chars` characters of `text`.
pub fn tail(text: &str, chars: usize) -> &str {
    if chars == 0 {
        return "";
    }
    match text.char_indices().rev().nth(chars - 1) {
        Some((at, _)) => &text[at..],
        None => text,
    }
}

/// Characters in `text`, counted only when its byte length could exceed
/// `limit` (ASCII-heavy tool output is mostly decided by the byte length).
pub fn chars_over(text: &str, limit: usize) -> Option<usize> {
    if text.len() <= limit {
        return None;
    }
    let n = text.chars().count();
    (n > limit).then_some(n)
}

/// `text` cut to a head and a tail of at most `head_chars` + `tail_chars`
/// characters, joined by a line that names the omitted byte count.
pub fn head_tail(text: &str, head_chars: usize, tail_chars: usize) -> String {
    let h = head(text, head_chars);
    let rest = &text[h.len()..];
    let t = tail(rest, tail_chars);
    let omitted = rest.len() - t.len();
    if omitted == 0 {
        return text.to_owned();
    }
    format!("{h}\n... {omitted} bytes omitted ...\n{t}")
}

/// A rough token estimate (4 bytes per token), used to compare a prompt
/// with the provider's context window before sending it.
pub const fn estimate_tokens(bytes: usize) -> u64 {
    (bytes as u64).div_ceil(4)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cuts_on_char_boundaries() {
        let s = "héllo wörld";
        assert_eq!(head(s, 2), "hé");
        assert_eq!(tail(s, 3), "rld");
        assert_eq!(tail(s, 5), "wörld");
        assert_eq!(tail(s, 99), s);
        assert_eq!(head(s, 99), s);
        assert_eq!(tail(s, 0), "");
    }

    #[test]
    fn head_tail_names_what_it_left_out() {
        let s = "a".repeat(100);
        let v = head_tail(&s, 10, 20);
        assert!(v.starts_with(&"a".repeat(10)));
        assert!(v.contains("... 70 bytes omitted ..."), "{v}");
        assert_eq!(head_tail("short", 10, 10), "short");
    }

    #[test]
    fn counts_chars_only_past_the_limit() {
        assert_eq!(chars_over("abc", 3), None);
        assert_eq!(chars_over("abcd", 3), Some(4));
        assert_eq!(chars_over("éé", 2), None);
    }
}
