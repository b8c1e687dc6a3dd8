//! What the model (and the user, for `!command`) sees of a command: a
//! status line, timing, the head and tail of the output produced since the
//! previous observation joined by an explicit count of omitted bytes, and
//! the artifact when something was left out. One formatter serves
//! `shell`, `process`, exit notices, command-backed tools and `!command`,
//! so every surface shows the same text and the same [`CommandMeta`].

use std::path::Path;
use std::time::Duration;

use crate::journal::Taken;
use crate::output::ToolOutput;

/// Output bytes shown at most for a successful or still running command.
pub const SUCCESS_OUTPUT_LIMIT: usize = 6_000;
/// Output bytes shown at most for a failed, timed out or terminated
/// command, whose error usually sits at the end and needs more room.
pub const FAILURE_OUTPUT_LIMIT: usize = 12_000;

/// What the journal keeps in memory: enough head and tail for the larger
/// limit, split like a rendered view (a third head, the rest tail).
pub(crate) const HEAD_CAPACITY: usize = FAILURE_OUTPUT_LIMIT / 3;
pub(crate) const TAIL_CAPACITY: usize = FAILURE_OUTPUT_LIMIT - HEAD_CAPACITY;

pub use evoflux_protocol::command::{CommandMeta, CommandStatus};

/// How much of a command's output an observation shows: less for one that
/// went well.
fn output_limit(status: CommandStatus) -> usize {
    match status {
        CommandStatus::Running | CommandStatus::Succeeded => SUCCESS_OUTPUT_LIMIT,
        CommandStatus::Failed | CommandStatus::TimedOut | CommandStatus::Terminated => {
            FAILURE_OUTPUT_LIMIT
        }
    }
}

/// Which text layout an observation uses.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Form<'a> {
    /// The command finished inside its first call (`shell`, a command
    /// tool, `!command`).
    Completed,
    /// `shell` yielded: the command keeps running under `process_id`.
    Yielded { command: &'a str },
    /// A later observation through `process` or an exit notice.
    Continued,
    /// An observation of a preview's server (`preview`), which `process`
    /// does not reach.
    Preview,
}

/// The facts an observation reports besides the output.
#[derive(Debug, Clone)]
pub(crate) struct Facts<'a> {
    pub process_id: &'a str,
    pub pid: u32,
    pub status: CommandStatus,
    pub exit_code: Option<i32>,
    pub signal: Option<i32>,
    pub duration: Duration,
    pub artifact: &'a Path,
    /// Bytes in the artifact at this observation.
    pub artifact_bytes: u64,
    /// Output bytes the journal cap dropped so far.
    pub journal_dropped: u64,
    /// What the sandbox did once the command ended.
    pub notes: &'a [String],
}

/// Formats one observation into the model-visible text and its metadata.
pub(crate) fn format(form: Form<'_>, facts: &Facts<'_>, taken: &Taken) -> ToolOutput {
    let view = View::render(taken, output_limit(facts.status));
    let mut text = status_line(facts);
    match form {
        Form::Completed => {
            text.push_str(&format!("\nduration: {}\n\n", seconds(facts.duration)));
            text.push_str(view.or(&view.text, "(No output)"));
        }
        Form::Yielded { command } => {
            text.push_str(&format!(
                "\nprocess_id: {}\npid: {}\ncommand: {}\nartifact: {}\n",
                facts.process_id,
                facts.pid,
                command,
                crate::locator::artifact_locator(facts.artifact)
            ));
            if !view.text.is_empty() {
                text.push_str("\nInitial output:\n");
                text.push_str(&view.text);
                text.push('\n');
            }
        }
        Form::Continued | Form::Preview => {
            text.push_str(&format!(
                "\nprocess_id: {}\nduration: {}\n\n",
                facts.process_id,
                seconds(facts.duration)
            ));
            text.push_str(view.or(&view.text, "(No new output)"));
        }
    }
    if view.omitted > 0 || facts.journal_dropped > 0 {
        text.push_str(&format!(
            "\n\nFull output: {} ({} bytes)",
            crate::locator::artifact_locator(facts.artifact),
            facts.artifact_bytes
        ));
    }
    if facts.journal_dropped > 0 {
        text.push_str(&format!(
            "\nThe output passed the journal cap (journal_cap_mib in sandbox.toml): {} bytes \
             from its middle are not kept; the artifact holds the first and last parts \
             joined by a marker line.",
            facts.journal_dropped
        ));
    }
    for note in facts.notes {
        text.push_str("\n\n");
        text.push_str(note);
    }
    if let Some(error) = &taken.write_error {
        text.push_str(&format!(
            "\n\nWarning: the artifact stopped recording output: {error}"
        ));
    }
    if let (Form::Yielded { .. } | Form::Continued, CommandStatus::Running) = (form, facts.status) {
        text.push_str(&format!(
            "\n\nStill running. Use process(action='poll', process_id='{id}') for new output, \
             process(action='wait', process_id='{id}') to block until it exits, or \
             process(action='terminate', process_id='{id}') to stop it.",
            id = facts.process_id
        ));
    }
    let meta = CommandMeta {
        process_id: facts.process_id.to_owned(),
        pid: facts.pid,
        status: facts.status,
        exit_code: facts.exit_code,
        duration_ms: u64::try_from(facts.duration.as_millis()).unwrap_or(u64::MAX),
        artifact: facts.artifact.to_path_buf(),
        output_offset: taken.start,
        output_bytes: taken.len,
        shown_bytes: view.shown,
        omitted_bytes: view.omitted,
        journal_dropped_bytes: facts.journal_dropped,
    };
    ToolOutput {
        text,
        is_error: facts.status.is_error(),
        meta: Some(meta),
        change: None,
    }
}

fn status_line(facts: &Facts<'_>) -> String {
    match (facts.status, facts.exit_code, facts.signal) {
        (CommandStatus::Running, _, _) => "[Running]".into(),
        (CommandStatus::Succeeded, _, _) => "[Succeeded]".into(),
        (CommandStatus::Failed, Some(code), _) => format!("[Failed — exit code {code}]"),
        (CommandStatus::Failed, None, Some(signal)) => {
            format!("[Failed — killed by signal {signal}]")
        }
        (CommandStatus::Failed, None, None) => "[Failed]".into(),
        (CommandStatus::TimedOut, _, _) => "[Timed out]".into(),
        (CommandStatus::Terminated, _, _) => "[Terminated]".into(),
    }
}

fn seconds(d: Duration) -> String {
    format!("{:.2}s", d.as_secs_f64())
}

/// The bounded text of one share of output.
#[derive(Debug)]
struct View {
    text: String,
    shown: u64,
    omitted: u64,
}

impl View {
    fn or<'a>(&self, text: &'a str, empty: &'a str) -> &'a str {
        if text.is_empty() { empty } else { text }
    }

    /// Shows everything when it fits in `limit`, else the first third and
    /// the last two thirds of the limit, cut on character boundaries and
    /// joined by `... N bytes omitted ...`. Invalid UTF-8 shows lossily.
    fn render(taken: &Taken, limit: usize) -> View {
        if taken.gap == 0 && taken.head.len() <= limit {
            return View {
                text: String::from_utf8_lossy(&taken.head).into_owned(),
                shown: taken.head.len() as u64,
                omitted: 0,
            };
        }
        // With a gap the head and tail buffers are full, so both hold at
        // least their share of `limit`; without one the head holds all.
        let tail_source: &[u8] = if taken.gap == 0 {
            &taken.head
        } else {
            &taken.tail
        };
        let head_len = char_floor(&taken.head, (limit / 3).min(taken.head.len()));
        let want_tail = (limit - limit / 3).min(tail_source.len());
        let tail_start = char_ceil(tail_source, tail_source.len() - want_tail);
        let head = &taken.head[..head_len];
        let tail = &tail_source[tail_start..];
        let shown = (head.len() + tail.len()) as u64;
        let omitted = taken.len - shown;
        View {
            text: format!(
                "{}\n... {omitted} bytes omitted ...\n{}",
                String::from_utf8_lossy(head),
                String::from_utf8_lossy(tail)
            ),
            shown,
            omitted,
        }
    }
}

fn is_continuation(b: u8) -> bool {
    b & 0b1100_0000 == 0b1000_0000
}

/// Moves a cut at `at` back (at most 3 bytes) so it does not split a
/// UTF-8 character.
fn char_floor(bytes: &[u8], at: usize) -> usize {
    let mut cut = at;
    while cut > 0 && at - cut < 3 && bytes.get(cut).copied().is_some_and(is_continuation) {
        cut -= 1;
    }
    if bytes.get(cut).copied().is_some_and(is_continuation) {
        at // not UTF-8 text after all: cut where asked
    } else {
        cut
    }
}

/// Moves a cut at `at` forward (at most 3 bytes) so it does not split a
/// UTF-8 character.
fn char_ceil(bytes: &[u8], at: usize) -> usize {
    let mut cut = at;
    while cut < bytes.len() && cut - at < 3 && is_continuation(bytes[cut]) {
        cut += 1;
    }
    if bytes.get(cut).copied().is_some_and(is_continuation) {
        at
    } else {
        cut
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn taken(head: &[u8], gap: u64, tail: &[u8]) -> Taken {
        Taken {
            start: 0,
            len: head.len() as u64 + gap + tail.len() as u64,
            head: head.to_vec(),
            gap,
            tail: tail.to_vec(),
            write_error: None,
        }
    }

    fn facts(status: CommandStatus, exit_code: Option<i32>) -> Facts<'static> {
        Facts {
            process_id: "proc_0123456789",
            pid: 42,
            status,
            exit_code,
            signal: None,
            duration: Duration::from_millis(1234),
            artifact: Path::new("/a/proc_0123456789.txt"),
            artifact_bytes: 5,
            journal_dropped: 0,
            notes: &[],
        }
    }

    #[test]
    fn completed_success_shows_status_duration_and_output() {
        let out = format(
            Form::Completed,
            &facts(CommandStatus::Succeeded, Some(0)),
            &taken(b"hello", 0, b""),
        );
        assert_eq!(out.text, "[Succeeded]\nduration: 1.23s\n\nhello");
        assert!(!out.is_error);
        let meta = out.meta.unwrap();
        assert_eq!(
            (meta.output_bytes, meta.shown_bytes, meta.omitted_bytes),
            (5, 5, 0)
        );
    }

    #[test]
    fn failure_and_empty_output() {
        let out = format(
            Form::Completed,
            &facts(CommandStatus::Failed, Some(3)),
            &taken(b"", 0, b""),
        );
        assert_eq!(
            out.text,
            "[Failed — exit code 3]\nduration: 1.23s\n\n(No output)"
        );
        assert!(out.is_error);
    }

    #[test]
    fn clipped_output_keeps_head_and_tail_with_a_count() {
        let head = vec![b'h'; HEAD_CAPACITY];
        let tail = vec![b't'; TAIL_CAPACITY];
        let out = format(
            Form::Completed,
            &facts(CommandStatus::Succeeded, Some(0)),
            &taken(&head, 1000, &tail),
        );
        let meta = out.meta.unwrap();
        assert_eq!(meta.shown_bytes, SUCCESS_OUTPUT_LIMIT as u64);
        assert_eq!(
            meta.omitted_bytes,
            (HEAD_CAPACITY + TAIL_CAPACITY + 1000 - SUCCESS_OUTPUT_LIMIT) as u64
        );
        assert!(
            out.text
                .contains(&format!("\n... {} bytes omitted ...\n", meta.omitted_bytes))
        );
        assert!(
            out.text
                .ends_with("Full output: artifact:proc_0123456789.txt (5 bytes)")
        );
    }

    #[test]
    fn cuts_respect_character_boundaries() {
        let text = "é".repeat(SUCCESS_OUTPUT_LIMIT);
        let view = View::render(&taken(text.as_bytes(), 0, b""), SUCCESS_OUTPUT_LIMIT);
        assert!(!view.text.contains('\u{fffd}'));
        assert_eq!(view.shown + view.omitted, text.len() as u64);
    }

    #[test]
    fn invalid_utf8_is_shown_lossily() {
        let view = View::render(&taken(&[0xff, b'a', 0xfe], 0, b""), 100);
        assert_eq!(view.text, "\u{fffd}a\u{fffd}");
    }
}
