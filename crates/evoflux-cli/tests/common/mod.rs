//! The sandbox every end-to-end test of the real binary runs in: a temp
//! HOME, a temp admin dir and a git repository as the working directory,
//! with the environment cleared, so nothing touches the real home.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

pub struct Sandbox {
    pub tmp: tempfile::TempDir,
}

impl Sandbox {
    pub fn new() -> Self {
        let s = Sandbox {
            tmp: tempfile::tempdir().unwrap(),
        };
        std::fs::create_dir_all(s.repo().join(".git")).unwrap();
        std::fs::create_dir_all(s.config()).unwrap();
        s
    }

    pub fn home(&self) -> PathBuf {
        self.tmp.path().join("home")
    }

    /// The user config dir (`$HOME/.config/evoflux`).
    pub fn config(&self) -> PathBuf {
        self.home().join(".config/evoflux")
    }

    pub fn repo(&self) -> PathBuf {
        self.tmp.path().join("repo")
    }

    pub fn write(&self, path: impl AsRef<Path>, text: &str) -> PathBuf {
        write(path.as_ref(), text);
        path.as_ref().to_path_buf()
    }

    /// A file under the repository's `.evoflux/`.
    pub fn project(&self, rel: &str, text: &str) -> PathBuf {
        self.write(self.repo().join(".evoflux").join(rel), text)
    }

    /// A file under the user config dir.
    pub fn user(&self, rel: &str, text: &str) -> PathBuf {
        self.write(self.config().join(rel), text)
    }

    pub fn command(&self, args: &[&str]) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_evoflux"));
        c.env_clear()
            .env("HOME", self.home())
            .env("EVOFLUX_ADMIN_DIR", self.tmp.path().join("admin"))
            .current_dir(self.repo())
            .args(args);
        c
    }

    pub fn run(&self, args: &[&str]) -> Output {
        self.command(args).output().unwrap()
    }

    /// Runs `args` (which should include `--json`), expects success and
    /// returns stdout as JSON.
    pub fn json(&self, args: &[&str]) -> Value {
        let out = self.run(args);
        assert!(
            out.status.success(),
            "{args:?} failed: {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        json(&out)
    }
}

pub fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// stdout as JSON, with both streams in the panic message when it is not.
pub fn json(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not JSON ({e}): {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

/// The diagnostic codes a `--json` run printed on stderr.
pub fn stderr_codes(out: &Output) -> Vec<String> {
    let v: Value = serde_json::from_slice(&out.stderr).unwrap_or_else(|e| {
        panic!(
            "stderr not JSON ({e}): {}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    v["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["code"].as_str().unwrap().to_owned())
        .collect()
}
