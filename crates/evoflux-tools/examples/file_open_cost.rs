//! Measures what the race-free open costs: `read` and `write` through the
//! file tools (root, then each folder opened with O_NOFOLLOW relative to
//! the one before) against `std::fs::read` / `std::fs::write` of the same
//! path, for a file at depth 1 and at depth 8.
//!
//! `cargo run --release -p evoflux-tools --example file_open_cost [runs]`
//! Prints medians in microseconds; asserts nothing.

use std::path::Path;
use std::time::Instant;

use evoflux_tools::{Workspace, files};
use serde_json::json;

fn median_us(runs: usize, mut f: impl FnMut()) -> f64 {
    let mut times: Vec<f64> = (0..runs)
        .map(|_| {
            let started = Instant::now();
            f();
            started.elapsed().as_secs_f64() * 1e6
        })
        .collect();
    times.sort_by(f64::total_cmp);
    times[times.len() / 2]
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let runs: usize = std::env::args()
        .nth(1)
        .map(|s| s.parse())
        .transpose()?
        .unwrap_or(5000);
    let dir = tempfile::tempdir()?;
    let ws = Workspace::new([dir.path()])?;
    for rel in ["f.txt", "a/b/c/d/e/f/g/f.txt"] {
        let path = dir.path().join(rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(&path, "line\n".repeat(100))?;
        let depth = Path::new(rel).components().count();
        let read_tool = median_us(runs, || {
            let out = files::read(&ws, &json!({"path": rel}));
            assert!(out.is_ok());
        });
        let read_std = median_us(runs, || {
            let text = std::fs::read_to_string(&path);
            assert!(text.is_ok());
        });
        let write_tool = median_us(runs, || {
            let out = files::write(&ws, &json!({"path": rel, "content": "x\n"}));
            assert!(out.is_ok());
        });
        let write_std = median_us(runs, || {
            let done = evoflux_core::atomic::write_atomic(&path, b"x\n", Default::default());
            assert!(done.is_ok());
        });
        println!(
            "depth {depth}: read tool {read_tool:.1} µs vs std::fs::read {read_std:.1} µs; \
             write tool {write_tool:.1} µs vs write_atomic {write_std:.1} µs"
        );
    }
    Ok(())
}
