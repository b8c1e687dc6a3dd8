#![allow(clippy::unwrap_used, clippy::expect_used)]

//! `web_fetch` against a local server: conversion, redirects, caps and the
//! address policy.

use axum::Router;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Redirect};
use axum::routing::get;
use evoflux_tools::web_fetch::{MAX_OUTPUT_CHARS, NetworkAccess, WebFetch};
use serde_json::json;

async fn serve() -> String {
    let app = Router::new()
        .route(
            "/page",
            get(|| async {
                (
                    [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
                    "<html><head><script>var secret=1;</script></head><body><h1>Title</h1><p>Some <b>bold</b> text and a <a href=\"https://example.com/x\">link</a>.</p></body></html>",
                )
            }),
        )
        .route("/hop", get(|| async { Redirect::temporary("/page") }))
        .route("/loop", get(|| async { Redirect::temporary("/loop") }))
        .route("/big", get(|| async { "x".repeat(MAX_OUTPUT_CHARS + 10) }))
        .route(
            "/missing",
            get(|| async { (StatusCode::NOT_FOUND, "no such page").into_response() }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    format!("http://{addr}")
}

#[tokio::test]
async fn converts_html_and_follows_redirects() {
    let base = serve().await;
    let web = WebFetch::new(NetworkAccess::Any).unwrap();
    let md = web.run(&json!({"url": format!("{base}/hop")})).await;
    assert!(!md.is_error, "{}", md.text);
    assert!(md.text.contains("# Title"), "{}", md.text);
    assert!(md.text.contains("bold"));
    assert!(!md.text.contains("secret"), "scripts are dropped");
    assert!(md.text.contains(&format!("URL: {base}/page")));
    let text = web
        .run(&json!({"url": format!("{base}/page"), "format": "text"}))
        .await;
    assert!(text.text.contains("Some bold text"), "{}", text.text);
    assert!(md.text.contains("*bold*"), "{}", md.text);
    let html = web
        .run(&json!({"url": format!("{base}/page"), "format": "html"}))
        .await;
    assert!(html.text.contains("<h1>Title</h1>"));
}

#[tokio::test]
async fn caps_and_failures_are_visible() {
    let base = serve().await;
    let web = WebFetch::new(NetworkAccess::Any).unwrap();
    let big = web.run(&json!({"url": format!("{base}/big")})).await;
    assert!(big.text.contains("[… 10 more characters not shown]"));
    let looping = web.run(&json!({"url": format!("{base}/loop")})).await;
    assert!(looping.is_error && looping.text.contains("redirected more than"));
    let missing = web.run(&json!({"url": format!("{base}/missing")})).await;
    assert!(missing.is_error && missing.text.contains("Status: 404"));
    let bad = web.run(&json!({"url": "file:///etc/passwd"})).await;
    assert!(bad.is_error && bad.text.contains("use http or https"));
}

#[tokio::test]
async fn local_addresses_are_refused_by_default() {
    let base = serve().await;
    let web = WebFetch::new(NetworkAccess::PublicOnly).unwrap();
    let r = web.run(&json!({"url": format!("{base}/page")})).await;
    assert!(r.is_error);
    assert!(r.text.contains("local or private address"), "{}", r.text);
}
