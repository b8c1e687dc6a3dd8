#![allow(clippy::unwrap_used, clippy::expect_used)]

//! The real server on a loopback port under connection floods: thousands
//! of idle connections do not stop `/api/health` from answering, a
//! connection past the limit (or past its address's) is answered 503 with
//! its code, a request naming a foreign host is refused, a connection that
//! sends its headers slowly (or nothing) is closed after the header
//! timeout, an HTTP/2 client that only pings is closed after the idle
//! timeout, an open event stream does not hold shutdown past its timeout,
//! and a short token cannot guard a non-loopback address.

use crate::common;

use std::net::SocketAddr;
use std::path::Path;
use std::time::{Duration, Instant};

use common::{TOKEN, options, setup, start};
use evoflux_app::AppContext;
use evoflux_server::{ServeOptions, ServerError, serve};
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// One HTTP/1.1 exchange on a new connection: the status and the JSON
/// body (`Null` when the body is not JSON).
async fn exchange(addr: SocketAddr, request: &str) -> (u16, Value) {
    exchange_on(TcpStream::connect(addr).await.unwrap(), request).await
}

/// [`exchange`] on a connection already open.
async fn exchange_on(mut tcp: TcpStream, request: &str) -> (u16, Value) {
    tcp.write_all(request.as_bytes()).await.unwrap();
    let mut raw = Vec::new();
    tokio::time::timeout(Duration::from_secs(60), tcp.read_to_end(&mut raw))
        .await
        .expect("the server answers")
        .unwrap();
    let text = String::from_utf8_lossy(&raw);
    let status = text
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("not an HTTP response: {text:?}"));
    let body = text.split_once("\r\n\r\n").map_or("", |(_, b)| b);
    (status, serde_json::from_str(body).unwrap_or(Value::Null))
}

fn get(path: &str, host: &str) -> String {
    format!("GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n")
}

/// `/api/health` asked on a new connection, naming the loopback host.
async fn health(addr: SocketAddr) -> (u16, Value) {
    exchange(addr, &get("/api/health", "127.0.0.1")).await
}

/// Takes the two slots the server gives this address (accepted in
/// order) and expects the next connection answered 503 with `code`; the
/// two connections holding them.
async fn take_both_slots(addr: SocketAddr, code: &str) -> (TcpStream, TcpStream) {
    let first = TcpStream::connect(addr).await.unwrap();
    let second = TcpStream::connect(addr).await.unwrap();
    let (status, body) = health(addr).await;
    assert_eq!(status, 503, "{body}");
    assert_eq!(body["code"], code);
    (first, second)
}

/// Expects `/api/health` answered 200 within five seconds (a freed slot
/// is seen as its connection's end reaches the server).
async fn health_answers_again(addr: SocketAddr) {
    let mut answered = 0;
    for _ in 0..100 {
        let (status, _) = health(addr).await;
        if status == 200 {
            answered = status;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(answered, 200);
}

/// Reads `read` until its connection ends (or fails).
async fn read_to_close(read: &mut (impl AsyncRead + Unpin)) {
    let mut sink = [0u8; 4096];
    loop {
        match read.read(&mut sink).await {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
    }
}

/// Reads `stream` until what it sent contains `marker`, each read within
/// 20 seconds (panicking with `what` past them): all it sent.
async fn read_until(stream: &mut TcpStream, marker: &str, what: &str) -> Vec<u8> {
    let mut seen = Vec::new();
    while !String::from_utf8_lossy(&seen).contains(marker) {
        let mut chunk = [0u8; 4096];
        let n = tokio::time::timeout(Duration::from_secs(20), stream.read(&mut chunk))
            .await
            .unwrap_or_else(|_| panic!("{what}"))
            .unwrap();
        assert!(n > 0, "closed: {}", String::from_utf8_lossy(&seen));
        seen.extend_from_slice(&chunk[..n]);
    }
    seen
}

/// The error `serve` refuses `options` with, before it listens.
async fn refused(app: AppContext, options: ServeOptions) -> ServerError {
    serve(
        app,
        options,
        |addr| panic!("listening on {addr} with options it should refuse"),
        async {},
    )
    .await
    .unwrap_err()
}

/// Raises this process's soft RLIMIT_NOFILE towards `wanted` (never past
/// the hard limit) and returns the soft limit then in force.
fn raise_open_files(wanted: u64) -> u64 {
    use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};
    let limit = getrlimit(Resource::Nofile);
    let soft = limit.current.unwrap_or(u64::MAX);
    if soft >= wanted {
        return soft;
    }
    let target = limit.maximum.map_or(wanted, |hard| hard.min(wanted));
    let raised = Rlimit {
        current: Some(target),
        maximum: limit.maximum,
    };
    match setrlimit(Resource::Nofile, raised) {
        Ok(()) => target,
        Err(_) => soft,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn thousands_of_idle_connections_do_not_stop_health_from_answering() {
    const WANTED: u64 = 5_000;
    // Each idle connection is two descriptors here (the client's and the
    // server's), and the server keeps its headroom.
    let soft = raise_open_files(WANTED * 2 + 2_048);
    let count = WANTED.min(soft.saturating_sub(2_048) / 2);
    assert!(
        count >= 500,
        "RLIMIT_NOFILE {soft} is too low for this test"
    );
    let (_tmp, app) = setup();
    // Long enough that every idle connection is still open when health
    // is asked; the limit is the default one (what RLIMIT_NOFILE allows).
    let server = start(&app, |o| {
        o.header_timeout = Duration::from_secs(120);
        // All from one address: its own limit is the server's.
        o.max_connections_per_address = Some(usize::MAX);
    })
    .await;
    let mut idle = Vec::new();
    for _ in 0..count {
        idle.push(TcpStream::connect(server.addr).await.unwrap());
    }
    let asked = Instant::now();
    let (status, health) = health(server.addr).await;
    println!(
        "{count} idle connections open (soft RLIMIT_NOFILE {soft}, default limit {}): \
         /api/health answered {status} in {:?}",
        evoflux_server::default_max_connections(),
        asked.elapsed()
    );
    assert_eq!(status, 200, "{health}");
    assert_eq!(health["ok"], true);
    // The idle connections were held, not dropped: none reads an end.
    let mut probe = [0u8; 1];
    let held = tokio::time::timeout(Duration::from_millis(200), idle[0].read(&mut probe)).await;
    assert!(held.is_err(), "an idle connection was closed: {held:?}");
    drop(idle);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn past_the_connection_limit_a_connection_is_answered_503_with_its_code() {
    let (_tmp, app) = setup();
    let server = start(&app, |o| {
        o.max_connections = Some(2);
        o.header_timeout = Duration::from_secs(120);
    })
    .await;
    // These two take both slots.
    let (first, _second) = take_both_slots(server.addr, evoflux_server::TOO_MANY_CONNECTIONS).await;
    // A slot freed serves again.
    drop(first);
    health_answers_again(server.addr).await;
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_naming_a_foreign_host_is_refused_with_its_code() {
    let (_tmp, app) = setup();
    let server = start(&app, |o| o.allowed_hosts = vec!["evo.example".into()]).await;
    let port = server.addr.port();
    // DNS rebinding: a page on the attacker's name, resolved to loopback.
    for path in [
        "/api/health",
        "/.well-known/evoflux/ready",
        "/openapi.json",
        "/api/info",
    ] {
        let (status, body) =
            exchange(server.addr, &get(path, &format!("evil.example:{port}"))).await;
        assert_eq!(status, 421, "{path}: {body}");
        assert_eq!(body["code"], evoflux_server::HOST_NOT_ALLOWED, "{path}");
        // The library names its option, never the CLI's flag.
        let message = body["message"].as_str().unwrap();
        assert!(message.contains("allowed hosts"), "{message}");
        assert!(!message.contains("--"), "{message}");
    }
    let (status, body) = exchange(
        server.addr,
        "GET /api/health HTTP/1.1\r\nConnection: close\r\n\r\n",
    )
    .await;
    assert_eq!(status, 421, "no Host: {body}");
    assert_eq!(body["code"], evoflux_server::HOST_NOT_ALLOWED);
    for host in [
        format!("127.0.0.1:{port}"),
        format!("localhost:{port}"),
        format!("[::1]:{port}"),
        "evo.example".to_owned(),
    ] {
        let (status, body) = exchange(server.addr, &get("/api/health", &host)).await;
        assert_eq!(status, 200, "{host}: {body}");
    }
    // HTTP/2 (prior knowledge) names its host in `:authority`.
    let h2 = reqwest::Client::builder()
        .http2_prior_knowledge()
        .build()
        .unwrap()
        .get(format!("http://{}/api/health", server.addr))
        .send()
        .await
        .unwrap();
    assert_eq!(h2.version(), reqwest::Version::HTTP_2);
    assert_eq!(h2.status(), 200);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_header_connection_is_closed_after_the_header_timeout() {
    let (_tmp, app) = setup();
    let timeout = Duration::from_millis(500);
    let server = start(&app, |o| o.header_timeout = timeout).await;

    // Slowloris: a header line every 100 ms, the headers never ending.
    let opened = Instant::now();
    let (mut read, mut write) = TcpStream::connect(server.addr).await.unwrap().into_split();
    let closed = tokio::spawn(async move {
        read_to_close(&mut read).await;
        opened.elapsed()
    });
    let _ = write
        .write_all(format!("GET /api/health HTTP/1.1\r\nHost: {}\r\n", server.addr).as_bytes())
        .await;
    while !closed.is_finished() && opened.elapsed() < Duration::from_secs(20) {
        if write.write_all(b"X-Slow: a\r\n").await.is_err() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let slow = tokio::time::timeout(Duration::from_secs(5), closed)
        .await
        .expect("the slow connection is closed")
        .unwrap();

    // A connection that sends nothing at all.
    let opened = Instant::now();
    let mut silent = TcpStream::connect(server.addr).await.unwrap();
    let mut sink = [0u8; 16];
    let read = tokio::time::timeout(Duration::from_secs(20), silent.read(&mut sink))
        .await
        .expect("the silent connection is closed");
    let quiet = opened.elapsed();
    assert!(matches!(read, Ok(0) | Err(_)), "{read:?}");

    // A keep-alive connection after its first answer: its next request's
    // headers are due within the timeout too, so it does not idle on.
    let mut kept = TcpStream::connect(server.addr).await.unwrap();
    kept.write_all(format!("GET /api/health HTTP/1.1\r\nHost: {}\r\n\r\n", server.addr).as_bytes())
        .await
        .unwrap();
    read_until(&mut kept, "\"ok\":true", "the first request is answered").await;
    let answered = Instant::now();
    let read = tokio::time::timeout(Duration::from_secs(20), kept.read(&mut sink))
        .await
        .expect("the idle keep-alive connection is closed");
    let kept_for = answered.elapsed();
    assert!(matches!(read, Ok(0) | Err(_)), "{read:?}");

    println!(
        "header timeout {timeout:?}: the slow connection closed after {slow:?}, the silent one \
         after {quiet:?}, the idle keep-alive one {kept_for:?} after its answer"
    );
    let early = timeout - Duration::from_millis(100);
    assert!(slow >= early, "{slow:?}");
    assert!(quiet >= early, "{quiet:?}");
    assert!(kept_for >= early, "{kept_for:?}");
    // The server still answers.
    let (status, _) = health(server.addr).await;
    assert_eq!(status, 200);
    server.stop().await;
}

/// Sessions of `app` answer with a scripted model (no turns).
fn script_the_model(app: &AppContext, tmp: &Path) {
    let config = app.dirs.config_dir();
    std::fs::create_dir_all(config).unwrap();
    let script = tmp.join("model.yaml");
    std::fs::write(&script, "turns: []\n").unwrap();
    std::fs::write(
        config.join("config.toml"),
        format!("[model]\ndefault = \"scripted:{}\"\n", script.display()),
    )
    .unwrap();
}

/// A new session's event stream, on its own HTTP/1.1 connection, and
/// what it sent first (the response's head at least).
async fn open_event_stream(addr: SocketAddr) -> (TcpStream, Vec<u8>) {
    let created: Value = reqwest::Client::new()
        .post(format!("http://{addr}/api/sessions"))
        .bearer_auth(TOKEN)
        .json(&serde_json::json!({"mode": "work"}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let id = created["session_id"]
        .as_str()
        .unwrap_or_else(|| panic!("{created}"));
    let mut stream = TcpStream::connect(addr).await.unwrap();
    stream
        .write_all(
            format!(
                "GET /api/sessions/{id}/events HTTP/1.1\r\nHost: {addr}\r\n\
                 Authorization: Bearer {TOKEN}\r\n\r\n"
            )
            .as_bytes(),
        )
        .await
        .unwrap();
    let seen = read_until(&mut stream, "\r\n\r\n", "the event stream answers").await;
    let head = String::from_utf8_lossy(&seen);
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert!(head.contains("text/event-stream"), "{head}");
    (stream, seen)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_event_stream_outlives_the_header_timeout() {
    let (tmp, app) = setup();
    script_the_model(&app, tmp.path());
    let timeout = Duration::from_millis(300);
    let server = start(&app, |o| o.header_timeout = timeout).await;
    let (mut stream, mut seen) = open_event_stream(server.addr).await;
    // Many header timeouts pass while the stream is open.
    let until = Instant::now() + timeout * 6;
    while Instant::now() < until {
        let mut chunk = [0u8; 4096];
        match tokio::time::timeout_at(until.into(), stream.read(&mut chunk)).await {
            Err(_) => break,
            Ok(Ok(0) | Err(_)) => panic!(
                "the event stream was closed: {}",
                String::from_utf8_lossy(&seen)
            ),
            Ok(Ok(n)) => seen.extend_from_slice(&chunk[..n]),
        }
    }
    drop(stream);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_open_event_stream_holds_shutdown_no_longer_than_its_timeout() {
    let (tmp, app) = setup();
    script_the_model(&app, tmp.path());
    let grace = Duration::from_millis(500);
    let server = start(&app, |o| o.shutdown_timeout = grace).await;
    let (mut stream, _) = open_event_stream(server.addr).await;
    let stopping = Instant::now();
    server.stop().await;
    let stopped = stopping.elapsed();
    // The stream was dropped, not finished: its connection reads an end.
    let ended = tokio::time::timeout(Duration::from_secs(5), read_to_close(&mut stream)).await;
    println!("shutdown timeout {grace:?}: the server stopped in {stopped:?}");
    assert!(ended.is_ok(), "the event stream is still open");
    assert!(stopped >= grace - Duration::from_millis(50), "{stopped:?}");
    assert!(stopped < grace + Duration::from_secs(8), "{stopped:?}");
}

/// One HTTP/2 frame.
fn h2_frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let length = u32::try_from(payload.len()).unwrap().to_be_bytes();
    let mut frame = length[1..].to_vec();
    frame.extend([kind, flags]);
    frame.extend(stream.to_be_bytes());
    frame.extend_from_slice(payload);
    frame
}

/// The next HTTP/2 frame: its type, flags, stream and payload.
async fn read_h2_frame(
    read: &mut (impl tokio::io::AsyncRead + Unpin),
) -> std::io::Result<(u8, u8, u32, Vec<u8>)> {
    let mut head = [0u8; 9];
    read.read_exact(&mut head).await?;
    let length = u32::from_be_bytes([0, head[0], head[1], head[2]]);
    let mut payload = vec![0u8; usize::try_from(length).unwrap()];
    read.read_exact(&mut payload).await?;
    let stream = u32::from_be_bytes([head[5], head[6], head[7], head[8]]) & 0x7fff_ffff;
    Ok((head[3], head[4], stream, payload))
}

const H2_DATA: u8 = 0x0;
const H2_HEADERS: u8 = 0x1;
const H2_SETTINGS: u8 = 0x4;
const H2_PING: u8 = 0x6;
const H2_GOAWAY: u8 = 0x7;
const H2_END_STREAM: u8 = 0x1;
const H2_ACK: u8 = 0x1;
const H2_END_HEADERS: u8 = 0x4;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_http2_client_that_only_pings_is_closed_after_the_idle_timeout() {
    let (_tmp, app) = setup();
    let idle = Duration::from_millis(800);
    let server = start(&app, |o| o.idle_timeout = idle).await;
    let (mut read, mut write) = TcpStream::connect(server.addr).await.unwrap().into_split();

    // h2c with prior knowledge: the preface, empty SETTINGS, and GET
    // /api/health in one HEADERS frame (HPACK: `:method GET` and `:scheme
    // http` from the static table, `:path` and `:authority` as literals).
    let authority = server.addr.to_string();
    let mut block = vec![0x82, 0x86, 0x04, 11];
    block.extend_from_slice(b"/api/health");
    block.extend([0x01, u8::try_from(authority.len()).unwrap()]);
    block.extend_from_slice(authority.as_bytes());
    let mut hello = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec();
    hello.extend(h2_frame(H2_SETTINGS, 0, 0, &[]));
    hello.extend(h2_frame(
        H2_HEADERS,
        H2_END_HEADERS | H2_END_STREAM,
        1,
        &block,
    ));
    write.write_all(&hello).await.unwrap();
    let mut status = None;
    loop {
        let (kind, flags, stream, payload) =
            tokio::time::timeout(Duration::from_secs(20), read_h2_frame(&mut read))
                .await
                .expect("the server answers")
                .unwrap();
        match kind {
            H2_SETTINGS if flags & H2_ACK == 0 => {
                write
                    .write_all(&h2_frame(H2_SETTINGS, H2_ACK, 0, &[]))
                    .await
                    .unwrap();
            }
            H2_HEADERS if stream == 1 => {
                status = payload.first().copied();
                if flags & H2_END_STREAM != 0 {
                    break;
                }
            }
            H2_DATA if stream == 1 && flags & H2_END_STREAM != 0 => break,
            H2_GOAWAY => panic!("GOAWAY before the answer: {payload:?}"),
            _ => {}
        }
    }
    let answered = Instant::now();
    // HPACK `:status 200`, indexed.
    assert_eq!(status, Some(0x88), "the answer is not 200");

    // Then only PINGs, ten times within the idle timeout: the server
    // answers them, yet closes the connection once it has idled.
    let reader = tokio::spawn(async move {
        let mut acks = 0u32;
        loop {
            match read_h2_frame(&mut read).await {
                Ok((H2_PING, flags, _, _)) if flags & H2_ACK != 0 => acks += 1,
                Ok(_) => {}
                Err(_) => return (acks, answered.elapsed()),
            }
        }
    });
    let mut sent = 0u64;
    while !reader.is_finished() && answered.elapsed() < Duration::from_secs(20) {
        sent += 1;
        if write
            .write_all(&h2_frame(H2_PING, 0, 0, &sent.to_be_bytes()))
            .await
            .is_err()
        {
            break;
        }
        tokio::time::sleep(idle / 10).await;
    }
    let (acks, open_for) = tokio::time::timeout(Duration::from_secs(5), reader)
        .await
        .expect("the pinging connection is closed")
        .unwrap();
    println!(
        "idle timeout {idle:?}: {sent} PINGs sent, {acks} answered; closed {open_for:?} after \
         the answer"
    );
    assert!(acks >= 3, "the PINGs were not answered: {acks} of {sent}");
    assert!(
        open_for >= idle - Duration::from_millis(100),
        "{open_for:?}"
    );
    assert!(open_for < idle + Duration::from_secs(5), "{open_for:?}");
    // The server still answers.
    let (status, _) = health(server.addr).await;
    assert_eq!(status, 200);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_address_cannot_take_every_connection() {
    let (_tmp, app) = setup();
    let server = start(&app, |o| {
        o.max_connections = Some(64);
        o.max_connections_per_address = Some(2);
        o.header_timeout = Duration::from_secs(120);
    })
    .await;
    // These two take 127.0.0.1's slots.
    let (first, _second) = take_both_slots(
        server.addr,
        evoflux_server::TOO_MANY_CONNECTIONS_FROM_ADDRESS,
    )
    .await;
    // Another address (all of 127/8 is loopback on Linux) is served.
    #[cfg(target_os = "linux")]
    {
        let socket = tokio::net::TcpSocket::new_v4().unwrap();
        socket.bind(SocketAddr::from(([127, 0, 0, 2], 0))).unwrap();
        let other = socket.connect(server.addr).await.unwrap();
        let (status, body) = exchange_on(other, &get("/api/health", "127.0.0.1")).await;
        assert_eq!(status, 200, "{body}");
    }
    // A slot of the address freed serves it again.
    drop(first);
    health_answers_again(server.addr).await;
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_invalid_allowed_host_is_refused_naming_the_option() {
    let (_tmp, app) = setup();
    let mut options = options(&app, SocketAddr::from(([127, 0, 0, 1], 0)), TOKEN);
    options.allowed_hosts = vec!["a/b".into()];
    let error = refused(app, options).await;
    assert_eq!(error.code(), "server/allowed-host-invalid");
    let message = error.to_string();
    assert!(message.contains("allowed host \"a/b\""), "{message}");
    assert!(!message.contains("--"), "{message}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_short_token_cannot_guard_a_non_loopback_address() {
    let (_tmp, app) = setup();
    // Refused before anything binds: no traffic leaves loopback.
    let options = options(&app, SocketAddr::from(([0, 0, 0, 0], 0)), "short-secret");
    let error = refused(app, options).await;
    assert_eq!(error.code(), "server/token-too-short");
    assert!(matches!(error, ServerError::TokenTooShort { min: 32, .. }));
    let message = error.to_string();
    assert!(message.contains("EVOFLUX_SERVER_TOKEN"), "{message}");
    assert!(message.contains("32"), "{message}");
    assert!(!message.contains("short-secret"), "{message}");
}
