//! A program in a real terminal emulator, read back as text: tmux runs it
//! in a pane of a given size, answers its terminal queries, keeps its
//! screen as a grid of cells, takes keys and resizes, so a test asserts
//! what a person would see (rows, where the cursor line is, what is left
//! after the program restores the screen) rather than the bytes it wrote.
//!
//! Each [`Tmux`] is its own tmux server on its own socket (in a directory
//! the caller owns), with no user config, no status line, and panes that
//! stay after their program exits (so what it printed last can be read);
//! the server is killed when the value is dropped, a failed test included.
//! The benchmarks include this file too (`#[path]`), so it needs nothing
//! but std.

use std::ffi::OsStr;
use std::fmt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// How long [`Tmux::wait`] waits for a screen by default.
pub const WAIT: Duration = Duration::from_secs(20);

/// The session (and window, and pane) the program runs in.
const TARGET: &str = "=main:";

/// One tmux server running one program.
pub struct Tmux {
    socket: PathBuf,
}

/// What the pane shows, one string per row, trailing blanks trimmed.
#[derive(Clone, PartialEq, Eq)]
pub struct Screen {
    pub rows: Vec<String>,
}

impl Tmux {
    /// Whether tmux can be run here; outside CI a missing tmux skips the
    /// caller's test (saying what to install), in CI it fails it.
    pub fn available() -> bool {
        let found = Command::new("tmux")
            .arg("-V")
            .output()
            .is_ok_and(|o| o.status.success());
        if !found {
            evoflux_core::prerequisite::missing(
                "tmux (the terminal the full-screen chat's tests run in)",
                "install it (Debian: apt-get install tmux)",
            );
        }
        found
    }

    /// Runs `program args` in a `width`×`height` pane with exactly `env`
    /// as its environment and `cwd` as its working directory; the socket
    /// and tmux's config live in `dir`.
    pub fn start(
        dir: &Path,
        (width, height): (u16, u16),
        cwd: &Path,
        env: &[(&str, &OsStr)],
        program: &Path,
        args: &[&str],
    ) -> Tmux {
        let conf = dir.join("tmux.conf");
        std::fs::write(
            &conf,
            "set -g status off\nset -g remain-on-exit on\nset -g history-limit 10000\nset -sg escape-time 0\n",
        )
        .unwrap();
        let t = Tmux {
            socket: dir.join("tmux.sock"),
        };
        let size = (width.to_string(), height.to_string());
        let mut c = t.client();
        c.args(["-f"])
            .arg(&conf)
            .args([
                "new-session",
                "-d",
                "-s",
                "main",
                "-x",
                &size.0,
                "-y",
                &size.1,
                "-c",
            ])
            .arg(cwd)
            // More than one word: tmux runs it directly, not through a
            // shell, so nothing needs quoting; `env -i` sets the whole
            // environment (tmux would add its own TERM and TMUX).
            .args(["--", "env", "-i"]);
        for (key, value) in env {
            let mut pair = std::ffi::OsString::from(key);
            pair.push("=");
            pair.push(value);
            c.arg(pair);
        }
        c.arg(program).args(args);
        let out = c.output().unwrap();
        assert!(
            out.status.success(),
            "tmux new-session failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        t
    }

    /// A tmux client of this server, with no environment of the caller's
    /// tmux (a test run inside tmux).
    fn client(&self) -> Command {
        let mut c = Command::new("tmux");
        c.env_remove("TMUX").arg("-S").arg(&self.socket);
        c
    }

    /// Runs a tmux command against this server and returns its stdout.
    pub fn tmux(&self, args: &[&str]) -> String {
        let out = self.client().args(args).output().unwrap();
        assert!(
            out.status.success(),
            "tmux {args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// The screen as it is now.
    pub fn screen(&self) -> Screen {
        let text = self.tmux(&["capture-pane", "-p", "-t", TARGET]);
        Screen {
            rows: text.lines().map(|l| l.trim_end().to_owned()).collect(),
        }
    }

    /// Everything the pane holds, scrollback included, wrapped rows
    /// joined into their lines.
    pub fn scrollback(&self) -> String {
        self.tmux(&["capture-pane", "-p", "-J", "-S", "-", "-t", TARGET])
    }

    /// Polls the screen until `ready` holds and returns that screen;
    /// panics after [`WAIT`] with `what` and the last screen.
    pub fn wait(&self, what: &str, ready: impl Fn(&Screen) -> bool) -> Screen {
        self.wait_for(WAIT, what, ready)
    }

    /// [`Tmux::wait`] with its own time limit.
    pub fn wait_for(&self, limit: Duration, what: &str, ready: impl Fn(&Screen) -> bool) -> Screen {
        let started = Instant::now();
        loop {
            let screen = self.screen();
            if ready(&screen) {
                return screen;
            }
            assert!(
                started.elapsed() < limit,
                "waited {limit:?} for {what}; the screen:\n{screen}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Sends keys by tmux's names (`Enter`, `C-c`, `Escape`, `y`).
    pub fn keys(&self, keys: &[&str]) {
        let mut args = vec!["send-keys", "-t", TARGET];
        args.extend_from_slice(keys);
        self.tmux(&args);
    }

    /// Types `text` literally, character by character.
    pub fn type_text(&self, text: &str) {
        self.tmux(&["send-keys", "-t", TARGET, "-l", text]);
    }

    /// Resizes the window (and so the pane, the only one) as a terminal
    /// window being resized would.
    pub fn resize(&self, width: u16, height: u16) {
        self.tmux(&[
            "resize-window",
            "-t",
            TARGET,
            "-x",
            &width.to_string(),
            "-y",
            &height.to_string(),
        ]);
    }

    /// The id of the pane's process: the program itself (`env` execs it).
    pub fn pid(&self) -> u32 {
        self.tmux(&["display-message", "-p", "-t", TARGET, "#{pane_pid}"])
            .trim()
            .parse()
            .unwrap()
    }

    /// Whether the program has exited.
    pub fn exited(&self) -> bool {
        self.tmux(&["display-message", "-p", "-t", TARGET, "#{pane_dead}"])
            .trim()
            == "1"
    }

    /// The program's exit status once it has exited: tmux's, or (tmux
    /// 3.3 may mark a pane dead when its terminal closes and reap the
    /// program only later, saying no status meanwhile) the kernel's for
    /// the unreaped process. A death by a signal is `128 + signal`.
    pub fn exit_status(&self) -> Option<i32> {
        let shown = self.tmux(&[
            "display-message",
            "-p",
            "-t",
            TARGET,
            "#{pane_dead}|#{pane_dead_status}|#{pane_dead_signal}|#{pane_pid}",
        ]);
        let fields: Vec<&str> = shown.trim().split('|').collect();
        let [dead, status, signal, pid] = fields[..] else {
            return None;
        };
        if dead != "1" {
            return None;
        }
        if let Ok(status) = status.parse() {
            return Some(status);
        }
        if let Ok(signal) = signal.parse::<i32>() {
            return Some(128 + signal);
        }
        zombie_status(pid)
    }

    /// Waits until the program has exited and returns its status.
    pub fn wait_exit(&self, limit: Duration) -> i32 {
        let started = Instant::now();
        loop {
            if let Some(status) = self.exit_status() {
                return status;
            }
            assert!(
                started.elapsed() < limit,
                "the program did not exit within {limit:?}; the screen:\n{}",
                self.screen()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// The wait status of process `pid` if it has exited and is not reaped
/// yet (a zombie): field 52 of `/proc/PID/stat`.
fn zombie_status(pid: &str) -> Option<i32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The fields after the command name, which may hold spaces: field 3
    // (the state) first.
    let fields: Vec<&str> = stat[stat.rfind(')')? + 2..].split(' ').collect();
    if fields.first() != Some(&"Z") {
        return None;
    }
    let wait: i32 = fields.get(49)?.trim().parse().ok()?;
    Some(match wait & 0x7f {
        0 => (wait >> 8) & 0xff,
        signal => 128 + signal,
    })
}

impl Drop for Tmux {
    fn drop(&mut self) {
        // Ends the program too (SIGHUP, as a closed terminal would).
        let _ = self.client().arg("kill-server").output();
    }
}

impl Screen {
    /// The rows that are not blank, with their row numbers.
    pub fn filled(&self) -> impl Iterator<Item = (usize, &str)> {
        self.rows
            .iter()
            .enumerate()
            .filter(|(_, r)| !r.trim().is_empty())
            .map(|(i, r)| (i, r.as_str()))
    }

    /// The last row that is not blank.
    pub fn last_filled(&self) -> (usize, &str) {
        self.filled().last().unwrap_or((0, ""))
    }

    /// The first row holding `needle`.
    pub fn find(&self, needle: &str) -> Option<usize> {
        self.rows.iter().position(|r| r.contains(needle))
    }

    /// Whether any row holds `needle`.
    pub fn contains(&self, needle: &str) -> bool {
        self.find(needle).is_some()
    }

    /// The widest row, in terminal columns (one per `char`: the tests'
    /// text is narrow).
    pub fn widest(&self) -> usize {
        self.rows
            .iter()
            .map(|r| r.chars().count())
            .max()
            .unwrap_or(0)
    }
}

impl fmt::Display for Screen {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, row) in self.rows.iter().enumerate() {
            writeln!(f, "{i:>3}|{row}")?;
        }
        Ok(())
    }
}

impl fmt::Debug for Screen {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}
