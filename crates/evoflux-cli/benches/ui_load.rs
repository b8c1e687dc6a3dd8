#![allow(clippy::unwrap_used, clippy::expect_used)]

//! The web UI's first load, in headless chromium over WebDriver against the
//! real `evoflux serve`: bytes transferred on a cold first load, and the
//! time to interactive (navigation start to the first view rendered, the
//! page's `evoflux-interactive` mark) over repeated loads. Prints figures;
//! asserts nothing.
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
  dom: nav.domInteractive,
};";

#[tokio::main]
async fn main() {
    let Some(browser) = Browser::start().await else {
        return;
    };
    let s = common::Sandbox::new();
    let server = Server::start(&s, &[]);
    let route = format!("{}/#token={}", server.url, server.token);
    let mut first = None;
    let mut tti = Vec::new();
    for i in 0..LOADS {
        browser.goto("about:blank").await;
        browser.goto(&route).await;
        browser
            .wait("performance.getEntriesByName('evoflux-interactive').length")
            .await;
        let v = browser.js(READ, json!([])).await;
        if i == 0 {
            first = Some(v.clone());
        }
        tti.push(v["interactive"].as_f64().unwrap());
    }
    let first = first.unwrap();
    tti.sort_by(f64::total_cmp);
    println!(
        "first load (cold cache): {} bytes transferred for {} files ({} bytes of content), interactive after {:.1} ms",
        first["bytes"],
        first["files"],
        first["body"],
        first["interactive"].as_f64().unwrap()
    );
    println!(
        "time to interactive over {LOADS} loads: median {:.1} ms, max {:.1} ms",
        tti[LOADS / 2],
        tti[LOADS - 1]
    );
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../evoflux-server/web");
    let embedded: u64 = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().metadata().unwrap().len())
        .sum();
    println!("embedded UI files: {embedded} bytes in the binary");
}
