//! The sandbox every end-to-end test of the real binary runs in: a temp
//! HOME, a temp admin dir and a git repository as the working directory,
//! with the environment cleared, so nothing touches the real home. The
//! layout and the environment are the application's test application's
//! (`evoflux_app::testing`), so the library's view of a sandbox (its
//! directories, its store) is the binary's.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use evoflux_app::testing;
use serde_json::Value;

pub mod fake_model;
pub mod server;
pub mod tmux;
pub mod webdriver;

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
        testing::home(self.tmp.path())
    }

    /// The user config dir (`$HOME/.config/evoflux`).
    pub fn config(&self) -> PathBuf {
        self.home().join(".config/evoflux")
    }

    pub fn repo(&self) -> PathBuf {
        testing::repo(self.tmp.path())
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

    /// Trusts the repository as it is now (`evoflux trust --yes`), as its
    /// owner would before its command tools, MCP servers and providers may
    /// run; what it changes or adds later waits for another `trust`.
    pub fn trust(&self) {
        let out = self.run(&["trust", "--yes"]);
        assert!(
            out.status.success(),
            "trust failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// Trusts the repository holding `dir`.
    pub fn trust_dir(&self, dir: &Path) {
        let out = self.run(&["trust", "--yes", dir.to_str().unwrap()]);
        assert!(
            out.status.success(),
            "trust failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    pub fn command(&self, args: &[&str]) -> Command {
        let mut c = Command::new(evoflux_bin());
        c.env_clear()
            .envs(testing::env(self.tmp.path()))
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

// ---- runs of `evoflux run` with the scripted provider ----------------------

/// Writes a script and returns the `--model` value for it.
pub fn script(s: &Sandbox, name: &str, yaml: &str) -> String {
    let path = s.tmp.path().join(name);
    std::fs::write(&path, yaml).unwrap();
    format!("scripted:{}", path.display())
}

/// A loopback port nothing listens on at the moment, for a child process
/// to listen on.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Runs with the test's PATH, so shell commands find their programs.
pub fn run(s: &Sandbox, args: &[&str]) -> Output {
    s.command(args)
        .env("PATH", std::env::var("PATH").unwrap())
        .output()
        .unwrap()
}

/// Runs `args` (a `--json` run) expecting success, with both streams in
/// the panic message, and returns its events.
pub fn run_ok(s: &Sandbox, args: &[&str]) -> Vec<Value> {
    let out = run(s, args);
    assert!(
        out.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    events(&out)
}

/// The JSON-lines event stream of a `--json` run.
pub fn events(out: &Output) -> Vec<Value> {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            serde_json::from_str(l).unwrap_or_else(|e| {
                panic!(
                    "not an event line ({e}): {l}\nstderr: {}",
                    String::from_utf8_lossy(&out.stderr)
                )
            })
        })
        .collect()
}

pub fn of_type<'a>(events: &'a [Value], kind: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["type"] == kind).collect()
}

pub fn session_id(events: &[Value]) -> String {
    of_type(events, "session_started")[0]["session_id"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// Runs `chat` in Coding mode with `model`, typing `stdin`; expects success
/// and returns the output.
pub fn chat(s: &Sandbox, model: &str, stdin: &str) -> Output {
    typed(s, &["chat", "--mode", "coding", "--model", model], stdin)
}

/// Runs `args` with the test's PATH, typing `stdin`; expects success and
/// returns the output.
pub fn typed(s: &Sandbox, args: &[&str], stdin: &str) -> Output {
    use std::io::Write;
    use std::process::Stdio;
    let mut child = s
        .command(args)
        .env("PATH", std::env::var("PATH").unwrap())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// The `evoflux` binary under test: the one cargo built, or a copy named
/// by `EVOFLUX_TEST_BIN` (the sandbox tests run again as an unprivileged
/// user, who may not reach the build folder).
pub fn evoflux_bin() -> PathBuf {
    std::env::var_os("EVOFLUX_TEST_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_evoflux")))
}

/// The MCP test server binary (`evoflux-mcp-testserver`), built beside
/// `evoflux` when the workspace's tests are built (`cargo nextest run
/// --workspace`). `None`, with a note, when only this package was built.
pub fn mcp_test_server() -> Option<PathBuf> {
    let path = PathBuf::from(env!("CARGO_BIN_EXE_evoflux")).with_file_name(format!(
        "evoflux-mcp-testserver{}",
        std::env::consts::EXE_SUFFIX
    ));
    if path.is_file() {
        return Some(path);
    }
    eprintln!(
        "note: {} is not built (build the workspace tests, or `cargo build -p evoflux-mcp --features test-server`); skipping",
        path.display()
    );
    None
}

/// The MCP test server over Streamable HTTP on a loopback port, and its
/// URL; it stops when its stdin closes (drop the child's stdin, then wait).
pub fn mcp_http_test_server() -> Option<(std::process::Child, String)> {
    use std::io::BufRead;
    let bin = mcp_test_server()?;
    let mut child = Command::new(&bin)
        .arg("http")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    let url = first.trim().to_owned();
    assert!(url.starts_with("http://127.0.0.1:"), "{url}");
    Some((child, url))
}

// ---- real git repositories --------------------------------------------------

/// Runs git in `dir` (as a fixed committer) and returns its stdout.
pub fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(["-c", "user.email=t@example.com", "-c", "user.name=t"])
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Makes the sandbox's repository a real git repository with everything
/// in it committed.
pub fn git_repo(s: &Sandbox) {
    std::fs::remove_dir_all(s.repo().join(".git")).unwrap();
    git(&s.repo(), &["init", "-q"]);
    git(&s.repo(), &["add", "-A"]);
    git(&s.repo(), &["commit", "-q", "-m", "recorded state"]);
}

/// The pids of processes whose command line holds `marker`.
pub fn with_marker(marker: &str) -> Vec<u32> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        let text = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        if text.contains(marker) && !text.contains("evoflux") {
            out.push(pid);
        }
    }
    out
}

// ---- the same tests as an unprivileged user ----------------------------------

/// Runs this binary's tests of one file (`module`, as `"browser::"`)
/// again as `nobody`, skipping `skip` (the caller), with a copy of
/// `evoflux` that user can run ([`evoflux_core::unprivileged`]).
pub fn rerun_unprivileged(module: &str, skip: &str) {
    let bin = evoflux_bin();
    evoflux_core::unprivileged::rerun_unprivileged(evoflux_core::unprivileged::Rerun {
        module,
        skip,
        programs: &[("EVOFLUX_TEST_BIN", &bin)],
        tmpdir: evoflux_core::unprivileged::TmpDir::RunFolder,
    });
}

// ---- teams ------------------------------------------------------------------

/// A `--json run` in `mode` (`work` or `coding`) on `model` with `prompt`,
/// expected to succeed; its events.
pub fn run_in(s: &Sandbox, mode: &str, model: &str, prompt: &str) -> Vec<Value> {
    run_ok(
        s,
        &["--json", "run", "--mode", mode, "--model", model, prompt],
    )
}

/// A Work team member of the project (`agents/<name>.md`) on `model`.
pub fn member(s: &Sandbox, name: &str, description: &str, model: &str) {
    s.project(
        &format!("agents/{name}.md"),
        &format!(
            "---\nrole: member\ndescription: {description}\nmodel: {model}\n---\nYou are the {name}.\n"
        ),
    );
}
