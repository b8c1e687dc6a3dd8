#![allow(clippy::unwrap_used, clippy::expect_used)]

//! The web UI's Preview pane with a real previewed app (issue #52): the
//! scripted model starts `python3 -m http.server` over a page whose script
//! is linked root-absolute (`/static/app.js`); the pane's frame shows the
//! text that script writes (the proxy and its rewriting of root-absolute
//! links both at work), Reload loads it again, and "Open in new tab" points at the
//! proxied URL. Then the model takes a `preview` snapshot (Chromium on the
//! evoflux side, with `browser_loopback` off) and the call's tool card
//! shows the screenshot.

use crate::common;

use std::time::Instant;

use common::server::{Server, read_events};
use common::webdriver::Browser;
use common::{Sandbox, script};
use serde_json::{Value, json};

/// The interpreter, outside any user's home (the sandbox hides homes).
const PYTHON: &str = "/usr/bin/python3";
const FRAME: &str = "aside.preview-pane iframe";

/// Whether python3 and Chromium (for the snapshot) are installed.
fn prerequisites() -> bool {
    let python = std::path::Path::new(PYTHON).exists();
    if !python {
        evoflux_core::prerequisite::missing("python3", "install Python 3 (Debian: python3)");
    }
    let chromium = std::path::Path::new("/usr/lib/chromium/chromium").is_file();
    if !chromium {
        evoflux_core::prerequisite::missing("Chromium", "install Debian's `chromium`");
    }
    python && chromium
}

/// A site whose page loads `/static/app.js` root-absolute; the script
/// writes `APP-LOADED` and the moment its document started (new on every
/// load, even from a cached script).
fn site(s: &Sandbox) {
    s.write(
        s.repo().join("site/index.html"),
        "<!doctype html><title>app</title><p id=app>waiting for the script</p>\
         <script src=\"/static/app.js\"></script>\n",
    );
    s.write(
        s.repo().join("site/static/app.js"),
        "document.getElementById('app').textContent = \
         ['APP', 'LOADED'].join('-') + ' ' + performance.timeOrigin;\n",
    );
}

/// The model: starts the preview, later takes a snapshot, then says bye.
fn model(s: &Sandbox) -> String {
    let command = format!("exec {PYTHON} -m http.server 0 --bind 127.0.0.1 --directory site");
    script(
        s,
        "preview.yaml",
        &format!(
            r#"
turns:
  - expect: {{user: {{contains: "show me"}}}}
    reply:
      tool_calls:
        - {{name: preview, arguments: {{action: start, command: {command}}}}}
  - expect: {{tool_result: {{contains: serving}}}}
    reply: {{text: APP-IS-UP}}
  - expect: {{user: {{contains: snapshot}}}}
    reply:
      tool_calls:
        - {{name: preview, arguments: {{action: snapshot}}}}
  - expect: {{tool_result: {{contains: "Snapshot of preview"}}}}
    reply: {{text: SNAPPED}}
  - expect: {{user: thanks}}
    reply: {{text: BYE-NOW}}
"#,
            command = serde_json::to_string(&command).unwrap()
        ),
    )
}

/// Sends `text` to the session and waits for its turn's end; the events
/// after event `after`.
async fn say(server: &Server, id: &str, after: u64, text: &str) -> Vec<common::server::Sse> {
    let (status, sent) = server
        .call(
            "POST",
            &format!("/api/sessions/{id}/messages"),
            Some(json!({ "text": text })),
        )
        .await;
    assert!(status < 300, "{status} {sent}");
    read_events(server, id, Some(after), |e| e.kind == "turn_completed").await
}

/// The text the app's script wrote in the pane's frame.
async fn app_text(browser: &Browser) -> String {
    browser.frame(Some(FRAME)).await;
    let text = browser
        .wait(
            "document.getElementById('app') \
             && document.getElementById('app').textContent.startsWith('APP-LOADED') \
             && document.getElementById('app').textContent",
        )
        .await;
    browser.frame(None).await;
    text.as_str().unwrap().to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_preview_pane_shows_the_app_reloads_it_and_a_snapshot_shows_in_its_card() {
    if !prerequisites() {
        return;
    }
    let Some(browser) = Browser::start().await else {
        return;
    };
    let s = Sandbox::new();
    site(&s);
    let model = model(&s);
    let server = Server::start(&s, &[]);
    let (status, created) = server
        .call(
            "POST",
            "/api/sessions",
            Some(json!({"mode": "coding", "model": model, "message": "show me the app"})),
        )
        .await;
    assert!(status < 300, "{status} {created}");
    let id = created["session_id"].as_str().unwrap().to_owned();
    let events = read_events(&server, &id, None, |e| e.kind == "turn_completed").await;
    let started = events
        .iter()
        .find(|e| e.kind == "preview_started")
        .unwrap_or_else(|| panic!("no preview_started in {events:#?}"));
    println!(
        "measure: preview start-to-URL {} ms (through evoflux serve)",
        started.data["startup_ms"]
    );
    let (status, list) = server
        .call("GET", &format!("/api/sessions/{id}/previews"), None)
        .await;
    assert_eq!(status, 200, "{list}");
    let proxy = list["items"][0]["proxy_path"].as_str().unwrap().to_owned();

    // The pane shows the app: its root-absolute script ran.
    browser.open_ui(&server, &format!("chat/{id}")).await;
    browser
        .wait(&format!(
            "!document.querySelector('aside.preview-pane').hidden \
             && document.querySelector({FRAME:?}).getAttribute('src')"
        ))
        .await;
    let first = app_text(&browser).await;

    // Reload loads the page again (a new document, so a new moment).
    browser
        .js(
            "window.previewLoads = 0; \
             document.querySelector(arguments[0]) \
               .addEventListener('load', () => { window.previewLoads += 1; });",
            json!([FRAME]),
        )
        .await;
    browser
        .click("aside.preview-pane button[aria-label='Reload the preview']")
        .await;
    browser.wait("window.previewLoads >= 1").await;
    let second = app_text(&browser).await;
    assert_ne!(first, second, "the frame was loaded again");

    // "Open in new tab" is the proxied URL.
    let href = browser
        .js(
            "return document.querySelector('aside.preview-pane a[target=_blank]').href",
            json!([]),
        )
        .await;
    assert_eq!(href, Value::String(format!("{}{proxy}", server.url)));

    // A snapshot, then another turn, so a reload renders the snapshot's
    // turn from the stored transcript.
    let asked = Instant::now();
    let after = events.last().unwrap().id;
    let events = say(&server, &id, after, "take a snapshot").await;
    println!(
        "measure: preview snapshot turn {} ms (Chromium start included)",
        asked.elapsed().as_millis()
    );
    let result = events
        .iter()
        .find(|e| e.kind == "tool_completed" || e.kind == "tool_result")
        .map(|e| e.data.to_string())
        .unwrap_or_default();
    assert_eq!(
        events.last().unwrap().data["text"],
        "SNAPPED",
        "{result} {events:#?}"
    );
    say(&server, &id, events.last().unwrap().id, "thanks").await;
    browser.refresh().await;
    browser
        .wait("document.body.innerText.includes('BYE-NOW')")
        .await;
    let shown = browser
        .wait(
            "[...document.querySelectorAll('details.tool img.media')] \
               .filter((i) => i.closest('details.tool').querySelector('summary strong') \
                  .textContent === 'preview') \
               .some((i) => i.complete && i.naturalWidth === 1280 && i.naturalHeight === 800)",
        )
        .await;
    assert_eq!(shown, true);
    browser.screenshot("chat-preview-snapshot").await;
}
