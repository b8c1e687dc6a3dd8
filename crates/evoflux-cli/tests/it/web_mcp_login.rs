#![allow(clippy::unwrap_used, clippy::expect_used)]

//! "Log in" in the web UI's MCP servers, in a real browser: a server over
//! HTTP that asks for an OAuth login (the MCP test server behind a bearer
//! check, with its fake authorization server) shows `needs-login` and a
//! Log in button; the button opens the authorization server in a new tab,
//! which comes back to evoflux's callback; the list shows the server
//! ready with its tools without a reload.

use crate::common;
use crate::mcp_oauth::{configure, oauth_fixture, token_file};

use common::Sandbox;
use common::server::Server;
use common::webdriver::Browser;
use serde_json::json;

const ROW: &str = "document.querySelector('tr[data-server=remote]')";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn log_in_opens_the_login_and_the_list_shows_the_server_ready() {
    let Some((mut fixture, url)) = oauth_fixture() else {
        return;
    };
    let Some(browser) = Browser::start().await else {
        return;
    };
    let s = Sandbox::new();
    configure(&s, &url);
    let server = Server::start(&s, &[]);
    browser
        .goto(&format!("{}/#token={}", server.url, server.token))
        .await;
    browser.wait("document.querySelector('main h1')").await;
    browser
        .goto(&format!("{}/#/settings/mcp", server.url))
        .await;
    browser
        .wait(&format!("{ROW} && {ROW}.innerText.includes('needs-login')"))
        .await;
    let row = browser
        .js(&format!("return {ROW}.innerText"), json!([]))
        .await;
    assert!(row.as_str().unwrap().contains("mcp/needs-login"), "{row}");
    if let Some(axe) = std::env::var_os("EVOFLUX_TEST_AXE") {
        let axe = std::fs::read_to_string(axe).unwrap();
        browser.js(&axe, json!([])).await;
        let violations = browser
            .js_async(
                "const done = arguments[arguments.length - 1]; axe.run(document).then(r => done(r.violations.filter(v => v.impact === 'serious' || v.impact === 'critical').map(v => v.id)));",
                json!([]),
            )
            .await;
        assert_eq!(violations, json!([]), "axe-core on the MCP servers");
    }

    browser.click("button[aria-label='Log in to remote']").await;
    // The new tab logs in; this one notices and shows the list again.
    browser
        .wait(&format!("{ROW} && {ROW}.innerText.includes('ready')"))
        .await;
    let row = browser
        .js(&format!("return {ROW}.innerText"), json!([]))
        .await;
    let row = row.as_str().unwrap();
    assert!(row.contains("echo"), "{row}");
    assert!(!row.contains("Log in"), "{row}");
    assert!(token_file(&s).exists());
    browser.screenshot("mcp-logged-in").await;
    drop(fixture.stdin.take());
    let _ = fixture.wait();
}
