//! What an `edit` or `write` changed, as a unified diff a front end draws.
//!
//! The file tools answer the model with one line ("Replaced 1 occurrence
//! in …"); a person watching wants to see the change itself. The diff is
//! computed here, where both texts are at hand — on the disk and for a
//! file an editor holds — and travels as the result's metadata
//! ([`FileChange`]), which front ends read and the model never does.
//!
//! Bounds: a text over [`DIFF_MAX_INPUT_BYTES`] (or binary: a NUL byte,
//! or not UTF-8) gets no diff at all, a diff longer than
//! [`DIFF_LIMIT_BYTES`] is cut at a line's end and marked `truncated`
//! (the counts still cover the whole change), and the diff gives up on
//! the minimal edit script after [`DIFF_TIMEOUT`], still correct.

use std::fmt::{self, Write as _};
use std::time::Duration;

pub use evoflux_protocol::metadata::FileChange;
use similar::{Algorithm, DiffTag, TextDiff};

/// Bytes of diff text kept; the rest is cut at a line's end.
pub const DIFF_LIMIT_BYTES: usize = 64 * 1024;
/// A text (before or after) larger than this is not diffed: its change
/// has no [`FileChange`].
pub const DIFF_MAX_INPUT_BYTES: usize = 4 * 1024 * 1024;
/// How long the diff may search for the smallest edit script before it
/// settles for a coarser (still correct) one.
pub const DIFF_TIMEOUT: Duration = Duration::from_millis(500);
/// Lines of unchanged context around each hunk.
const CONTEXT_LINES: usize = 3;

/// The change of the file shown as `shown` from `before` (`None`: the call
/// created it) to `after`; `None` for binary content or a text too large
/// to diff.
pub fn file_change(shown: &str, before: Option<&str>, after: &str) -> Option<FileChange> {
    let old = before.unwrap_or("");
    if [old, after]
        .iter()
        .any(|t| t.len() > DIFF_MAX_INPUT_BYTES || t.as_bytes().contains(&0))
    {
        return None;
    }
    let diff = TextDiff::configure()
        .algorithm(Algorithm::Myers)
        .timeout(DIFF_TIMEOUT)
        .diff_lines(old, after);
    let (mut added, mut removed) = (0usize, 0usize);
    for op in diff.ops() {
        let (tag, old_range, new_range) = op.as_tag_tuple();
        match tag {
            DiffTag::Equal => {}
            DiffTag::Delete => removed += old_range.len(),
            DiffTag::Insert => added += new_range.len(),
            DiffTag::Replace => {
                removed += old_range.len();
                added += new_range.len();
            }
        }
    }
    let mut text = Bounded::new(DIFF_LIMIT_BYTES);
    let (a, b) = (format!("a/{shown}"), format!("b/{shown}"));
    // A write past the limit stops the rendering; what fits is kept.
    let _ = write!(
        text,
        "{}",
        diff.unified_diff()
            .context_radius(CONTEXT_LINES)
            .header(&a, &b)
    );
    let (diff, truncated) = text.finish();
    Some(FileChange {
        path: shown.to_owned(),
        created: before.is_none(),
        diff,
        added: u32::try_from(added).unwrap_or(u32::MAX),
        removed: u32::try_from(removed).unwrap_or(u32::MAX),
        truncated,
    })
}

/// Text written up to a limit: the first write past it fails, which
/// stops the formatter.
struct Bounded {
    out: String,
    limit: usize,
    truncated: bool,
}

impl Bounded {
    fn new(limit: usize) -> Bounded {
        Bounded {
            out: String::new(),
            limit,
            truncated: false,
        }
    }

    /// The text, cut at the last line's end when the limit was reached.
    fn finish(mut self) -> (String, bool) {
        if self.truncated {
            let end = self.out.rfind('\n').map_or(0, |i| i + 1);
            self.out.truncate(end);
        }
        (self.out, self.truncated)
    }
}

impl fmt::Write for Bounded {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        if self.truncated {
            return Err(fmt::Error);
        }
        let room = self.limit - self.out.len();
        if s.len() <= room {
            self.out.push_str(s);
            return Ok(());
        }
        // Only whole lines are kept ([`Bounded::finish`]), so cutting at a
        // newline (ASCII) keeps a character boundary.
        if let Some(i) = s.as_bytes()[..room].iter().rposition(|b| *b == b'\n') {
            self.out.push_str(&s[..=i]);
        }
        self.truncated = true;
        Err(fmt::Error)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_edit_is_a_unified_diff_with_three_lines_of_context() {
        let before = "1\n2\n3\n4\n5\n6\n7\n8\n9\n";
        let after = "1\n2\n3\n4\nfive\n6\n7\n8\n9\n";
        let c = file_change("src/n.txt", Some(before), after).unwrap();
        assert_eq!(
            c.diff,
            "--- a/src/n.txt\n+++ b/src/n.txt\n@@ -2,7 +2,7 @@\n 2\n 3\n 4\n-5\n+five\n 6\n 7\n 8\n"
        );
        assert_eq!(
            (c.added, c.removed, c.created, c.truncated),
            (1, 1, false, false)
        );
        assert_eq!(c.path, "src/n.txt");
    }

    #[test]
    fn a_new_file_adds_every_line() {
        let c = file_change("a.txt", None, "x\ny\n").unwrap();
        assert!(c.created);
        assert_eq!(
            c.diff,
            "--- a/a.txt\n+++ b/a.txt\n@@ -0,0 +1,2 @@\n+x\n+y\n"
        );
        assert_eq!((c.added, c.removed), (2, 0));
    }

    #[test]
    fn unchanged_text_has_an_empty_diff() {
        let c = file_change("a.txt", Some("same\n"), "same\n").unwrap();
        assert_eq!((c.diff.as_str(), c.added, c.removed), ("", 0, 0));
    }

    #[test]
    fn a_long_diff_is_cut_at_a_line_end_and_counts_everything() {
        let after: String = (0..20_000).map(|i| format!("line {i} é\n")).collect();
        let c = file_change("big.txt", None, &after).unwrap();
        assert!(c.truncated);
        assert!(c.diff.len() <= DIFF_LIMIT_BYTES);
        assert!(c.diff.len() > DIFF_LIMIT_BYTES - 100);
        assert!(c.diff.ends_with('\n'));
        assert!(c.diff.lines().skip(3).all(|l| l.starts_with("+line ")));
        assert_eq!(c.added, 20_000);
    }

    #[test]
    fn binary_or_oversized_text_has_no_change() {
        assert_eq!(file_change("b", Some("a\0b"), "c"), None);
        assert_eq!(file_change("b", None, "a\0b"), None);
        let huge = "x".repeat(DIFF_MAX_INPUT_BYTES + 1);
        assert_eq!(file_change("b", Some(&huge), "c"), None);
    }
}
