#![allow(clippy::unwrap_used, clippy::expect_used)]

//! Figures of the `browser` tool (not a test): how long Chromium takes to
//! start and read its first page, cold (a new profile) and warm (the same
//! profile again, Chromium's files in the page cache), and the memory one
//! open browser holds (the resident set of its whole process group).
//!
//! `cargo run -p evoflux-tools --example browser_figures`

use std::time::Instant;

use axum::Router;
use axum::response::Html;
use axum::routing::get;
use evoflux_tools::browser::{Browser, BrowserConfig, Reach, find_chromium};
use serde_json::json;

/// The processes of `group` and their memory in KiB: the sum of their
/// resident sets (shared pages counted in each) and of their proportional
/// sets (shared pages divided among them: what the browser really costs).
fn group_memory_kib(group: u32) -> (usize, u64, u64) {
    let mut count = 0;
    let mut total = 0;
    let mut pss = 0;
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // Fields after the command's closing parenthesis: state, ppid, pgrp.
        let Some(rest) = stat.rsplit_once(')').map(|(_, r)| r) else {
            continue;
        };
        let pgrp: Option<u32> = rest.split_whitespace().nth(2).and_then(|p| p.parse().ok());
        if pgrp != Some(group) {
            continue;
        }
        let status = std::fs::read_to_string(entry.path().join("status")).unwrap_or_default();
        if let Some(kib) = status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        {
            count += 1;
            total += kib;
        }
        let rollup = std::fs::read_to_string(entry.path().join("smaps_rollup")).unwrap_or_default();
        pss += rollup
            .lines()
            .find_map(|l| l.strip_prefix("Pss:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            .unwrap_or(0);
    }
    (count, total, pss)
}

#[tokio::main]
async fn main() {
    let chromium = find_chromium(None).expect("Chromium is not installed");
    let app = Router::new().route(
        "/",
        get(|| async {
            Html("<html><body><p id=o></p><a href=/x>next</a><script>o.textContent='hello from script'</script></body></html>")
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    let dir = tempfile::tempdir().unwrap();
    let config = BrowserConfig {
        chromium,
        dir: dir.path().join("browser"),
        reach: Reach::PublicAndLoopback,
    };
    for run in ["cold", "warm"] {
        let browser = Browser::new(config.clone());
        let start = Instant::now();
        let out = browser.run(&json!({"action": "open", "url": url})).await;
        let first = start.elapsed();
        assert!(
            out.output.text.contains("hello from script"),
            "{}",
            out.output.text
        );
        let again = Instant::now();
        browser.run(&json!({"action": "read"})).await;
        let read = again.elapsed();
        let group = browser.process_group().await.unwrap();
        let (processes, rss, pss) = group_memory_kib(group);
        println!(
            "{run}: start + first page read {:.0} ms; a further read {:.0} ms; \
             one open browser: {processes} processes, {:.0} MiB proportional \
             ({:.0} MiB summed resident)",
            first.as_secs_f64() * 1000.0,
            read.as_secs_f64() * 1000.0,
            pss as f64 / 1024.0,
            rss as f64 / 1024.0
        );
        browser.shutdown().await;
    }
}
