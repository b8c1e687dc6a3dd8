//! A small client of the Chrome DevTools Protocol over the pipe Chromium
//! opens with `--remote-debugging-pipe`: messages are JSON objects, each
//! ended by a NUL byte, read by Chromium from descriptor 3 and written to
//! descriptor 4.
//!
//! A pipe rather than the WebSocket endpoint: no port is opened that any
//! other local process could connect to and drive the user's session
//! through, no WebSocket crate is built, and Chromium exits on its own
//! when the pipe closes (so a killed evoflux leaves no browser behind).
//!
//! Two plain threads own the pipe's ends (blocking reads and writes are
//! simplest on a pipe); calls wait on a oneshot channel for the answer with
//! their id, and events go to one channel the browser's event task reads.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot};

use crate::sync::lock;

/// One event Chromium sent: its method, parameters and the session of
/// the target it concerns (`None` for the browser's own).
#[derive(Debug)]
pub(crate) struct CdpEvent {
    pub method: String,
    pub params: Value,
    pub session: Option<String>,
}

type Pending = Mutex<Option<HashMap<u64, oneshot::Sender<Result<Value, String>>>>>;

/// The client: cheap to clone, every clone on the same pipe.
#[derive(Debug, Clone)]
pub(crate) struct Cdp {
    next_id: Arc<AtomicU64>,
    /// The calls waiting for their answer; `None` once the pipe closed.
    pending: Arc<Pending>,
    out: std::sync::mpsc::Sender<Vec<u8>>,
}

impl Cdp {
    /// Starts the client on the pipe's two ends; returns it and the
    /// channel of the events Chromium sends.
    pub(crate) fn start(
        to_browser: std::io::PipeWriter,
        from_browser: std::io::PipeReader,
    ) -> std::io::Result<(Cdp, mpsc::UnboundedReceiver<CdpEvent>)> {
        let pending: Arc<Pending> = Arc::new(Mutex::new(Some(HashMap::new())));
        let (out, outgoing) = std::sync::mpsc::channel::<Vec<u8>>();
        let (events, received) = mpsc::unbounded_channel();
        std::thread::Builder::new()
            .name("cdp-writer".into())
            .spawn(move || {
                let mut pipe = to_browser;
                while let Ok(mut message) = outgoing.recv() {
                    message.push(0);
                    if pipe.write_all(&message).is_err() {
                        break;
                    }
                }
            })?;
        let answers = Arc::clone(&pending);
        std::thread::Builder::new()
            .name("cdp-reader".into())
            .spawn(move || read_loop(from_browser, &answers, &events))?;
        Ok((
            Cdp {
                next_id: Arc::new(AtomicU64::new(1)),
                pending,
                out,
            },
            received,
        ))
    }

    /// Calls `method` (on the target of `session`, or the browser) and
    /// waits for its answer; Chromium's error message on failure.
    pub(crate) async fn call(
        &self,
        session: Option<&str>,
        method: &str,
        params: Value,
    ) -> Result<Value, String> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        match lock(&self.pending).as_mut() {
            Some(p) => {
                p.insert(id, tx);
            }
            None => return Err(CLOSED.to_owned()),
        }
        let mut message = json!({"id": id, "method": method, "params": params});
        if let Some(s) = session {
            message["sessionId"] = Value::from(s);
        }
        if self.out.send(message.to_string().into_bytes()).is_err() {
            return Err(CLOSED.to_owned());
        }
        rx.await.unwrap_or_else(|_| Err(CLOSED.to_owned()))
    }
}

/// What a call gets once Chromium is gone.
const CLOSED: &str = "the browser closed";

fn read_loop(
    pipe: std::io::PipeReader,
    pending: &Pending,
    events: &mpsc::UnboundedSender<CdpEvent>,
) {
    let mut reader = BufReader::new(pipe);
    let mut buf = Vec::new();
    loop {
        buf.clear();
        match reader.read_until(0, &mut buf) {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        if buf.last() == Some(&0) {
            buf.pop();
        }
        let Ok(message) = serde_json::from_slice::<Value>(&buf) else {
            continue;
        };
        match message.get("id").and_then(Value::as_u64) {
            Some(id) => {
                let answer = match message.get("error") {
                    Some(e) => Err(e
                        .get("message")
                        .and_then(Value::as_str)
                        .unwrap_or("the browser refused the command")
                        .to_owned()),
                    None => Ok(message.get("result").cloned().unwrap_or(Value::Null)),
                };
                let waiter = lock(pending).as_mut().and_then(|p| p.remove(&id));
                if let Some(w) = waiter {
                    let _ = w.send(answer);
                }
            }
            None => {
                let event = CdpEvent {
                    method: message["method"].as_str().unwrap_or_default().to_owned(),
                    params: message.get("params").cloned().unwrap_or(Value::Null),
                    session: message["sessionId"].as_str().map(str::to_owned),
                };
                let _ = events.send(event);
            }
        }
    }
    // Every waiting call learns the browser is gone; later ones too.
    lock(pending).take();
}
