//! The journal of one command: its raw combined output, written once to a
//! session-scoped artifact file as it is produced, and a bounded window
//! over the bytes no observation has consumed yet.
//!
//! A reader thread copies the pipe to the artifact in fixed-size chunks
//! and keeps only the head and tail of the unconsumed region in memory,
//! so a command printing a gigabyte costs the same memory as one printing
//! a line. Every observation takes the window and starts a new one at the
//! current end: bytes are never shown twice, and none are lost, because
//! the window always covers exactly `[start, total)` of the artifact.

use std::collections::VecDeque;
use std::fs::File;
use std::io::{ErrorKind, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use tokio::sync::watch;

use crate::observation::{HEAD_CAPACITY, TAIL_CAPACITY};
use crate::sync::lock;

/// Bytes read from the pipe at once.
const CHUNK: usize = 64 * 1024;

/// The live journal of one command, shared by its reader thread and the
/// runtime.
#[derive(Debug)]
pub(crate) struct Journal {
    artifact: PathBuf,
    state: Mutex<JournalState>,
    eof: watch::Sender<bool>,
}

#[derive(Debug)]
struct JournalState {
    /// Bytes read from the pipe (and written to the artifact) so far.
    total: u64,
    window: Window,
    /// Set when the artifact stopped accepting bytes (disk full...); the
    /// pipe is still drained so the command never blocks on a full pipe.
    write_error: Option<String>,
}

impl Journal {
    /// Starts copying `pipe` into `file` (already created at `artifact`)
    /// on a dedicated thread.
    pub(crate) fn start(
        artifact: PathBuf,
        file: File,
        pipe: std::io::PipeReader,
    ) -> std::io::Result<Arc<Journal>> {
        let journal = Arc::new(Journal {
            artifact,
            state: Mutex::new(JournalState {
                total: 0,
                window: Window::new(0),
                write_error: None,
            }),
            eof: watch::Sender::new(false),
        });
        let reader = Arc::clone(&journal);
        std::thread::Builder::new()
            .name("evoflux-journal".into())
            .spawn(move || reader.copy(file, pipe))?;
        Ok(journal)
    }

    pub(crate) fn artifact(&self) -> &Path {
        &self.artifact
    }

    /// Bytes journalled so far.
    pub(crate) fn total(&self) -> u64 {
        lock(&self.state).total
    }

    /// Waits until the pipe is closed by every process that held it.
    pub(crate) async fn closed(&self) {
        let mut rx = self.eof.subscribe();
        // The sender lives in `self`, so this cannot fail.
        let _ = rx.wait_for(|eof| *eof).await;
    }

    /// Takes the unconsumed window, leaving a fresh one at the end. While
    /// the command may still write, an incomplete UTF-8 sequence at the
    /// very end stays unconsumed so a character is never split across two
    /// observations.
    pub(crate) fn take(&self, hold_incomplete: bool) -> Taken {
        let mut state = lock(&self.state);
        let write_error = state.write_error.clone();
        let window = std::mem::replace(&mut state.window, Window::new(0));
        let (taken, rest) = window.split(hold_incomplete);
        state.window = rest;
        Taken {
            write_error,
            ..taken
        }
    }

    fn copy(&self, mut file: File, mut pipe: std::io::PipeReader) {
        let mut buf = vec![0u8; CHUNK];
        let mut writable = true;
        loop {
            let n = match pipe.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(_) => break,
            };
            let chunk = &buf[..n];
            // The artifact is written before the bytes become observable,
            // so an observation never points past the end of the file.
            let failure = match writable {
                true => file.write_all(chunk).err(),
                false => None,
            };
            let mut state = lock(&self.state);
            if let Some(e) = failure {
                writable = false;
                state.write_error = Some(e.to_string());
            }
            state.total += n as u64;
            state.window.push(chunk);
        }
        let _ = file.flush();
        self.eof.send_replace(true);
    }
}

/// One observation's share of the output: the head and tail of the bytes
/// produced since the previous observation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Taken {
    /// Artifact offset of the first byte of this share.
    pub start: u64,
    /// Bytes in this share.
    pub len: u64,
    /// The first bytes, and everything when nothing was dropped.
    pub head: Vec<u8>,
    /// Bytes dropped from memory between `head` and `tail`.
    pub gap: u64,
    /// The last bytes when some were dropped; empty otherwise.
    pub tail: Vec<u8>,
    pub write_error: Option<String>,
}

/// The bounded in-memory view of `[start, start + len)`: up to
/// [`HEAD_CAPACITY`] first bytes and a rolling [`TAIL_CAPACITY`] last
/// bytes that are not in the head.
#[derive(Debug)]
struct Window {
    start: u64,
    len: u64,
    head: Vec<u8>,
    tail: VecDeque<u8>,
}

impl Window {
    fn new(start: u64) -> Window {
        Window {
            start,
            len: 0,
            head: Vec::new(),
            tail: VecDeque::new(),
        }
    }

    fn push(&mut self, mut bytes: &[u8]) {
        self.len += bytes.len() as u64;
        if self.head.len() < HEAD_CAPACITY {
            let take = (HEAD_CAPACITY - self.head.len()).min(bytes.len());
            self.head.extend_from_slice(&bytes[..take]);
            bytes = &bytes[take..];
        }
        if bytes.len() >= TAIL_CAPACITY {
            self.tail.clear();
            self.tail
                .extend(bytes[bytes.len() - TAIL_CAPACITY..].iter().copied());
        } else {
            let overflow = (self.tail.len() + bytes.len()).saturating_sub(TAIL_CAPACITY);
            self.tail.drain(..overflow);
            self.tail.extend(bytes.iter().copied());
        }
    }

    /// Splits into the share an observation takes and the window that
    /// continues after it.
    fn split(self, hold_incomplete: bool) -> (Taken, Window) {
        let gap = self.len - self.head.len() as u64 - self.tail.len() as u64;
        let (mut head, mut tail) = (self.head, Vec::from(self.tail));
        if gap == 0 {
            head.append(&mut tail);
        }
        let last = if tail.is_empty() {
            &mut head
        } else {
            &mut tail
        };
        let held = match hold_incomplete {
            true => incomplete_suffix(last),
            false => 0,
        };
        let kept = last.split_off(last.len() - held);
        let len = self.len - held as u64;
        let mut rest = Window::new(self.start + len);
        rest.push(&kept);
        let taken = Taken {
            start: self.start,
            len,
            head,
            gap,
            tail,
            write_error: None,
        };
        (taken, rest)
    }
}

/// How many trailing bytes form the start of a UTF-8 character whose
/// continuation bytes have not arrived yet (0 to 3).
fn incomplete_suffix(bytes: &[u8]) -> usize {
    for back in 1..=bytes.len().min(4) {
        let b = bytes[bytes.len() - back];
        if b & 0b1100_0000 == 0b1000_0000 {
            continue; // a continuation byte: keep looking for the lead
        }
        let needed = match b {
            0xC0..=0xDF => 2,
            0xE0..=0xEF => 3,
            0xF0..=0xF7 => 4,
            _ => return 0, // ASCII or invalid: nothing to wait for
        };
        return if back < needed { back } else { 0 };
    }
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bytes_of(t: &Taken) -> (Vec<u8>, u64, Vec<u8>) {
        (t.head.clone(), t.gap, t.tail.clone())
    }

    #[test]
    fn small_windows_keep_everything() {
        let mut w = Window::new(0);
        w.push(b"hello ");
        w.push(b"world");
        let (taken, rest) = w.split(false);
        assert_eq!(bytes_of(&taken), (b"hello world".to_vec(), 0, vec![]));
        assert_eq!((rest.start, rest.len), (11, 0));
    }

    #[test]
    fn large_windows_keep_head_and_tail_and_count_the_gap() {
        let data: Vec<u8> = (0..100_000u32).map(|i| (i % 251) as u8).collect();
        let mut w = Window::new(7);
        for chunk in data.chunks(999) {
            w.push(chunk);
        }
        let (taken, rest) = w.split(false);
        assert_eq!(taken.start, 7);
        assert_eq!(taken.len, 100_000);
        assert_eq!(taken.head, data[..HEAD_CAPACITY]);
        assert_eq!(taken.tail, data[data.len() - TAIL_CAPACITY..]);
        assert_eq!(taken.gap, (100_000 - HEAD_CAPACITY - TAIL_CAPACITY) as u64);
        assert_eq!(rest.start, 100_007);
    }

    #[test]
    fn an_incomplete_character_is_held_for_the_next_observation() {
        let mut w = Window::new(0);
        w.push("abc\u{e9}".as_bytes());
        w.push(&"\u{20ac}".as_bytes()[..2]);
        let (taken, rest) = w.split(true);
        assert_eq!(taken.head, "abc\u{e9}".as_bytes());
        assert_eq!(taken.len, 5);
        assert_eq!((rest.start, rest.len), (5, 2));
        let mut rest = rest;
        rest.push(&"\u{20ac}".as_bytes()[2..]);
        let (next, _) = rest.split(true);
        assert_eq!(next.head, "\u{20ac}".as_bytes());
    }

    #[test]
    fn incomplete_suffix_lengths() {
        assert_eq!(incomplete_suffix(b"abc"), 0);
        assert_eq!(incomplete_suffix("\u{e9}".as_bytes()), 0);
        assert_eq!(incomplete_suffix(&"\u{e9}".as_bytes()[..1]), 1);
        assert_eq!(incomplete_suffix(&"\u{1f600}".as_bytes()[..3]), 3);
        assert_eq!(incomplete_suffix(&[0xff]), 0);
    }
}
