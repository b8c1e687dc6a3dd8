//! Crash and contention tests that need a second process.
//!
//! The second process is this same test binary re-run with one ignored
//! helper test selected; the helper reads its instructions from the
//! environment and reports progress on stdout.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::fs;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use evoflux_core::atomic::{AtomicOptions, write_atomic_with};
use evoflux_core::lock::{FileLock, LockError};

const TARGET_VAR: &str = "EVOFLUX_TEST_HELPER_TARGET";

/// Starts this test binary running only the helper test `name` (its path
/// in the binary, which holds every integration test of the crate).
fn spawn_helper(name: &str, target: &Path) -> (Child, BufReader<ChildStdout>) {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            name,
            "--exact",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(TARGET_VAR, target)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let stdout = BufReader::new(child.stdout.take().unwrap());
    (child, stdout)
}

/// Reads the helper's stdout until it prints `marker` (libtest may print it
/// after `test name ... ` on the same line). A helper that never gets there
/// within a minute is killed and the test fails instead of hanging.
fn wait_for(child: &mut Child, stdout: BufReader<ChildStdout>, marker: &'static str) {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in stdout.lines() {
            let Ok(line) = line else { break };
            if line.trim_end().ends_with(marker) {
                let _ = tx.send(());
                return;
            }
        }
    });
    if rx.recv_timeout(Duration::from_secs(60)).is_err() {
        let _ = child.kill();
        panic!("helper never printed {marker}");
    }
}

fn helper_target() -> Option<PathBuf> {
    std::env::var_os(TARGET_VAR).map(PathBuf::from)
}

fn visible_entries(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
#[ignore = "helper process for writer_killed_mid_write_leaves_old_file_intact"]
fn helper_slow_atomic_writer() {
    let target = helper_target().expect("run by the parent test");
    let _ = write_atomic_with(&target, AtomicOptions::default(), |file| {
        let chunk = vec![b'N'; 64 * 1024];
        file.write_all(&chunk)?;
        println!("WRITING");
        std::io::stdout().flush()?;
        // Keep writing until killed; give up after a minute so a broken
        // parent never leaves this process behind for long.
        for _ in 0..600 {
            file.write_all(&chunk)?;
            std::thread::sleep(Duration::from_millis(100));
        }
        Ok(())
    });
}

#[test]
fn writer_killed_mid_write_leaves_old_file_intact() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("registry.json");
    fs::write(&target, b"{\"old\":true}").unwrap();

    let (mut child, stdout) = spawn_helper("cross_process::helper_slow_atomic_writer", &target);
    wait_for(&mut child, stdout, "WRITING");
    child.kill().unwrap(); // SIGKILL: no destructor, no cleanup runs
    child.wait().unwrap();

    assert_eq!(fs::read(&target).unwrap(), b"{\"old\":true}");
    assert_eq!(visible_entries(dir.path()), ["registry.json"]);

    // The next writer is not disturbed by the dead one.
    evoflux_core::atomic::write_atomic(&target, b"{\"new\":true}", AtomicOptions::default())
        .unwrap();
    assert_eq!(fs::read(&target).unwrap(), b"{\"new\":true}");
    assert_eq!(visible_entries(dir.path()), ["registry.json"]);
}

#[test]
#[ignore = "helper process for lock_contention_between_processes"]
fn helper_lock_holder() {
    let target = helper_target().expect("run by the parent test");
    let lock = FileLock::acquire(&target, Duration::from_secs(10)).unwrap();
    println!("LOCKED");
    std::io::stdout().flush().unwrap();
    // Hold the lock until the parent closes our stdin.
    let mut sink = String::new();
    let _ = std::io::stdin().read_line(&mut sink);
    drop(lock);
}

#[test]
fn lock_contention_between_processes() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("registry.json");

    let (mut child, stdout) = spawn_helper("cross_process::helper_lock_holder", &target);
    wait_for(&mut child, stdout, "LOCKED");

    // A bounded wait times out with the documented error.
    let err = FileLock::acquire(&target, Duration::from_millis(150)).unwrap_err();
    match &err {
        LockError::Timeout { path, holder, .. } => {
            assert_eq!(path, &dir.path().join("registry.json.lock"));
            assert_eq!(*holder, Some(child.id()));
        }
        other => panic!("expected a timeout, got {other:?}"),
    }
    let msg = err.to_string();
    assert!(msg.contains("registry.json.lock"), "{msg}");
    assert!(
        msg.contains(&format!("held by pid {}", child.id())),
        "{msg}"
    );

    // A patient waiter blocks while the holder lives, then gets the lock.
    let (tx, rx) = mpsc::channel();
    let waiter_target = target.clone();
    let waiter = std::thread::spawn(move || {
        let got = FileLock::acquire(&waiter_target, Duration::from_secs(60));
        tx.send(got.is_ok()).unwrap();
        got
    });
    assert!(
        rx.recv_timeout(Duration::from_millis(300)).is_err(),
        "the waiter must not get the lock while the other process holds it"
    );
    drop(child.stdin.take()); // let the holder finish
    assert!(rx.recv_timeout(Duration::from_secs(30)).unwrap());
    let lock = waiter.join().unwrap().unwrap();
    assert_eq!(lock.path(), dir.path().join("registry.json.lock"));
    child.wait().unwrap();
}
