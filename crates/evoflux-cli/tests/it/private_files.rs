#![allow(clippy::unwrap_used, clippy::expect_used)]

//! Private by default: under a permissive umask, what evoflux writes in
//! its data and cache folders is its owner's alone, and a folder others
//! can read is tightened with a notice.

use crate::common;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

use common::{Sandbox, script};

/// `evoflux args…` run by `sh` with umask 022, as a login shell has it.
fn under_umask_022(s: &Sandbox, args: &[&str]) -> std::process::Output {
    let mut c = Command::new("sh");
    c.env_clear()
        .envs(evoflux_app::testing::env(s.tmp.path()))
        .env("PATH", std::env::var("PATH").unwrap())
        .current_dir(s.repo())
        .arg("-c")
        .arg("umask 022 && exec \"$0\" \"$@\"")
        .arg(env!("CARGO_BIN_EXE_evoflux"))
        .args(args);
    c.output().unwrap()
}

fn mode(p: &Path) -> u32 {
    std::fs::symlink_metadata(p).unwrap().permissions().mode() & 0o777
}

/// Every folder under `root`, and every file evoflux itself writes there:
/// not inside a session's workspace or a sandbox's `/tmp`, which hold what
/// the agent's commands wrote (both folders themselves are checked).
fn walk(root: &Path, dirs: &mut Vec<std::path::PathBuf>, files: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(root).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            dirs.push(path.clone());
            if path
                .file_name()
                .is_some_and(|n| n == "workspace" || n == "tmp")
            {
                continue;
            }
            walk(&path, dirs, files);
        } else {
            files.push(path);
        }
    }
}

#[test]
fn a_session_under_umask_022_leaves_nothing_others_can_read() {
    let s = Sandbox::new();
    let model = script(
        &s,
        "notes.yaml",
        "turns:\n  - reply:\n      tool_calls:\n        - {name: todo, arguments: {todos: [{content: \"pack\", status: pending}]}}\n        - {name: shell, arguments: {command: \"echo packed\"}}\n  - reply: {text: \"done\"}\n",
    );
    let out = under_umask_022(&s, &["--json", "run", "--model", &model, "plan the trip"]);
    assert!(
        out.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let data = s.home().join(".local/share/evoflux");
    let cache = s.home().join(".cache/evoflux");
    assert_eq!(mode(&data), 0o700);
    assert_eq!(mode(&cache), 0o700);
    let (mut dirs, mut files) = (Vec::new(), Vec::new());
    walk(&data, &mut dirs, &mut files);
    assert!(files.iter().any(|f| f.ends_with("evoflux.db")), "{files:?}");
    // The command's journal is there too.
    assert!(
        files
            .iter()
            .any(|f| f.components().any(|c| c.as_os_str() == "artifacts")),
        "{files:?}"
    );
    for d in &dirs {
        assert_eq!(mode(d) & 0o077, 0, "{} is {:o}", d.display(), mode(d));
    }
    for f in &files {
        assert_eq!(mode(f) & 0o077, 0, "{} is {:o}", f.display(), mode(f));
    }
}

#[test]
fn a_data_folder_others_can_read_is_tightened_with_a_notice() {
    let s = Sandbox::new();
    let data = s.home().join(".local/share/evoflux");
    std::fs::create_dir_all(&data).unwrap();
    std::fs::set_permissions(&data, std::fs::Permissions::from_mode(0o755)).unwrap();
    let out = under_umask_022(&s, &["--json", "paths"]);
    assert!(out.status.success());
    assert_eq!(mode(&data), 0o700);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        common::stderr_codes(&out)
            .iter()
            .any(|c| c == "dirs/mode-tightened"),
        "{stderr}"
    );
}
