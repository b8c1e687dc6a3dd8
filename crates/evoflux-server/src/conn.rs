//! Connections: `evoflux serve`'s accept loop, which holds under floods.
//!
//! - At most [`Limits::max_connections`] connections are served at once
//!   (by default what `RLIMIT_NOFILE` leaves after a headroom for the
//!   store, sessions' commands and MCP servers). Past it a connection is
//!   still accepted, answered `503` with `server/too-many-connections` and
//!   closed, so clients hear why rather than hang in the backlog.
//! - A connection must send a request's headers in full within
//!   [`Limits::header_timeout`] of opening, and of the end of its previous
//!   response (so it is also how long an HTTP/1 keep-alive waits).
//! - A connection on which nothing moves for [`Limits::idle_timeout`] while
//!   no request is being handled is closed (an HTTP/2 one, a response body
//!   that stalls). An event stream sends a keep-alive every 15 s, so it
//!   stays open.
//! - A failing accept (out of descriptors: `EMFILE`) is logged and retried
//!   after a short, growing pause, never in a busy loop.
//! - At shutdown the loop stops accepting and every connection finishes
//!   its requests before [`run`] returns.

use std::convert::Infallible;
use std::future::Future;
use std::pin::{Pin, pin};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, LazyLock};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::http::StatusCode;
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Semaphore, watch};
use tokio::time::Instant;
use tower::ServiceExt;

use crate::error::ApiError;
use crate::host::HostPolicy;

/// The code of the answer past the connection limit.
pub const TOO_MANY_CONNECTIONS: &str = "server/too-many-connections";
/// How long a request's headers may take ([`Limits::header_timeout`]).
pub const HEADER_TIMEOUT: Duration = Duration::from_secs(15);
/// How long a connection may sit idle ([`Limits::idle_timeout`]).
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(60);
/// Connections answered `503` that may wait for the client to read the
/// answer at once; past them the answer is written and the socket closed.
const REFUSING: usize = 64;
/// How long a refused connection waits for its client to read the answer.
const REFUSAL_LINGER: Duration = Duration::from_secs(1);
/// The first and the longest pause after a failed accept.
const BACKOFF_FIRST: Duration = Duration::from_millis(10);
const BACKOFF_MAX: Duration = Duration::from_secs(1);
/// How often the refusals past the limit are logged, at most.
const REFUSAL_LOG_EVERY: Duration = Duration::from_secs(10);

/// How many connections, and for how long.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub max_connections: usize,
    pub header_timeout: Duration,
    pub idle_timeout: Duration,
}

/// The default connection limit: the soft `RLIMIT_NOFILE` less a quarter
/// of it (at least 64 and at most 1,024 descriptors) for everything else
/// the server opens.
pub fn default_max_connections() -> usize {
    let soft = rustix::process::getrlimit(rustix::process::Resource::Nofile).current;
    max_connections_for(soft)
}

/// [`default_max_connections`] for a soft limit (`None`: unlimited).
fn max_connections_for(soft: Option<u64>) -> usize {
    let soft = soft.unwrap_or(1 << 20).min(1 << 20);
    let headroom = (soft / 4).clamp(64, 1024);
    usize::try_from(soft.saturating_sub(headroom))
        .unwrap_or(usize::MAX)
        .max(1)
}

/// The whole answer past the limit: a minimal HTTP/1.1 response, then
/// the connection closes.
static BUSY: LazyLock<Vec<u8>> = LazyLock::new(|| {
    let error = ApiError::new(
        StatusCode::SERVICE_UNAVAILABLE,
        TOO_MANY_CONNECTIONS,
        "the server has as many connections open as it serves; retry shortly",
    );
    let body = serde_json::to_string(&error).unwrap_or_default();
    format!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\n\
         content-length: {}\r\nretry-after: 1\r\nconnection: close\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
});

/// Serves `router` on `listener` until `shutdown` resolves, then waits
/// for every connection to finish.
pub async fn run(
    listener: TcpListener,
    router: Router,
    hosts: Arc<HostPolicy>,
    limits: Limits,
    shutdown: impl Future<Output = ()> + Send + 'static,
) {
    let slots = Arc::new(Semaphore::new(
        limits.max_connections.clamp(1, Semaphore::MAX_PERMITS),
    ));
    let refusing = Arc::new(Semaphore::new(REFUSING));
    // Connections hold a receiver: `closed` resolves when all have ended.
    let (stop_tx, stop_rx) = watch::channel(false);
    let mut shutdown = pin!(shutdown);
    let mut backoff = BACKOFF_FIRST;
    let mut refused = 0u64;
    let mut refusal_logged: Option<Instant> = None;
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            () = &mut shutdown => break,
        };
        let tcp = match accepted {
            Ok((tcp, _)) => {
                backoff = BACKOFF_FIRST;
                tcp
            }
            // The client gave up before it was accepted.
            Err(e) if is_connection_error(&e) => continue,
            Err(e) => {
                tracing::error!("[server/accept-failed] cannot accept a connection: {e}");
                tokio::select! {
                    () = tokio::time::sleep(backoff) => {}
                    () = &mut shutdown => break,
                }
                backoff = (backoff * 2).min(BACKOFF_MAX);
                continue;
            }
        };
        // Events are small writes: without TCP_NODELAY, Nagle's algorithm
        // and delayed ACKs hold some of them about 40 ms.
        if let Err(e) = tcp.set_nodelay(true) {
            tracing::debug!("cannot set TCP_NODELAY: {e}");
        }
        match Arc::clone(&slots).try_acquire_owned() {
            Ok(slot) => {
                let connection = Connection {
                    router: router.clone(),
                    hosts: Arc::clone(&hosts),
                    limits,
                    stop: stop_rx.clone(),
                };
                tokio::spawn(async move {
                    connection.serve(tcp).await;
                    drop(slot);
                });
            }
            Err(_) => {
                refused += 1;
                if refusal_logged.is_none_or(|at| at.elapsed() >= REFUSAL_LOG_EVERY) {
                    tracing::warn!(
                        "[{TOO_MANY_CONNECTIONS}] {refused} connection(s) answered 503: {} are \
                         open, the limit (`evoflux serve --max-connections`)",
                        limits.max_connections
                    );
                    refusal_logged = Some(Instant::now());
                    refused = 0;
                }
                refuse(tcp, &refusing);
            }
        }
    }
    drop(listener);
    drop(stop_rx);
    let _ = stop_tx.send(true);
    stop_tx.closed().await;
}

/// Errors of one connection, not of the listener.
fn is_connection_error(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::ConnectionRefused
            | std::io::ErrorKind::ConnectionAborted
            | std::io::ErrorKind::ConnectionReset
    )
}

/// Answers [`BUSY`] and closes. While few are refused at once, the
/// connection waits (briefly) for the client to read the answer: closing
/// a socket with its request unread would reset it, and the client could
/// lose the answer.
fn refuse(tcp: TcpStream, refusing: &Arc<Semaphore>) {
    match Arc::clone(refusing).try_acquire_owned() {
        Ok(permit) => {
            tokio::spawn(async move {
                let mut tcp = tcp;
                let _ = tokio::time::timeout(REFUSAL_LINGER, async {
                    tcp.write_all(&BUSY).await?;
                    tcp.shutdown().await?;
                    let mut sink = [0u8; 1024];
                    while tcp.read(&mut sink).await? > 0 {}
                    Ok::<(), std::io::Error>(())
                })
                .await;
                drop(permit);
            });
        }
        // A fresh socket's send buffer is empty: one non-blocking write
        // takes the whole answer.
        Err(_) => {
            if let Ok(mut std) = tcp.into_std() {
                let _ = std::io::Write::write(&mut std, &BUSY);
            }
        }
    }
}

/// What one connection serves with.
struct Connection {
    router: Router,
    hosts: Arc<HostPolicy>,
    limits: Limits,
    stop: watch::Receiver<bool>,
}

impl Connection {
    async fn serve(mut self, tcp: TcpStream) {
        let activity = Arc::new(Activity::new());
        let io = TokioIo::new(Tracked {
            inner: tcp,
            activity: Arc::clone(&activity),
        });
        let service = {
            let activity = Arc::clone(&activity);
            let router = self.router;
            let hosts = self.hosts;
            hyper::service::service_fn(move |request: hyper::Request<Incoming>| {
                let handling = Handling::start(&activity);
                let router = router.clone();
                let hosts = Arc::clone(&hosts);
                async move {
                    let _handling = handling;
                    if let Err(refusal) = hosts.check(&request) {
                        return Ok::<_, Infallible>(refusal);
                    }
                    router.oneshot(request.map(Body::new)).await
                }
            })
        };
        let mut builder = auto::Builder::new(TokioExecutor::new());
        builder
            .http1()
            .timer(TokioTimer::new())
            .header_read_timeout(self.limits.header_timeout);
        let mut conn = pin!(builder.serve_connection_with_upgrades(io, service));
        let mut stopping = false;
        loop {
            let deadline = activity.deadline(&self.limits);
            tokio::select! {
                served = conn.as_mut() => {
                    if let Err(e) = served {
                        tracing::trace!("connection ended: {e}");
                    }
                    break;
                }
                changed = self.stop.changed(), if !stopping => {
                    // Also when the loop's sender is gone.
                    let _ = changed;
                    stopping = true;
                    conn.as_mut().graceful_shutdown();
                }
                () = tokio::time::sleep_until(deadline) => {
                    if activity.deadline(&self.limits) <= Instant::now() {
                        tracing::trace!("closing a slow or idle connection");
                        break;
                    }
                }
            }
        }
    }
}

/// What a connection has done, for its deadline.
struct Activity {
    opened: Instant,
    /// Milliseconds after `opened` of the last byte in or out, or of the
    /// end of a request's handling.
    last_ms: AtomicU64,
    /// Requests whose handler runs.
    handling: AtomicUsize,
    /// Whether a request's headers arrived.
    requested: AtomicBool,
}

impl Activity {
    fn new() -> Activity {
        Activity {
            opened: Instant::now(),
            last_ms: AtomicU64::new(0),
            handling: AtomicUsize::new(0),
            requested: AtomicBool::new(false),
        }
    }

    fn touch(&self) {
        let ms = u64::try_from(self.opened.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.last_ms.fetch_max(ms, Ordering::Relaxed);
    }

    /// When the connection is closed unless something happens: the first
    /// request's headers are due `header_timeout` after opening; then it
    /// may idle `idle_timeout` (hyper closes an HTTP/1 connection that
    /// waits longer than `header_timeout` for its next request).
    fn deadline(&self, limits: &Limits) -> Instant {
        if !self.requested.load(Ordering::Relaxed) {
            return self.opened + limits.header_timeout;
        }
        if self.handling.load(Ordering::Relaxed) > 0 {
            return Instant::now() + limits.idle_timeout;
        }
        self.opened
            + Duration::from_millis(self.last_ms.load(Ordering::Relaxed))
            + limits.idle_timeout
    }
}

/// A request being handled: the connection is not idle meanwhile.
struct Handling(Arc<Activity>);

impl Handling {
    fn start(activity: &Arc<Activity>) -> Handling {
        activity.requested.store(true, Ordering::Relaxed);
        activity.handling.fetch_add(1, Ordering::Relaxed);
        Handling(Arc::clone(activity))
    }
}

impl Drop for Handling {
    fn drop(&mut self) {
        self.0.handling.fetch_sub(1, Ordering::Relaxed);
        self.0.touch();
    }
}

/// The socket, noting when bytes move.
struct Tracked {
    inner: TcpStream,
    activity: Arc<Activity>,
}

impl AsyncRead for Tracked {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.inner).poll_read(cx, buf);
        if buf.filled().len() > before {
            self.activity.touch();
        }
        polled
    }
}

impl AsyncWrite for Tracked {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let polled = Pin::new(&mut self.inner).poll_write(cx, buf);
        if matches!(polled, Poll::Ready(Ok(n)) if n > 0) {
            self.activity.touch();
        }
        polled
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        let polled = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        if matches!(polled, Poll::Ready(Ok(n)) if n > 0) {
            self.activity.touch();
        }
        polled
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_limit_leaves_headroom() {
        assert_eq!(max_connections_for(Some(1024)), 768);
        assert_eq!(max_connections_for(Some(20_000)), 18_976);
        assert_eq!(max_connections_for(Some(100)), 36);
        assert_eq!(max_connections_for(Some(10)), 1);
        assert_eq!(max_connections_for(None), (1 << 20) - 1024);
    }

    #[test]
    fn a_connection_is_due_for_headers_then_idles_only_when_nothing_runs() {
        let limits = Limits {
            max_connections: 1,
            header_timeout: Duration::from_secs(2),
            idle_timeout: Duration::from_secs(600),
        };
        let activity = Arc::new(Activity::new());
        assert_eq!(
            activity.deadline(&limits),
            activity.opened + limits.header_timeout
        );
        let handling = Handling::start(&activity);
        std::thread::sleep(Duration::from_millis(20));
        // A handler that runs long (a synchronous channel turn) is not idle.
        let before = Instant::now();
        assert!(activity.deadline(&limits) >= before + limits.idle_timeout);
        drop(handling);
        // Idle from the end of the handling, or the last byte moved (an
        // event stream's keep-alive).
        for _ in 0..2 {
            let now = Instant::now();
            let due = activity.deadline(&limits);
            assert!(due <= now + limits.idle_timeout, "{due:?}");
            assert!(due + Duration::from_millis(5) >= now + limits.idle_timeout);
            std::thread::sleep(Duration::from_millis(20));
            activity.touch();
        }
    }

    #[test]
    fn the_busy_answer_is_a_whole_http_response() {
        let text = String::from_utf8(BUSY.clone()).unwrap();
        let (head, body) = text.split_once("\r\n\r\n").unwrap();
        assert!(head.starts_with("HTTP/1.1 503 "));
        assert!(head.contains(&format!("content-length: {}", body.len())));
        let json: serde_json::Value = serde_json::from_str(body).unwrap();
        assert_eq!(json["code"], TOO_MANY_CONNECTIONS);
    }
}
