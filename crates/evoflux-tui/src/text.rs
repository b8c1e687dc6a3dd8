//! Plain text made safe and short for one row of the screen: what every
//! widget that shows the model's or the user's words on one line uses
//! (titles, summaries, details, diff headers).

use unicode_segmentation::UnicodeSegmentation as _;
use unicode_width::UnicodeWidthStr as _;

/// `s` on one row: line breaks and tabs become spaces, other control
/// characters are dropped, so none reaches the terminal.
pub fn one_line(s: &str) -> String {
    s.chars()
        .filter_map(|c| match c {
            '\n' | '\r' | '\t' => Some(' '),
            c if c.is_control() => None,
            c => Some(c),
        })
        .collect()
}

/// `s` cut to `cells` terminal cells, by grapheme, the last cell a `…`
/// when cut (nothing at all when `cells` is 0).
pub fn clip(s: &str, cells: usize) -> String {
    if s.width() <= cells {
        return s.to_owned();
    }
    if cells == 0 {
        return String::new();
    }
    let mut out = String::new();
    let mut used = 0;
    for g in s.graphemes(true) {
        let w = g.width();
        if used + w + 1 > cells {
            break;
        }
        used += w;
        out.push_str(g);
    }
    out.push('…');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clipping_counts_cells_and_keeps_graphemes_whole() {
        assert_eq!(clip("hello", 5), "hello");
        assert_eq!(clip("hello", 4), "hel…");
        assert_eq!(clip("日本語", 4), "日…");
        assert_eq!(clip("e\u{301}tude", 2), "e\u{301}…");
        assert_eq!(clip("hello", 0), "");
        assert_eq!(one_line("a\nb\tc\u{1b}[31m"), "a b c[31m");
    }
}
