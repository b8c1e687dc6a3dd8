//! A load bench of `evoflux serve`: N concurrent sessions on the scripted
//! provider (which answers at once), each a 3-turn task over HTTP, every
//! event read from its SSE stream. Prints throughput, the latency of a
//! turn (message posted to `turn_completed` received) and per event, and
//! the server's memory per idle session. Asserts nothing.
//!
//!   cargo build --release -p evoflux-cli
//!   cargo run --release -p evoflux-server --example load -- [SESSIONS]

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use serde_json::{Value, json};

const TURNS: usize = 3;

fn rss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i]
}

/// Reads SSE frames from `stream` until a `turn_completed`; returns how
/// many events came.
async fn until_turn_completed(
    stream: &mut (impl futures_util::Stream<Item = reqwest::Result<bytes::Bytes>> + Unpin),
    buffer: &mut String,
) -> usize {
    let mut events = 0;
    loop {
        while let Some(end) = buffer.find("\n\n") {
            let frame: String = buffer.drain(..end + 2).collect();
            if frame.lines().any(|l| l.starts_with("event:")) {
                events += 1;
            }
            if frame.contains("event: turn_completed") {
                return events;
            }
        }
        match stream.next().await {
            Some(Ok(chunk)) => buffer.push_str(&String::from_utf8_lossy(&chunk)),
            _ => return events,
        }
    }
}

#[tokio::main]
async fn main() {
    evoflux_core::tls::install_crypto_provider();
    let sessions: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(1000);
    let bin = std::env::var_os("EVOFLUX_BIN").map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/release/evoflux"),
        PathBuf::from,
    );
    let work = tempfile::tempdir().unwrap();
    let home = work.path().join("home");
    let repo = work.path().join("repo");
    std::fs::create_dir_all(repo.join(".git")).unwrap();
    std::fs::create_dir_all(&home).unwrap();
    let script = work.path().join("task.yaml");
    std::fs::write(
        &script,
        "turns:\n  - reply: {text: \"one\"}\n  - reply: {text: \"two\"}\n  - reply: {text: \"three\"}\n",
    )
    .unwrap();
    let mut child = Command::new(&bin)
        .args(["serve", "--port", "0"])
        .env_clear()
        .env("HOME", &home)
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("EVOFLUX_SERVER_TOKEN", "bench-token")
        .current_dir(&repo)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| {
            panic!(
                "{}: {e} (build it: cargo build --release -p evoflux-cli)",
                bin.display()
            )
        });
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let url: String = line
        .split_whitespace()
        .find(|w| w.starts_with("http://"))
        .unwrap()
        .to_owned();
    let pid = child.id();
    let http = reqwest::Client::builder()
        .pool_max_idle_per_host(sessions)
        .build()
        .unwrap();
    let base_rss = rss_kib(pid);
    let model = format!("scripted:{}", script.display());
    let started = Instant::now();
    let latencies = Arc::new(std::sync::Mutex::new(Vec::<(f64, usize)>::new()));
    let opens = Arc::new(std::sync::Mutex::new(Vec::<f64>::new()));
    let mut tasks = Vec::new();
    for _ in 0..sessions {
        let (http, url, model, latencies, opens) = (
            http.clone(),
            url.clone(),
            model.clone(),
            Arc::clone(&latencies),
            Arc::clone(&opens),
        );
        tasks.push(tokio::spawn(async move {
            let opening = Instant::now();
            let created: Value = http
                .post(format!("{url}/api/sessions"))
                .bearer_auth("bench-token")
                .json(&json!({"mode": "work", "model": model}))
                .send()
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            let id = created["session_id"].as_str().unwrap().to_owned();
            let response = http
                .get(format!("{url}/api/sessions/{id}/events"))
                .bearer_auth("bench-token")
                .send()
                .await
                .unwrap();
            opens
                .lock()
                .unwrap()
                .push(opening.elapsed().as_secs_f64() * 1000.0);
            let mut stream = response.bytes_stream();
            let mut buffer = String::new();
            for turn in 0..TURNS {
                let sent = Instant::now();
                let r = http
                    .post(format!("{url}/api/sessions/{id}/messages"))
                    .bearer_auth("bench-token")
                    .json(&json!({"text": format!("step {turn}")}))
                    .send()
                    .await
                    .unwrap();
                assert_eq!(r.status(), 202);
                let events = until_turn_completed(&mut stream, &mut buffer).await;
                latencies
                    .lock()
                    .unwrap()
                    .push((sent.elapsed().as_secs_f64() * 1000.0, events));
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let elapsed = started.elapsed();
    tokio::time::sleep(Duration::from_millis(500)).await;
    let idle_rss = rss_kib(pid);
    let mut turns: Vec<f64> = latencies
        .lock()
        .unwrap()
        .iter()
        .map(|(ms, _)| *ms)
        .collect();
    let mut per_event: Vec<f64> = latencies
        .lock()
        .unwrap()
        .iter()
        .map(|(ms, n)| ms / (*n).max(1) as f64)
        .collect();
    let mut opens = opens.lock().unwrap().clone();
    opens.sort_by(f64::total_cmp);
    turns.sort_by(f64::total_cmp);
    per_event.sort_by(f64::total_cmp);
    let total_turns = turns.len();
    println!(
        "sessions: {sessions}, turns: {total_turns} in {:.2} s",
        elapsed.as_secs_f64()
    );
    println!(
        "throughput: {:.0} turns/s",
        total_turns as f64 / elapsed.as_secs_f64()
    );
    println!(
        "turn latency (message posted -> turn_completed read): p50 {:.2} ms, p99 {:.2} ms",
        percentile(&turns, 0.5),
        percentile(&turns, 0.99)
    );
    println!(
        "session open (created and its stream open): p50 {:.2} ms, p99 {:.2} ms",
        percentile(&opens, 0.5),
        percentile(&opens, 0.99)
    );
    println!(
        "per event: p50 {:.3} ms, p99 {:.3} ms",
        percentile(&per_event, 0.5),
        percentile(&per_event, 0.99)
    );
    println!(
        "server memory: {:.1} MiB at start, {:.1} MiB with {sessions} idle sessions: {:.3} MiB per idle session",
        base_rss as f64 / 1024.0,
        idle_rss as f64 / 1024.0,
        (idle_rss.saturating_sub(base_rss)) as f64 / 1024.0 / sessions as f64
    );
    let _ = Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .status();
    let _ = child.wait();
}
