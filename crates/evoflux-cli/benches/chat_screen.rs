//! The full-screen `evoflux chat` in a real terminal emulator (tmux, as the
//! tests drive it: tests/it/common/tmux.rs): what a person waits for.
//! Prints figures; asserts nothing.
//!
//! `cargo bench -p evoflux-cli --bench chat_screen` (`--profile dev` for
//! the debug build the tests use).
//!
//! - Keystroke to screen while an answer streams at about 60 words a
//!   second: a key with a character nothing else on screen has, then the
//!   pane polled until the composer shows it (the figure includes tmux's
//!   `send-keys` and `capture-pane`, whose own time is printed), and the
//!   time until the chat wrote the character (the pane's output, read
//!   through `pipe-pane`, timestamped as it arrives).
//! - Frames: the pane's output arrives in bursts, one a frame; their rate
//!   and spacing while the answer streams, and CPU per frame.
//! - CPU per streamed token: the chat process's user + system time from
//!   `/proc/PID/stat` (clock ticks of 10 ms) over a stream, less a
//!   ten-word reply's, per word: at 60 words a second and as fast as the
//!   provider sends (one delta per word).
//! - Opening a session of 2,000 messages (`--session ID`) until its last
//!   message is on screen; the session is seeded by the line-per-message
//!   chat reading a pipe (1,000 scripted turns).
//! - Peak RSS (`VmHWM`) of the chat process at the end of each run.

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[allow(dead_code)]
#[path = "../tests/it/common/tmux.rs"]
mod tmux;

use std::ffi::OsStr;
use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use tmux::{Screen, Tmux};

const SIZE: (u16, u16) = (100, 30);
/// Milliseconds between words: about 60 tokens a second.
const SLOW_DELAY_MS: u64 = 16;
const KEYS: usize = 50;
const FAST_WORDS: usize = 10_000;
const SLOW_WORDS: usize = 1_000;
const SEEDED_TURNS: usize = 1_000;
const IDLE: &str = "message the agent";

/// A sandbox: HOME, admin dir and repository below a temp dir, laid out
/// as the tests' (`evoflux_app::testing`).
struct Place {
    tmp: tempfile::TempDir,
}

impl Place {
    fn new() -> Place {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(evoflux_app::testing::repo(tmp.path()).join(".git")).unwrap();
        std::fs::create_dir_all(evoflux_app::testing::home(tmp.path())).unwrap();
        Place { tmp }
    }

    fn repo(&self) -> PathBuf {
        evoflux_app::testing::repo(self.tmp.path())
    }

    /// Writes a script and returns its `--model`.
    fn script(&self, name: &str, yaml: &str) -> String {
        let path = self.tmp.path().join(name);
        std::fs::write(&path, yaml).unwrap();
        format!("scripted:{}", path.display())
    }

    /// `evoflux chat ARGS` in tmux, once its composer is up.
    fn chat(&self, args: &[&str]) -> Tmux {
        let path = std::env::var_os("PATH").unwrap_or_default();
        let sandbox = evoflux_app::testing::env(self.tmp.path());
        let mut env: Vec<(&str, &OsStr)> = vec![
            ("PATH", path.as_os_str()),
            ("TERM", OsStr::new("xterm-256color")),
        ];
        env.extend(sandbox.iter().map(|(k, v)| (*k, v.as_os_str())));
        let mut all = vec!["chat"];
        all.extend_from_slice(args);
        Tmux::start(
            self.tmp.path(),
            SIZE,
            &self.repo(),
            &env,
            Path::new(env!("CARGO_BIN_EXE_evoflux")),
            &all,
        )
    }

    fn command(&self) -> std::process::Command {
        let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_evoflux"));
        c.env_clear()
            .envs(evoflux_app::testing::env(self.tmp.path()))
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .current_dir(self.repo());
        c
    }
}

fn composer(screen: &Screen) -> &str {
    screen.last_filled().1
}

/// Whether the reply has ended: its last word shown, no turn running.
fn ended(screen: &Screen) -> bool {
    let (row, _) = screen.last_filled();
    screen.contains("zzend") && row > 0 && !screen.rows[row - 1].contains("working")
}

fn idle(screen: &Screen) -> bool {
    composer(screen).contains(IDLE) && ended(screen)
}

/// User + system CPU seconds of `pid` so far.
fn cpu_seconds(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    // The fields after the command name, which may hold spaces.
    let rest = &stat[stat.rfind(')').unwrap() + 2..];
    let fields: Vec<&str> = rest.split(' ').collect();
    let utime: f64 = fields[11].parse().unwrap();
    let stime: f64 = fields[12].parse().unwrap();
    (utime + stime) / 100.0
}

/// Peak resident memory of `pid`, in MiB.
fn peak_rss_mib(pid: u32) -> f64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let kb: f64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0.0);
    kb / 1024.0
}

/// An ASCII Markdown reply of about `words` words (headings, lists, bold,
/// code, prose), ending in `zzend`.
fn long_reply(words: usize) -> String {
    let mut out = String::new();
    let mut n = 0;
    while n < words {
        let chunk = match (n / 40) % 4 {
            0 => "## Section heading here\n",
            1 => "- a list item with **bold words** and `code` in it\n",
            2 => "```rust\nfn main() { let x = 42; }\n```\n",
            _ => "Plain prose that goes on for a while to fill a paragraph.\n",
        };
        out.push_str(chunk);
        n += chunk.split_whitespace().count();
    }
    out.push_str("\nzzend");
    out
}

fn reply_script(reply: &str, delay_ms: u64) -> String {
    format!(
        "turns:\n  - reply:\n      text: {}\n      word_delay_ms: {delay_ms}\n",
        serde_json::Value::String(reply.to_owned())
    )
}

/// The pane's output as it arrives: (when, bytes) chunks, through a FIFO
/// that `pipe-pane` writes.
fn pipe_output(t: &Tmux, dir: &Path) -> mpsc::Receiver<(Instant, Vec<u8>)> {
    let fifo = dir.join("pane.fifo");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    let (tx, rx) = mpsc::channel();
    let reader_fifo = fifo.clone();
    std::thread::spawn(move || {
        let mut f = std::fs::File::open(&reader_fifo).unwrap();
        let mut buf = [0u8; 65536];
        loop {
            match f.read(&mut buf) {
                Ok(0) | Err(_) => return,
                Ok(n) => {
                    if tx.send((Instant::now(), buf[..n].to_vec())).is_err() {
                        return;
                    }
                }
            }
        }
    });
    t.tmux(&[
        "pipe-pane",
        "-o",
        "-t",
        "=main:",
        &format!("exec cat > '{}'", fifo.display()),
    ]);
    rx
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// (median, p95, max) of `values`.
fn spread(mut values: Vec<f64>) -> (f64, f64, f64) {
    if values.is_empty() {
        return (f64::NAN, f64::NAN, f64::NAN);
    }
    values.sort_by(f64::total_cmp);
    let at = |q: f64| values[((values.len() - 1) as f64 * q).round() as usize];
    (at(0.5), at(0.95), values[values.len() - 1])
}

/// Characters no reply, status or composer text of this benchmark has
/// (Cyrillic, Greek, Armenian letters), one per key.
fn key_chars() -> impl Iterator<Item = char> {
    ('\u{430}'..='\u{44f}')
        .chain('\u{3b1}'..='\u{3c9}')
        .chain('\u{561}'..='\u{586}')
}

/// Types each of `chars` at no fixed phase to the frames, waiting for
/// each to show in the composer: the times to screen, and when each was
/// sent.
fn type_and_watch(t: &Tmux, chars: &[char]) -> (Vec<f64>, Vec<(char, Instant)>) {
    let mut sent = Vec::new();
    let mut to_screen = Vec::new();
    for &c in chars {
        std::thread::sleep(Duration::from_millis(37 + (c as u64 % 5) * 11));
        let at = Instant::now();
        t.type_text(&c.to_string());
        loop {
            if composer(&t.screen()).contains(c) {
                break;
            }
            assert!(at.elapsed() < Duration::from_secs(10), "{c} never shown");
            std::thread::sleep(Duration::from_millis(1));
        }
        to_screen.push(ms(at.elapsed()));
        sent.push((c, at));
    }
    (to_screen, sent)
}

/// For each key sent, the time until the chat wrote its character: the
/// first chunk of output after the key holding it (the previous chunk's
/// tail carried over, for a character split between two).
fn to_output(sent: &[(char, Instant)], chunks: &[(Instant, Vec<u8>)]) -> Vec<f64> {
    let mut times = Vec::new();
    for (c, at) in sent {
        let mut needle = [0u8; 4];
        let needle = c.encode_utf8(&mut needle).as_bytes();
        let mut carry: Vec<u8> = Vec::new();
        for (when, bytes) in chunks.iter().filter(|(when, _)| when >= at) {
            carry.extend_from_slice(bytes);
            if carry.windows(needle.len()).any(|w| w == needle) {
                times.push(ms(when.duration_since(*at)));
                break;
            }
            carry.drain(..carry.len().saturating_sub(3));
        }
    }
    times
}

fn print_keys(what: &str, to_screen: Vec<f64>, to_output: Vec<f64>, keys: usize) {
    let found = to_output.len();
    let (s_med, s_p95, s_max) = spread(to_screen);
    let (o_med, o_p95, o_max) = spread(to_output);
    println!(
        "keystroke {what}, over {keys} keys: to screen median {s_med:.1} ms, p95 {s_p95:.1} ms, max {s_max:.1} ms; to the chat's output median {o_med:.1} ms, p95 {o_p95:.1} ms, max {o_max:.1} ms ({found} found)"
    );
}

/// Keystroke to screen at rest and while a reply streams at about 60
/// words a second, and the frames that stream draws.
fn latency_while_streaming() {
    const IDLE_KEYS: usize = 20;
    let place = Place::new();
    let reply = long_reply(SLOW_WORDS);
    let words = reply.split_whitespace().count();
    let model = place.script("slow.yaml", &reply_script(&reply, SLOW_DELAY_MS));
    let t = place.chat(&["--mode", "coding", "--model", &model]);
    t.wait("the composer", |s| composer(s).contains(IDLE));
    let pid = t.pid();
    let output = pipe_output(&t, place.tmp.path());
    // tmux's own cost of a look at the screen.
    let mut capture = Vec::new();
    for _ in 0..20 {
        let at = Instant::now();
        let _ = t.screen();
        capture.push(ms(at.elapsed()));
    }
    let (capture, ..) = spread(capture);
    println!(
        "(a look at the screen, tmux capture-pane, takes {capture:.1} ms; a key, send-keys, about as long: both are in the times to screen)"
    );

    let chars: Vec<char> = key_chars().take(IDLE_KEYS + KEYS).collect();
    let (rest_screen, rest_sent) = type_and_watch(&t, &chars[..IDLE_KEYS]);
    let backspaces = vec!["BSpace"; IDLE_KEYS];
    t.keys(&backspaces);
    t.wait("the empty composer", |s| composer(s).contains(IDLE));

    let cpu_before = cpu_seconds(pid);
    let started = Instant::now();
    t.type_text("go");
    t.keys(&["Enter"]);
    t.wait("the reply to begin", |s| s.contains("Section"));
    let (stream_screen, stream_sent) = type_and_watch(&t, &chars[IDLE_KEYS..]);
    let still_streaming = !t.screen().contains("zzend");
    t.wait_for(Duration::from_secs(120), "the reply's end", ended);
    let wall = started.elapsed();
    let cpu = cpu_seconds(pid) - cpu_before;
    let rss = peak_rss_mib(pid);
    std::thread::sleep(Duration::from_millis(100));
    let chunks: Vec<(Instant, Vec<u8>)> = output.try_iter().collect();

    print_keys(
        "at rest",
        rest_screen,
        to_output(&rest_sent, &chunks),
        IDLE_KEYS,
    );
    print_keys(
        &format!(
            "while {words} words stream at {:.0} words/s{}",
            words as f64 / wall.as_secs_f64(),
            if still_streaming {
                ""
            } else {
                " (the reply ended before the last key)"
            }
        ),
        stream_screen,
        to_output(&stream_sent, &chunks),
        KEYS,
    );

    // Frames: bursts of output at least 4 ms apart, from the reply's
    // start.
    let mut frames: Vec<(Instant, usize)> = Vec::new();
    let mut last: Option<Instant> = None;
    for (when, bytes) in chunks.iter().filter(|(when, _)| *when >= started) {
        match (last, frames.last_mut()) {
            (Some(l), Some(frame)) if when.duration_since(l) < Duration::from_millis(4) => {
                frame.1 += bytes.len();
            }
            _ => frames.push((*when, bytes.len())),
        }
        last = Some(*when);
    }
    let gaps: Vec<f64> = frames
        .windows(2)
        .map(|w| ms(w[1].0.duration_since(w[0].0)))
        .collect();
    let bytes: Vec<f64> = frames.iter().map(|f| f.1 as f64).collect();
    let (g_med, g_p95, _) = spread(gaps);
    let (b_med, ..) = spread(bytes);
    let span = match (frames.first(), frames.last()) {
        (Some(a), Some(b)) => b.0.duration_since(a.0).as_secs_f64(),
        _ => f64::NAN,
    };
    println!(
        "frames while streaming: {} in {span:.1} s ({:.0}/s), {g_med:.1} ms apart (median; p95 {g_p95:.1} ms), {b_med:.0} bytes each (median); {cpu:.2} s CPU for the stream and its keys: {:.2} ms CPU per frame; peak RSS {rss:.1} MiB",
        frames.len(),
        frames.len() as f64 / span,
        cpu * 1e3 / frames.len().max(1) as f64
    );
}

/// CPU seconds, wall time and peak RSS of a chat that streams `reply`
/// once with `delay_ms` between words, measured at its end.
fn streamed(reply: &str, delay_ms: u64) -> (f64, Duration, f64) {
    let place = Place::new();
    let model = place.script("reply.yaml", &reply_script(reply, delay_ms));
    let t = place.chat(&["--mode", "coding", "--model", &model]);
    t.wait("the composer", |s| composer(s).contains(IDLE));
    let pid = t.pid();
    let before = cpu_seconds(pid);
    let started = Instant::now();
    t.type_text("go");
    t.keys(&["Enter"]);
    t.wait_for(Duration::from_secs(300), "the reply's end", idle);
    let wall = started.elapsed();
    (cpu_seconds(pid) - before, wall, peak_rss_mib(pid))
}

fn cpu_per_token() {
    let (base_cpu, base_wall, _) =
        streamed("A ten word reply to measure what a turn costs. zzend", 0);
    for (words, delay) in [(SLOW_WORDS, SLOW_DELAY_MS), (FAST_WORDS, 0)] {
        let reply = long_reply(words);
        let words = reply.split_whitespace().count();
        let (cpu, wall, rss) = streamed(&reply, delay);
        println!(
            "streaming {words} words of Markdown {}: {cpu:.2} s CPU in {:.2} s ({:.0} words/s) — {:.1} µs CPU per token beyond a ten-word reply ({base_cpu:.2} s CPU, {:.2} s); peak RSS {rss:.1} MiB",
            if delay == 0 {
                "as fast as they come".to_owned()
            } else {
                format!("{delay} ms apart")
            },
            wall.as_secs_f64(),
            words as f64 / wall.as_secs_f64(),
            (cpu - base_cpu).max(0.0) * 1e6 / words as f64,
            base_wall.as_secs_f64(),
        );
    }
}

/// A session of 2,000 messages: 1,000 scripted turns through the chat
/// reading a pipe. Returns its id.
fn seed(place: &Place) -> String {
    let mut yaml = String::from("turns:\n");
    let mut input = String::new();
    for i in 0..SEEDED_TURNS {
        yaml.push_str(&format!(
            "  - reply: {{text: \"Answer number {i}, with **a few** words and `code` in it.\"}}\n"
        ));
        input.push_str(&format!("question number {i}\n"));
    }
    let model = place.script("seed.yaml", &yaml);
    let input_path = place.tmp.path().join("seed.txt");
    std::fs::write(&input_path, input).unwrap();
    let out = place
        .command()
        .args(["--json", "chat", "--mode", "coding", "--model", &model])
        .stdin(std::fs::File::open(&input_path).unwrap())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let first = String::from_utf8_lossy(&out.stdout)
        .lines()
        .next()
        .unwrap()
        .to_owned();
    let event: serde_json::Value = serde_json::from_str(&first).unwrap();
    event["session_id"].as_str().unwrap().to_owned()
}

fn open_long_session() {
    let place = Place::new();
    let seeding = Instant::now();
    let id = seed(&place);
    let seeded = seeding.elapsed();
    let last = format!("Answer number {}", SEEDED_TURNS - 1);
    let mut times = Vec::new();
    let mut rss = 0.0;
    for _ in 0..5 {
        let started = Instant::now();
        let t = place.chat(&["--session", &id]);
        t.wait("the last message", |s| {
            s.contains(&last) && composer(s).contains(IDLE)
        });
        times.push(ms(started.elapsed()));
        rss = peak_rss_mib(t.pid());
        t.keys(&["C-d"]);
        t.wait_exit(Duration::from_secs(20));
    }
    let (median, _, max) = spread(times);
    println!(
        "opening a session of {} messages until its last message is on screen: median {median:.0} ms, max {max:.0} ms over 5 opens (seeded in {:.1} s); peak RSS {rss:.1} MiB",
        SEEDED_TURNS * 2,
        seeded.as_secs_f64()
    );
}

fn main() {
    if !Tmux::available() {
        return;
    }
    latency_while_streaming();
    cpu_per_token();
    open_long_session();
}
