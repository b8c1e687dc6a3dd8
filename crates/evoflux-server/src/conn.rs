//! Connections: `evoflux serve`'s accept loop, which holds under floods.
//!
//! - At most [`Limits::max_connections`] connections are served at once
//!   (by default what `RLIMIT_NOFILE` leaves after a headroom for the
//!   store, sessions' commands and MCP servers). Past it a connection is
//!   still accepted, answered `503` with `server/too-many-connections` and
//!   closed, so clients hear why rather than hang in the backlog.
//! - At most [`Limits::max_connections_per_address`] of them come from one
//!   client address (an IPv6 client counts by its `/64`, which one host
//!   usually holds whole); past it a connection from that address is
//!   answered `503` with `server/too-many-connections-from-address`. One
//!   client cannot take every connection.
//! - A connection must send a request's headers in full within
//!   [`Limits::header_timeout`] of opening, and of the end of its previous
//!   response (so it is also how long an HTTP/1 keep-alive waits).
//! - A connection is closed after [`Limits::idle_timeout`] with no request
//!   at work: measured from the last request or response data (a request
//!   starting, its body arriving, its handler ending, a response body's
//!   data), never from other bytes. An HTTP/2 client's `PING`s or
//!   `SETTINGS` do not keep it open, nor does a response body that stalls
//!   because its client does not read. An event stream sends a keep-alive
//!   every 15 s, so it stays open. A request whose handler runs once its
//!   body has arrived (a synchronous channel turn) is at work, however
//!   long it takes; one whose body is still arriving is not, so a slow
//!   body is held to the same timeout between its chunks.
//! - HTTP/2 connections serve [`H2_MAX_STREAMS`] requests at once, take
//!   [`H2_MAX_HEADER_LIST`] bytes of headers per request, and are pinged
//!   every [`H2_KEEP_ALIVE`] (closed when the client does not answer).
//! - A failing accept (out of descriptors: `EMFILE`) is logged and retried
//!   after a short, growing pause, never in a busy loop.
//! - At shutdown the loop stops accepting and every connection finishes
//!   its requests, for at most [`Limits::shutdown_timeout`]: then those
//!   still open (event streams) are dropped, and [`run`] returns.

use std::collections::HashMap;
use std::convert::Infallible;
use std::future::Future;
use std::net::{IpAddr, Ipv6Addr};
use std::pin::{Pin, pin};
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, LazyLock, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::http::StatusCode;
use hyper::body::{Body as _, Frame, Incoming, SizeHint};
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Semaphore, watch};
use tokio::time::Instant;
use tower::ServiceExt;

use crate::error::ApiError;
use crate::host::HostPolicy;

/// The code of the answer past the connection limit.
pub const TOO_MANY_CONNECTIONS: &str = "server/too-many-connections";
/// The code of the answer past the limit of one client address.
pub const TOO_MANY_CONNECTIONS_FROM_ADDRESS: &str = "server/too-many-connections-from-address";
/// How long a request's headers may take ([`Limits::header_timeout`]).
pub const HEADER_TIMEOUT: Duration = Duration::from_secs(15);
/// How long a connection may sit idle ([`Limits::idle_timeout`]).
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(60);
/// How long shutdown waits for connections ([`Limits::shutdown_timeout`]).
pub const SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(10);
/// Requests one HTTP/2 connection serves at once (RFC 9113 advises no
/// fewer than 100).
pub const H2_MAX_STREAMS: u32 = 100;
/// The bytes of one HTTP/2 request's headers, decoded.
pub const H2_MAX_HEADER_LIST: u32 = 16 * 1024;
/// How often an HTTP/2 connection is pinged: a client gone without a word
/// does not hold an event stream.
pub const H2_KEEP_ALIVE: Duration = Duration::from_secs(30);
/// How long the answer to that ping may take before the connection closes.
pub const H2_KEEP_ALIVE_TIMEOUT: Duration = Duration::from_secs(20);
/// The fewest connections one address may hold by default.
const PER_ADDRESS_MIN: usize = 16;
/// Connections answered `503` that may wait for the client to read the
/// answer at once; past them the answer is written and the socket closed.
const REFUSING: usize = 64;
/// How long a refused connection waits for its client to read the answer.
const REFUSAL_LINGER: Duration = Duration::from_secs(1);
/// The first and the longest pause after a failed accept.
const BACKOFF_FIRST: Duration = Duration::from_millis(10);
const BACKOFF_MAX: Duration = Duration::from_secs(1);
/// How often the refusals past a limit are logged, at most.
const REFUSAL_LOG_EVERY: Duration = Duration::from_secs(10);
/// How long dropped connections may take to end once shutdown gave up on
/// them (each ends when its task next runs).
const CLOSING_WAIT: Duration = Duration::from_secs(1);

/// How many connections, and for how long.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub max_connections: usize,
    pub max_connections_per_address: usize,
    pub header_timeout: Duration,
    pub idle_timeout: Duration,
    pub shutdown_timeout: Duration,
}

/// The default connection limit: the soft `RLIMIT_NOFILE` less a quarter
/// of it (at least 64 and at most 1,024 descriptors) for everything else
/// the server opens.
pub fn default_max_connections() -> usize {
    let soft = rustix::process::getrlimit(rustix::process::Resource::Nofile).current;
    max_connections_for(soft)
}

/// The default limit of one client address under `max_connections`: a
/// quarter of it, and at least 16.
pub fn default_max_connections_per_address(max_connections: usize) -> usize {
    (max_connections / 4).max(PER_ADDRESS_MIN)
}

/// [`default_max_connections`] for a soft limit (`None`: unlimited).
fn max_connections_for(soft: Option<u64>) -> usize {
    let soft = soft.unwrap_or(1 << 20).min(1 << 20);
    let headroom = (soft / 4).clamp(64, 1024);
    usize::try_from(soft.saturating_sub(headroom))
        .unwrap_or(usize::MAX)
        .max(1)
}

/// A whole answer past a limit: a minimal HTTP/1.1 response, then the
/// connection closes.
fn busy(code: &str, message: &str) -> Vec<u8> {
    let error = ApiError::new(StatusCode::SERVICE_UNAVAILABLE, code, message);
    let body = serde_json::to_string(&error).unwrap_or_default();
    format!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\n\
         content-length: {}\r\nretry-after: 1\r\nconnection: close\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// The answer past the connection limit.
static BUSY: LazyLock<Vec<u8>> = LazyLock::new(|| {
    busy(
        TOO_MANY_CONNECTIONS,
        "the server has as many connections open as it serves; retry shortly",
    )
});

/// The answer past the limit of one client address.
static BUSY_FROM_ADDRESS: LazyLock<Vec<u8>> = LazyLock::new(|| {
    busy(
        TOO_MANY_CONNECTIONS_FROM_ADDRESS,
        "this client address has as many connections open as the server serves for one \
         address; close some or retry shortly",
    )
});

/// Where the loop is: connections finish their requests once it drains,
/// and are dropped once it closes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Serving,
    Draining,
    Closing,
}

/// Serves `router` on `listener` until `shutdown` resolves, then waits
/// (at most [`Limits::shutdown_timeout`]) for every connection to finish.
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
    let addresses = Arc::new(PerAddress::new(limits.max_connections_per_address));
    let refusing = Arc::new(Semaphore::new(REFUSING));
    // Connections hold a receiver: `closed` resolves when all have ended.
    let (stop_tx, stop_rx) = watch::channel(Phase::Serving);
    let mut shutdown = pin!(shutdown);
    let mut backoff = BACKOFF_FIRST;
    let mut full = RefusalLog::default();
    let mut crowded = RefusalLog::default();
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            () = &mut shutdown => break,
        };
        let (tcp, peer) = match accepted {
            Ok(accepted) => {
                backoff = BACKOFF_FIRST;
                accepted
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
        let Some(address_slot) = addresses.take(peer.ip()) else {
            if crowded.refused() {
                tracing::warn!(
                    "[{TOO_MANY_CONNECTIONS_FROM_ADDRESS}] {} connection(s) answered 503: the \
                     latest from {}, which has {} open, the limit of one address",
                    crowded.take(),
                    peer.ip(),
                    limits.max_connections_per_address
                );
            }
            refuse(tcp, &BUSY_FROM_ADDRESS, &refusing);
            continue;
        };
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
                    drop(address_slot);
                });
            }
            Err(_) => {
                drop(address_slot);
                if full.refused() {
                    tracing::warn!(
                        "[{TOO_MANY_CONNECTIONS}] {} connection(s) answered 503: {} are open, \
                         the connection limit",
                        full.take(),
                        limits.max_connections
                    );
                }
                refuse(tcp, &BUSY, &refusing);
            }
        }
    }
    drop(listener);
    drop(stop_rx);
    let _ = stop_tx.send(Phase::Draining);
    if tokio::time::timeout(limits.shutdown_timeout, stop_tx.closed())
        .await
        .is_err()
    {
        tracing::warn!(
            "[server/shutdown-timeout] {} connection(s) still open {:?} after shutdown began \
             (event streams, slow requests): closing them",
            stop_tx.receiver_count(),
            limits.shutdown_timeout
        );
        let _ = stop_tx.send(Phase::Closing);
        let _ = tokio::time::timeout(CLOSING_WAIT, stop_tx.closed()).await;
    }
}

/// Refusals past one limit, logged at most every [`REFUSAL_LOG_EVERY`].
#[derive(Default)]
struct RefusalLog {
    unlogged: u64,
    logged: Option<Instant>,
}

impl RefusalLog {
    /// Counts a refusal; `true` when it is time to log.
    fn refused(&mut self) -> bool {
        self.unlogged += 1;
        self.logged
            .is_none_or(|at| at.elapsed() >= REFUSAL_LOG_EVERY)
    }

    /// The refusals to log, counting from now.
    fn take(&mut self) -> u64 {
        self.logged = Some(Instant::now());
        std::mem::take(&mut self.unlogged)
    }
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

/// Answers `answer` and closes. While few are refused at once, the
/// connection waits (briefly) for the client to read the answer: closing
/// a socket with its request unread would reset it, and the client could
/// lose the answer.
fn refuse(tcp: TcpStream, answer: &'static [u8], refusing: &Arc<Semaphore>) {
    match Arc::clone(refusing).try_acquire_owned() {
        Ok(permit) => {
            tokio::spawn(async move {
                let mut tcp = tcp;
                let _ = tokio::time::timeout(REFUSAL_LINGER, async {
                    tcp.write_all(answer).await?;
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
                let _ = std::io::Write::write(&mut std, answer);
            }
        }
    }
}

/// The connections open from each client address.
struct PerAddress {
    limit: usize,
    open: Mutex<HashMap<IpAddr, usize>>,
}

impl PerAddress {
    fn new(limit: usize) -> PerAddress {
        PerAddress {
            limit: limit.max(1),
            open: Mutex::new(HashMap::new()),
        }
    }

    /// A slot for a connection from `ip`, or `None` when its address has
    /// as many as it may.
    fn take(self: &Arc<Self>, ip: IpAddr) -> Option<AddressSlot> {
        let key = client_key(ip);
        let mut open = self.open.lock().unwrap_or_else(PoisonError::into_inner);
        let count = open.entry(key).or_insert(0);
        if *count >= self.limit {
            return None;
        }
        *count += 1;
        Some(AddressSlot {
            table: Arc::clone(self),
            key,
        })
    }
}

/// One connection counted against its address until dropped.
struct AddressSlot {
    table: Arc<PerAddress>,
    key: IpAddr,
}

impl Drop for AddressSlot {
    fn drop(&mut self) {
        let mut open = self
            .table
            .open
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(count) = open.get_mut(&self.key) {
            *count = count.saturating_sub(1);
            if *count == 0 {
                open.remove(&self.key);
            }
        }
    }
}

/// The address a client is counted by: an IPv4 one (mapped into IPv6 or
/// not) as itself, an IPv6 one by its `/64`.
fn client_key(ip: IpAddr) -> IpAddr {
    match ip.to_canonical() {
        IpAddr::V4(v4) => IpAddr::V4(v4),
        IpAddr::V6(v6) => {
            let prefix = u128::from(v6) & !((1u128 << 64) - 1);
            IpAddr::V6(Ipv6Addr::from(prefix))
        }
    }
}

/// What one connection serves with.
struct Connection {
    router: Router,
    hosts: Arc<HostPolicy>,
    limits: Limits,
    stop: watch::Receiver<Phase>,
}

impl Connection {
    async fn serve(mut self, tcp: TcpStream) {
        let activity = Arc::new(Activity::new());
        let io = TokioIo::new(tcp);
        let service = {
            let activity = Arc::clone(&activity);
            let router = self.router;
            let hosts = self.hosts;
            hyper::service::service_fn(move |request: hyper::Request<Incoming>| {
                let exchange = Exchange::start(&activity, !request.body().is_end_stream());
                let handling = Handling(Arc::clone(&exchange));
                let router = router.clone();
                let hosts = Arc::clone(&hosts);
                let activity = Arc::clone(&activity);
                async move {
                    let _handling = handling;
                    let response = match hosts.check(&request) {
                        Err(refusal) => refusal,
                        Ok(()) => {
                            let request = request.map(|inner| {
                                Body::new(RequestBody {
                                    inner,
                                    exchange: Some(exchange),
                                })
                            });
                            match router.oneshot(request).await {
                                Ok(response) => response,
                                Err(never) => match never {},
                            }
                        }
                    };
                    Ok::<_, Infallible>(response.map(|inner| ResponseBody { inner, activity }))
                }
            })
        };
        let mut builder = auto::Builder::new(TokioExecutor::new());
        builder
            .http1()
            .timer(TokioTimer::new())
            .header_read_timeout(self.limits.header_timeout);
        builder
            .http2()
            .timer(TokioTimer::new())
            .max_concurrent_streams(H2_MAX_STREAMS)
            .max_header_list_size(H2_MAX_HEADER_LIST)
            .keep_alive_interval(H2_KEEP_ALIVE)
            .keep_alive_timeout(H2_KEEP_ALIVE_TIMEOUT);
        let mut conn = pin!(builder.serve_connection(io, service));
        let mut draining = false;
        loop {
            // Woken at least every idle timeout: a request since may have
            // moved the deadline earlier (an idle timeout shorter than the
            // header one, once the first request has come).
            let wake = activity
                .deadline(&self.limits)
                .min(Instant::now() + self.limits.idle_timeout.max(Duration::from_millis(10)));
            tokio::select! {
                served = conn.as_mut() => {
                    if let Err(e) = served {
                        tracing::trace!("connection ended: {e}");
                    }
                    break;
                }
                changed = self.stop.changed() => {
                    // The loop's sender gone: nothing waits any more.
                    let phase = match changed {
                        Ok(()) => *self.stop.borrow_and_update(),
                        Err(_) => Phase::Closing,
                    };
                    match phase {
                        Phase::Serving => {}
                        Phase::Draining => {
                            if !draining {
                                draining = true;
                                conn.as_mut().graceful_shutdown();
                            }
                        }
                        Phase::Closing => {
                            tracing::trace!("dropping a connection at shutdown");
                            break;
                        }
                    }
                }
                () = tokio::time::sleep_until(wake) => {
                    if activity.deadline(&self.limits) <= Instant::now() {
                        tracing::trace!("closing a slow or idle connection");
                        break;
                    }
                }
            }
        }
    }
}

/// What a connection's requests have done, for its deadline.
struct Activity {
    opened: Instant,
    /// Milliseconds after `opened` of the last request or response data:
    /// a request's start, its body's data, the end of its handler, a
    /// response body's data or end.
    last_ms: AtomicU64,
    /// Requests at work: their handler runs and their body has arrived
    /// (or was dropped).
    working: AtomicUsize,
    /// Whether a request's headers arrived.
    requested: AtomicBool,
}

impl Activity {
    fn new() -> Activity {
        Activity {
            opened: Instant::now(),
            last_ms: AtomicU64::new(0),
            working: AtomicUsize::new(0),
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
        if self.working.load(Ordering::SeqCst) > 0 {
            return Instant::now() + limits.idle_timeout;
        }
        self.opened
            + Duration::from_millis(self.last_ms.load(Ordering::Relaxed))
            + limits.idle_timeout
    }
}

/// One request's part in its connection's activity: whether its handler
/// runs ([`Exchange::HANDLER`]) and its body is still arriving
/// ([`Exchange::BODY`]). It is at work when only its handler runs.
struct Exchange {
    activity: Arc<Activity>,
    state: AtomicU8,
}

impl Exchange {
    const HANDLER: u8 = 1;
    const BODY: u8 = 2;

    /// A request whose headers arrived, its body still to come or not.
    fn start(activity: &Arc<Activity>, body_open: bool) -> Arc<Exchange> {
        activity.requested.store(true, Ordering::Relaxed);
        activity.touch();
        let state = if body_open {
            Exchange::HANDLER | Exchange::BODY
        } else {
            Exchange::HANDLER
        };
        if state == Exchange::HANDLER {
            activity.working.fetch_add(1, Ordering::SeqCst);
        }
        Arc::new(Exchange {
            activity: Arc::clone(activity),
            state: AtomicU8::new(state),
        })
    }

    /// The handler, or the body, is done (again: nothing).
    fn end(&self, part: u8) {
        let before = self.state.fetch_and(!part, Ordering::SeqCst);
        if before & part == 0 {
            return;
        }
        let after = before & !part;
        match (before == Exchange::HANDLER, after == Exchange::HANDLER) {
            (false, true) => {
                self.activity.working.fetch_add(1, Ordering::SeqCst);
            }
            (true, false) => {
                self.activity.working.fetch_sub(1, Ordering::SeqCst);
            }
            _ => {}
        }
        self.activity.touch();
    }
}

/// A request's handler running.
struct Handling(Arc<Exchange>);

impl Drop for Handling {
    fn drop(&mut self) {
        self.0.end(Exchange::HANDLER);
    }
}

/// A request's body, noting its data and its end.
struct RequestBody {
    inner: Incoming,
    /// `None` once the body ended.
    exchange: Option<Arc<Exchange>>,
}

impl RequestBody {
    fn ended(&mut self) {
        if let Some(exchange) = self.exchange.take() {
            exchange.end(Exchange::BODY);
        }
    }
}

impl hyper::body::Body for RequestBody {
    type Data = Bytes;
    type Error = hyper::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, hyper::Error>>> {
        let polled = Pin::new(&mut self.inner).poll_frame(cx);
        match &polled {
            Poll::Ready(Some(Ok(frame))) if frame.is_data() => {
                if let Some(exchange) = &self.exchange {
                    exchange.activity.touch();
                }
                if self.inner.is_end_stream() {
                    self.ended();
                }
            }
            Poll::Ready(_) => self.ended(),
            Poll::Pending => {}
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

impl Drop for RequestBody {
    fn drop(&mut self) {
        self.ended();
    }
}

/// A response's body, noting its data and its end. Hyper takes data from
/// it only when the connection can send them, so a client that does not
/// read makes none.
struct ResponseBody {
    inner: Body,
    activity: Arc<Activity>,
}

impl hyper::body::Body for ResponseBody {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        let polled = Pin::new(&mut self.inner).poll_frame(cx);
        if polled.is_ready() {
            self.activity.touch();
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

impl Drop for ResponseBody {
    fn drop(&mut self) {
        self.activity.touch();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits() -> Limits {
        Limits {
            max_connections: 1,
            max_connections_per_address: 1,
            header_timeout: Duration::from_secs(2),
            idle_timeout: Duration::from_secs(600),
            shutdown_timeout: SHUTDOWN_TIMEOUT,
        }
    }

    /// The deadline is `idle_timeout` from about now (the last activity).
    fn idle_from_now(activity: &Activity, limits: &Limits) {
        let now = Instant::now();
        let due = activity.deadline(limits);
        assert!(due <= now + limits.idle_timeout, "{due:?}");
        assert!(due + Duration::from_millis(5) >= now + limits.idle_timeout);
    }

    #[test]
    fn the_default_limit_leaves_headroom() {
        assert_eq!(max_connections_for(Some(1024)), 768);
        assert_eq!(max_connections_for(Some(20_000)), 18_976);
        assert_eq!(max_connections_for(Some(100)), 36);
        assert_eq!(max_connections_for(Some(10)), 1);
        assert_eq!(max_connections_for(None), (1 << 20) - 1024);
        assert_eq!(default_max_connections_per_address(768), 192);
        assert_eq!(default_max_connections_per_address(36), 16);
        assert_eq!(default_max_connections_per_address(1), 16);
    }

    #[test]
    fn a_connection_is_due_for_headers_then_idles_only_when_nothing_runs() {
        let limits = limits();
        let activity = Arc::new(Activity::new());
        assert_eq!(
            activity.deadline(&limits),
            activity.opened + limits.header_timeout
        );
        let handling = Handling(Exchange::start(&activity, false));
        std::thread::sleep(Duration::from_millis(20));
        // A handler that runs long (a synchronous channel turn) is not idle.
        let before = Instant::now();
        assert!(activity.deadline(&limits) >= before + limits.idle_timeout);
        drop(handling);
        // Idle from the end of the handling, or of a response's data (an
        // event stream's keep-alive).
        idle_from_now(&activity, &limits);
        std::thread::sleep(Duration::from_millis(20));
        let response = ResponseBody {
            inner: Body::empty(),
            activity: Arc::clone(&activity),
        };
        drop(response);
        idle_from_now(&activity, &limits);
        // Nothing else counts: the deadline holds as time passes.
        let due = activity.deadline(&limits);
        std::thread::sleep(Duration::from_millis(20));
        assert_eq!(activity.deadline(&limits), due);
    }

    #[test]
    fn a_request_whose_body_is_arriving_is_not_at_work() {
        let limits = limits();
        let activity = Arc::new(Activity::new());
        let exchange = Exchange::start(&activity, true);
        let handling = Handling(Arc::clone(&exchange));
        // The handler waits for the body: idle unless its data arrive.
        idle_from_now(&activity, &limits);
        let due = activity.deadline(&limits);
        std::thread::sleep(Duration::from_millis(20));
        assert_eq!(activity.deadline(&limits), due);
        // Then the body is in and the handler works.
        exchange.end(Exchange::BODY);
        exchange.end(Exchange::BODY);
        assert_eq!(activity.working.load(Ordering::SeqCst), 1);
        let before = Instant::now();
        assert!(activity.deadline(&limits) >= before + limits.idle_timeout);
        drop(handling);
        assert_eq!(activity.working.load(Ordering::SeqCst), 0);
        // A body that outlives its handler (kept by the response) does not
        // put the request back to work when it ends.
        let exchange = Exchange::start(&activity, true);
        drop(Handling(Arc::clone(&exchange)));
        exchange.end(Exchange::BODY);
        assert_eq!(activity.working.load(Ordering::SeqCst), 0);
    }

    #[test]
    fn one_address_holds_at_most_its_limit() {
        let table = Arc::new(PerAddress::new(2));
        let a: IpAddr = "192.0.2.1".parse().unwrap();
        let first = table.take(a).unwrap();
        let _second = table.take(a).unwrap();
        assert!(table.take(a).is_none());
        // The same address mapped into IPv6 is the same client.
        assert!(table.take("::ffff:192.0.2.1".parse().unwrap()).is_none());
        assert!(table.take("192.0.2.2".parse().unwrap()).is_some());
        drop(first);
        assert!(table.take(a).is_some());
        // An IPv6 client by its /64.
        let v6 = |s: &str| s.parse::<IpAddr>().unwrap();
        let x = table.take(v6("2001:db8:0:1::1")).unwrap();
        let y = table.take(v6("2001:db8:0:1:ffff::2")).unwrap();
        assert!(table.take(v6("2001:db8:0:1::3")).is_none());
        assert!(table.take(v6("2001:db8:0:2::1")).is_some());
        // Slots dropped leave no entry behind.
        drop((x, y));
        assert!(
            !table
                .open
                .lock()
                .unwrap()
                .contains_key(&client_key(v6("2001:db8:0:1::1")))
        );
    }

    #[test]
    fn the_busy_answers_are_whole_http_responses() {
        for (answer, code) in [
            (&*BUSY, TOO_MANY_CONNECTIONS),
            (&*BUSY_FROM_ADDRESS, TOO_MANY_CONNECTIONS_FROM_ADDRESS),
        ] {
            let text = String::from_utf8(answer.clone()).unwrap();
            let (head, body) = text.split_once("\r\n\r\n").unwrap();
            assert!(head.starts_with("HTTP/1.1 503 "));
            assert!(head.contains(&format!("content-length: {}", body.len())));
            let json: serde_json::Value = serde_json::from_str(body).unwrap();
            assert_eq!(json["code"], code);
        }
    }
}
