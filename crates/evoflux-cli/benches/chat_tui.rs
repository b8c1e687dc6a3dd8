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

use std::time::{Duration, Instant};

use rexpect::session::PtySession;

const TOKENS: usize = 10_000;
const KEYSTROKES: usize = 200;

fn spawn(home: &std::path::Path, repo: &std::path::Path, model: &str) -> PtySession {
    let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_evoflux"));
    c.env_clear()
        .env("HOME", home)
        .env("EVOFLUX_ADMIN_DIR", home.join("admin"))
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("TERM", "xterm-256color")
        .current_dir(repo)
        .args(["chat", "--mode", "coding", "--model", model]);
    rexpect::session::spawn_command(c, Some(120_000)).unwrap()
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
    let pid = p.process().child_pid.as_raw();
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
    // Keystroke to echo at the prompt.
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    let repo = tmp.path().join("repo");
    std::fs::create_dir_all(repo.join(".git")).unwrap();
    std::fs::create_dir_all(&home).unwrap();
    let script = tmp.path().join("none.yaml");
    std::fs::write(&script, "turns: []\n").unwrap();
    let mut p = spawn(&home, &repo, &format!("scripted:{}", script.display()));
    p.exp_string(&raw("› ")).unwrap();
    let mut echo: Vec<Duration> = Vec::with_capacity(KEYSTROKES);
    for i in 0..KEYSTROKES {
        let c = char::from(b'a' + (i % 26) as u8);
        let t = Instant::now();
        p.send(&c.to_string()).unwrap();
        p.flush().unwrap();
        p.exp_char(c).unwrap();
        echo.push(t.elapsed());
    }
    p.send("\x15\x04").unwrap();
    let _ = p.exp_eof();
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
