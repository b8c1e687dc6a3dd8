#![allow(clippy::unwrap_used, clippy::expect_used)]

//! The sidebar learns a model's title live (issue #48): after a session's
//! first turn its model names it, the server emits `session_titled`, and
//! the open page's session list shows the new title without navigating
//! or reloading. The scripted model answers the title call slowly (its
//! script's `title:` streams word by word), so the refresh the turn's end
//! causes has already shown the message's title when the model's arrives.

use crate::common;

use common::server::Server;
use common::webdriver::Browser;
use common::{Sandbox, script};
use serde_json::{Value, json};

/// The sidebar's title of session `id`, or null while it is not listed.
async fn sidebar_title(browser: &Browser, id: &str) -> Value {
    browser
        .js(
            "const e = document.querySelector(`#session-list li[data-session='${arguments[0]}'] .session-title`); return e ? e.textContent : null;",
            json!([id]),
        )
        .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sidebar_shows_a_model_title_as_soon_as_it_is_stored() {
    let Some(browser) = Browser::start().await else {
        return;
    };
    let s = Sandbox::new();
    let model = script(
        &s,
        "titled.yaml",
        "title: {text: \"Lisbon offsite plan\", word_delay_ms: 1500}\nturns:\n  - reply: {text: \"Booked the venue.\"}\n",
    );
    let server = Server::start(&s, &[]);
    let (status, created) = server
        .call(
            "POST",
            "/api/sessions",
            Some(json!({"mode": "work", "model": model})),
        )
        .await;
    assert_eq!(status, 201, "{created}");
    let id = created["session_id"].as_str().unwrap().to_owned();
    browser
        .goto(&format!("{}/#token={}", server.url, server.token))
        .await;
    browser.wait("document.querySelector('main h1')").await;
    browser.goto(&format!("{}/#/chat/{id}", server.url)).await;
    browser
        .wait("document.querySelector('.composer textarea')")
        .await;
    // Marks this page: a reload or a navigation would lose the mark.
    browser
        .js("window.__titledPage = 1; return 1", json!([]))
        .await;
    let hash = browser.js("return location.hash", json!([])).await;

    let (status, sent) = server
        .call(
            "POST",
            &format!("/api/sessions/{id}/messages"),
            Some(json!({"text": "Plan the Lisbon offsite"})),
        )
        .await;
    assert!(status < 300, "{status} {sent}");
    // The turn ends; the list shows the message's title meanwhile.
    browser
        .wait("document.body.innerText.includes('Booked the venue.')")
        .await;
    browser
        .wait(&format!(
            "document.querySelector(`#session-list li[data-session='{id}'] .session-title`)?.textContent === 'Plan the Lisbon offsite'"
        ))
        .await;
    // The model's title arrives seconds later and shows where the
    // message's was, on the same page.
    browser
        .wait(&format!(
            "document.querySelector(`#session-list li[data-session='{id}'] .session-title`)?.textContent === 'Lisbon offsite plan'"
        ))
        .await;
    assert_eq!(sidebar_title(&browser, &id).await, "Lisbon offsite plan");
    assert_eq!(
        browser.js("return window.__titledPage", json!([])).await,
        1,
        "the page was not reloaded"
    );
    assert_eq!(browser.js("return location.hash", json!([])).await, hash);
}
