//! An OpenAI-compatible Chat Completions endpoint on loopback that records
//! every request body and answers each with a streamed "ok" (or what the
//! test's function answers to the body) and a usage
//! chunk (100 prompt tokens, 80 of them from the cache, 1 completion
//! token), as OpenAI's own server streams them.
//!
//! The server's title side call (after a session's first turn, on a task
//! of its own) is refused unless the fake was made to answer it
//! ([`FakeModel::titling`]): its arrival is not ordered with what a test
//! reads, so counting it would make request counts race. It is never
//! recorded.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

pub struct FakeModel {
    /// The base URL to configure (`…/v1`).
    pub url: String,
    bodies: Arc<Mutex<Vec<String>>>,
}

impl FakeModel {
    pub fn start() -> FakeModel {
        FakeModel::answering(|_| "ok".to_owned())
    }

    /// A fake whose answer to each request is `answer(body)`.
    pub fn answering(answer: fn(&Value) -> String) -> FakeModel {
        FakeModel::serve(answer, None)
    }

    /// A fake that answers each turn's request with `answer(body)` and the
    /// title side call with `title`.
    pub fn titling(answer: fn(&Value) -> String, title: &'static str) -> FakeModel {
        FakeModel::serve(answer, Some(title))
    }

    fn serve(answer: fn(&Value) -> String, title: Option<&'static str>) -> FakeModel {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/v1", listener.local_addr().unwrap());
        let bodies = Arc::new(Mutex::new(Vec::new()));
        let seen = Arc::clone(&bodies);
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { return };
                let mut reader = BufReader::new(stream);
                let mut length = 0usize;
                loop {
                    let mut line = String::new();
                    if reader.read_line(&mut line).unwrap_or(0) == 0 {
                        break;
                    }
                    if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                        length = v.trim().parse().unwrap_or(0);
                    }
                    if line == "\r\n" {
                        break;
                    }
                }
                let mut body = vec![0u8; length];
                if reader.read_exact(&mut body).is_err() {
                    continue;
                }
                let text = String::from_utf8_lossy(&body).into_owned();
                let request: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
                // The title side call (see the module doc): refused with a
                // 400 (not retried, costs nothing; the session keeps its
                // message title) unless the fake answers titles.
                let titled = is_title_request(&request);
                if titled && title.is_none() {
                    let mut stream = reader.into_inner();
                    let _ = write!(
                        stream,
                        "HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
                    );
                    continue;
                }
                let reply = match title {
                    Some(title) if titled => title.to_owned(),
                    _ => {
                        let reply = answer(&request);
                        seen.lock().unwrap().push(text);
                        reply
                    }
                };
                let chunk = |choices: Value, usage: Value| {
                    format!(
                        "data: {}\n\n",
                        json!({"id": "c", "object": "chat.completion.chunk", "created": 0,
                               "model": "m", "choices": choices, "usage": usage})
                    )
                };
                let choice = |delta: Value, finish: Value| json!([{"index": 0, "delta": delta, "finish_reason": finish}]);
                let sse = [
                    chunk(
                        choice(json!({"role": "assistant", "content": reply}), Value::Null),
                        Value::Null,
                    ),
                    chunk(choice(json!({}), json!("stop")), Value::Null),
                    chunk(
                        json!([]),
                        json!({"prompt_tokens": 100, "completion_tokens": 1,
                               "prompt_tokens_details": {"cached_tokens": 80}}),
                    ),
                    "data: [DONE]\n\n".to_owned(),
                ]
                .concat();
                let mut stream = reader.into_inner();
                let _ = write!(
                    stream,
                    "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{sse}",
                    sse.len()
                );
            }
        });
        FakeModel { url, bodies }
    }

    /// The request bodies received since the last call, in order.
    pub fn take(&self) -> Vec<String> {
        std::mem::take(&mut *self.bodies.lock().unwrap())
    }

    /// Each body's `prompt_cache_key` (`None` where it has none) and the
    /// bodies without it, for comparing what two sessions sent.
    pub fn without_cache_keys(bodies: &[String]) -> (Vec<Option<String>>, Vec<Value>) {
        bodies
            .iter()
            .map(|b| {
                let mut v: Value = serde_json::from_str(b).unwrap();
                let key = v
                    .as_object_mut()
                    .unwrap()
                    .remove("prompt_cache_key")
                    .map(|k| k.as_str().unwrap().to_owned());
                (key, v)
            })
            .unzip()
    }
}

/// Whether `request` is the server's title side call
/// (`evoflux-harness/src/session/title.rs`), by its system prompt.
fn is_title_request(request: &Value) -> bool {
    request["messages"][0]["content"]
        .as_str()
        .is_some_and(|c| c.starts_with("Write a short title"))
}
