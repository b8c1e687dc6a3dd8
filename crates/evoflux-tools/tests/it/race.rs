#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The symlink-swap race: while another thread keeps swapping a folder of
//! the workspace for a link to a folder outside it, no `write` lands
//! outside and no `read` returns a byte of what is outside.

use std::fs;
use std::os::unix::fs::symlink;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use evoflux_tools::{Workspace, files};
use serde_json::json;

/// Swaps `root/dir` for a link to `outside` and back until `stop`.
fn swapper(root: &Path, outside: &Path, stop: Arc<AtomicBool>) -> std::thread::JoinHandle<u64> {
    let (dir, held, outside) = (
        root.join("dir"),
        root.join("dir.held"),
        outside.to_path_buf(),
    );
    std::thread::spawn(move || {
        let mut swaps = 0;
        while !stop.load(Ordering::Relaxed) {
            if fs::rename(&dir, &held).is_ok() && symlink(&outside, &dir).is_ok() {
                swaps += 1;
                std::thread::yield_now();
                let _ = fs::remove_file(&dir);
            }
            let _ = fs::rename(&held, &dir);
            // Leave the folder in place for a moment too, so that writes
            // also land in it however busy the machine is.
            for _ in 0..20 {
                std::thread::yield_now();
            }
        }
        swaps
    })
}

#[test]
fn no_write_or_read_crosses_a_swapped_in_link() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("ws");
    let outside = tmp.path().join("outside");
    fs::create_dir_all(root.join("dir")).unwrap();
    fs::create_dir_all(&outside).unwrap();
    fs::write(root.join("dir/secret"), "inside").unwrap();
    fs::write(outside.join("secret"), "OUTSIDE").unwrap();
    let ws = Workspace::new([&root]).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let swaps = swapper(&root, &outside, Arc::clone(&stop));
    let (mut written, mut read, mut refused) = (0, 0, 0);
    for i in 0..1000 {
        let path = format!("dir/f{i}.txt");
        match files::write(&ws, &json!({"path": path, "content": "x"})) {
            Ok(_) => written += 1,
            Err(_) => refused += 1,
        }
        if let Ok(out) = files::read(&ws, &json!({"path": "dir/secret"})) {
            assert!(
                !out.text.contains("OUTSIDE"),
                "a read followed the link: {}",
                out.text
            );
            read += 1;
        }
    }
    stop.store(true, Ordering::Relaxed);
    let swaps = swaps.join().unwrap();
    let escaped: Vec<_> = fs::read_dir(&outside)
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .filter(|n| n != "secret")
        .collect();
    println!("swaps {swaps}, writes {written} done and {refused} refused, reads {read}");
    assert!(
        escaped.is_empty(),
        "writes landed outside the workspace: {escaped:?}"
    );
    assert!(swaps > 0, "the race never ran");
    assert!(written > 0, "no write succeeded at all");
}
