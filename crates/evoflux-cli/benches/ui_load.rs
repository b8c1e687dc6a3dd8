#![allow(clippy::unwrap_used, clippy::expect_used)]

//! The web UI's first load, in headless chromium over WebDriver against the
//! real `evoflux serve` with 7 and with 1,000 stored sessions: bytes
//! transferred on a cold first load, the time to interactive (navigation
//! start to the first view rendered, the page's `evoflux-interactive`
//! mark) and to the session list on screen (`evoflux-sessions-listed`)
//! over repeated loads. Prints figures; asserts nothing.
//!
//!   cargo bench -p evoflux-cli --bench ui_load

#[path = "../tests/it/common/mod.rs"]
mod common;

use common::server::Server;
use common::webdriver::Browser;
use serde_json::json;

const LOADS: usize = 20;

const READ: &str = "const nav = performance.getEntriesByType('navigation')[0];
const res = performance.getEntriesByType('resource');
const mark = performance.getEntriesByName('evoflux-interactive')[0];
return {
  bytes: nav.transferSize + res.reduce((n, r) => n + r.transferSize, 0),
  body: nav.decodedBodySize + res.reduce((n, r) => n + r.decodedBodySize, 0),
  files: res.length + 1,
  interactive: mark ? mark.startTime : null,
  listed: (performance.getEntriesByName('evoflux-sessions-listed')[0] || {}).startTime ?? null,
  dom: nav.domInteractive,
};";

/// Sessions stored before the server starts, each with a first message.
async fn seed(s: &common::Sandbox, sessions: usize) {
    let dirs = evoflux_app::testing::dirs(s.tmp.path());
    let store = evoflux_store::Store::open(dirs.data_dir()).await.unwrap();
    for i in 0..sessions {
        let session = store
            .create_session(evoflux_store::NewSession {
                workspace: evoflux_store::WorkspaceRequest::Work,
                lead: Some("evoflux".into()),
                model: None,
                graph_hash: None,
                parent: None,
            })
            .await
            .unwrap();
        store
            .append_message(
                session.id,
                &evoflux_store::Message::user(format!("Plan step {i} of the offsite")),
            )
            .await
            .unwrap();
    }
}

#[tokio::main]
async fn main() {
    let Some(browser) = Browser::start().await else {
        return;
    };
    for sessions in [7, 1_000] {
        measure(&browser, sessions).await;
    }
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../evoflux-server/web");
    let embedded: u64 = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().metadata().unwrap().len())
        .sum();
    println!("embedded UI files: {embedded} bytes in the binary");
}

async fn measure(browser: &Browser, sessions: usize) {
    let s = common::Sandbox::new();
    seed(&s, sessions).await;
    let server = Server::start(&s, &[]);
    let route = format!("{}/#token={}", server.url, server.token);
    let mut first = None;
    let mut tti = Vec::new();
    let mut listed = Vec::new();
    for i in 0..LOADS {
        browser.goto("about:blank").await;
        browser.goto(&route).await;
        browser
            .wait("performance.getEntriesByName('evoflux-interactive').length && performance.getEntriesByName('evoflux-sessions-listed').length")
            .await;
        let v = browser.js(READ, json!([])).await;
        if i == 0 {
            first = Some(v.clone());
        }
        tti.push(v["interactive"].as_f64().unwrap());
        listed.push(v["listed"].as_f64().unwrap());
    }
    let first = first.unwrap();
    tti.sort_by(f64::total_cmp);
    listed.sort_by(f64::total_cmp);
    println!(
        "{sessions} sessions, first load (cold cache): {} bytes transferred for {} files ({} bytes of content), interactive after {:.1} ms",
        first["bytes"],
        first["files"],
        first["body"],
        first["interactive"].as_f64().unwrap()
    );
    println!(
        "{sessions} sessions over {LOADS} loads: interactive median {:.1} ms (max {:.1}), session list on screen median {:.1} ms (max {:.1})",
        tti[LOADS / 2],
        tti[LOADS - 1],
        listed[LOADS / 2],
        listed[LOADS - 1]
    );
}
