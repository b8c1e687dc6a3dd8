//! Root-absolute links of a previewed app (issue #52): a page served under
//! a preview's proxy that names `/static/app.js` gets it rewritten below
//! the proxy, in its HTML and in its CSS; other content passes unchanged,
//! and a root-absolute path outside the proxy stays evoflux's own (`404`).

use crate::common;

use std::time::{Duration, Instant};

use reqwest::redirect::Policy;
use serde_json::{Value, json};

/// The interpreter, outside any user's home (the sandbox hides homes).
const PYTHON: &str = "/usr/bin/python3";

struct Api {
    http: reqwest::Client,
    url: String,
}

impl Api {
    async fn call(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> (u16, Value) {
        let mut request = self
            .http
            .request(method, format!("{}{path}", self.url))
            .bearer_auth(common::TOKEN);
        if let Some(body) = body {
            request = request.json(&body);
        }
        let r = request.send().await.unwrap();
        (r.status().as_u16(), r.json().await.unwrap_or(Value::Null))
    }

    /// A `GET` without the token, as a frame loads it; status and body.
    async fn anonymous(&self, path: &str) -> (u16, String) {
        let r = self
            .http
            .get(format!("{}{path}", self.url))
            .send()
            .await
            .unwrap();
        (r.status().as_u16(), r.text().await.unwrap())
    }
}

/// The running preview's proxy path, once the session's preview serves.
async fn proxy_path(api: &Api, id: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let (status, list) = api
            .call(
                reqwest::Method::GET,
                &format!("/api/sessions/{id}/previews"),
                None,
            )
            .await;
        assert_eq!(status, 200, "{list}");
        if let Some(path) = list["items"][0]["proxy_path"].as_str() {
            return path.to_owned();
        }
        assert!(
            Instant::now() < deadline,
            "the preview never served: {list}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_previewed_page_s_root_absolute_links_go_under_its_proxy() {
    if !std::path::Path::new(PYTHON).exists() {
        evoflux_core::prerequisite::missing("python3", "install Python 3 (Debian: python3)");
        return;
    }
    let (tmp, app) = common::setup();
    let site = app.cwd.join("site");
    std::fs::create_dir_all(site.join("static")).unwrap();
    std::fs::write(
        site.join("index.html"),
        "<script src=\"/static/app.js\"></script>",
    )
    .unwrap();
    std::fs::write(
        site.join("static/app.js"),
        "document.title = 'from app.js';",
    )
    .unwrap();
    std::fs::write(
        site.join("static/site.css"),
        "@import '/base.css'; body { background: url(/img/a.png) }",
    )
    .unwrap();
    std::fs::write(site.join("notes.txt"), "<script src=\"/static/app.js\">").unwrap();
    let command = format!("exec {PYTHON} -m http.server 0 --bind 127.0.0.1 --directory site");
    let model = evoflux_app::testing::script(
        tmp.path(),
        &format!(
            "turns:\n  - reply:\n      tool_calls:\n        - {{name: preview, arguments: {{action: start, command: {}}}}}\n  - expect: {{tool_result: {{contains: serving}}}}\n    reply: {{text: \"It is up.\"}}\n",
            serde_json::to_string(&command).unwrap()
        ),
    );
    let server = common::start(&app, |_| {}).await;
    let api = Api {
        http: reqwest::Client::builder()
            .redirect(Policy::none())
            .build()
            .unwrap(),
        url: server.url(),
    };
    let (status, created) = api
        .call(
            reqwest::Method::POST,
            "/api/sessions",
            Some(json!({"mode": "coding", "model": model, "message": "preview it"})),
        )
        .await;
    assert_eq!(status, 201, "{created}");
    let id = created["session_id"].as_str().unwrap().to_owned();
    let proxy = proxy_path(&api, &id).await;

    // The page's root-absolute script is named below the proxy.
    let (status, page) = api.anonymous(&format!("{proxy}index.html")).await;
    assert_eq!(status, 200, "{page}");
    assert_eq!(
        page,
        format!("<script src=\"{proxy}static/app.js\"></script>")
    );
    let (status, script) = api.anonymous(&format!("{proxy}static/app.js")).await;
    assert_eq!(status, 200);
    assert_eq!(script, "document.title = 'from app.js';");
    // The sandboxed page's own fetches and module scripts are
    // cross-origin: every proxied answer allows them.
    let answer = api
        .http
        .get(format!("{}{proxy}static/app.js", api.url))
        .header("origin", "null")
        .send()
        .await
        .unwrap();
    assert_eq!(
        answer
            .headers()
            .get("access-control-allow-origin")
            .and_then(|v| v.to_str().ok()),
        Some("*")
    );
    // So are a style sheet's.
    let (_, css) = api.anonymous(&format!("{proxy}static/site.css")).await;
    assert_eq!(
        css,
        format!("@import '{proxy}base.css'; body {{ background: url({proxy}img/a.png) }}")
    );
    // Other content passes unchanged.
    let (_, text) = api.anonymous(&format!("{proxy}notes.txt")).await;
    assert_eq!(text, "<script src=\"/static/app.js\">");
    // Outside the proxy the path is evoflux's: no such route.
    let (status, body) = api.anonymous("/static/app.js").await;
    assert_eq!(status, 404);
    assert!(body.contains("server/route-not-found"), "{body}");
    server.stop().await;
}
