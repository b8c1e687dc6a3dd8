//! Clipping of overlong lines, shared by `read` and `grep`: one line of
//! minified code must not use up the whole output budget.

use std::borrow::Cow;

/// Characters of one line shown at most.
pub const MAX_LINE_CHARS: usize = 2000;

/// The line, or its first [`MAX_LINE_CHARS`] characters with a marker
/// saying how long it really is.
pub(crate) fn clip_line(line: &str) -> Cow<'_, str> {
    match line.char_indices().nth(MAX_LINE_CHARS) {
        None => Cow::Borrowed(line),
        Some((cut, _)) => Cow::Owned(format!(
            "{}… [line truncated: {} characters]",
            &line[..cut],
            line.chars().count()
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
