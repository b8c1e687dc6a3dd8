//! Clipping of overlong lines, shared by `read` and `grep`: one line of
//! minified code must not use up the whole output budget.

use std::borrow::Cow;

/// Characters of one line shown at most.
pub const MAX_LINE_CHARS: usize = 2000;

/// The line, or its first [`MAX_LINE_CHARS`] characters with a marker
/// saying how long it really is.
pub(crate) fn clip_line(line: &str) -> Cow<'_, str> {
    clip_line_of(line, line.chars().count())
}

/// [`clip_line`] for a line of which only the start was kept: `total` is
/// how many characters the whole line has.
pub(crate) fn clip_line_of(line: &str, total: usize) -> Cow<'_, str> {
    match line.char_indices().nth(MAX_LINE_CHARS) {
        None if total <= MAX_LINE_CHARS => Cow::Borrowed(line),
        None => Cow::Owned(format!("{line}… [line truncated: {total} characters]")),
        Some((cut, _)) => Cow::Owned(format!(
            "{}… [line truncated: {total} characters]",
            &line[..cut]
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_lines_are_untouched() {
        assert_eq!(clip_line("abc"), "abc");
        let exact = "é".repeat(MAX_LINE_CHARS);
        assert_eq!(clip_line(&exact), exact.as_str());
    }

    #[test]
    fn long_lines_are_cut_on_a_char_boundary_with_a_marker() {
        let long = "é".repeat(MAX_LINE_CHARS + 5);
        let clipped = clip_line(&long);
        assert!(clipped.starts_with(&"é".repeat(MAX_LINE_CHARS)));
        assert!(clipped.ends_with(&format!(
            "… [line truncated: {} characters]",
            MAX_LINE_CHARS + 5
        )));
    }
}
