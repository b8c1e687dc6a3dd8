#![allow(clippy::unwrap_used, clippy::expect_used)]

//! The read-only document viewer through the real `evoflux serve`: its
//! host routes list a session's files and render DOCX, XLSX, PPTX and PDF
//! documents confined to the session's workspace; opening documents
//! changes nothing a model is sent; and in Debian's chromium each kind
//! opens from the file listing and from a tool card.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::fake_model::FakeModel;
use common::server::{Server, read_events};
use common::webdriver::Browser;
use common::{Sandbox, script};
use serde_json::{Value, json};

/// Writes the real document set into `dir` with the viewer crate's script,
/// or says the test is skipped (no Python with the document libraries).
fn make_documents(dir: &Path) -> bool {
    let candidates = [
        std::env::var("EVOFLUX_TEST_PYTHON").ok(),
        Some("python3".into()),
    ];
    let Some(py) = candidates.into_iter().flatten().find(|py| {
        Command::new(py)
            .args(["-c", "import docx, openpyxl, pptx, reportlab"])
            .output()
            .is_ok_and(|o| o.status.success())
    }) else {
        eprintln!(
            "SKIPPED: no Python with python-docx, openpyxl, python-pptx and reportlab (set EVOFLUX_TEST_PYTHON)"
        );
        return false;
    };
    let script = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../evoflux-viewer/tests/fixtures/make_documents.py");
    let out = Command::new(py)
        .arg(script)
        .arg(dir)
        .arg("real")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    true
}

async fn coding_session(server: &Server, repo: &Path, model: &str) -> String {
    let created: Value = server
        .post(
            "/api/sessions",
            json!({"mode": "coding", "workspaces": [repo], "model": model}),
        )
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    created["session_id"].as_str().unwrap().to_owned()
}

async fn get(server: &Server, path: &str) -> (u16, Value) {
    let r = server.get(path).send().await.unwrap();
    let status = r.status().as_u16();
    (status, r.json().await.unwrap_or(Value::Null))
}

fn document_path(session: &str, path: &str) -> String {
    format!("/api/viewer/document?session={session}&path={path}")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_viewer_lists_renders_and_stays_inside_the_session_workspace() {
    let s = Sandbox::new();
    let docs = s.repo().join("docs");
    if !make_documents(&docs) {
        return;
    }
    std::fs::write(docs.join("notes.txt"), "plain text").unwrap();
    std::os::unix::fs::symlink(s.home(), docs.join("home")).unwrap();
    std::os::unix::fs::symlink("/etc/hostname", docs.join("escape.pdf")).unwrap();
    let model = script(&s, "idle.yaml", "turns:\n  - reply: {text: ok}\n");
    let server = Server::start(&s, &[]);
    let id = coding_session(&server, &s.repo(), &model).await;

    let (status, root) = get(&server, &format!("/api/viewer/files?session={id}")).await;
    assert_eq!(status, 200, "{root}");
    let docs_entry = root["entries"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["name"] == "docs")
        .unwrap();
    assert_eq!(docs_entry["is_dir"], true);
    let (_, listing) = get(&server, &format!("/api/viewer/files?session={id}&dir=docs")).await;
    let kinds: Vec<(String, Value)> = listing["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["path"].as_str().unwrap().to_owned(),
                e["document"].clone(),
            )
        })
        .collect();
    for (path, kind) in [
        ("docs/report.docx", "docx"),
        ("docs/book.xlsx", "xlsx"),
        ("docs/deck.pptx", "pptx"),
        ("docs/paper.pdf", "pdf"),
    ] {
        assert!(kinds.contains(&(path.to_owned(), json!(kind))), "{kinds:?}");
    }
    assert!(kinds.contains(&("docs/notes.txt".to_owned(), Value::Null)));

    for (path, label) in [
        ("docs/report.docx", "Document"),
        ("docs/book.xlsx", "Sales"),
        ("docs/deck.pptx", "Slide 1"),
        ("docs/paper.pdf", "Page 1"),
    ] {
        let (status, doc) = get(&server, &document_path(&id, path)).await;
        assert_eq!(status, 200, "{path}: {doc}");
        assert_eq!(doc["path"], path);
        assert_eq!(doc["parts"][0]["label"], label, "{path}");
        assert_eq!(doc["cached"], false, "{path}");
        let (_, again) = get(&server, &document_path(&id, path)).await;
        assert_eq!(again["cached"], true, "{path}");
        assert_eq!(again["parts"], doc["parts"]);
    }
    // The cache is the server's cache dir, keyed by content.
    let sha = get(&server, &document_path(&id, "docs/report.docx"))
        .await
        .1["sha256"]
        .as_str()
        .unwrap()
        .to_owned();
    let cached: Vec<PathBuf> = std::fs::read_dir(s.home().join(".cache/evoflux/viewer"))
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    assert!(
        cached.iter().any(|p| p.to_string_lossy().contains(&sha)),
        "{cached:?}"
    );

    let (status, pdf) = get(
        &server,
        &format!("{}&pages=2-3", document_path(&id, "docs/paper.pdf")),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(pdf["pages"], json!({"first": 2, "last": 3, "total": 3}));

    for (query, want, code, field) in [
        (
            "path=../secret.docx".to_owned(),
            404,
            "viewer/file-not-found",
            "path",
        ),
        (
            "path=docs/escape.pdf".to_owned(),
            403,
            "viewer/outside-workspace",
            "path",
        ),
        (
            "path=/etc/hostname".to_owned(),
            400,
            "viewer/path-absolute",
            "path",
        ),
        (
            "path=docs/notes.txt".to_owned(),
            415,
            "viewer/unsupported-kind",
            "path",
        ),
        (
            "path=docs/paper.pdf&pages=9-2".to_owned(),
            400,
            "viewer/page-range-invalid",
            "pages",
        ),
        (
            "path=docs/paper.pdf&pages=7".to_owned(),
            400,
            "viewer/page-range-outside",
            "pages",
        ),
        (
            "path=docs/report.docx&root=3".to_owned(),
            400,
            "viewer/root-invalid",
            "root",
        ),
    ] {
        let (status, body) = get(
            &server,
            &format!("/api/viewer/document?session={id}&{query}"),
        )
        .await;
        assert_eq!(
            (status, body["code"].as_str(), body["field"].as_str()),
            (want, Some(code), Some(field)),
            "{query}: {body}"
        );
    }
    let (status, body) = get(
        &server,
        &format!("/api/viewer/files?session={id}&dir=docs/home"),
    )
    .await;
    assert_eq!(
        (status, body["code"].as_str()),
        (403, Some("viewer/outside-workspace")),
        "{body}"
    );
    let (status, _) = get(&server, "/api/viewer/files?session=not-a-session").await;
    assert_eq!(status, 400);
    // Without the token, nothing.
    let r = server
        .http
        .get(format!(
            "{}{}",
            server.url,
            document_path(&id, "docs/report.docx")
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 401);
    // The routes are in the API's description.
    let (_, openapi) = get(&server, "/openapi.json").await;
    assert!(openapi["paths"]["/api/viewer/document"]["get"].is_object());
    assert!(openapi["paths"]["/api/viewer/files"]["get"].is_object());
}

async fn turn(server: &Server, id: &str, text: &str, after: Option<u64>) -> u64 {
    let r = server
        .post(
            &format!("/api/sessions/{id}/messages"),
            json!({"text": text}),
        )
        .send()
        .await
        .unwrap();
    assert!(r.status().is_success(), "{}", r.text().await.unwrap());
    let events = read_events(server, id, after, |e| e.kind == "turn_completed").await;
    events.last().unwrap().id
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn opening_documents_changes_nothing_a_model_is_sent() {
    let s = Sandbox::new();
    let docs = s.repo().join("docs");
    if !make_documents(&docs) {
        return;
    }
    let fake = FakeModel::start();
    s.user(
        "config.toml",
        &format!(
            "[providers.fake]\nkind = \"openai\"\nbase_url = \"{}\"\n",
            fake.url
        ),
    );
    let server = Server::start(&s, &[]);
    let requests = |with_viewer: bool| {
        let server = &server;
        let fake = &fake;
        let repo = s.repo();
        async move {
            let id = coding_session(server, &repo, "fake:m").await;
            let last = turn(server, &id, "first question", None).await;
            if with_viewer {
                for path in [
                    "docs/report.docx",
                    "docs/book.xlsx",
                    "docs/deck.pptx",
                    "docs/paper.pdf",
                ] {
                    let (status, _) = get(server, &document_path(&id, path)).await;
                    assert_eq!(status, 200, "{path}");
                }
                let (status, _) =
                    get(server, &format!("/api/viewer/files?session={id}&dir=docs")).await;
                assert_eq!(status, 200);
            }
            turn(server, &id, "second question", Some(last)).await;
            let (_, shown) = get(server, &format!("/api/sessions/{id}")).await;
            (fake.take(), shown["transcript"].clone())
        }
    };
    let (plain, plain_transcript) = requests(false).await;
    let (viewed, viewed_transcript) = requests(true).await;
    // Per message: the skill resolver's request and the turn's.
    assert_eq!(plain.len(), 4, "{plain:#?}");
    // Byte for byte but for each session's own prompt-cache key: the
    // session that opened four documents sent exactly what the one that
    // did not sent, and kept the same transcript.
    let (viewed_keys, viewed_bodies) = FakeModel::without_cache_keys(&viewed);
    let (plain_keys, plain_bodies) = FakeModel::without_cache_keys(&plain);
    assert_eq!(viewed_bodies, plain_bodies);
    assert_ne!(viewed_keys, plain_keys);
    assert_eq!(
        viewed_transcript.to_string().len(),
        plain_transcript.to_string().len()
    );
    for body in &viewed {
        for text in [
            "Quarterly report",
            "Viewer deck",
            "Page 2 heading",
            "unaudited",
            "Lisbon",
        ] {
            assert!(!body.contains(text), "{text} reached the model: {body}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_kind_opens_in_the_browser_from_the_files_and_from_a_tool_card() {
    let Some(browser) = Browser::start().await else {
        return;
    };
    let s = Sandbox::new();
    let docs = s.repo().join("docs");
    if !make_documents(&docs) {
        return;
    }
    let model = script(
        &s,
        "report.yaml",
        "turns:\n  - reply:\n      tool_calls:\n        - {name: read, arguments: {path: docs/report.docx}}\n  - reply: {text: \"Here is the report.\"}\n",
    );
    let server = Server::start(&s, &[]);
    let id = coding_session(&server, &s.repo(), &model).await;
    turn(&server, &id, "show me the report", None).await;

    browser
        .goto(&format!("{}/#token={}", server.url, server.token))
        .await;
    browser.wait("document.querySelector('main h1')").await;
    // From the tool card of the chat.
    browser.goto(&format!("{}/#/chat/{id}", server.url)).await;
    browser
        .wait("document.querySelector('details.tool a.doc-link')")
        .await;
    browser
        .js(
            "document.querySelector('details.tool').open = true",
            json!([]),
        )
        .await;
    browser.click("details.tool a.doc-link").await;
    browser
        .wait("document.querySelector('#document h1')?.textContent === 'Quarterly report'")
        .await;
    browser.screenshot("viewer-docx").await;

    // From the file listing: each kind.
    for (name, ready, shot) in [
        (
            "book.xlsx",
            "document.querySelector('#document table.sheet td.n')?.textContent === '10'",
            "viewer-xlsx",
        ),
        (
            "deck.pptx",
            "document.querySelector('#document .slide .shape.title')?.style.left !== ''",
            "viewer-pptx",
        ),
        (
            "paper.pdf",
            "document.querySelector('#document .page')?.textContent.includes('Page 1 heading')",
            "viewer-pdf",
        ),
    ] {
        browser
            .goto(&format!("{}/#/files/{id}/0/docs", server.url))
            .await;
        browser
            .wait("document.querySelector('table.files a.doc-link')")
            .await;
        browser.click_text(name).await;
        let ok = browser.wait(ready).await;
        assert_eq!(ok, true, "{name}");
        browser.screenshot(shot).await;
    }
    // The workbook's second sheet, by its tab.
    browser
        .goto(&format!("{}/#/viewer/{id}/0/docs/book.xlsx", server.url))
        .await;
    browser.wait("document.querySelector('.tabs button')").await;
    browser.click_text("Notes").await;
    browser
        .wait("document.querySelector('#document')?.textContent.includes('unaudited')")
        .await;
    // The PDF's notices are shown with their codes.
    browser
        .goto(&format!("{}/#/viewer/{id}/0/docs/paper.pdf", server.url))
        .await;
    let code = browser
        .wait("document.querySelector('.notices li')?.dataset.code")
        .await;
    assert_eq!(code, "viewer/text-only");
}
