//! Where the process's log lines go: stderr, except while the full-screen
//! chat owns the terminal, when a line written to stderr would tear its
//! frame; then each line goes to the chat, which shows it as a notice.

use std::io::Write;
use std::sync::Mutex;

use tokio::sync::mpsc::UnboundedSender;

/// The chat's receiver of log lines while it draws the screen.
static CAPTURE: Mutex<Option<UnboundedSender<String>>> = Mutex::new(None);

/// Sends log lines to `to` until the returned guard drops.
pub(crate) fn capture(to: UnboundedSender<String>) -> Captured {
    *CAPTURE.lock().unwrap_or_else(|p| p.into_inner()) = Some(to);
    Captured(())
}

/// Log lines go back to stderr when this drops.
#[derive(Debug)]
pub(crate) struct Captured(());

impl Drop for Captured {
    fn drop(&mut self) {
        CAPTURE.lock().unwrap_or_else(|p| p.into_inner()).take();
    }
}

/// The subscriber's writer of one log line.
#[derive(Debug, Default)]
pub(crate) struct LogWriter {
    line: Vec<u8>,
}

impl Write for LogWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.line.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The subscriber writes a whole event, then drops its writer: the line
/// leaves here, in one piece.
impl Drop for LogWriter {
    fn drop(&mut self) {
        if self.line.is_empty() {
            return;
        }
        let text = String::from_utf8_lossy(&self.line).trim_end().to_owned();
        let sent = CAPTURE
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .as_ref()
            .is_some_and(|to| to.send(text).is_ok());
        if !sent {
            let _ = std::io::stderr().write_all(&self.line);
        }
    }
}
