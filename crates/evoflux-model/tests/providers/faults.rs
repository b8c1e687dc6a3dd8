//! A fault-injecting model server: one that never answers, one that stalls
//! midway, one that answers HTML with 200, one whose reply never ends, one
//! that trickles forever. Each call ends within its bound with the error
//! named for what happened.

use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{Path, State};
use axum::response::Response;
use evoflux_core::config::{ProviderConfig, ProviderKind};
use evoflux_model::{
    CallBounds, EnvLookup, ProviderError, ProviderOptions, Request, RetryPolicy, StreamEvent,
    provider_for,
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
    hits.fetch_add(1, Ordering::SeqCst);
    let sse = |body: Body| {
        Response::builder()
            .header("content-type", "text/event-stream")
            .body(body)
            .unwrap()
    };
    match kind.as_str() {
        "silent" => std::future::pending().await,
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
    let config = ProviderConfig {
        wire_api: None,
        reasoning_effort: None,
        kind: ProviderKind::Openai,
        base_url: Some(format!("{}/{kind}/v1", s.base)),
        api_key_env: None,
        context_window: None,
        model_path: None,
        limits: Default::default(),
    };
    let (sleeper, _) = recording_sleeper();
    let options = ProviderOptions {
        env: EnvLookup::from_pairs::<_, &str, &str>([]),
        retry: RetryPolicy {
            max_attempts: 2,
            ..RetryPolicy::default()
        },
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
async fn a_server_that_never_answers_is_a_first_byte_timeout_retried_then_reported() {
    let s = server().await;
    let events = call(
        &s,
        "silent",
        CallBounds::millis(1000, 200, 1000, 5000, 1 << 20),
    )
    .await;
    let e = last_error(&events);
    assert_eq!(e.code(), "model/first-byte-timeout");
    assert!(
        e.to_string()
            .contains("accepted the connection but sent nothing"),
        "{e}"
    );
    assert_eq!(s.hits.load(Ordering::SeqCst), 2, "retried once");
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
