//! A fault-injecting model server: one that never answers, one that stalls
//! midway, one that answers HTML with 200, one whose reply never ends, one
//! that trickles forever, one that rate-limits with a long wait; and a
//! listener that accepts no connection. Each call ends within its bound
//! with the error named for what happened.

use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{Path, State};
use axum::response::Response;
use evoflux_core::config::{ProviderConfig, ProviderKind};
use evoflux_model::{
    CallBounds, EnvLookup, ProviderError, ProviderOptions, Request, RetryPolicy, Sleeper,
    StreamEvent, provider_for,
};
use futures_util::StreamExt;
use serde_json::json;

use crate::common::{data, drain, recording_sleeper};

fn delta(text: &str) -> Bytes {
    Bytes::from(data(
        &json!({"choices": [{"index": 0, "delta": {"content": text}}]}),
    ))
}

async fn fault(Path(kind): Path<String>, State(hits): State<Arc<AtomicUsize>>) -> Response {
    let hit = hits.fetch_add(1, Ordering::SeqCst);
    let sse = |body: Body| {
        Response::builder()
            .header("content-type", "text/event-stream")
            .body(body)
            .unwrap()
    };
    match kind.as_str() {
        "silent" => std::future::pending().await,
        // Busy once (a retry follows at once), then silent.
        "busy-then-silent" if hit == 0 => Response::builder()
            .status(503)
            .body(Body::from("busy"))
            .unwrap(),
        "busy-then-silent" => std::future::pending().await,
        "limited" => Response::builder()
            .status(429)
            .header("retry-after", "20")
            .header("content-type", "application/json")
            .body(Body::from(
                r#"{"error":{"message":"Rate limit reached for requests","type":"requests","code":"rate_limit_exceeded"}}"#,
            ))
            .unwrap(),
        "stall" => {
            let first = futures_util::stream::iter([Ok::<_, Infallible>(delta("Hello"))]);
            sse(Body::from_stream(
                first.chain(futures_util::stream::pending()),
            ))
        }
        "html" => Response::builder()
            .header("content-type", "text/html; charset=utf-8")
            .body(Body::from(
                "<html><body><h1>Welcome to nginx!</h1></body></html>",
            ))
            .unwrap(),
        "endless" => sse(Body::from_stream(
            futures_util::stream::repeat_with(|| Ok::<_, Infallible>(delta(&"x".repeat(1000))))
                .then(|c| async move {
                    tokio::task::yield_now().await;
                    c
                }),
        )),
        "trickle" => sse(Body::from_stream(
            futures_util::stream::repeat_with(|| Ok::<_, Infallible>(Bytes::from(": ping\n\n")))
                .then(|c| async move {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                    c
                }),
        )),
        other => panic!("no fault {other}"),
    }
}

struct Faulty {
    base: String,
    hits: Arc<AtomicUsize>,
}

async fn server() -> Faulty {
    let hits = Arc::new(AtomicUsize::new(0));
    let app = Router::new()
        .route("/{kind}/v1/chat/completions", axum::routing::post(fault))
        .with_state(hits.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    Faulty {
        base: format!("http://{addr}"),
        hits,
    }
}

/// Every event of one call to the fault `kind`, under `bounds`, with two
/// attempts and instant backoff; a hang fails the test.
async fn call(
    s: &Faulty,
    kind: &str,
    bounds: CallBounds,
) -> Vec<Result<StreamEvent, ProviderError>> {
    let retry = RetryPolicy {
        max_attempts: 2,
        ..RetryPolicy::default()
    };
    call_to(
        &format!("{}/{kind}/v1", s.base),
        bounds,
        retry,
        recording_sleeper().0,
    )
    .await
}

/// Every event of one call to `base_url`, with this retry policy and
/// sleeper; a hang fails the test.
async fn call_to(
    base_url: &str,
    bounds: CallBounds,
    retry: RetryPolicy,
    sleeper: Sleeper,
) -> Vec<Result<StreamEvent, ProviderError>> {
    let config = ProviderConfig {
        wire_api: None,
        reasoning_effort: None,
        images: None,
        audio: None,
        kind: ProviderKind::Openai,
        base_url: Some(base_url.to_owned()),
        api_key_env: None,
        context_window: None,
        model_path: None,
        limits: Default::default(),
    };
    let options = ProviderOptions {
        env: EnvLookup::from_pairs::<_, &str, &str>([]),
        retry,
        sleeper,
        bounds: Some(bounds),
        ..ProviderOptions::default()
    };
    let provider = provider_for("fake", &config, &options).unwrap();
    let request = Request::new("m", vec![evoflux_model::Message::user("hi")]);
    tokio::time::timeout(Duration::from_secs(20), drain(provider.stream(request)))
        .await
        .expect("the call did not end within its bounds")
}

fn last_error(events: &[Result<StreamEvent, ProviderError>]) -> &ProviderError {
    match events.last() {
        Some(Err(e)) => e,
        other => panic!("expected an error, got {other:?}"),
    }
}

#[tokio::test]
async fn a_server_that_never_answers_fails_once_its_first_byte_bound_is_spent_retries_included() {
    let s = server().await;
    // The default policy (five attempts, real backoff) used to spend the
    // bound once per attempt: 120 s each plus backoff on the defaults.
    let started = Instant::now();
    let events = call_to(
        &format!("{}/silent/v1", s.base),
        CallBounds::millis(1000, 400, 1000, 10_000, 1 << 20),
        RetryPolicy::default(),
        Sleeper::tokio(),
    )
    .await;
    let took = started.elapsed();
    let e = last_error(&events);
    assert_eq!(e.code(), "model/first-byte-timeout");
    let text = e.to_string();
    assert!(
        text.contains("first_byte_timeout_secs") && text.contains("retries included"),
        "{text}"
    );
    assert!(took < Duration::from_millis(1000), "took {took:?}");
    assert_eq!(
        s.hits.load(Ordering::SeqCst),
        1,
        "no attempt after the bound"
    );
}

#[tokio::test]
async fn a_retry_waits_only_for_what_is_left_of_the_first_byte_bound() {
    let s = server().await;
    let started = Instant::now();
    let retry = RetryPolicy {
        base: Duration::from_millis(500),
        ..RetryPolicy::default()
    };
    let events = call_to(
        &format!("{}/busy-then-silent/v1", s.base),
        CallBounds::millis(1000, 800, 1000, 10_000, 1 << 20),
        retry,
        Sleeper::tokio(),
    )
    .await;
    let took = started.elapsed();
    assert_eq!(last_error(&events).code(), "model/first-byte-timeout");
    assert_eq!(s.hits.load(Ordering::SeqCst), 2, "the 503 was retried");
    // 800 ms in all, not a fresh 800 ms after the 500 ms backoff.
    assert!(took < Duration::from_millis(1200), "took {took:?}");
}

#[tokio::test]
async fn a_long_retry_after_is_reported_as_a_rate_limit_with_its_wait_not_a_timeout() {
    let s = server().await;
    // The server's 20 s fits the policy's 30 s cap but not the call's
    // 1 s: sleeping it would end the call as a timeout.
    let started = Instant::now();
    let events = call_to(
        &format!("{}/limited/v1", s.base),
        CallBounds::millis(1000, 1000, 1000, 1000, 1 << 20),
        RetryPolicy::default(),
        Sleeper::tokio(),
    )
    .await;
    let e = last_error(&events);
    assert_eq!(e.code(), "model/rate-limited", "{e}");
    assert_eq!(e.retry_after(), Some(Duration::from_secs(20)));
    assert!(e.to_string().contains("wait 20 s"), "{e}");
    assert!(started.elapsed() < Duration::from_millis(900));
    assert_eq!(s.hits.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_listener_that_accepts_no_connection_is_a_connect_timeout() {
    // A listener with a backlog of one that never accepts: once its queue
    // is full the kernel drops new SYNs, so a connect hangs, on loopback.
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.bind("127.0.0.1:0".parse().unwrap()).unwrap();
    let listener = socket.listen(1).unwrap();
    let addr = listener.local_addr().unwrap();
    let mut queued = Vec::new();
    let full = loop {
        assert!(queued.len() < 64, "the accept queue never filled");
        match tokio::time::timeout(
            Duration::from_millis(200),
            tokio::net::TcpStream::connect(addr),
        )
        .await
        {
            Ok(Ok(stream)) => queued.push(stream),
            Ok(Err(e)) => panic!("connect failed instead of hanging: {e}"),
            Err(_) => break true,
        }
    };
    assert!(full);
    let (sleeper, sleeps) = recording_sleeper();
    let started = Instant::now();
    let events = call_to(
        &format!("http://{addr}/v1"),
        CallBounds::millis(300, 5000, 5000, 10_000, 1 << 20),
        RetryPolicy {
            max_attempts: 2,
            ..RetryPolicy::default()
        },
        sleeper,
    )
    .await;
    let e = last_error(&events);
    assert_eq!(e.code(), "model/connect-timeout", "{e}");
    let text = e.to_string();
    assert!(
        text.contains("connect_timeout_secs") && text.contains(&addr.to_string()),
        "{text}"
    );
    assert_eq!(sleeps.lock().unwrap().len(), 1, "retried once");
    assert!(started.elapsed() < Duration::from_secs(3));
    drop((queued, listener));
}

#[tokio::test]
async fn a_stream_that_stalls_midway_is_named_and_not_replayed() {
    let s = server().await;
    let events = call(
        &s,
        "stall",
        CallBounds::millis(1000, 1000, 200, 5000, 1 << 20),
    )
    .await;
    assert_eq!(
        events.first(),
        Some(&Ok(StreamEvent::TextDelta {
            text: "Hello".into()
        }))
    );
    let e = last_error(&events);
    assert_eq!(e.code(), "model/stream-stalled");
    assert!(e.to_string().contains("stalled"), "{e}");
    assert_eq!(
        s.hits.load(Ordering::SeqCst),
        1,
        "shown text is never replayed"
    );
}

#[tokio::test]
async fn an_html_page_with_status_200_says_the_base_url_is_wrong() {
    let s = server().await;
    let events = call(&s, "html", CallBounds::default()).await;
    let e = last_error(&events);
    assert_eq!(e.code(), "model/not-an-event-stream");
    let text = e.to_string();
    assert!(
        text.contains("text/html") && text.contains("is base_url right"),
        "{text}"
    );
    assert!(text.contains("Welcome to nginx!"), "{text}");
    assert_eq!(s.hits.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_reply_that_never_ends_stops_at_the_size_cap() {
    let s = server().await;
    let events = call(
        &s,
        "endless",
        CallBounds::millis(1000, 1000, 1000, 20_000, 64 * 1024),
    )
    .await;
    let e = last_error(&events);
    assert_eq!(e.code(), "model/response-too-large");
    let shown: usize = events
        .iter()
        .filter_map(|e| match e {
            Ok(StreamEvent::TextDelta { text }) => Some(text.len()),
            _ => None,
        })
        .sum();
    assert!(shown <= 64 * 1024, "{shown} bytes passed a 64 KiB cap");
}

#[tokio::test]
async fn a_trickle_that_is_never_idle_still_ends_at_the_call_deadline() {
    let s = server().await;
    let events = call(
        &s,
        "trickle",
        CallBounds::millis(1000, 1000, 200, 500, 1 << 20),
    )
    .await;
    let e = last_error(&events);
    assert_eq!(e.code(), "model/call-timeout");
    assert!(!e.is_retryable());
}
