#![allow(clippy::unwrap_used, clippy::expect_used)]

//! The `browser` tool through the real binary, real Debian Chromium and a
//! page server on loopback this test starts: a Work session reads text a
//! script wrote and fills a form the server receives; a screenshot reaches
//! a multimodal model (a loopback Chat Completions fake) as an image; no
//! Chromium outlives the run; without Chromium the tool is absent and
//! `info` says why.

use crate::common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};

use common::{Sandbox, of_type, run_in, script};
use serde_json::{Value, json};

/// What the page server received as form submissions.
type Posts = Arc<Mutex<Vec<String>>>;

/// One HTTP request: its method, path and body.
fn read_request(stream: &std::net::TcpStream) -> Option<(String, String, Vec<u8>)> {
    let mut reader = BufReader::new(stream);
    let mut first = String::new();
    reader.read_line(&mut first).ok()?;
    let mut parts = first.split_whitespace();
    let (method, path) = (parts.next()?.to_owned(), parts.next()?.to_owned());
    let mut length = 0usize;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).ok()? == 0 || line == "\r\n" {
            break;
        }
        if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
            length = v.trim().parse().unwrap_or(0);
        }
    }
    let mut body = vec![0u8; length];
    reader.read_exact(&mut body).ok()?;
    Some((method, path, body))
}

fn respond(mut stream: std::net::TcpStream, kind: &str, body: &str) {
    let _ = write!(
        stream,
        "HTTP/1.1 200 OK\r\ncontent-type: {kind}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
}

/// Pages on loopback: `/script` (text a script writes), `/form` (a name
/// and a send button) and `/submit` (records the form, thanks by name).
fn page_server() -> (String, Posts) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let posts: Posts = Arc::default();
    let seen = Arc::clone(&posts);
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { return };
            let Some((method, path, body)) = read_request(&stream) else {
                continue;
            };
            let html = match (method.as_str(), path.as_str()) {
                ("GET", "/script") => "<html><body><p id=out>loading</p><script>\
                    document.getElementById('out').textContent = 'Rendered by script: ' + (6 * 7);\
                    </script></body></html>"
                    .to_owned(),
                ("GET", "/form") => "<html><head><title>Order</title></head><body>\
                    <form method=post action=/submit><label for=who>Your name</label>\
                    <input id=who name=who><button type=submit>Send order</button></form>\
                    </body></html>"
                    .to_owned(),
                ("POST", "/submit") => {
                    let form = String::from_utf8_lossy(&body).into_owned();
                    let who = form.trim_start_matches("who=").to_owned();
                    seen.lock().unwrap().push(form);
                    format!("<html><body><h1>Thanks {who}</h1></body></html>")
                }
                _ => "<html><body>nothing here</body></html>".to_owned(),
            };
            respond(stream, "text/html", &html);
        }
    });
    (base, posts)
}

/// Whether Chromium is installed (Debian's, or one on `PATH`, as the
/// binary looks); outside CI a test without it skips.
fn chromium() -> bool {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let found = std::path::Path::new("/usr/lib/chromium/chromium").is_file()
        || std::env::split_paths(&path).any(|d| d.join("chromium").is_file());
    if !found {
        evoflux_core::prerequisite::missing("Chromium", "install Debian's `chromium`");
    }
    found
}

/// The live (not zombie) processes whose command line mentions `needle`
/// (a browser's profile lives under the test's temporary folder), once
/// they had a few seconds to finish dying: killed processes leave the
/// process table a moment after the signal.
fn processes_mentioning(needle: &str) -> Vec<String> {
    let scan = || {
        let mut found = Vec::new();
        for entry in std::fs::read_dir("/proc").unwrap().flatten() {
            let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
            let stat = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
            let zombie = stat
                .rsplit_once(')')
                .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z'));
            if !zombie && String::from_utf8_lossy(&cmdline).contains(needle) {
                found.push(entry.file_name().to_string_lossy().into_owned());
            }
        }
        found
    };
    for _ in 0..50 {
        if scan().is_empty() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    scan()
}

/// A sandbox whose `sandbox.toml` lets the browser reach loopback (the
/// page server), as a user does for local work.
fn local_work() -> Sandbox {
    let s = Sandbox::new();
    s.user("sandbox.toml", "browser_loopback = true\n");
    s
}

#[test]
fn a_work_session_reads_a_scripted_page_and_fills_a_form_the_server_receives() {
    if !chromium() {
        return;
    }
    let (base, posts) = page_server();
    let s = local_work();
    let model = script(
        &s,
        "browse.yaml",
        &format!(
            r#"
turns:
  - expect: {{user: {{contains: order}}}}
    reply:
      tool_calls:
        - {{name: browser, arguments: {{action: open, url: "{base}/script"}}}}
  - expect: {{tool_result: {{contains: "Rendered by script: 42"}}}}
    reply:
      tool_calls:
        - {{name: browser, arguments: {{action: open, url: "{base}/form"}}}}
  - expect: {{tool_result: {{contains: '[1] textbox "Your name"'}}}}
    reply:
      tool_calls:
        - {{name: browser, arguments: {{action: type, element: 1, text: Ada}}}}
  - expect: {{tool_result: {{contains: 'value="Ada"'}}}}
    reply:
      tool_calls:
        - {{name: browser, arguments: {{action: click, element: 2}}}}
  - expect: {{tool_result: {{contains: "Thanks Ada"}}}}
    reply: {{text: ORDER-PLACED}}
"#
        ),
    );
    let ev = run_in(&s, "work", &model, "place the order");
    let done = of_type(&ev, "turn_completed");
    assert_eq!(done[0]["text"], "ORDER-PLACED", "{ev:#?}");
    assert_eq!(posts.lock().unwrap().as_slice(), ["who=Ada"]);
    // The browser's profile was the session's, and nothing of it runs on.
    let tmp = s.tmp.path().to_string_lossy().into_owned();
    assert!(
        walk_has(&s.tmp.path().join("home"), "Cookies") || walk_has(s.tmp.path(), "profile"),
        "no browser profile under the session's data"
    );
    assert_eq!(processes_mentioning(&tmp), Vec::<String>::new());
}

/// Whether a file or folder named `name` is anywhere below `dir`.
fn walk_has(dir: &std::path::Path, name: &str) -> bool {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return false;
    };
    entries
        .flatten()
        .any(|e| e.file_name() == name || (e.path().is_dir() && walk_has(&e.path(), name)))
}

/// The fake's answer: open the page, then screenshot it, then say done.
fn browse_then_look(body: &Value) -> String {
    let results = body["messages"]
        .as_array()
        .map_or(0, |m| m.iter().filter(|m| m["role"] == "tool").count());
    let call = |args: Value| {
        json!({"tool_calls": [{"index": 0, "id": format!("call_{results}"), "type": "function",
            "function": {"name": "browser", "arguments": args.to_string()}}]})
    };
    let url = std::fs::read_to_string(body_marker()).unwrap_or_default();
    match results {
        0 => call(json!({"action": "open", "url": url})).to_string(),
        1 => call(json!({"action": "screenshot"})).to_string(),
        _ => json!({"content": "SAW-IT"}).to_string(),
    }
}

/// Where the test leaves the page's URL for the fake (a `fn` answer
/// cannot capture it).
fn body_marker() -> std::path::PathBuf {
    std::env::temp_dir().join(format!("evoflux-browser-test-{}", std::process::id()))
}

/// A Chat Completions fake on loopback that answers with `answer`'s delta
/// (a tool call or text) and records every request.
fn multimodal_fake(answer: fn(&Value) -> String) -> (String, Arc<Mutex<Vec<Value>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    let bodies = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&bodies);
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { return };
            let Some((_, _, body)) = read_request(&stream) else {
                continue;
            };
            let request: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
            if request.get("tools").is_none() {
                // A side call (the session's title): refused, never counted.
                let mut stream = stream;
                let _ = write!(
                    stream,
                    "HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
                );
                continue;
            }
            let delta: Value = serde_json::from_str(&answer(&request)).unwrap();
            let finish = if delta.get("tool_calls").is_some() {
                "tool_calls"
            } else {
                "stop"
            };
            seen.lock().unwrap().push(request);
            let chunk = |choices: Value, usage: Value| {
                format!(
                    "data: {}\n\n",
                    json!({"id": "c", "object": "chat.completion.chunk", "created": 0,
                           "model": "m", "choices": choices, "usage": usage})
                )
            };
            let mut first = delta;
            first["role"] = json!("assistant");
            let sse = [
                chunk(
                    json!([{"index": 0, "delta": first, "finish_reason": null}]),
                    Value::Null,
                ),
                chunk(
                    json!([{"index": 0, "delta": {}, "finish_reason": finish}]),
                    Value::Null,
                ),
                chunk(
                    json!([]),
                    json!({"prompt_tokens": 10, "completion_tokens": 1}),
                ),
                "data: [DONE]\n\n".to_owned(),
            ]
            .concat();
            respond(stream, "text/event-stream", &sse);
        }
    });
    (url, bodies)
}

#[test]
fn a_screenshot_reaches_a_multimodal_model_as_an_image() {
    if !chromium() {
        return;
    }
    let (base, _) = page_server();
    std::fs::write(body_marker(), format!("{base}/form")).unwrap();
    let (url, bodies) = multimodal_fake(browse_then_look);
    let s = local_work();
    s.user(
        "config.toml",
        &format!("[providers.eyes]\nkind = \"openai\"\nbase_url = \"{url}\"\n"),
    );
    let ev = run_in(&s, "work", "eyes:seer", "look at the form");
    let _ = std::fs::remove_file(body_marker());
    assert_eq!(
        of_type(&ev, "turn_completed")[0]["text"],
        "SAW-IT",
        "{ev:#?}"
    );
    let bodies = bodies.lock().unwrap();
    assert_eq!(bodies.len(), 3, "{bodies:#?}");
    // The browser was offered to the Work session's model.
    let offered: Vec<&str> = bodies[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["function"]["name"].as_str())
        .collect();
    assert!(offered.contains(&"browser"), "{offered:?}");
    // The last request carries the screenshot as a PNG image part.
    let last = bodies[2].to_string();
    assert!(
        last.contains("\"image_url\"") && last.contains("data:image/png;base64,iVBORw0KGgo"),
        "no PNG image in the request after the screenshot"
    );
    // The first read of the page went to the model as text.
    assert!(bodies[1].to_string().contains("Send order"));
    let tmp = s.tmp.path().to_string_lossy().into_owned();
    assert_eq!(processes_mentioning(&tmp), Vec::<String>::new());
}

#[test]
fn without_chromium_the_browser_is_absent_and_info_says_why() {
    let s = Sandbox::new();
    let out = s
        .command(&["info", "--json", "--mode", "work"])
        .env("EVOFLUX_CHROMIUM", s.tmp.path().join("no-chromium-here"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let info: Value = serde_json::from_slice(&out.stdout).unwrap();
    let tools = info["tools"]["entries"].as_array().unwrap();
    let browser = tools.iter().find(|t| t["name"] == "browser").unwrap();
    assert_eq!(browser["runnable"], false);
    assert_eq!(browser["unavailable_code"], "tool/chromium-missing");

    // A session is not offered it, and says why.
    let model = script(&s, "idle.yaml", "turns:\n  - reply: {text: IDLE}\n");
    let out = s
        .command(&[
            "--json", "run", "--mode", "work", "--model", &model, "hello",
        ])
        .env("EVOFLUX_CHROMIUM", s.tmp.path().join("no-chromium-here"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let ev = common::events(&out);
    let started = of_type(&ev, "session_started")[0];
    let text = started.to_string();
    assert!(text.contains("Chromium is not installed"), "{started:#}");
}

/// Chromium's own sandbox is on only for a user who is not root (root gets
/// `--no-sandbox`), and its profile, home and caches must be writable by
/// that user: every test above runs again as `nobody`.
#[test]
fn the_browser_works_for_an_unprivileged_user_too() {
    if !chromium() {
        return;
    }
    common::rerun_unprivileged(
        "browser::",
        "the_browser_works_for_an_unprivileged_user_too",
    );
}
