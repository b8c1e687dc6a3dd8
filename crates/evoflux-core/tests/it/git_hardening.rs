#![allow(clippy::unwrap_used, clippy::expect_used)]
//! evoflux's own git calls run none of the repository's code: a planted
//! `core.fsmonitor`, hook or external diff fires for a plain `git` and
//! stays silent for [`evoflux_core::git::command`].

use std::path::Path;
use std::process::Command;

fn git(dir: &Path, args: &[&str]) {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["-c", "user.name=t", "-c", "user.email=t@example.org"])
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A repository whose config runs `marker.sh` for fsmonitor, the
/// pre-commit hook and external diff; each run appends to `fired`.
fn planted(dir: &Path) {
    git(dir, &["init", "-q"]);
    let script = dir.join("marker.sh");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\necho \"$0\" >> {}\nexit 0\n",
            dir.join("fired").display()
        ),
    )
    .unwrap();
    std::fs::write(
        dir.join(".git/hooks/pre-commit"),
        std::fs::read(&script).unwrap(),
    )
    .unwrap();
    for f in [&script, &dir.join(".git/hooks/pre-commit")] {
        Command::new("chmod").arg("+x").arg(f).status().unwrap();
    }
    std::fs::write(dir.join("a.txt"), "one\n").unwrap();
    git(dir, &["add", "a.txt"]);
    git(dir, &["commit", "-q", "--no-verify", "-m", "first"]);
    let marker = script.display().to_string();
    git(dir, &["config", "core.fsmonitor", &marker]);
    git(dir, &["config", "diff.external", &marker]);
    std::fs::write(dir.join("a.txt"), "two\n").unwrap();
}

#[test]
fn fsmonitor_hooks_and_external_diff_run_for_git_but_not_for_evoflux() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    planted(dir);
    let fired = dir.join("fired");
    // The fixture is live: plain git runs the planted program.
    Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["status", "--short"])
        .output()
        .unwrap();
    assert!(
        fired.exists(),
        "the planted fsmonitor did not fire for plain git"
    );
    std::fs::remove_file(&fired).unwrap();

    for args in [
        &["status", "--short"][..],
        &["diff", "--no-ext-diff", "--no-textconv", "HEAD"],
        &[
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@example.org",
            "commit",
            "-qam",
            "two",
        ],
    ] {
        let out = evoflux_core::git::command()
            .arg("-C")
            .arg(dir)
            .args(args)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(!fired.exists(), "{args:?} ran the repository's program");
    }
}
