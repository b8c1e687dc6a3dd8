#![allow(clippy::unwrap_used, clippy::expect_used)]

//! The OpenAI Responses wire through the real binary: `evoflux run`
//! against a loopback fake that answers a turn's first call with a
//! reasoning item and a `read` call, and its second with a web-searched,
//! cited answer. The second request must carry the reasoning item, the
//! call and its output, and the search and citation must reach the events
//! and the transcript.

use crate::common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};

use common::{Sandbox, of_type, run_ok, session_id};
use serde_json::{Value, json};

const SOURCE: &str = "https://example.org/answers/42";

/// A Responses endpoint on loopback that records every request body.
struct FakeResponses {
    url: String,
    bodies: Arc<Mutex<Vec<Value>>>,
}

fn sse(events: &[Value]) -> String {
    events
        .iter()
        .map(|e| format!("event: {}\ndata: {e}\n\n", e["type"].as_str().unwrap()))
        .collect()
}

fn completed() -> Value {
    json!({"type": "response.completed", "response": {"id": "resp", "status": "completed",
        "usage": {"input_tokens": 100, "input_tokens_details": {"cached_tokens": 80},
                  "output_tokens": 5, "output_tokens_details": {"reasoning_tokens": 3}}}})
}

/// The reply to one request: a turn's first call gets a reasoning item and
/// a call; once the call's output is in, a searched and cited answer. A
/// call without tools (the skill resolver's) gets plain text.
fn reply(body: &Value) -> String {
    let created = json!({"type": "response.created", "response": {"id": "resp"}});
    let answered = body["input"]
        .as_array()
        .is_some_and(|items| items.iter().any(|i| i["type"] == "function_call_output"));
    if body.get("tools").is_none() {
        let text =
            json!({"type": "response.output_text.delta", "output_index": 0, "delta": "none"});
        return sse(&[created, text, completed()]);
    }
    if !answered {
        let args = r#"{"path":"notes.txt"}"#;
        return sse(&[
            created,
            json!({"type": "response.output_item.done", "output_index": 0, "item": {
                "type": "reasoning", "id": "rs_1",
                "summary": [{"type": "summary_text", "text": "Read the notes."}],
                "encrypted_content": "enc-reasoning-1"}}),
            json!({"type": "response.output_item.added", "output_index": 1, "item": {
                "type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "read",
                "arguments": ""}}),
            json!({"type": "response.function_call_arguments.delta", "output_index": 1,
                   "delta": args}),
            json!({"type": "response.output_item.done", "output_index": 1, "item": {
                "type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "read",
                "arguments": args}}),
            completed(),
        ]);
    }
    let text = "The notes say 42.";
    sse(&[
        created,
        json!({"type": "response.output_item.done", "output_index": 0, "item": {
            "type": "web_search_call", "id": "ws_1", "status": "completed",
            "action": {"type": "search", "query": "what is 42",
                       "sources": [{"type": "url", "url": SOURCE}]}}}),
        json!({"type": "response.output_text.delta", "output_index": 1, "delta": text}),
        json!({"type": "response.output_item.done", "output_index": 1, "item": {
            "type": "message", "id": "msg_1", "role": "assistant",
            "content": [{"type": "output_text", "text": text, "annotations": [
                {"type": "url_citation", "url": SOURCE, "title": "The Answer",
                 "start_index": 0, "end_index": 17}]}]}}),
        completed(),
    ])
}

impl FakeResponses {
    fn start() -> FakeResponses {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/v1", listener.local_addr().unwrap());
        let bodies = Arc::new(Mutex::new(Vec::new()));
        let seen = Arc::clone(&bodies);
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { return };
                let mut reader = BufReader::new(stream);
                let (mut length, mut path) = (0usize, String::new());
                loop {
                    let mut line = String::new();
                    if reader.read_line(&mut line).unwrap_or(0) == 0 {
                        break;
                    }
                    if path.is_empty() {
                        path = line
                            .split_whitespace()
                            .nth(1)
                            .unwrap_or_default()
                            .to_owned();
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
                let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
                let answer = match path.as_str() {
                    "/v1/responses" => reply(&body),
                    _ => String::new(),
                };
                seen.lock().unwrap().push(body);
                let mut stream = reader.into_inner();
                let status = if answer.is_empty() {
                    "404 Not Found"
                } else {
                    "200 OK"
                };
                let _ = write!(
                    stream,
                    "HTTP/1.1 {status}\r\ncontent-type: text/event-stream\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{answer}",
                    answer.len()
                );
            }
        });
        FakeResponses { url, bodies }
    }

    /// The requests that offered tools: the turn's own calls.
    fn turn_requests(&self) -> Vec<Value> {
        self.bodies
            .lock()
            .unwrap()
            .iter()
            .filter(|b| b.get("tools").is_some())
            .cloned()
            .collect()
    }
}

#[test]
fn a_run_carries_reasoning_calls_and_outputs_back_and_shows_the_search() {
    let fake = FakeResponses::start();
    let s = Sandbox::new();
    s.user(
        "config.toml",
        &format!(
            "[providers.oai]\nkind = \"openai\"\nbase_url = \"{}\"\nwire_api = \"responses\"\n\
             reasoning_effort = \"low\"\n",
            fake.url
        ),
    );
    s.write(s.repo().join("notes.txt"), "the answer is 42\n");
    let ev = run_ok(
        &s,
        &[
            "--json",
            "run",
            "--mode",
            "coding",
            "--model",
            "oai:gpt-test",
            "what do the notes say?",
        ],
    );
    let id = session_id(&ev);
    let turns = fake.turn_requests();
    assert_eq!(turns.len(), 2, "{turns:#?}");
    let (first, second) = (&turns[0], &turns[1]);
    for body in [first, second] {
        assert_eq!(body["store"], false);
        assert_eq!(body["stream"], true);
        assert_eq!(body["prompt_cache_key"], id.as_str());
        assert_eq!(body["reasoning"], json!({"effort": "low"}));
        assert!(
            body["include"]
                .as_array()
                .unwrap()
                .contains(&json!("reasoning.encrypted_content"))
        );
        // The coding agent's web_search is the provider's own tool, never
        // a function the harness would run.
        let tools = body["tools"].as_array().unwrap();
        assert!(tools.contains(&json!({"type": "web_search"})), "{tools:?}");
        assert!(
            !tools
                .iter()
                .any(|t| t["type"] == "function" && t["name"] == "web_search")
        );
    }
    assert_eq!(first["instructions"], second["instructions"]);
    assert_eq!(first["tools"], second["tools"]);

    // The reasoning item comes back before its call, then the call's output.
    let input = second["input"].as_array().unwrap();
    let at = |kind: &str| input.iter().position(|i| i["type"] == kind).unwrap();
    let (reasoning, call, output) = (
        at("reasoning"),
        at("function_call"),
        at("function_call_output"),
    );
    assert!(reasoning < call && call < output, "{input:#?}");
    assert_eq!(
        input[reasoning],
        json!({"type": "reasoning", "encrypted_content": "enc-reasoning-1",
               "summary": [{"type": "summary_text", "text": "Read the notes."}]})
    );
    assert_eq!(
        input[call],
        json!({"type": "function_call", "call_id": "call_1", "name": "read",
               "arguments": "{\"path\":\"notes.txt\"}"})
    );
    assert_eq!(input[output]["call_id"], "call_1");
    assert!(
        input[output]["output"]
            .as_str()
            .unwrap()
            .contains("the answer is 42"),
        "{input:#?}"
    );
    // The first request is the prefix of the second.
    let first_input = first["input"].as_array().unwrap();
    assert_eq!(first_input[..], input[..first_input.len()]);

    // The search and its citation are events, and stay with the answer.
    let search = of_type(&ev, "web_search");
    assert_eq!(search.len(), 1, "{ev:#?}");
    assert_eq!(search[0]["search"]["query"], "what is 42");
    assert_eq!(of_type(&ev, "citation")[0]["citation"]["url"], SOURCE);
    let done = of_type(&ev, "turn_completed")[0];
    assert_eq!(done["text"], "The notes say 42.");
    // Every call the fake answered reported 80 cached tokens.
    let calls = fake.bodies.lock().unwrap().len();
    assert_eq!(done["usage"]["cache_read_tokens"], 80 * calls as u64);
    let text = String::from_utf8_lossy(&s.run(&["sessions", "show", &id]).stdout).into_owned();
    assert!(
        text.contains("⌕ web search \"what is 42\": 1 results")
            && text.contains(&format!("[1] The Answer <{SOURCE}>")),
        "{text}"
    );
}
