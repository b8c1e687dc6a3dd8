#![allow(clippy::unwrap_used, clippy::expect_used)]

//! The web UI's delegation tree in a real browser: a lead hands a task to
//! a member that hands it on to another (lead → planner → coder, depth 2).
//! The open session's tree grows from the dispatch events as they stream
//! (the depth-2 one arrives wrapped in its parent's `child` event), each
//! session nested under the one that dispatched it with its level; after a
//! reload, with the dispatching turn no longer replayed as events, the
//! same tree comes from the store (the snapshot's `tree`).

use crate::common;

use common::server::Server;
use common::webdriver::Browser;
use common::{Sandbox, script};
use serde_json::{Value, json};

fn member(s: &Sandbox, name: &str, description: &str, model: &str) {
    s.project(
        &format!("agents/{name}.md"),
        &format!("---\nrole: member\ndescription: {description}\nmodel: {model}\n---\nYou are the {name}.\n"),
    );
}

/// The tree's items in document order: `(aria-level, data-depth, name,
/// the session of the item it is nested in)`.
const TREE: &str = "return [...document.querySelectorAll('ul.dispatch-tree li')].map(li => [\
    li.getAttribute('aria-level'), li.dataset.depth, \
    li.querySelector(':scope > a, :scope > strong').textContent, \
    li.parentElement.closest('li')?.dataset.session ?? null])";

fn tree_rows(v: &Value) -> Vec<(String, String, String, Option<String>)> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r[0].as_str().unwrap().to_owned(),
                r[1].as_str().unwrap().to_owned(),
                r[2].as_str().unwrap().to_owned(),
                r[3].as_str().map(str::to_owned),
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_delegation_tree_nests_three_levels_live_and_after_a_reload() {
    let Some(browser) = Browser::start().await else {
        return;
    };
    let s = Sandbox::new();
    let coder = script(
        &s,
        "coder.yaml",
        r#"
turns:
  - expect: {user: {contains: "build the parser"}}
    reply: {text: "coder: parser built"}
"#,
    );
    let planner = script(
        &s,
        "planner.yaml",
        r#"
turns:
  - expect: {user: {contains: "plan and build"}}
    reply:
      tool_calls:
        - {name: agent, arguments: {agent_id: coder, message: "build the parser"}}
  - expect: {tool_result: {contains: "coder: parser built"}}
    reply: {text: "planner: the coder reports parser built"}
"#,
    );
    member(&s, "planner", "Plans work and hands it out.", &planner);
    member(&s, "coder", "Writes code.", &coder);
    let lead = script(
        &s,
        "lead.yaml",
        r#"
turns:
  - expect: {user: {contains: "build a parser"}}
    reply:
      tool_calls:
        - {name: agent, arguments: {agent_id: planner, message: "plan and build a parser"}}
  - expect: {tool_result: {contains: "the coder reports parser built"}}
    reply: {text: "PARSER-BUILT"}
  - expect: {user: thanks}
    reply: {text: "BYE-NOW"}
"#,
    );
    let server = Server::start(&s, &[]);
    // An idle session, opened before it dispatches anything: no tree yet.
    let (status, created) = server
        .call(
            "POST",
            "/api/sessions",
            Some(json!({"mode": "work", "model": lead})),
        )
        .await;
    assert_eq!(status, 201, "{created}");
    let id = created["session_id"].as_str().unwrap().to_owned();
    browser.open_ui(&server, &format!("chat/{id}")).await;
    browser
        .wait("document.querySelector('main textarea')")
        .await;
    let shown = browser
        .js(
            "return document.querySelector('details.dispatch-tree')?.hidden",
            json!([]),
        )
        .await;
    assert_eq!(
        shown, true,
        "a session that dispatched nothing shows no tree"
    );

    let (status, sent) = server
        .call(
            "POST",
            &format!("/api/sessions/{id}/messages"),
            Some(json!({"text": "build a parser"})),
        )
        .await;
    assert!(status < 300, "{status} {sent}");
    browser
        .wait("document.body.innerText.includes('PARSER-BUILT')")
        .await;

    // The store's tree, to compare the page with.
    let (status, snapshot) = server
        .call("GET", &format!("/api/sessions/{id}/snapshot"), None)
        .await;
    assert_eq!(status, 200, "{snapshot}");
    let stored: Vec<(u64, String, String)> = snapshot["tree"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["depth"].as_u64().unwrap(),
                e["session"]["lead"].as_str().unwrap().to_owned(),
                e["session"]["id"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(stored.len(), 2, "{:#}", snapshot["tree"]);
    assert_eq!((stored[0].0, stored[0].1.as_str()), (1, "planner"));
    assert_eq!((stored[1].0, stored[1].1.as_str()), (2, "coder"));
    let planner_id = stored[0].2.clone();
    let lead_name = snapshot["session"]["lead"].as_str().unwrap().to_owned();
    let expected = vec![
        ("1".to_owned(), "0".to_owned(), lead_name, None),
        (
            "2".to_owned(),
            "1".to_owned(),
            "planner".to_owned(),
            Some(id.clone()),
        ),
        (
            "3".to_owned(),
            "2".to_owned(),
            "coder".to_owned(),
            Some(planner_id.clone()),
        ),
    ];

    // Live: the tree grew from the events, three levels in order.
    let live = tree_rows(&browser.js(TREE, json!([])).await);
    assert_eq!(live, expected);
    // The conversation nests the coder's box inside the planner's.
    let boxes = browser
        .js(
            "return [...document.querySelectorAll('details.child')].map(d => \
             [d.querySelector(':scope > summary strong').textContent, \
              d.parentElement.closest('details.child')?.querySelector(':scope > summary strong').textContent ?? null])",
            json!([]),
        )
        .await;
    assert_eq!(
        boxes,
        json!([["planner", null], ["coder", "planner"]]),
        "{boxes}"
    );
    // Each item links to its session.
    let href = browser
        .js(
            "return document.querySelector('ul.dispatch-tree li[aria-level=\"3\"] > a').getAttribute('href')",
            json!([]),
        )
        .await;
    assert_eq!(href, json!(format!("#/chat/{}", stored[1].2)));

    // A second turn, so that a reloaded page gets the first one from the
    // store, not as events.
    let (status, sent) = server
        .call(
            "POST",
            &format!("/api/sessions/{id}/messages"),
            Some(json!({"text": "thanks"})),
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
    browser
        .wait("document.querySelectorAll('ul.dispatch-tree li').length === 3")
        .await;
    let reloaded = tree_rows(&browser.js(TREE, json!([])).await);
    assert_eq!(reloaded, expected);
    // The dispatching turn came from the store: no live boxes replayed.
    let boxes = browser
        .js(
            "return document.querySelectorAll('details.child').length",
            json!([]),
        )
        .await;
    assert_eq!(boxes, 0);
    let summary = browser
        .js(
            "return document.querySelector('details.dispatch-tree > summary').textContent",
            json!([]),
        )
        .await;
    assert_eq!(summary, "Delegated to 2 sessions");
    let violations = browser.axe_violations().await;
    assert_eq!(violations, json!([]), "{violations:#}");
}
