#![allow(clippy::unwrap_used, clippy::expect_used)]

//! A `browser` screenshot where people read the session: in the web UI's
//! tool card (live, after a reload that renders the turn from its stored
//! events, and from the stored transcript), fetched from the stored-media
//! route; and named on the call's line of `evoflux sessions show`. Real
//! Debian Chromium, a page server on loopback this test starts, and a
//! `sandbox.toml` that lets the browser reach loopback (as
//! `browser.rs` does).

use crate::common;

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;

use common::server::Server;
use common::webdriver::Browser;
use common::{Sandbox, of_type, run_ok, script, session_id};

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

/// A page on loopback worth a screenshot; its base URL.
fn page_server() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let mut reader = BufReader::new(&stream);
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
            }
            let body = "<html><head><title>Poster</title></head>\
                <body style='background:#2a6'><h1>Big green poster</h1></body></html>";
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\ncontent-type: text/html\r\ncontent-length: {}\r\n\
                 connection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    base
}

/// A Work sandbox whose browser may reach loopback, and a scripted model
/// that opens `base`'s page, screenshots it and says `SHOT-TAKEN`, then
/// answers `thanks` with `BYE-NOW`.
fn screenshot_session(base: &str) -> (Sandbox, String) {
    let s = Sandbox::new();
    s.user("sandbox.toml", "browser_loopback = true\n");
    let model = script(
        &s,
        "shoot.yaml",
        &format!(
            r#"
turns:
  - expect: {{user: {{contains: poster}}}}
    reply:
      tool_calls:
        - {{name: browser, arguments: {{action: open, url: "{base}/poster"}}}}
  - expect: {{tool_result: {{contains: "Big green poster"}}}}
    reply:
      tool_calls:
        - {{name: browser, arguments: {{action: screenshot}}}}
  - expect: {{tool_result: {{contains: "Screenshot of"}}}}
    reply: {{text: SHOT-TAKEN}}
  - expect: {{user: thanks}}
    reply: {{text: BYE-NOW}}
"#
        ),
    );
    (s, model)
}

/// The image in the screenshot call's card: whether it loaded, its
/// width, its `src` and the stored-media route it came from.
const CARD_IMAGE: &str = "const imgs = [...document.querySelectorAll('details.tool img.media')]; \
     return imgs.map((i) => ({complete: i.complete, width: i.naturalWidth, \
       src: i.getAttribute('src') || '', route: i.dataset.media || '', \
       call: i.closest('details.tool').querySelector('summary strong').textContent, \
       result: i.closest('details.tool').querySelector('pre.observation').textContent}));";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_browser_screenshot_shows_in_its_tool_card_live_and_after_reloads() {
    if !chromium() {
        return;
    }
    let Some(browser) = Browser::start().await else {
        return;
    };
    let base = page_server();
    let (s, model) = screenshot_session(&base);
    let server = Server::start(&s, &[]);
    let (status, created) = server
        .call(
            "POST",
            "/api/sessions",
            Some(serde_json::json!({"mode": "work", "model": model})),
        )
        .await;
    assert!(status < 300, "{status} {created}");
    let id = created["session_id"].as_str().unwrap().to_owned();
    browser.open_ui(&server, &format!("chat/{id}")).await;
    browser
        .wait("document.querySelector('main form textarea')")
        .await;
    let (status, sent) = server
        .call(
            "POST",
            &format!("/api/sessions/{id}/messages"),
            Some(serde_json::json!({"text": "take a look at the poster"})),
        )
        .await;
    assert!(status < 300, "{status} {sent}");
    browser
        .wait("document.body.innerText.includes('SHOT-TAKEN')")
        .await;
    let route = format!("/api/sessions/{id}/media/");

    // Live: the screenshot call's card shows the image, fetched from the
    // stored-media route, decoded by the browser.
    let loaded = "[...document.querySelectorAll('details.tool img.media')] \
                  .some((i) => i.complete && i.naturalWidth > 0)";
    browser.wait(loaded).await;
    let live = browser.js(CARD_IMAGE, serde_json::json!([])).await;
    let live = live.as_array().unwrap();
    assert_eq!(live.len(), 1, "{live:#?}");
    assert_eq!(live[0]["call"], "browser");
    assert!(live[0]["width"].as_u64().unwrap() > 100, "{live:#?}");
    assert!(
        live[0]["route"].as_str().unwrap().starts_with(&route),
        "{live:#?}"
    );
    // The card's text names the screenshot by its artifact's file name.
    let result = live[0]["result"].as_str().unwrap();
    assert!(
        result.contains("[image: screenshot-1.png, image/png, "),
        "{result}"
    );
    // The route serves the PNG itself.
    let png = server
        .get(live[0]["route"].as_str().unwrap())
        .send()
        .await
        .unwrap();
    assert_eq!(png.status(), 200);
    assert_eq!(png.headers()["content-type"], "image/png");
    assert!(png.bytes().await.unwrap().starts_with(b"\x89PNG\r\n"));

    // A reload renders the last turn from its stored events: the same.
    browser.refresh().await;
    browser
        .wait("document.body.innerText.includes('SHOT-TAKEN')")
        .await;
    browser.wait(loaded).await;
    let replayed = browser.js(CARD_IMAGE, serde_json::json!([])).await;
    assert_eq!(replayed.as_array().unwrap().len(), 1, "{replayed:#?}");
    assert!(
        replayed[0]["route"].as_str().unwrap().starts_with(&route),
        "{replayed:#?}"
    );

    // After another turn, a reload renders the first from the stored
    // transcript: the image is the stored message's own.
    let (status, sent) = server
        .call(
            "POST",
            &format!("/api/sessions/{id}/messages"),
            Some(serde_json::json!({"text": "thanks"})),
        )
        .await;
    assert!(status < 300, "{status} {sent}");
    browser
        .wait("document.body.innerText.includes('BYE-NOW')")
        .await;
    browser.refresh().await;
    browser
        .wait("document.body.innerText.includes('BYE-NOW')")
        .await;
    browser.wait(loaded).await;
    let stored = browser.js(CARD_IMAGE, serde_json::json!([])).await;
    let stored = stored.as_array().unwrap();
    assert_eq!(stored.len(), 1, "{stored:#?}");
    assert_eq!(stored[0]["call"], "browser");
    assert!(
        stored[0]["src"]
            .as_str()
            .unwrap()
            .starts_with("data:image/png;base64,iVBORw0KGgo"),
        "{stored:#?}"
    );
    assert_eq!(stored[0]["width"], live[0]["width"]);
    browser.screenshot("chat-browser-screenshot").await;
}

#[test]
fn sessions_show_names_a_browser_screenshot_on_its_call_s_line() {
    if !chromium() {
        return;
    }
    let base = page_server();
    let (s, model) = screenshot_session(&base);
    let ev = run_ok(
        &s,
        &[
            "--json",
            "run",
            "--mode",
            "work",
            "--model",
            &model,
            "take a look at the poster",
        ],
    );
    assert_eq!(
        of_type(&ev, "turn_completed")[0]["text"],
        "SHOT-TAKEN",
        "{ev:#?}"
    );
    // The event names the image by reference, not by its bytes.
    let ended = of_type(&ev, "tool_ended");
    let media = ended[1]["media"].as_array().unwrap();
    assert_eq!(media.len(), 1, "{ended:#?}");
    assert_eq!(media[0]["kind"], "image");
    assert_eq!(media[0]["name"], "screenshot-1.png");
    assert!(media[0].get("data").is_none());

    let id = session_id(&ev);
    let out = s.run(&["sessions", "show", &id]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let line = text
        .lines()
        .find(|l| l.trim_start().starts_with("✓ Screenshot of"))
        .unwrap_or_else(|| panic!("no screenshot result line in:\n{text}"));
    assert!(
        line.contains("kept at") && line.contains("[image: screenshot-1.png, image/png, "),
        "{line}"
    );
}
