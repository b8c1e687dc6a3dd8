//! `evoflux chat` at a terminal: keystroke-to-echo latency at the prompt,
//! and the CPU time per streamed token while a reply of 10,000 words
//! streams as Markdown (the scripted provider sends one delta per word).
//! Prints figures; asserts nothing.
//!
//! `cargo bench -p evoflux-cli --bench chat_tui`
//!
//! CPU time is the chat process's user + system time from
//! `/proc/PID/stat` (clock ticks of 10 ms), read once the reply has been
//! drawn, less the same for a ten-word reply.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{Read as _, Write as _};
use std::time::{Duration, Instant};

use rexpect::session::PtySession;

const TOKENS: usize = 10_000;
const KEYSTROKES: usize = 200;

fn spawn(home: &std::path::Path, repo: &std::path::Path, model: &str) -> PtySession {
    rexpect::session::spawn_command(command(home, repo, model), Some(120_000)).unwrap()
}

/// Reads the terminal until `needle` has arrived.
fn read_until(tty: &mut std::fs::File, needle: &[u8]) {
    let mut seen = Vec::new();
    let mut buf = [0u8; 4096];
    while !seen.windows(needle.len()).any(|w| w == needle) {
        let n = tty.read(&mut buf).unwrap();
        assert!(n > 0, "the chat closed its terminal");
        seen.extend_from_slice(&buf[..n]);
    }
}

fn command(home: &std::path::Path, repo: &std::path::Path, model: &str) -> std::process::Command {
    let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_evoflux"));
    c.env_clear()
        .env("HOME", home)
        .env("EVOFLUX_ADMIN_DIR", home.join("admin"))
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("TERM", "xterm-256color")
        .current_dir(repo)
        .args(["chat", "--plain", "--mode", "coding", "--model", model]);
    c
}

fn raw(s: &str) -> String {
    s.bytes().map(char::from).collect()
}

/// User + system CPU seconds of `pid` so far.
fn cpu_seconds(pid: i32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    // Fields after the command name (which may hold spaces) in parentheses.
    let rest = &stat[stat.rfind(')').unwrap() + 2..];
    let fields: Vec<&str> = rest.split(' ').collect();
    let utime: f64 = fields[11].parse().unwrap();
    let stime: f64 = fields[12].parse().unwrap();
    (utime + stime) / 100.0
}

/// The process whose command line holds `needle` (the chat's unique
/// script path).
fn pid_of(needle: &str) -> i32 {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .find_map(|e| {
            let pid: i32 = e.file_name().to_str()?.parse().ok()?;
            let cmdline = std::fs::read(e.path().join("cmdline")).ok()?;
            String::from_utf8_lossy(&cmdline)
                .contains(needle)
                .then_some(pid)
        })
        .expect("the chat process")
}

/// The words of a long Markdown reply: headings, lists, bold, code.
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
    out
}

/// CPU seconds of a chat that streams `reply` once, measured at its end.
fn streamed_cpu(reply: &str) -> (f64, Duration) {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    let repo = tmp.path().join("repo");
    std::fs::create_dir_all(repo.join(".git")).unwrap();
    std::fs::create_dir_all(&home).unwrap();
    let script = tmp.path().join("reply.yaml");
    let yaml = format!(
        "turns:\n  - reply:\n      text: {}\n      word_delay_ms: 0\n",
        serde_json::Value::String(reply.to_owned())
    );
    std::fs::write(&script, yaml).unwrap();
    let mut p = spawn(&home, &repo, &format!("scripted:{}", script.display()));
    p.exp_string(&raw("› ")).unwrap();
    let pid = pid_of(&script.display().to_string());
    let before = cpu_seconds(pid);
    let t = Instant::now();
    p.send("go\r").unwrap();
    p.flush().unwrap();
    // The status line comes after the whole reply.
    p.exp_string("calls").unwrap();
    p.exp_string(&raw("› ")).unwrap();
    let wall = t.elapsed();
    let cpu = cpu_seconds(pid) - before;
    p.send("\x04").unwrap();
    let _ = p.exp_eof();
    (cpu, wall)
}

fn main() {
    // Keystroke to echo at the prompt, reading the terminal directly (no
    // reader thread between the key and its echo).
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    let repo = tmp.path().join("repo");
    std::fs::create_dir_all(repo.join(".git")).unwrap();
    std::fs::create_dir_all(&home).unwrap();
    let script = tmp.path().join("none.yaml");
    std::fs::write(&script, "turns: []\n").unwrap();
    let process = rexpect::process::PtyProcess::new(command(
        &home,
        &repo,
        &format!("scripted:{}", script.display()),
    ))
    .unwrap();
    let mut tty = process.get_file_handle().unwrap();
    read_until(&mut tty, "› ".as_bytes());
    let mut echo: Vec<Duration> = Vec::with_capacity(KEYSTROKES);
    for i in 0..KEYSTROKES {
        let c = b'a' + (i % 26) as u8;
        let t = Instant::now();
        tty.write_all(&[c]).unwrap();
        tty.flush().unwrap();
        read_until(&mut tty, &[c]);
        echo.push(t.elapsed());
    }
    tty.write_all(b"\x15\x04").unwrap();
    let _ = process.wait();
    echo.sort();
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    println!(
        "keystroke to echo over {KEYSTROKES} keys: median {:.0} µs, p99 {:.0} µs, max {:.0} µs",
        us(echo[KEYSTROKES / 2]),
        us(echo[KEYSTROKES * 99 / 100]),
        us(echo[KEYSTROKES - 1])
    );

    let long = long_reply(TOKENS);
    let words = long.split_whitespace().count();
    let (base_cpu, base_wall) = streamed_cpu("A ten word reply to measure what a turn costs.");
    let (cpu, wall) = streamed_cpu(&long);
    let per_token = (cpu - base_cpu).max(0.0) / words as f64;
    println!(
        "streaming {words} words as Markdown: {:.2} s CPU, {:.2} s wall (a ten-word reply: {:.2} s CPU, {:.2} s wall) — {:.1} µs CPU per streamed token",
        cpu,
        wall.as_secs_f64(),
        base_cpu,
        base_wall.as_secs_f64(),
        per_token * 1e6
    );
}
