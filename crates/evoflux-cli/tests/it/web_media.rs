#![allow(clippy::unwrap_used, clippy::expect_used)]

//! Images in the web UI: an MCP tool's image (the test server's `image`
//! tool) is named in the live tool card (events carry text) and, once its
//! turn is rendered from the stored transcript, shown as the image.

use crate::common;

use common::server::Server;
use common::webdriver::Browser;
use common::{Sandbox, mcp_test_server, script};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_mcp_tool_s_image_is_named_live_and_shown_after_a_reload() {
    let Some(bin) = mcp_test_server() else { return };
    let Some(browser) = Browser::start().await else {
        return;
    };
    let s = Sandbox::new();
    s.project(
        "mcp.json",
        &serde_json::json!({"mcpServers": {"pics": {"type": "stdio", "command": bin}}}).to_string(),
    );
    s.project("agents/evoflux.md", "---\nrole: lead\nmcp: [pics]\n---\n");
    s.trust();
    let model = script(
        &s,
        "dot.yaml",
        r#"
turns:
  - expect: {user: {contains: "show me"}}
    reply:
      tool_calls:
        - {name: mcp__pics__image, arguments: {}}
  - expect: {tool_result: {contains: "a red dot"}}
    reply: {text: "DOT-SEEN"}
  - expect: {user: thanks}
    reply: {text: "BYE-NOW"}
"#,
    );
    let server = Server::start(&s, &[]);
    browser.open_ui(&server, "chat").await;
    browser
        .type_into("main form input[type=text]", &model)
        .await;
    browser.type_into("main form textarea", "show me").await;
    browser.click_text("Start").await;
    browser
        .wait("document.body.innerText.includes('DOT-SEEN')")
        .await;
    // Live, the card names both images (the content and the resource).
    let live = browser
        .js(
            "return document.querySelector('details.tool pre.observation')?.textContent",
            serde_json::json!([]),
        )
        .await;
    assert_eq!(
        live.as_str().unwrap(),
        "a red dot\n[image: image/png, 70 B]\n[image: image/png, 70 B]"
    );
    // A second turn, so that a reloaded page renders the first from the
    // transcript (the last turn of a snapshot arrives as its events).
    let (status, listed) = server.call("GET", "/api/sessions", None).await;
    assert_eq!(status, 200, "{listed}");
    let id = listed[0]["session"]["id"].as_str().unwrap().to_owned();
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
    // From the transcript, the images themselves, decoded by the browser.
    let shown = browser
        .wait(
            "[...document.querySelectorAll('details.tool img.media')].length === 2 \
             && [...document.querySelectorAll('details.tool img.media')] \
                .every((i) => i.complete && i.naturalWidth === 1)",
        )
        .await;
    assert_eq!(shown, true);
    browser.screenshot("chat-mcp-image").await;
}
