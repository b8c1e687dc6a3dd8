//! Render time and peak memory of the viewer on large real documents: a
//! 50-page DOCX, a 100,000-cell XLSX, a 40-slide PPTX and a 100-page PDF,
//! written by the document script with python-docx, openpyxl, python-pptx
//! and reportlab. Prints figures; asserts nothing.
//!
//! `cargo bench -p evoflux-viewer --bench render`
//!
//! Each document is measured in a fresh process (this binary run again with
//! `EVOFLUX_VIEWER_BENCH_CASE`), so an allocator that kept memory from an
//! earlier document cannot hide a peak: peak memory is that process's
//! resident high-water mark (`VmHWM`) above what it held once the file's
//! bytes were read, reset there through `/proc/self/clear_refs`.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use evoflux_viewer::{DocumentKind, ViewLimits, ViewRequest, render};

fn status_kib(field: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
}

fn reset_peak() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

const CASE_VAR: &str = "EVOFLUX_VIEWER_BENCH_CASE";
const DIR_VAR: &str = "EVOFLUX_VIEWER_BENCH_DIR";

fn main() {
    if let (Ok(case), Ok(dir)) = (std::env::var(CASE_VAR), std::env::var(DIR_VAR)) {
        if let Ok(index) = case.parse::<usize>() {
            measure(index, Path::new(&dir));
        }
        return;
    }
    let py = std::env::var("EVOFLUX_TEST_PYTHON").unwrap_or_else(|_| "python3".into());
    let tmp = std::env::temp_dir().join(format!("evoflux-viewer-bench-{}", std::process::id()));
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/make_documents.py");
    let made = Command::new(&py)
        .arg(&script)
        .arg(&tmp)
        .arg("big")
        .status()
        .is_ok_and(|s| s.success());
    if !made {
        println!(
            "no Python with python-docx, openpyxl, python-pptx and reportlab ({py}); nothing measured"
        );
        return;
    }
    println!(
        "{:<40} {:>10} {:>12} {:>12} {:>12} {:>10}",
        "document", "file KiB", "median ms", "min ms", "peak MiB", "HTML KiB"
    );
    let me = std::env::current_exe();
    for index in 0..cases().len() {
        let ran = me.as_ref().ok().and_then(|exe| {
            Command::new(exe)
                .env(CASE_VAR, index.to_string())
                .env(DIR_VAR, &tmp)
                .status()
                .ok()
        });
        if !ran.is_some_and(|s| s.success()) {
            println!("case {index}: the measuring process failed");
        }
    }
    let _ = std::fs::remove_dir_all(&tmp);
}

fn cases() -> [(&'static str, DocumentKind, &'static str, ViewLimits); 5] {
    let all_pages = ViewLimits {
        pages_per_request: 100,
        ..ViewLimits::DEFAULT
    };
    [
        (
            "50-page DOCX",
            DocumentKind::Docx,
            "long.docx",
            ViewLimits::DEFAULT,
        ),
        (
            "100,000-cell XLSX",
            DocumentKind::Xlsx,
            "cells.xlsx",
            ViewLimits::DEFAULT,
        ),
        (
            "40-slide PPTX",
            DocumentKind::Pptx,
            "talk.pptx",
            ViewLimits::DEFAULT,
        ),
        (
            "100-page PDF, first request (25 pages)",
            DocumentKind::Pdf,
            "book.pdf",
            ViewLimits::DEFAULT,
        ),
        (
            "100-page PDF, all 100 pages",
            DocumentKind::Pdf,
            "book.pdf",
            all_pages,
        ),
    ]
}

/// One document, in its own process: a cold rendering for the peak, then
/// seven timed ones.
fn measure(index: usize, dir: &Path) {
    let Some((label, kind, file, limits)) = cases().into_iter().nth(index) else {
        return;
    };
    {
        let bytes = match std::fs::read(dir.join(file)) {
            Ok(b) => b,
            Err(e) => {
                println!("{label}: {e}");
                return;
            }
        };
        // Peak memory of one cold rendering.
        let tracked = reset_peak();
        let before = status_kib("VmRSS:").unwrap_or(0);
        let out = render(kind, &bytes, ViewRequest::default(), &limits);
        let peak = status_kib("VmHWM:").unwrap_or(0).saturating_sub(before);
        let html: usize = match &out {
            Ok(r) => r.parts.iter().map(|p| p.html.len()).sum(),
            Err(e) => {
                println!("{label}: {} ({})", e, e.code());
                return;
            }
        };
        drop(out);
        let mut times: Vec<Duration> = (0..7)
            .map(|_| {
                let t = Instant::now();
                let r = render(kind, &bytes, ViewRequest::default(), &limits);
                let d = t.elapsed();
                drop(r);
                d
            })
            .collect();
        times.sort();
        let ms = |d: Duration| d.as_secs_f64() * 1000.0;
        println!(
            "{:<40} {:>10} {:>12.1} {:>12.1} {:>12} {:>10}",
            label,
            bytes.len() / 1024,
            ms(times[times.len() / 2]),
            ms(times[0]),
            if tracked {
                format!("{:.1}", peak as f64 / 1024.0)
            } else {
                "n/a".to_owned()
            },
            html / 1024
        );
    }
}
