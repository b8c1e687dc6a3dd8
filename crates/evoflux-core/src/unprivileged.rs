//! Running a test file's tests again as an unprivileged user, for the
//! tests of every crate whose behaviour depends on who runs it (the
//! command sandbox, the browser, previews). Built only with the
//! `test-support` feature, which only dev-dependencies turn on.
//!
//! Why: most containers run evoflux as root, where the kernel, bubblewrap
//! and Chromium behave differently (capabilities kept unless dropped,
//! `RLIMIT_NPROC` not applied, Chromium's own sandbox off); a user's
//! machine runs it unprivileged. CI runs as root, so the tests that matter
//! run once more as `nobody`.

use std::ffi::OsStr;
use std::fmt::Display;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Set in the environment of a test binary [`rerun_unprivileged`] runs, so
/// its own re-running test returns at once.
pub const UNPRIVILEGED_RUN: &str = "EVOFLUX_TEST_UNPRIVILEGED_RUN";

/// Where the re-run's `TMPDIR` points.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TmpDir {
    /// The run's own folder (a test that makes its folders under it).
    RunFolder,
    /// `/tmp`: sandboxed commands get a private one of their own, so the
    /// tests' folders must not be below it.
    System,
}

/// One re-run: the tests of `module` (as `"browser::"`) but `skip` (the
/// caller), with each of `programs` (the environment variable the tests
/// find it by, and the file) copied where `nobody` can run it.
#[derive(Debug, Clone, Copy)]
pub struct Rerun<'a> {
    pub module: &'a str,
    pub skip: &'a str,
    pub programs: &'a [(&'a str, &'a Path)],
    pub tmpdir: TmpDir,
}

/// Runs this test binary's tests of `rerun.module` again as `nobody` (uid
/// 65534) and asserts they ran and passed. The copies live in a fresh
/// folder under `/var/tmp` that user can reach (the build folder may be
/// below one only root can enter), which is also the run's HOME and
/// `EVOFLUX_TEST_DIR`. Does nothing when already unprivileged (the tests
/// themselves ran as this user) or inside such a run.
///
/// # Panics
/// When the re-run cannot be set up, or any of its tests fails.
pub fn rerun_unprivileged(rerun: Rerun<'_>) {
    let Rerun {
        module,
        skip,
        programs,
        tmpdir,
    } = rerun;
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
    must(std::fs::create_dir_all(&base), &base);
    // Not `<name>-tests`: the sandbox tests make a folder of that name.
    let tests = base.join(format!("{name}-test-binary"));
    must(
        std::fs::copy(must(std::env::current_exe(), "this test binary"), &tests),
        &tests,
    );
    chmod("1777", &base);
    chmod("755", &tests);
    let mut command = Command::new("setpriv");
    command
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
        .arg(&tests)
        .args(["--exact", "--test-threads=2"])
        .args(tests_in(&tests, module, skip))
        .env(UNPRIVILEGED_RUN, "1")
        .env("EVOFLUX_TEST_DIR", &base)
        .env("HOME", &base)
        .env(
            "TMPDIR",
            match tmpdir {
                TmpDir::RunFolder => base.as_os_str(),
                TmpDir::System => OsStr::new("/tmp"),
            },
        );
    for (var, program) in programs {
        let copy: PathBuf = base.join(program.file_name().unwrap_or(OsStr::new("program")));
        must(std::fs::copy(program, &copy), &copy);
        chmod("755", &copy);
        command.env(var, &copy);
    }
    let out = must(command.output(), "setpriv");
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

/// The full names of this binary's tests in `module` but `skip`: libtest's
/// own filter matches anywhere in a name, and `web_browser::` is another
/// file's.
fn tests_in(exe: &Path, module: &str, skip: &str) -> Vec<String> {
    let out = must(
        Command::new(exe)
            .arg("--list")
            .env(UNPRIVILEGED_RUN, "1")
            .output(),
        exe,
    );
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

fn chmod(mode: &str, path: &Path) {
    let status = must(Command::new("chmod").arg(mode).arg(path).status(), "chmod");
    assert!(status.success(), "chmod {mode} {}", path.display());
}

/// The value, or a panic naming what failed: this is test setup.
fn must<T, E: Display>(result: Result<T, E>, what: impl AsRef<OsStr>) -> T {
    match result {
        Ok(v) => v,
        Err(e) => panic!("{}: {e}", what.as_ref().to_string_lossy()),
    }
}
