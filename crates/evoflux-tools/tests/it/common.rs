#![allow(clippy::unwrap_used, clippy::expect_used)]

//! What several files of these tests share: running a file's tests again
//! as an unprivileged user.

use std::path::Path;
use std::process::Command;

/// Set in the environment of a test binary [`rerun_unprivileged`] runs, so
/// its own re-running test returns at once.
pub const UNPRIVILEGED_RUN: &str = "EVOFLUX_TEST_UNPRIVILEGED_RUN";

/// Runs this binary's tests of one file (`module`, as `"browser::"`)
/// again as `nobody` (uid 65534), skipping the test named
/// `skip` (the caller), and asserts they ran and passed.
///
/// Why: most containers run evoflux as root, where the kernel, bubblewrap
/// and Chromium behave differently (capabilities kept unless dropped,
/// `RLIMIT_NPROC` not applied, Chromium's own sandbox off); a user's
/// machine runs it unprivileged. The copy of this test binary lives in a
/// fresh folder under `/var/tmp` that user can write, outside `/tmp`
/// (which sandboxed commands get a private one of) and outside the
/// checkout (which may be below a folder only root can enter); it is the
/// run's HOME and `EVOFLUX_TEST_DIR`. Does nothing when already
/// unprivileged (the tests themselves ran as this user) or inside such a
/// run.
pub fn rerun_unprivileged(module: &str, skip: &str) {
    if std::env::var_os(UNPRIVILEGED_RUN).is_some() {
        return;
    }
    if !rustix::process::geteuid().is_root() {
        eprintln!("already unprivileged: the tests of {module} ran as this user");
        return;
    }
    let name = module.trim_end_matches(':');
    let base = Path::new("/var/tmp").join(format!("evoflux-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&base);
    std::fs::create_dir_all(&base).unwrap();
    let exe = base.join(format!("{name}-tests"));
    std::fs::copy(std::env::current_exe().unwrap(), &exe).unwrap();
    for (path, mode) in [(&base, "1777"), (&exe, "755")] {
        let status = Command::new("chmod")
            .args([mode, path.to_str().unwrap()])
            .status()
            .unwrap();
        assert!(status.success(), "chmod {mode} {}", path.display());
    }
    let names = tests_in(&exe, module, skip);
    let out = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
        .arg(&exe)
        .args(["--exact", "--test-threads=2"])
        .args(&names)
        .env(UNPRIVILEGED_RUN, "1")
        .env("EVOFLUX_TEST_DIR", &base)
        .env("HOME", &base)
        .env("TMPDIR", "/tmp")
        .output()
        .unwrap();
    let _ = std::fs::remove_dir_all(&base);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "{module} as nobody:\n{stdout}\n{stderr}"
    );
    assert!(stdout.contains("test result: ok"), "{stdout}");
    assert!(!stdout.contains(" 0 passed"), "{stdout}");
    // Which tests ran as nobody, for `--no-capture`.
    println!("{module} as nobody:\n{stdout}");
}

/// The full names of this binary's tests in `module` (`"browser::"`) but
/// `skip`: libtest's own filter matches anywhere in a name, and
/// `web_browser::` is another file's.
fn tests_in(exe: &Path, module: &str, skip: &str) -> Vec<String> {
    let out = Command::new(exe)
        .arg("--list")
        .env(UNPRIVILEGED_RUN, "1")
        .output()
        .unwrap();
    assert!(out.status.success(), "{} --list failed", exe.display());
    let skipped = format!("{module}{skip}");
    let names: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|line| line.strip_suffix(": test"))
        .filter(|name| name.starts_with(module) && *name != skipped)
        .map(str::to_owned)
        .collect();
    assert!(!names.is_empty(), "no test in {module}");
    names
}
