//! The journal of one command: its raw combined output, written once to a
//! session-scoped artifact file as it is produced, and a bounded window
//! over the bytes no observation has consumed yet.
//!
//! A reader thread copies the pipe to the artifact in fixed-size chunks
//! and keeps only the head and tail of the unconsumed region in memory,
//! so a command printing a gigabyte costs the same memory as one printing
//! a line. Every observation takes the window and starts a new one at the
//! current end: bytes are never shown twice, and none are lost, because
//! the window always covers exactly `[start, total)` of the output.
//!
//! The artifact itself is capped ([`Sink`]): past the cap it keeps the
//! first half and a rolling last half, and when the command ends the two
//! are joined by a marker line that says how many bytes were dropped, so
//! a runaway command cannot fill the disk. Output offsets in observations
//! count the command's output, which equals the artifact's offsets unless
//! the cap was reached.

use std::collections::VecDeque;
use std::fs::File;
use std::io::{ErrorKind, Read, Write};
use std::os::unix::fs::FileExt;
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
    /// Bytes read from the pipe so far.
    total: u64,
    /// Bytes of output the artifact no longer holds because of the cap.
    dropped: u64,
    /// Bytes of the marker line that took their place.
    marker: u64,
    window: Window,
    /// Set when the artifact stopped accepting bytes (disk full...); the
    /// pipe is still drained so the command never blocks on a full pipe.
    write_error: Option<String>,
}

impl Journal {
    /// Starts copying `pipe` into `file` (already created at `artifact`)
    /// on a dedicated thread, keeping at most `cap` bytes on disk.
    pub(crate) fn start(
        artifact: PathBuf,
        file: File,
        pipe: std::io::PipeReader,
        cap: u64,
    ) -> std::io::Result<Arc<Journal>> {
        let journal = Arc::new(Journal {
            artifact,
            state: Mutex::new(JournalState {
                total: 0,
                dropped: 0,
                marker: 0,
                window: Window::new(0),
                write_error: None,
            }),
            eof: watch::Sender::new(false),
        });
        let reader = Arc::clone(&journal);
        let sink = Sink::new(file, cap);
        std::thread::Builder::new()
            .name("evoflux-journal".into())
            .spawn(move || reader.copy(sink, pipe))?;
        Ok(journal)
    }

    pub(crate) fn artifact(&self) -> &Path {
        &self.artifact
    }

    /// Bytes the artifact holds: everything journalled so far, or the
    /// capped head, tail and marker.
    pub(crate) fn artifact_bytes(&self) -> u64 {
        let state = lock(&self.state);
        state.total - state.dropped + state.marker
    }

    /// Output bytes the cap dropped from the artifact (0 below the cap).
    pub(crate) fn dropped(&self) -> u64 {
        lock(&self.state).dropped
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

    fn copy(&self, mut sink: Sink, mut pipe: std::io::PipeReader) {
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
                true => sink.write(chunk).err(),
                false => None,
            };
            let mut state = lock(&self.state);
            if let Some(e) = failure {
                writable = false;
                state.write_error = Some(e.to_string());
            }
            state.total += n as u64;
            state.dropped = sink.dropped();
            state.window.push(chunk);
        }
        if writable {
            let finished = sink.finish();
            let mut state = lock(&self.state);
            match finished {
                Ok(marker) => state.marker = marker,
                Err(e) => state.write_error = Some(e.to_string()),
            }
        }
        self.eof.send_replace(true);
    }
}

/// The artifact file under its cap. Output byte `p` is stored at offset
/// `p` while `p < head`, and past that in a ring of `tail` bytes at
/// `head + (p - head) % tail`: below the cap the file is simply the
/// output, and above it the ring holds the last `tail` bytes. `finish`
/// puts the ring back in order behind a marker line.
#[derive(Debug)]
struct Sink {
    file: File,
    head: u64,
    tail: u64,
    written: u64,
}

impl Sink {
    fn new(file: File, cap: u64) -> Sink {
        let cap = cap.max(2);
        Sink {
            file,
            head: cap / 2,
            tail: cap - cap / 2,
            written: 0,
        }
    }

    fn cap(&self) -> u64 {
        self.head + self.tail
    }

    /// Output bytes not in the file (before `finish` adds the marker).
    fn dropped(&self) -> u64 {
        self.written.saturating_sub(self.cap())
    }

    fn write(&mut self, mut bytes: &[u8]) -> std::io::Result<()> {
        while !bytes.is_empty() {
            let (offset, room) = match self.written < self.head {
                true => (self.written, self.head - self.written),
                false => {
                    let at = (self.written - self.head) % self.tail;
                    (self.head + at, self.tail - at)
                }
            };
            let n = bytes.len().min(usize::try_from(room).unwrap_or(usize::MAX));
            self.file.write_all_at(&bytes[..n], offset)?;
            self.written += n as u64;
            bytes = &bytes[n..];
        }
        Ok(())
    }

    /// Orders a wrapped ring behind a marker line; returns the marker's
    /// length (0 when nothing was dropped).
    fn finish(&mut self) -> std::io::Result<u64> {
        let dropped = self.dropped();
        if dropped == 0 {
            return self.file.flush().map(|()| 0);
        }
        let marker = format!(
            "\n[evoflux: the journal cap of {} bytes was reached: {dropped} bytes of output \
             were dropped here; the first {} and the last {} bytes are kept]\n",
            self.cap(),
            self.head,
            self.tail
        );
        // The oldest kept byte sits where the next byte would go. The
        // ordered tail (marker, older part, newer part) is first appended
        // past the ring, then moved down over it: one chunk of memory
        // whatever the cap, at the price of half the cap of disk for a
        // moment.
        let cap = self.cap();
        let split = self.head + (self.written - self.head) % self.tail;
        self.file.write_all_at(marker.as_bytes(), cap)?;
        let mut buf = vec![0u8; CHUNK];
        let mut to = cap + marker.len() as u64;
        for (from, end) in [(split, cap), (self.head, split)] {
            to = copy_range(&self.file, &mut buf, from, end, to)?;
        }
        copy_range(&self.file, &mut buf, cap, to, self.head)?;
        self.file.set_len(self.head + (to - cap))?;
        self.file.flush()?;
        Ok(marker.len() as u64)
    }
}

/// Copies `[from, end)` of `file` to `to` in chunks, front to back (so
/// a destination inside the range must lie before `from`); returns where
/// the copy ended.
fn copy_range(file: &File, buf: &mut [u8], from: u64, end: u64, to: u64) -> std::io::Result<u64> {
    let (mut from, mut to) = (from, to);
    while from < end {
        let n = (end - from).min(buf.len() as u64) as usize;
        file.read_exact_at(&mut buf[..n], from)?;
        file.write_all_at(&buf[..n], to)?;
        from += n as u64;
        to += n as u64;
    }
    Ok(to)
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

    /// What a capped artifact must hold: everything below the cap, or the
    /// first half, the marker and the last half.
    fn expected_artifact(output: &[u8], cap: u64) -> Vec<u8> {
        let cap = cap.max(2) as usize;
        if output.len() <= cap {
            return output.to_vec();
        }
        let (head, tail) = (cap / 2, cap - cap / 2);
        let dropped = output.len() - cap;
        let mut out = output[..head].to_vec();
        out.extend_from_slice(
            format!(
                "\n[evoflux: the journal cap of {cap} bytes was reached: {dropped} bytes of output \
                 were dropped here; the first {head} and the last {tail} bytes are kept]\n"
            )
            .as_bytes(),
        );
        out.extend_from_slice(&output[output.len() - tail..]);
        out
    }

    fn sink_round_trip(output: &[u8], chunks: &[usize], cap: u64) -> (Vec<u8>, u64, u64) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.txt");
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&path)
            .unwrap();
        let mut sink = Sink::new(file, cap);
        let mut rest = output;
        for &size in chunks.iter().cycle() {
            if rest.is_empty() {
                break;
            }
            let n = size.clamp(1, rest.len());
            sink.write(&rest[..n]).unwrap();
            rest = &rest[n..];
        }
        let dropped = sink.dropped();
        let marker = sink.finish().unwrap();
        (std::fs::read(&path).unwrap(), dropped, marker)
    }

    #[test]
    fn the_cap_keeps_head_marker_and_tail_in_order() {
        let output: Vec<u8> = (0..10_000u32).map(|i| b'a' + (i % 26) as u8).collect();
        let (file, dropped, marker) = sink_round_trip(&output, &[333, 1, 4096], 1000);
        assert_eq!(dropped, 9_000);
        assert_eq!(file, expected_artifact(&output, 1000));
        assert_eq!(file.len() as u64, 1000 + marker);
        // Below the cap the artifact is the output itself, marker-free.
        let (file, dropped, marker) = sink_round_trip(&output[..1000], &[7], 1000);
        assert_eq!((file, dropped, marker), (output[..1000].to_vec(), 0, 0));
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]
        #[test]
        fn any_output_under_any_cap_is_kept_as_the_rule_says(
            output in proptest::collection::vec(proptest::num::u8::ANY, 0..5000),
            chunks in proptest::collection::vec(1usize..700, 1..8),
            cap in 0u64..3000,
        ) {
            let (file, _, _) = sink_round_trip(&output, &chunks, cap);
            proptest::prop_assert_eq!(file, expected_artifact(&output, cap));
        }
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
