#![allow(clippy::unwrap_used, clippy::expect_used)]

//! `browser` against real Chromium and a local server this test starts:
//! text written by JavaScript, a form filled by click/type/select that the
//! server receives, screenshots, downloads, back and wait, the refused
//! schemes and addresses, and no Chromium left once the browser is gone.

use std::sync::{Arc, Mutex};

use axum::Router;
use axum::extract::{Form, State};
use axum::http::header;
use axum::response::Html;
use axum::routing::{get, post};
use base64::Engine as _;
use evoflux_tools::browser::{Browser, BrowserConfig, Reach, find_chromium};
use evoflux_tools::group::ProcessGroup;
use serde_json::json;

type Seen = Arc<Mutex<Vec<Vec<(String, String)>>>>;

const FORM: &str = r#"<html><head><title>Order</title></head><body>
<h1>Order form</h1>
<form method="post" action="/submit">
  <label for="who">Your name</label> <input id="who" name="who">
  <label for="colour">Colour</label>
  <select id="colour" name="colour"><option value="r">Red</option><option value="g">Green</option></select>
  <button type="submit">Send order</button>
</form>
<a href="/script">Scripted page</a>
</body></html>"#;

async fn serve() -> (String, Seen) {
    let seen: Seen = Arc::default();
    let app = Router::new()
        .route(
            "/script",
            get(|| async {
                Html(
                    "<html><body><p id=out>loading</p><script>\
                     document.getElementById('out').textContent = 'Rendered by script: ' + (6 * 7);\
                     setTimeout(() => { const p = document.createElement('p'); p.className = 'late';\
                     p.textContent = 'Arrived later'; document.body.appendChild(p); }, 300);\
                     </script></body></html>",
                )
            }),
        )
        .route("/form", get(|| async { Html(FORM) }))
        .route(
            "/submit",
            post(
                |State(seen): State<Seen>, Form(fields): Form<Vec<(String, String)>>| async move {
                    let who = fields
                        .iter()
                        .find(|(k, _)| k == "who")
                        .map(|(_, v)| v.clone())
                        .unwrap_or_default();
                    seen.lock().unwrap().push(fields);
                    Html(format!("<html><body><h1>Thanks {who}</h1></body></html>"))
                },
            ),
        )
        .route(
            "/file",
            get(|| async {
                (
                    [
                        (header::CONTENT_TYPE, "text/csv"),
                        (header::CONTENT_DISPOSITION, "attachment; filename=\"report.csv\""),
                    ],
                    "a,b\n1,2\n",
                )
            }),
        )
        .with_state(Arc::clone(&seen));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (format!("http://{addr}"), seen)
}

/// A browser on `reach` in a fresh folder, or `None` (skipped outside CI)
/// without Chromium.
fn browser(reach: Reach) -> Option<(Browser, tempfile::TempDir)> {
    let Some(chromium) = find_chromium(None) else {
        evoflux_core::prerequisite::missing("Chromium", "install Debian's `chromium`");
        return None;
    };
    let dir = tempfile::tempdir().unwrap();
    let config = BrowserConfig {
        chromium,
        dir: dir.path().join("browser"),
        reach,
    };
    Some((Browser::new(config), dir))
}

/// The number a read gives the element of `role` named `name`.
fn number(read: &str, role: &str, name: &str) -> u64 {
    let wanted = format!("] {role} {}", json!(name));
    let line = read
        .lines()
        .find(|l| l.starts_with('[') && l.contains(&wanted))
        .unwrap_or_else(|| panic!("no {role} {name:?} in:\n{read}"));
    line[1..line.find(']').unwrap()].parse().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_written_by_javascript_is_read_and_waited_on() {
    let Some((b, _dir)) = browser(Reach::PublicAndLoopback) else {
        return;
    };
    let (base, _) = serve().await;
    let read = b
        .run(&json!({"action": "open", "url": format!("{base}/script")}))
        .await;
    assert!(!read.output.is_error, "{}", read.output.text);
    assert!(
        read.output.text.contains("Rendered by script: 42"),
        "{}",
        read.output.text
    );
    let waited = b
        .run(&json!({"action": "wait", "selector": "p.late", "timeout": 10}))
        .await;
    assert!(!waited.output.is_error, "{}", waited.output.text);
    assert!(waited.output.text.contains("Arrived later"));
    let never = b
        .run(&json!({"action": "wait", "text": "never there", "timeout": 1}))
        .await;
    assert!(never.output.is_error);
    assert!(
        never.output.text.contains("did not finish within 1 s"),
        "{}",
        never.output.text
    );
    b.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn click_type_and_select_fill_a_form_the_server_receives() {
    let Some((b, _dir)) = browser(Reach::PublicAndLoopback) else {
        return;
    };
    let (base, seen) = serve().await;
    let form = b
        .run(&json!({"action": "open", "url": format!("{base}/form")}))
        .await
        .output
        .text;
    let name = number(&form, "textbox", "Your name");
    let typed = b
        .run(&json!({"action": "type", "element": name, "text": "Ada Lovelace"}))
        .await;
    assert!(!typed.output.is_error, "{}", typed.output.text);
    assert!(
        typed.output.text.contains("value=\"Ada Lovelace\""),
        "{}",
        typed.output.text
    );
    let colour = number(&typed.output.text, "combobox", "Colour");
    let picked = b
        .run(&json!({"action": "select", "element": colour, "value": "Green"}))
        .await;
    assert!(
        picked.output.text.contains("value=\"g\""),
        "{}",
        picked.output.text
    );
    let wrong = b
        .run(&json!({"action": "select", "element": colour, "value": "Blue"}))
        .await;
    assert!(wrong.output.is_error);
    assert!(
        wrong.output.text.contains("Red, Green"),
        "{}",
        wrong.output.text
    );
    let send = number(&picked.output.text, "button", "Send order");
    let thanks = b.run(&json!({"action": "click", "element": send})).await;
    assert!(
        thanks.output.text.contains("Thanks Ada Lovelace"),
        "{}",
        thanks.output.text
    );
    assert_eq!(
        seen.lock().unwrap().as_slice(),
        [vec![
            ("who".to_owned(), "Ada Lovelace".to_owned()),
            ("colour".to_owned(), "g".to_owned())
        ]]
    );
    // The old numbers are gone with the old page.
    let stale = b.run(&json!({"action": "click", "element": 99})).await;
    assert!(stale.output.is_error);
    assert!(stale.output.text.contains("read the page again"));
    let back = b.run(&json!({"action": "back"})).await;
    assert!(
        back.output.text.contains("Order form"),
        "{}",
        back.output.text
    );
    b.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn screenshots_and_downloads_are_kept_in_the_session_folder() {
    let Some((b, _dir)) = browser(Reach::PublicAndLoopback) else {
        return;
    };
    let (base, _) = serve().await;
    b.run(&json!({"action": "open", "url": format!("{base}/form")}))
        .await;
    let shot = b.run(&json!({"action": "screenshot"})).await;
    assert!(!shot.output.is_error, "{}", shot.output.text);
    let image = shot.screenshot.expect("an image");
    let png = base64::engine::general_purpose::STANDARD
        .decode(&image.png_base64)
        .unwrap();
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
    assert_eq!(std::fs::read(&image.path).unwrap(), png);
    assert!(image.path.starts_with(b.config().screenshots_dir()));

    let got = b
        .run(&json!({"action": "download", "url": format!("{base}/file")}))
        .await;
    assert!(!got.output.is_error, "{}", got.output.text);
    let file = b.config().downloads_dir().join("report.csv");
    assert_eq!(std::fs::read_to_string(file).unwrap(), "a,b\n1,2\n");
    b.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn local_files_browser_pages_and_unallowed_addresses_are_refused() {
    let Some((b, _dir)) = browser(Reach::Public) else {
        return;
    };
    let (base, _) = serve().await;
    for url in ["file:///etc/passwd", "chrome://settings"] {
        let r = b.run(&json!({"action": "open", "url": url})).await;
        assert!(r.output.is_error, "{url}");
        assert!(r.output.text.contains("refused"), "{}", r.output.text);
    }
    // Loopback needs the opt-in.
    let r = b
        .run(&json!({"action": "open", "url": format!("{base}/form")}))
        .await;
    assert!(r.output.is_error);
    assert!(
        r.output.text.contains("browser_loopback"),
        "{}",
        r.output.text
    );
    b.shutdown().await;

    // Loopback only: a page's request elsewhere is refused by the check
    // every request passes, and reported.
    let Some((local, _dir)) = browser(Reach::LoopbackOnly) else {
        return;
    };
    let page = format!(
        "data:text/html,<img src='http://192.168.77.1/x.png'><p>{}</p>",
        "local page"
    );
    let r = local
        .run(&json!({"action": "open", "url": format!("{base}/form")}))
        .await;
    assert!(!r.output.is_error, "{}", r.output.text);
    let r = local.run(&json!({"action": "open", "url": page})).await;
    assert!(
        r.output.text.contains("Requests refused"),
        "{}",
        r.output.text
    );
    assert!(r.output.text.contains("192.168.77.1"), "{}", r.output.text);
    local.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_chromium_outlives_its_browser() {
    let Some((b, _dir)) = browser(Reach::PublicAndLoopback) else {
        return;
    };
    b.run(&json!({"action": "open", "url": "about:blank"}))
        .await;
    let pid = b.process_group().await.expect("running");
    let group = ProcessGroup::led_by(pid).unwrap();
    assert!(group.is_alive());
    // Dropped without a shutdown, as when a session's harness goes away.
    drop(b);
    for _ in 0..50 {
        if !group.is_alive() {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    panic!("Chromium's process group {pid} is still alive");
}

/// Chromium's own sandbox is on only for a user who is not root (root gets
/// `--no-sandbox`), and the profile, home and caches must be that user's
/// to write: every test above runs again as `nobody`.
#[test]
fn the_browser_works_for_an_unprivileged_user_too() {
    if find_chromium(None).is_none() {
        evoflux_core::prerequisite::missing("Chromium", "install Debian's `chromium`");
        return;
    }
    crate::common::rerun_unprivileged(
        "browser::",
        "the_browser_works_for_an_unprivileged_user_too",
    );
}
