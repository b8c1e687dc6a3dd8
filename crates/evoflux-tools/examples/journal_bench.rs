//! Measures the command journal: throughput and peak memory of a command
//! writing 1 GiB (or the MiB given) to stdout under the default journal cap
//! of 256 MiB, the artifact size that leaves, and the latency of
//! `process poll`.
//!
//! `cargo run --release -p evoflux-tools --example journal_bench [MiB]`
//! Prints figures; asserts nothing (budgets are never timed in tests).

use std::time::{Duration, Instant};

use evoflux_core::ids::Ids;
use evoflux_tools::{ProcessRuntime, RuntimeConfig, ShellRequest, Workspace};
use serde_json::json;

fn peak_rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mib: u64 = std::env::args()
        .nth(1)
        .map(|s| s.parse())
        .transpose()?
        .unwrap_or(1024);
    let dir = tempfile::tempdir()?;
    let ws = Workspace::new([dir.path()])?;
    let runtime = ProcessRuntime::new(RuntimeConfig::new(dir.path().join("artifacts")));
    let session = Ids::system().session_id();

    let before = peak_rss_kib();
    let request = ShellRequest {
        yield_time_ms: Some(30_000),
        timeout_seconds: Some(600),
        ..ShellRequest::new(format!("head -c {} /dev/zero", mib * 1024 * 1024))
    };
    let started = Instant::now();
    let mut out = runtime.run_shell(session, &ws, request).await?;
    while out
        .meta
        .as_ref()
        .is_some_and(|m| m.status == evoflux_tools::CommandStatus::Running)
    {
        let id = out
            .meta
            .as_ref()
            .map(|m| m.process_id.clone())
            .unwrap_or_default();
        out = runtime
            .process(
                session,
                &json!({"action": "wait", "process_id": id, "wait_seconds": 60}),
            )
            .await?;
    }
    let elapsed = started.elapsed();
    let artifact = out
        .meta
        .as_ref()
        .map(|m| m.artifact.clone())
        .unwrap_or_default();
    let bytes = std::fs::metadata(&artifact)?.len();
    let output = out.meta.as_ref().map_or(0, |m| m.output_bytes);
    println!(
        "journalled {} MiB of output in {:.2}s: {:.0} MB/s; artifact {} MiB ({} bytes dropped by the cap); \
         peak RSS {} KiB before, {} KiB after",
        output / (1024 * 1024),
        elapsed.as_secs_f64(),
        output as f64 / 1e6 / elapsed.as_secs_f64(),
        bytes / (1024 * 1024),
        out.meta.as_ref().map_or(0, |m| m.journal_dropped_bytes),
        before.unwrap_or(0),
        peak_rss_kib().unwrap_or(0)
    );
    std::fs::remove_file(&artifact)?;

    let request = ShellRequest {
        yield_time_ms: Some(250),
        ..ShellRequest::new("while :; do echo tick; sleep 0.01; done")
    };
    let first = runtime.run_shell(session, &ws, request).await?;
    let id = first.meta.map(|m| m.process_id).unwrap_or_default();
    let polls = 1000u32;
    let started = Instant::now();
    for _ in 0..polls {
        runtime
            .process(session, &json!({"action": "poll", "process_id": id}))
            .await?;
    }
    let per_poll = started.elapsed() / polls;
    println!("poll latency: {per_poll:?} per call over {polls} polls");
    runtime.shutdown().await;
    tokio::time::sleep(Duration::from_millis(10)).await;
    Ok(())
}
