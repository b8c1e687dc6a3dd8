//! Measures what the sandbox costs per command: `true` through the
//! command runtime unconfined, and under the default `sandbox.toml`
//! (bubblewrap, workspace-write), on a small workspace and on this
//! repository (whose walk for denied files and nested controls is the
//! variable part).
//!
//! `cargo run --release -p evoflux-tools --example sandbox_cost [runs] [dir]`
//! Prints medians; asserts nothing.

use std::path::{Path, PathBuf};
use std::time::Instant;

use evoflux_core::ids::{Ids, SessionId};
use evoflux_graph::sandbox::SandboxPolicy;
use evoflux_tools::sandbox::{CommandSandbox, Confinement};
use evoflux_tools::{ProcessRuntime, RuntimeConfig, ShellRequest, Workspace};

async fn median_ms(
    runtime: &ProcessRuntime,
    session: SessionId,
    ws: &Workspace,
    runs: usize,
) -> Result<f64, Box<dyn std::error::Error>> {
    let mut times = Vec::with_capacity(runs);
    for _ in 0..runs {
        let started = Instant::now();
        let out = runtime
            .run_shell(session, ws, ShellRequest::new("true"))
            .await?;
        times.push(started.elapsed().as_secs_f64() * 1000.0);
        assert!(!out.is_error, "{}", out.text);
    }
    times.sort_by(f64::total_cmp);
    Ok(times[times.len() / 2])
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let runs: usize = std::env::args()
        .nth(1)
        .map(|s| s.parse())
        .transpose()?
        .unwrap_or(50);
    let big: PathBuf = std::env::args()
        .nth(2)
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../.."));
    let tmp = tempfile::tempdir()?;
    let small = tmp.path().join("ws");
    std::fs::create_dir_all(small.join("src"))?;
    std::fs::write(small.join("src/main.rs"), "fn main() {}\n")?;
    let runtime = ProcessRuntime::new(RuntimeConfig::new(tmp.path().join("artifacts")));
    let ids = Ids::system();
    for (label, root) in [
        ("small workspace", small.as_path()),
        ("this repository", big.as_path()),
    ] {
        let ws = Workspace::new([root])?;
        let plain = ids.session_id();
        let confined = ids.session_id();
        runtime.confine(
            confined,
            CommandSandbox::new(
                SandboxPolicy::framework_default(),
                Confinement::Repositories,
                ws.roots().to_vec(),
                vec![tmp.path().join("data")],
            )?,
        );
        // Warm up both paths (page cache, the one-time bwrap probe).
        median_ms(&runtime, plain, &ws, 3).await?;
        median_ms(&runtime, confined, &ws, 3).await?;
        let unconfined = median_ms(&runtime, plain, &ws, runs).await?;
        let sandboxed = median_ms(&runtime, confined, &ws, runs).await?;
        println!(
            "{label:<16} unconfined {unconfined:6.2} ms  sandboxed {sandboxed:6.2} ms  cost {:6.2} ms  (median of {runs})",
            sandboxed - unconfined
        );
    }
    runtime.shutdown().await;
    Ok(())
}
