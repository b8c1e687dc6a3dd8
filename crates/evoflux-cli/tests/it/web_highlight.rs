#![allow(clippy::unwrap_used, clippy::expect_used)]

//! Code highlighting in the web UI's conversation (issue #48): a finished
//! answer's code block with a known language is highlighted from
//! `/api/highlight` (spans built from text, never markup), not while the
//! answer streams; a block of an unknown language stays plain; markup in
//! the code stays text; the page passes axe-core, and the dark theme's
//! token colours keep their contrast.

use crate::common;

use common::server::Server;
use common::webdriver::Browser;
use common::{Sandbox, script};
use serde_json::{Value, json};

/// The answer's Rust block, as the page should show it.
const RUST: &str = "fn main() {\n    let s = \"<img src=x onerror=window.__pwned=1>\";\n}";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_finished_rust_block_is_highlighted_as_text_and_the_page_passes_axe() {
    let Some(browser) = Browser::start().await else {
        return;
    };
    let s = Sandbox::new();
    // Words stream slowly after the blocks, so the page is seen mid-answer.
    let tail: String = (1..=50).map(|n| format!("word{n} ")).collect();
    let model = script(
        &s,
        "code.yaml",
        &format!(
            r#"
turns:
  - reply:
      word_delay_ms: 40
      text: "Here it is:\n\n```rust\n{}\n```\n\n```cobol\nDISPLAY 'HI'.\n```\n\n{tail}END-OF-ANSWER"
"#,
            RUST.replace('\\', "\\\\")
                .replace('"', "\\\"")
                .replace('\n', "\\n")
        ),
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
    let (status, sent) = server
        .call(
            "POST",
            &format!("/api/sessions/{id}/messages"),
            Some(json!({"text": "show me code"})),
        )
        .await;
    assert!(status < 300, "{status} {sent}");

    // Mid-stream: the block is there, plain.
    let mid = browser
        .wait(
            "(() => { const c = document.querySelector('.msg.assistant code[data-lang=cobol]'); \
             if (!c || document.body.innerText.includes('END-OF-ANSWER')) return null; \
             return {spans: document.querySelectorAll('.msg.assistant [class^=hl-]').length}; })()",
        )
        .await;
    assert_eq!(mid, json!({"spans": 0}), "highlighted while streaming");

    // Finished: the Rust block is highlighted.
    browser
        .wait("document.body.innerText.includes('END-OF-ANSWER') && document.querySelector('.msg.assistant code[data-highlighted] .hl-keyword')")
        .await;
    let shown = browser
        .js(
            "const c = document.querySelector('.msg.assistant code[data-lang=rust]'); \
             const strings = [...c.querySelectorAll('.hl-string')]; \
             return { \
               keywords: [...c.querySelectorAll('.hl-keyword')].map(e => e.textContent), \
               functions: [...c.querySelectorAll('.hl-function')].map(e => e.textContent), \
               text: c.textContent, \
               highlighted: c.dataset.highlighted, \
               strings: strings.map(e => e.textContent), \
               stringChildren: strings.map(e => e.children.length), \
               images: document.querySelectorAll('.msg.assistant img').length, \
               pwned: window.__pwned === undefined ? null : window.__pwned, \
               fnParent: c.querySelector('.hl-keyword').parentElement === c, \
             };",
            json!([]),
        )
        .await;
    assert_eq!(shown["keywords"], json!(["fn", "let"]), "{shown}");
    assert_eq!(shown["functions"], json!(["main"]), "{shown}");
    assert_eq!(shown["highlighted"], "rust");
    // Nothing of the code is lost or rewritten.
    assert_eq!(shown["text"], RUST);
    // The markup in the string is text in one span: no element, no script.
    assert_eq!(
        shown["strings"],
        json!(["\"<img src=x onerror=window.__pwned=1>\""])
    );
    assert_eq!(shown["stringChildren"], json!([0]));
    assert_eq!(shown["images"], 0);
    assert_eq!(shown["pwned"], Value::Null);
    assert_eq!(shown["fnParent"], true);

    // A language the server does not highlight stays plain text.
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    let cobol = browser
        .js(
            "const c = document.querySelector('.msg.assistant code[data-lang=cobol]'); \
             return {children: c.children.length, text: c.textContent, highlighted: c.dataset.highlighted || null};",
            json!([]),
        )
        .await;
    assert_eq!(
        cobol,
        json!({"children": 0, "text": "DISPLAY 'HI'.", "highlighted": null})
    );
    browser.screenshot("chat-highlighted-code").await;

    // The dark theme's token colours (not what the headless browser shows,
    // so read from the style sheet) keep 4.5:1 on the dark code background.
    let dark = browser
        .js(
            r#"
const hex = (s) => s.trim().replace('#', '');
const lum = (h) => { const c = [0, 2, 4].map((i) => parseInt(h.slice(i, i + 2), 16) / 255)
  .map((v) => (v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4));
  return 0.2126 * c[0] + 0.7152 * c[1] + 0.0722 * c[2]; };
const ratio = (a, b) => { const [x, y] = [lum(a), lum(b)].sort((p, q) => q - p); return (x + 0.05) / (y + 0.05); };
let code = null; const colours = {};
for (const sheet of document.styleSheets) for (const rule of sheet.cssRules) {
  if (!(rule instanceof CSSMediaRule) || !rule.conditionText.includes('prefers-color-scheme: dark')) continue;
  for (const inner of rule.cssRules) {
    const v = inner.style.getPropertyValue('--code');
    if (v) code = hex(v);
    for (const p of inner.style) if (p.startsWith('--hl-')) colours[p] = hex(inner.style.getPropertyValue(p));
  }
}
if (!code || !Object.keys(colours).length) return 'no dark theme found';
return Object.entries(colours).filter(([, c]) => ratio(c, code) < 4.5).map(([p, c]) => `${p} ${c} on ${code}`);
"#,
            json!([]),
        )
        .await;
    assert_eq!(dark, json!([]), "dark-theme contrast");

    assert_eq!(browser.axe_violations().await, json!([]), "axe-core");
}
