//! Rendering for humans and machines, and the exit codes.

use std::io::Write;
use std::process::ExitCode;

use evoflux_core::Diagnostics;
use serde::Serialize;

/// The documented exit codes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    Ok,
    /// The command could not do its job (I/O, environment).
    Failure,
    /// Validation ran and found errors in user input.
    Invalid,
    /// A session stopped to wait for the user's answer.
    Waiting,
    /// Another process runs a turn on the session (`session/busy`).
    Busy,
    /// Stopped by Ctrl-C or SIGTERM.
    Interrupted,
}

impl From<Exit> for ExitCode {
    fn from(exit: Exit) -> ExitCode {
        match exit {
            Exit::Ok => ExitCode::SUCCESS,
            Exit::Failure => ExitCode::from(1),
            // 2 is clap's, for usage errors.
            Exit::Invalid => ExitCode::from(3),
            Exit::Waiting => ExitCode::from(4),
            Exit::Busy => ExitCode::from(5),
            Exit::Interrupted => ExitCode::from(130),
        }
    }
}

/// Where a command writes: stdout for results, stderr for problems, in the
/// format the user asked for.
#[derive(Debug, Clone, Copy)]
pub struct Output {
    pub json: bool,
}

impl Output {
    pub fn new(json: bool) -> Self {
        Output { json }
    }

    /// Writes a result: `human` as text, or `value` as pretty JSON.
    pub fn result<T: Serialize + ?Sized>(&self, value: &T, human: impl FnOnce() -> String) {
        let text = if self.json {
            match serde_json::to_string_pretty(value) {
                Ok(s) => s + "\n",
                Err(e) => {
                    self.failure(&anyhow::anyhow!("cannot render JSON: {e}"));
                    return;
                }
            }
        } else {
            human()
        };
        let mut stdout = std::io::stdout().lock();
        // A closed pipe (`evoflux paths | head -1`) is not an error worth a panic.
        let _ = stdout.write_all(text.as_bytes());
        let _ = stdout.flush();
    }

    /// Writes diagnostics to stderr: rendered for humans, or as a JSON
    /// object `{"diagnostics": [...]}`.
    pub fn diagnostics(&self, diags: &Diagnostics) {
        if diags.is_empty() {
            return;
        }
        let text = if self.json {
            serde_json::json!({ "diagnostics": diags.to_json() }).to_string() + "\n"
        } else {
            diags.render_human()
        };
        let _ = std::io::stderr().lock().write_all(text.as_bytes());
    }

    /// Reports a failure that is not a validation result.
    pub fn failure(&self, error: &anyhow::Error) {
        let text = if self.json {
            serde_json::json!({ "error": format!("{error:#}") }).to_string() + "\n"
        } else {
            format!("error: {error:#}\n")
        };
        let _ = std::io::stderr().lock().write_all(text.as_bytes());
    }
}
