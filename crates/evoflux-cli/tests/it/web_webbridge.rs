#![allow(clippy::unwrap_used, clippy::expect_used)]

//! WebBridge conversations through `evoflux serve`: `POST /api/sessions`
//! tags a session for the browser surface (`surface`), the answer and the
//! session's views say which MCP servers that hides and why
//! (`mcp/webbridge-hidden`), a wrong surface is refused naming the field,
//! and the web UI's new-session toggle does the same in a real browser.
//! The user's server is the real MCP test server; a configured server can
//! never declare `webbridge-safe` (only a plugin's manifest can), so it is
//! hidden there.

use crate::common;

use common::server::Server;
use common::webdriver::Browser;
use common::{Sandbox, script};
use serde_json::{Value, json};

/// A sandbox whose user `mcp.json` runs the test server as `docs`.
fn with_docs_server(bin: &std::path::Path) -> Sandbox {
    let s = Sandbox::new();
    s.user(
        "mcp.json",
        &json!({"mcpServers": {"docs": {"type": "stdio", "command": bin}}}).to_string(),
    );
    s
}

fn hidden_codes(diagnostics: &Value) -> Vec<(String, String)> {
    diagnostics
        .as_array()
        .map(|all| {
            all.iter()
                .filter(|d| d["code"] == "mcp/webbridge-hidden")
                .map(|d| {
                    (
                        d["code"].as_str().unwrap().to_owned(),
                        d["locator"]["field"].as_str().unwrap_or("").to_owned(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_api_tags_a_session_for_webbridge_and_says_what_it_hides() {
    let Some(bin) = common::mcp_test_server() else {
        return;
    };
    let s = with_docs_server(&bin);
    let model = script(&s, "idle.yaml", "turns: []\n");
    let server = Server::start(&s, &[]);

    // A standard session hides nothing.
    let (status, plain) = server
        .call(
            "POST",
            "/api/sessions",
            Some(json!({"mode": "work", "model": model})),
        )
        .await;
    assert_eq!(status, 201, "{plain}");
    assert_eq!(plain["surface"], "standard");
    assert!(hidden_codes(&plain["diagnostics"]).is_empty(), "{plain}");

    // Tagged for the browser surface: the configured server is hidden,
    // with its code and the server it names.
    let (status, tagged) = server
        .call(
            "POST",
            "/api/sessions",
            Some(json!({"mode": "work", "model": model, "surface": "webbridge"})),
        )
        .await;
    assert_eq!(status, 201, "{tagged}");
    assert_eq!(tagged["surface"], "webbridge");
    let expected = vec![("mcp/webbridge-hidden".to_owned(), "docs".to_owned())];
    assert_eq!(hidden_codes(&tagged["diagnostics"]), expected, "{tagged}");
    let id = tagged["session_id"].as_str().unwrap();

    // The session and its view keep the tag and say the same.
    let (status, shown) = server
        .call("GET", &format!("/api/sessions/{id}"), None)
        .await;
    assert_eq!(status, 200, "{shown}");
    assert_eq!(shown["session"]["surface"], "webbridge", "{shown}");
    assert_eq!(hidden_codes(&shown["mcp_hidden"]), expected, "{shown}");
    let (status, snapshot) = server
        .call("GET", &format!("/api/sessions/{id}/snapshot"), None)
        .await;
    assert_eq!(status, 200, "{snapshot}");
    assert_eq!(hidden_codes(&snapshot["mcp_hidden"]), expected);
    let (_, listed) = server.call("GET", "/api/sessions", None).await;
    let surfaces: Vec<Value> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["session"]["surface"].clone())
        .collect();
    assert!(surfaces.contains(&json!("webbridge")), "{listed}");

    // A surface that does not exist is refused, naming it.
    let (status, refused) = server
        .call(
            "POST",
            "/api/sessions",
            Some(json!({"mode": "work", "model": model, "surface": "browser"})),
        )
        .await;
    assert_eq!(status, 422, "{refused}");
    assert_eq!(refused["code"], "server/body-invalid");
    assert!(refused["message"].as_str().unwrap().contains("browser"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_new_session_form_tags_a_webbridge_conversation() {
    let Some(bin) = common::mcp_test_server() else {
        return;
    };
    let Some(browser) = Browser::start().await else {
        return;
    };
    let s = with_docs_server(&bin);
    let model = script(&s, "idle.yaml", "turns: []\n");
    let server = Server::start(&s, &[]);
    browser.open_ui(&server, "chat").await;
    browser
        .type_into("main form input[type=text]", &model)
        .await;
    browser.click("main form input[name=webbridge]").await;
    browser.click_text("Start").await;
    // The conversation says it is a WebBridge one and what it hides.
    browser
        .wait("document.querySelector('.chat-head')?.innerText.includes('WebBridge')")
        .await;
    browser
        .wait("document.querySelector('details.mcp-hidden')?.textContent.includes('mcp/webbridge-hidden')")
        .await;
    let hidden = browser
        .js(
            "return document.querySelector('details.mcp-hidden').textContent",
            json!([]),
        )
        .await;
    assert!(hidden.as_str().unwrap().contains("`docs`"), "{hidden}");
    let (_, listed) = server.call("GET", "/api/sessions", None).await;
    let sessions = listed.as_array().unwrap();
    assert_eq!(sessions.len(), 1, "{listed}");
    assert_eq!(sessions[0]["session"]["surface"], "webbridge");
}
