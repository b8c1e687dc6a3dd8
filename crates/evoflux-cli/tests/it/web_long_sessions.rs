#![allow(clippy::unwrap_used, clippy::expect_used)]

//! Long sessions open at once (issue #48): the page renders a snapshot
//! (the newest stored page before the last turn) and follows the last
//! turn's events, instead of replaying every event from the first; older
//! history comes a page at a time as the reader scrolls up. A session with
//! 2,000 messages shows its last message within a second of navigation,
//! live and stored (measured in the page, printed, asserted with a
//! generous bound).

use crate::common;

use std::time::{Duration, Instant};

use common::server::Server;
use common::webdriver::Browser;
use common::{Sandbox, script};
use evoflux_store::{Message, ToolCall};
use serde_json::{Value, json};

/// Entries the test writes between the session's two turns.
const SEEDED: usize = 2_000;

async fn settled(server: &Server, id: &str, entries: usize) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let (_, shown) = server
            .call("GET", &format!("/api/sessions/{id}"), None)
            .await;
        if shown["transcript"].as_array().map(Vec::len) == Some(entries) && shown["busy"] == false {
            return;
        }
        assert!(Instant::now() < deadline, "never settled: {shown}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A session of two turns with 2,000 stored messages between them, as a
/// long session's turns store them: questions, calls, results, answers.
async fn long_session(s: &Sandbox, server: &Server) -> String {
    let model = script(
        s,
        "long.yaml",
        "turns:\n  - reply: {text: \"FIRST-ANSWER\"}\n  - reply: {text: \"LAST-ANSWER **done**\"}\n",
    );
    let (status, created) = server
        .call(
            "POST",
            "/api/sessions",
            Some(json!({"mode": "work", "model": model, "message": "FIRST-QUESTION"})),
        )
        .await;
    assert_eq!(status, 201, "{created}");
    let id = created["session_id"].as_str().unwrap().to_owned();
    settled(server, &id, 2).await;
    let dirs = evoflux_app::testing::dirs(s.tmp.path());
    let store = evoflux_store::Store::open(dirs.data_dir()).await.unwrap();
    let sid = id.parse().unwrap();
    for i in 0..SEEDED / 4 {
        store
            .append_message(sid, &Message::user(format!("question {i}")))
            .await
            .unwrap();
        let call = ToolCall {
            id: format!("call_{i}"),
            name: "read".into(),
            arguments: json!({"path": format!("notes/{i}.md")}),
        };
        store
            .append_message(sid, &Message::tool_calls("", vec![call]))
            .await
            .unwrap();
        store
            .append_message(
                sid,
                &Message::tool_result(format!("call_{i}"), "# Notes\n\nsome text"),
            )
            .await
            .unwrap();
        store
            .append_message(
                sid,
                &Message::assistant(format!(
                    "Answer {i}: a paragraph with `code` and a list:\n\n- one\n- two"
                )),
            )
            .await
            .unwrap();
    }
    let (status, body) = server
        .call(
            "POST",
            &format!("/api/sessions/{id}/messages"),
            Some(json!({"text": "LAST-QUESTION"})),
        )
        .await;
    assert_eq!(status, 202, "{body}");
    settled(server, &id, SEEDED + 4).await;
    id
}

/// Milliseconds from navigating to the session until its last answer is
/// on screen, measured in the page.
async fn time_to_last_answer(browser: &Browser, id: &str) -> f64 {
    browser
        .js_async(
            "const [id, done] = arguments; const t0 = performance.now(); \
             location.hash = `#/chat/${id}`; \
             const tick = () => { \
               const log = document.getElementById('conversation'); \
               const last = log && log.lastElementChild; \
               if (last && last.textContent.includes('LAST-ANSWER')) { \
                 const r = last.getBoundingClientRect(); \
                 if (r.bottom <= innerHeight && r.bottom > 0) return done(performance.now() - t0); } \
               if (performance.now() - t0 > 20000) return done(-1); \
               requestAnimationFrame(tick); }; \
             requestAnimationFrame(tick);",
            json!([id]),
        )
        .await
        .as_f64()
        .unwrap()
}

async fn open_home(browser: &Browser, server: &Server) {
    browser
        .goto(&format!("{}/#token={}", server.url, server.token))
        .await;
    browser.wait("document.querySelector('main h1')").await;
}

async fn dom_entries(browser: &Browser) -> u64 {
    browser
        .js(
            "return document.querySelectorAll('#conversation .msg').length",
            json!([]),
        )
        .await
        .as_u64()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_2000_message_session_shows_its_last_message_within_a_second_live_and_stored() {
    let Some(browser) = Browser::start().await else {
        return;
    };
    let s = Sandbox::new();
    let mut server = Server::start(&s, &[]);
    let id = long_session(&s, &server).await;

    // Live: open in this server.
    open_home(&browser, &server).await;
    let live = time_to_last_answer(&browser, &id).await;
    eprintln!("a {SEEDED}-message live session shows its last message in {live:.0} ms");
    assert!(live >= 0.0, "the last answer never showed");
    assert!(live < 5_000.0, "{live} ms");
    // Each message once: the last turn came as events, the rest stored.
    for text in ["LAST-QUESTION", "LAST-ANSWER"] {
        let n = browser
            .js(
                "return document.getElementById('conversation').innerText.split(arguments[0]).length - 1",
                json!([text]),
            )
            .await;
        assert_eq!(n, 1, "{text}");
    }
    // Only the newest page is in the page, not 2,000 messages.
    let shown = dom_entries(&browser).await;
    assert!(shown < 200, "{shown} messages rendered at once");
    let bold = browser
        .js(
            "return document.querySelector('#conversation > .msg.assistant:last-of-type strong')?.textContent",
            json!([]),
        )
        .await;
    assert_eq!(bold, "done");
    browser.screenshot("long-session-live").await;

    // Scrolling to the top brings older pages, keeping the reader's place.
    for _ in 0..80 {
        let first = browser
            .js(
                "const log = document.getElementById('conversation'); log.scrollTop = 0; \
                 return log.innerText.includes('FIRST-QUESTION')",
                json!([]),
            )
            .await;
        if first == true {
            break;
        }
        tokio::time::sleep(Duration::from_millis(150)).await;
    }
    let all: Value = browser
        .wait("document.getElementById('conversation').innerText.includes('FIRST-QUESTION') && document.querySelectorAll('#conversation .msg').length")
        .await;
    // Every user message and answer once: 500 questions, 500 answers and
    // the two turns' four messages.
    assert_eq!(all, json!(SEEDED / 2 + 4));
    assert_eq!(
        browser
            .js(
                "return document.querySelectorAll('#conversation details.tool').length",
                json!([]),
            )
            .await,
        json!(SEEDED / 4)
    );

    // Stored: a new server, where the session is not live.
    server.stop();
    let server = Server::start(&s, &[]);
    open_home(&browser, &server).await;
    let stored = time_to_last_answer(&browser, &id).await;
    eprintln!("a {SEEDED}-message stored session shows its last message in {stored:.0} ms");
    assert!(stored >= 0.0, "the last answer never showed");
    assert!(stored < 5_000.0, "{stored} ms");
    browser.screenshot("long-session-stored").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stored_session_whose_last_turn_failed_shows_it_with_a_retry_that_messages_it() {
    let Some(browser) = Browser::start().await else {
        return;
    };
    let s = Sandbox::new();
    // One answer; the next model call fails (the script is spent).
    let model = script(
        &s,
        "once.yaml",
        "turns:\n  - reply: {text: \"ONLY-ANSWER\"}\n",
    );
    let mut server = Server::start(&s, &[]);
    let (status, created) = server
        .call(
            "POST",
            "/api/sessions",
            Some(json!({"mode": "work", "model": model, "message": "hello"})),
        )
        .await;
    assert_eq!(status, 201, "{created}");
    let id = created["session_id"].as_str().unwrap().to_owned();
    settled(&server, &id, 2).await;
    let (status, body) = server
        .call(
            "POST",
            &format!("/api/sessions/{id}/messages"),
            Some(json!({"text": "and then?"})),
        )
        .await;
    assert_eq!(status, 202, "{body}");
    // The failed turn stored the message; wait for the turn to end.
    settled(&server, &id, 3).await;
    server.stop();

    let server = Server::start(&s, &[]);
    open_home(&browser, &server).await;
    browser.goto(&format!("{}/#/chat/{id}", server.url)).await;
    browser
        .wait("document.querySelector('.turn-failed button')")
        .await;
    let text = |t: &'static str| {
        let browser = &browser;
        async move {
            browser
                .js(
                    "return document.getElementById('conversation').innerText.split(arguments[0]).length - 1",
                    json!([t]),
                )
                .await
        }
    };
    assert_eq!(text("and then?").await, 1);
    assert_eq!(text("ONLY-ANSWER").await, 1);
    browser.screenshot("stored-turn-failed").await;
    // Retry messages the stored session: it resumes (a new process, whose
    // script starts again and answers), and the page follows what the
    // message caused.
    browser.click_text("Retry").await;
    browser
        .wait("[...document.querySelectorAll('.msg.user .body')].filter(b => b.textContent === 'and then?').length === 2 && document.getElementById('conversation').innerText.split('ONLY-ANSWER').length === 3")
        .await;
    assert_eq!(
        browser
            .js(
                "return document.querySelectorAll('.turn-failed').length",
                json!([])
            )
            .await,
        0
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropped_files_are_attached_to_the_work_folder_and_the_last_message_can_be_edited() {
    let Some(browser) = Browser::start().await else {
        return;
    };
    let s = Sandbox::new();
    let model = script(
        &s,
        "attach.yaml",
        r#"
turns:
  - reply: {text: "READY"}
  - expect: {user: {contains: "`notes.txt`"}}
    reply: {text: "GOT-THE-NOTES"}
"#,
    );
    let server = Server::start(&s, &[]);
    let (status, created) = server
        .call(
            "POST",
            "/api/sessions",
            Some(json!({"mode": "work", "model": model, "message": "hello"})),
        )
        .await;
    assert_eq!(status, 201, "{created}");
    let id = created["session_id"].as_str().unwrap().to_owned();
    settled(&server, &id, 2).await;
    open_home(&browser, &server).await;
    browser.goto(&format!("{}/#/chat/{id}", server.url)).await;
    browser
        .wait("document.body.innerText.includes('READY')")
        .await;
    // Dropped on the page, as a file from the desktop would be.
    browser
        .js(
            "const dt = new DataTransfer(); \
             dt.items.add(new File(['line one\\nline two\\n'], 'notes.txt', {type: 'text/plain'})); \
             document.querySelector('main').dispatchEvent(new DragEvent('drop', {dataTransfer: dt, bubbles: true, cancelable: true})); \
             return true;",
            json!([]),
        )
        .await;
    browser
        .wait("document.querySelector('.chips .chip')?.textContent.includes('notes.txt')")
        .await;
    let (_, shown) = server
        .call("GET", &format!("/api/sessions/{id}"), None)
        .await;
    let folder = std::path::PathBuf::from(
        shown["session"]["workspace"]["folder"]
            .as_str()
            .unwrap_or_else(|| panic!("{shown}")),
    );
    assert_eq!(
        std::fs::read_to_string(folder.join("notes.txt")).unwrap(),
        "line one\nline two\n"
    );
    browser
        .type_into(".composer textarea", "summarize them\n")
        .await;
    browser
        .wait("document.body.innerText.includes('GOT-THE-NOTES')")
        .await;
    assert_eq!(
        browser
            .js(
                "return document.querySelectorAll('.chips .chip').length",
                json!([])
            )
            .await,
        0
    );
    // Edit puts the last message back in the composer, to send corrected.
    browser
        .click("button[aria-label='Edit and resend your message']")
        .await;
    let draft = browser
        .js(
            "return document.querySelector('.composer textarea').value",
            json!([]),
        )
        .await;
    assert!(
        draft
            .as_str()
            .unwrap()
            .starts_with("summarize them\n\nAttached"),
        "{draft}"
    );
    assert_eq!(
        browser
            .js(
                "return document.querySelectorAll('button[aria-label=\"Edit and resend your message\"]').length",
                json!([])
            )
            .await,
        1
    );
}
