#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The command sandbox against a hostile command, through the real runtime
//! and real bubblewrap: no capability, no mount, no new namespace, no host
//! socket with the network denied, no home folder, a process limit, and no
//! control of the agent's (evoflux's, other tools', git's) created,
//! changed, renamed or replaced by a command.
//!
//! CI runs these as root, where bubblewrap keeps every capability unless
//! told otherwise; `the_escapes_hold_for_an_unprivileged_user_too` runs
//! this same binary again as `nobody`.

use std::ffi::OsString;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use evoflux_core::ids::{Ids, SessionId};
use evoflux_graph::sandbox::{NetworkPolicy, SandboxPolicy};
use evoflux_tools::sandbox::{CommandSandbox, Confinement};
use evoflux_tools::{ProcessRuntime, RuntimeConfig, ToolError, Workspace};
use serde_json::json;

struct Fixture {
    _dir: tempfile::TempDir,
    home: PathBuf,
    root: PathBuf,
    data: PathBuf,
    ws: Workspace,
    rt: ProcessRuntime,
    session: SessionId,
}

/// A workspace (a git repository with controls), a home folder with a key
/// in it, and a runtime confining the session's commands by `policy`.
/// The home is outside `/tmp`, which every command gets a private one of.
fn fixture(adjust: impl FnOnce(&mut SandboxPolicy)) -> Option<Fixture> {
    let base = std::env::var_os("EVOFLUX_TEST_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_TARGET_TMPDIR")));
    fs::create_dir_all(&base).unwrap();
    let dir = tempfile::tempdir_in(&base).unwrap();
    let home = dir.path().join("home");
    let root = dir.path().join("ws");
    let data = dir.path().join("data");
    for (path, text) in [
        (home.join(".ssh/id_rsa"), "PRIVATE-KEY"),
        (root.join("src/main.rs"), "fn main() {}"),
        (root.join(".evoflux/agents/a.md"), "---\nname: a\n---\n"),
        (root.join("AGENTS.md"), "be nice"),
        (root.join(".git/config"), "[core]\n\tbare = false\n"),
        (root.join(".git/hooks/pre-commit.sample"), "#!/bin/sh\n"),
        (root.join(".git/HEAD"), "ref: refs/heads/main\n"),
    ] {
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, text).unwrap();
    }
    let path = std::env::var_os("PATH").unwrap_or_else(|| "/usr/bin:/bin".into());
    let mut config = RuntimeConfig::new(data.join("artifacts"));
    config.parent_env = vec![
        ("PATH".into(), path),
        ("HOME".into(), OsString::from(&home)),
        ("LANG".into(), "C.UTF-8".into()),
    ];
    config.exit_drain = Duration::from_millis(300);
    let ids = Ids::sequential();
    config.ids = ids.clone();
    let rt = ProcessRuntime::new(config);
    let session = ids.session_id();
    let mut policy = SandboxPolicy::framework_default();
    adjust(&mut policy);
    let sandbox = CommandSandbox::new(
        policy,
        Confinement::Repositories,
        vec![root.canonicalize().unwrap()],
        vec![data.clone()],
    )
    .unwrap();
    rt.confine(session, sandbox);
    if let Err(e) = evoflux_tools::sandbox::probe_bubblewrap(std::env::var_os("PATH").as_deref()) {
        evoflux_core::prerequisite::missing(
            &format!("a working bubblewrap ({e})"),
            "install the Debian package `bubblewrap`, and allow user namespaces",
        );
        return None;
    }
    Some(Fixture {
        ws: Workspace::new([&root]).unwrap(),
        _dir: dir,
        home,
        root,
        data,
        rt,
        session,
    })
}

impl Fixture {
    async fn sh(&self, command: &str) -> String {
        let out = tokio::time::timeout(
            Duration::from_secs(60),
            self.rt
                .shell(self.session, &self.ws, &json!({"command": command})),
        )
        .await
        .expect("the command did not finish")
        .unwrap();
        out.text
    }
}

#[tokio::test]
async fn a_command_has_no_capability_no_new_privileges_and_a_seccomp_filter() {
    let Some(f) = fixture(|_| {}) else { return };
    let out = f
        .sh("grep -E '^(CapEff|CapPrm|CapBnd|NoNewPrivs|Seccomp):' /proc/self/status")
        .await;
    assert!(out.contains("CapEff:\t0000000000000000"), "{out}");
    assert!(out.contains("CapPrm:\t0000000000000000"), "{out}");
    assert!(out.contains("NoNewPrivs:\t1"), "{out}");
    assert!(out.contains("Seccomp:\t2"), "{out}");
}

#[tokio::test]
async fn mounts_and_new_namespaces_are_refused() {
    let Some(f) = fixture(|_| {}) else { return };
    let out = f
        .sh(
            "mount -o remount,bind,rw .evoflux 2>&1 && echo REMOUNTED-CONTROL; \
             umount -l /tmp 2>&1 && echo UNMOUNTED-TMP; \
             mount -o remount,bind,rw / 2>&1 && echo REMOUNTED-ROOT; \
             unshare -r true 2>&1 && echo UNSHARED; \
             unshare -m true 2>&1 && echo UNSHARED-MOUNTS; \
             echo planted > .evoflux/agents/b.md 2>&1 || echo control-read-only",
        )
        .await;
    for escaped in [
        "REMOUNTED-CONTROL",
        "UNMOUNTED-TMP",
        "REMOUNTED-ROOT",
        "UNSHARED\n",
        "UNSHARED-MOUNTS",
    ] {
        assert!(!out.contains(escaped), "{escaped}: {out}");
    }
    assert!(out.contains("control-read-only"), "{out}");
    assert!(!f.root.join(".evoflux/agents/b.md").exists());
}

#[tokio::test]
async fn the_home_folder_is_hidden_but_its_readable_roots_show() {
    let Some(f) = fixture(|p| p.readable_roots = vec!["~/.cargo".into()]) else {
        return;
    };
    fs::create_dir_all(f.home.join(".cargo")).unwrap();
    fs::write(f.home.join(".cargo/config.toml"), "TOOLCHAIN").unwrap();
    let out = f
        .sh("cat ~/.ssh/id_rsa 2>&1; cat ~/.cargo/config.toml; echo")
        .await;
    assert!(!out.contains("PRIVATE-KEY"), "{out}");
    assert!(out.contains("TOOLCHAIN"), "{out}");
}

#[tokio::test]
async fn with_the_network_denied_a_host_unix_socket_is_unreachable() {
    let Some(f) = fixture(|p| {
        p.network = NetworkPolicy::Deny;
        p.readable_roots.clear();
    }) else {
        return;
    };
    if !Path::new("/usr/bin/python3").exists() {
        eprintln!("skipped: the probe connects with /usr/bin/python3, which is not installed");
        return;
    }
    // A host socket in a folder the command can see (next to the
    // workspace; `/` is visible read-only), as Docker's or an
    // ssh-agent's would be.
    let socket = f.root.parent().unwrap().join("host.sock");
    let _listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
    let out = f
        .sh(&format!(
            "/usr/bin/python3 -c \"import socket; s=socket.socket(socket.AF_UNIX); \
             s.connect('{}'); print('CONNECTED')\" 2>&1 | tail -1",
            socket.display()
        ))
        .await;
    assert!(!out.contains("CONNECTED"), "{out}");
    // The kernel reads `socket`'s domain as an `int`: setting the upper
    // bits must not slip past the filter.
    if cfg!(target_arch = "x86_64") {
        let out = f
            .sh(
                "/usr/bin/python3 -c \"import ctypes; libc=ctypes.CDLL(None); \
                 print('FD', libc.syscall(41, ctypes.c_long(0x100000001), 1, 0))\"",
            )
            .await;
        assert!(out.contains("FD -1"), "{out}");
    }
    assert!(
        out.contains("PermissionError") || out.contains("Operation not permitted"),
        "{out}"
    );
}

#[tokio::test]
async fn a_command_cannot_start_more_processes_than_the_limit() {
    let Some(f) = fixture(|p| {
        p.max_processes = 32;
        p.max_open_files = 64;
    }) else {
        return;
    };
    let out = f.sh("ulimit -n; ulimit -Hn").await;
    assert!(out.contains("\n64\n64"), "{out}");
    if let evoflux_tools::ProcessLimit::Unavailable(why) =
        &evoflux_tools::Limits::detect().processes
    {
        eprintln!("skipped: no process limit here: {why}");
        return;
    }
    let out = f
        .sh("n=0; for i in $(seq 100); do sleep 5 & n=$((n+1)); done 2>&1; echo after-loop")
        .await;
    assert!(
        out.contains("Cannot fork") || out.contains("Resource temporarily unavailable"),
        "{out}"
    );
}

/// Every control name, created by a command where none exists: each ends
/// up moved out of the workspace, and the model is told.
#[tokio::test]
async fn controls_a_command_creates_are_moved_away() {
    let Some(f) = fixture(|_| {}) else { return };
    let created = [
        ".agents/skills/x/SKILL.md",
        ".claude/settings.json",
        ".opencode/agent/x.md",
        ".cursor/mcp.json",
        ".vscode/mcp.json",
        ".mcp.json",
        "CLAUDE.md",
        "GEMINI.md",
        "AGENTS.override.md",
        "sub/AGENTS.md",
        "sub/deeper/CLAUDE.md",
        "nested/.git/hooks/pre-commit",
    ];
    let script: Vec<String> = created
        .iter()
        .map(|p| format!("mkdir -p $(dirname {p}) && echo planted > {p}"))
        .collect();
    let out = f.sh(&script.join("; ")).await;
    for path in created {
        assert!(!f.root.join(path).exists(), "{path} stayed: {out}");
    }
    assert!(out.contains("which commands may not create"), "{out}");
    // Nothing is lost: every file is in the session's quarantine folder.
    let quarantined = walk(&f.data.join("artifacts"));
    for name in ["CLAUDE.md", "GEMINI.md", ".mcp.json", "pre-commit"] {
        assert!(
            quarantined.iter().any(|p| p.ends_with(name)),
            "{name} not kept: {quarantined:?}"
        );
    }
    // An ordinary file made alongside stays.
    f.sh("echo fine > notes.md").await;
    assert!(f.root.join("notes.md").exists());
}

/// `git init` and `cargo new` make repositories with sample hooks and a
/// plain config: they stay. One with a hook or `core.fsmonitor` does not.
#[tokio::test]
async fn a_new_repository_stays_unless_it_holds_code() {
    let Some(f) = fixture(|p| p.readable_roots.clear()) else {
        return;
    };
    let out = f
        .sh("git init -q plain && git init -q hooked && echo 'exit 0' > hooked/.git/hooks/pre-commit \
             && git init -q monitored && git -C monitored config core.fsmonitor ./x.sh; echo made")
        .await;
    assert!(out.contains("made"), "{out}");
    assert!(f.root.join("plain/.git/config").exists(), "{out}");
    assert!(!f.root.join("hooked/.git").exists(), "{out}");
    assert!(!f.root.join("monitored/.git").exists(), "{out}");
}

/// The chains that ended with the agent's code on the host: a rewritten
/// `.git/config`, a hook, and `.git` moved aside and replaced.
#[tokio::test]
async fn git_controls_cannot_be_changed_renamed_or_replaced() {
    let Some(f) = fixture(|_| {}) else { return };
    let out = f
        .sh(
            "git config core.fsmonitor 'touch /tmp/pwned' 2>&1 || echo config-refused; \
             echo '[core]' >> .git/config 2>&1 || echo append-refused; \
             mkdir -p .git/hooks 2>&1; echo 'touch pwned' > .git/hooks/pre-commit 2>&1 || echo hook-refused; \
             mv .git .git-old 2>&1 || echo rename-refused; \
             rm -f .git/config 2>&1 || echo remove-refused; \
             echo ok > .git/objects-test && echo objects-writable",
        )
        .await;
    for refused in [
        "config-refused",
        "append-refused",
        "hook-refused",
        "rename-refused",
        "remove-refused",
    ] {
        assert!(out.contains(refused), "{refused}: {out}");
    }
    assert!(out.contains("objects-writable"), "{out}");
    assert_eq!(
        fs::read_to_string(f.root.join(".git/config")).unwrap(),
        "[core]\n\tbare = false\n"
    );
    assert!(!f.root.join(".git/hooks/pre-commit").exists());
    assert!(!f.root.join(".git-old").exists());
    assert!(f.root.join(".git/HEAD").exists());
}

/// The file tools refuse every control name, existing or not.
#[tokio::test]
async fn the_file_tools_refuse_every_control() {
    let Some(f) = fixture(|_| {}) else { return };
    for path in [
        ".git/config",
        ".git/hooks/pre-commit",
        ".git/info/attributes",
        ".git",
        ".mcp.json",
        ".vscode/mcp.json",
        ".cursor/rules/x.mdc",
        ".claude/settings.json",
        "CLAUDE.md",
        "GEMINI.md",
        "sub/AGENTS.md",
        "AGENTS.override.md",
        ".evoflux/config.toml",
    ] {
        let err = f.ws.resolve_for_change(path).unwrap_err();
        assert!(
            matches!(err, ToolError::ProtectedControl { .. }),
            "{path}: {err}"
        );
    }
    assert!(f.ws.resolve_for_change(".git/objects/ab/cd").is_ok());
}

/// Files git reads as instructions, beyond config and hooks: `commondir`
/// moves both elsewhere; a rebase's todo list runs `exec` lines.
#[tokio::test]
async fn every_file_of_git_but_its_data_is_a_control() {
    let Some(f) = fixture(|_| {}) else { return };
    let out = f
        .sh("mkdir -p ../x && echo ../x > .git/commondir; \
             mkdir -p .git/rebase-merge && echo 'exec touch pwned' > .git/rebase-merge/git-rebase-todo; \
             echo ok > .git/ORIG_HEAD && echo data-writable")
        .await;
    assert!(out.contains("data-writable"), "{out}");
    assert!(!f.root.join(".git/commondir").exists(), "{out}");
    assert!(!f.root.join(".git/rebase-merge").exists(), "{out}");
    assert!(f.root.join(".git/ORIG_HEAD").exists(), "{out}");
}

/// A `.gitignore` line the command adds does not hide what it creates
/// from the check after it.
#[tokio::test]
async fn a_new_ignore_rule_does_not_hide_a_new_control() {
    let Some(f) = fixture(|_| {}) else { return };
    let out = f
        .sh(
            "echo sub/ >> .gitignore; mkdir -p sub/.git/hooks && echo x > sub/AGENTS.md \
             && echo 'touch pwned' > sub/.git/hooks/post-checkout; echo made",
        )
        .await;
    assert!(out.contains("made"), "{out}");
    assert!(!f.root.join("sub/AGENTS.md").exists(), "{out}");
    assert!(!f.root.join("sub/.git").exists(), "{out}");
}

/// A repository's control that is a symlink is not mounted (bubblewrap
/// would follow it and show what the home's tmpfs hides).
#[tokio::test]
async fn a_symlinked_control_shows_nothing_of_the_home() {
    let Some(f) = fixture(|_| {}) else { return };
    std::os::unix::fs::symlink(&f.home, f.root.join(".claude")).unwrap();
    let out = f.sh("cat .claude/.ssh/id_rsa 2>&1; echo end").await;
    assert!(!out.contains("PRIVATE-KEY"), "{out}");
}

/// The user's editor replacing a control while a command runs (write a
/// copy, rename it over) is the user's change: it stays.
#[tokio::test]
async fn a_control_the_user_replaces_meanwhile_stays() {
    let Some(f) = fixture(|_| {}) else { return };
    let started = tokio::time::timeout(
        Duration::from_secs(60),
        f.rt.shell(
            f.session,
            &f.ws,
            &json!({"command": "sleep 2; echo slept", "yield_time_ms": 250}),
        ),
    )
    .await
    .unwrap()
    .unwrap();
    let id = started.meta.as_ref().unwrap().process_id.clone();
    fs::write(f.root.join("AGENTS.md.tmp"), "the user's own").unwrap();
    fs::rename(f.root.join("AGENTS.md.tmp"), f.root.join("AGENTS.md")).unwrap();
    let out = tokio::time::timeout(
        Duration::from_secs(60),
        f.rt.process(f.session, &json!({"action": "wait", "process_id": id})),
    )
    .await
    .unwrap()
    .unwrap();
    assert!(out.text.contains("slept"), "{}", out.text);
    assert_eq!(
        fs::read_to_string(f.root.join("AGENTS.md")).unwrap(),
        "the user's own"
    );
}

/// evoflux as root on a checkout another user owns (a container's bind
/// mount): the command can still write it, with the two capabilities that
/// lets it and nothing more, and still cannot mount or touch a control.
#[tokio::test]
async fn as_root_a_checkout_another_user_owns_stays_writable() {
    if !rustix::process::geteuid().is_root() {
        eprintln!("skipped: only root writes another user's files");
        return;
    }
    let Some(f) = fixture(|_| {}) else { return };
    let status = std::process::Command::new("chown")
        .args(["-R", "65534:65534"])
        .arg(&f.root)
        .status()
        .unwrap();
    assert!(status.success());
    let out = f
        .sh(
            "echo x > src/new.rs && echo wrote; grep CapEff /proc/self/status; \
             mount -o remount,bind,rw .evoflux 2>&1 && echo REMOUNTED; \
             echo y > AGENTS.md 2>&1 || echo control-read-only",
        )
        .await;
    assert!(out.contains("wrote"), "{out}");
    assert!(out.contains("CapEff:\t000000000000000a"), "{out}");
    assert!(!out.contains("REMOUNTED"), "{out}");
    assert!(out.contains("control-read-only"), "{out}");
    assert_eq!(
        fs::read_to_string(f.root.join("AGENTS.md")).unwrap(),
        "be nice"
    );
}

/// Existing controls, of every kind, can be neither renamed, removed nor
/// replaced by a command.
#[tokio::test]
async fn existing_controls_cannot_be_renamed_removed_or_replaced() {
    let Some(f) = fixture(|_| {}) else { return };
    let names = [
        "AGENTS.md",
        "CLAUDE.md",
        "GEMINI.md",
        "sub/AGENTS.override.md",
        ".mcp.json",
        ".vscode/mcp.json",
        ".evoflux",
        ".cursor",
        ".claude",
        ".agents",
        ".opencode",
    ];
    for name in names {
        let path = f.root.join(name);
        if !path.exists() {
            let file =
                match name.starts_with('.') && !name.contains('/') && !name.ends_with(".json") {
                    true => path.join("x"),
                    false => path.clone(),
                };
            fs::create_dir_all(file.parent().unwrap()).unwrap();
            fs::write(&file, "original").unwrap();
        }
    }
    let script: Vec<String> = names
        .iter()
        .map(|n| {
            format!(
                "mv {n} {n}.old 2>/dev/null && echo RENAMED-{n}; rm -rf {n} 2>/dev/null; \
                 [ -e {n} ] || echo REMOVED-{n}; echo evil > {n} 2>/dev/null && echo REPLACED-{n}"
            )
        })
        .collect();
    let out = f.sh(&script.join("; ")).await;
    for name in names {
        assert!(f.root.join(name).exists(), "{name}: {out}");
        for verb in ["RENAMED", "REMOVED", "REPLACED"] {
            assert!(
                !out.contains(&format!("{verb}-{name}\n")),
                "{verb} {name}: {out}"
            );
        }
    }
    assert_eq!(
        fs::read_to_string(f.root.join("CLAUDE.md")).unwrap(),
        "original"
    );
    assert_eq!(
        fs::read_to_string(f.root.join(".evoflux/agents/a.md")).unwrap(),
        "---\nname: a\n---\n"
    );
}

/// A command run as root cannot leave a setuid program behind for the
/// host, and sees no host control socket in `/run`.
#[tokio::test]
async fn no_setuid_file_and_no_host_runtime_folder() {
    let Some(f) = fixture(|_| {}) else { return };
    let out = f
        .sh(
            "cp /bin/true ./t && chmod 4755 ./t 2>&1 || echo setuid-refused; \
             chmod 2755 ./t 2>&1 || echo setgid-refused; chmod 755 ./t && echo plain-chmod; \
             /usr/bin/python3 -c \"import os; os.open('u', os.O_CREAT|os.O_WRONLY, 0o4755)\" 2>&1 \
               | tail -1; \
             ls -A /run | tr '\\n' ' '; echo; echo run-listed",
        )
        .await;
    for marker in [
        "setuid-refused",
        "setgid-refused",
        "plain-chmod",
        "run-listed",
    ] {
        assert!(out.contains(marker), "{marker}: {out}");
    }
    use std::os::unix::fs::PermissionsExt;
    let mode = fs::metadata(f.root.join("t")).unwrap().permissions().mode();
    assert_eq!(mode & 0o6000, 0, "{mode:o}");
    assert!(!f.root.join("u").exists(), "{out}");
    for socket_dir in [
        "user",
        "dbus",
        "docker.sock",
        "containerd",
        "systemd/private",
    ] {
        assert!(
            !out.contains(&format!(" {socket_dir} ")),
            "{socket_dir}: {out}"
        );
    }
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = entry.path();
            match entry.file_type().is_ok_and(|t| t.is_dir()) {
                true => stack.push(p),
                false => out.push(p),
            }
        }
    }
    out
}

/// As root the kernel and bubblewrap behave differently (capabilities are
/// kept unless dropped, `RLIMIT_NPROC` does not apply): CI runs as root,
/// so this runs every test above again as `nobody`.
#[test]
fn the_escapes_hold_for_an_unprivileged_user_too() {
    crate::common::rerun_unprivileged(
        "confinement::",
        "the_escapes_hold_for_an_unprivileged_user_too",
    );
}
