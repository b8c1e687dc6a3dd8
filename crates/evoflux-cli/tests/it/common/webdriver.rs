//! A small W3C WebDriver client for the browser tests: Debian's chromium
//! driven by chromedriver on a loopback port. Only what the tests use:
//! navigate, run a script, find, click, type, refresh, screenshot.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";

pub struct Browser {
    driver: Child,
    http: reqwest::Client,
    base: String,
    _profile: tempfile::TempDir,
}

fn found(var: &str, default: &str) -> Option<String> {
    let path = std::env::var(var).unwrap_or_else(|_| default.to_owned());
    std::path::Path::new(&path).is_file().then_some(path)
}

impl Browser {
    /// Starts chromedriver and a headless chromium session; `None` (the
    /// test is skipped) when they are not installed (`.ci/run` installs
    /// them).
    pub async fn start() -> Option<Browser> {
        let (Some(driver_bin), Some(chromium)) = (
            found("EVOFLUX_TEST_CHROMEDRIVER", "/usr/bin/chromedriver"),
            found("EVOFLUX_TEST_CHROMIUM", "/usr/bin/chromium"),
        ) else {
            evoflux_core::prerequisite::missing(
                "chromium with chromedriver",
                "install the Debian packages `chromium` and `chromium-driver` \
                 (or name them in EVOFLUX_TEST_CHROMIUM and EVOFLUX_TEST_CHROMEDRIVER)",
            );
            return None;
        };
        let port = super::free_port();
        // Its own process group, so the browser it starts goes with it.
        let driver = std::os::unix::process::CommandExt::process_group(
            Command::new(driver_bin).arg(format!("--port={port}")),
            0,
        )
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
        evoflux_core::tls::install_crypto_provider();
        let http = reqwest::Client::new();
        let base = format!("http://127.0.0.1:{port}");
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let ready = http.get(format!("{base}/status")).send().await;
            if let Ok(r) = ready
                && let Ok(v) = r.json::<Value>().await
                && v["value"]["ready"] == true
            {
                break;
            }
            assert!(Instant::now() < deadline, "chromedriver did not start");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let profile = tempfile::tempdir().unwrap();
        let caps = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {
                "binary": chromium,
                "args": [
                    "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic",
                    "--no-first-run", "--disable-background-networking",
                    "--disable-component-update", "--disable-sync",
                    "--window-size=1280,900",
                    format!("--user-data-dir={}", profile.path().display()),
                ]
            }
        }}});
        let created: Value = http
            .post(format!("{base}/session"))
            .json(&caps)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let id = created["value"]["sessionId"]
            .as_str()
            .unwrap_or_else(|| panic!("no WebDriver session: {created}"))
            .to_owned();
        Some(Browser {
            driver,
            http,
            base: format!("{base}/session/{id}"),
            _profile: profile,
        })
    }

    async fn call(&self, method: &str, path: &str, body: Option<Value>) -> Value {
        let mut r = self
            .http
            .request(method.parse().unwrap(), format!("{}{path}", self.base));
        if let Some(b) = body {
            r = r.json(&b);
        }
        let v: Value = r.send().await.unwrap().json().await.unwrap();
        if let Some(e) = v["value"]["error"].as_str() {
            panic!("WebDriver {method} {path}: {e}: {}", v["value"]["message"]);
        }
        v["value"].clone()
    }

    pub async fn goto(&self, url: &str) {
        self.call("POST", "/url", Some(json!({"url": url}))).await;
    }

    /// Sets the window's outer size (a phone's width, say).
    pub async fn resize(&self, width: u32, height: u32) {
        self.call(
            "POST",
            "/window/rect",
            Some(json!({"width": width, "height": height})),
        )
        .await;
    }

    pub async fn refresh(&self) {
        self.call("POST", "/refresh", Some(json!({}))).await;
    }

    /// Runs `script` (a function body; `arguments` are `args`) in the page.
    pub async fn js(&self, script: &str, args: Value) -> Value {
        self.call(
            "POST",
            "/execute/sync",
            Some(json!({"script": script, "args": args})),
        )
        .await
    }

    /// Runs an async script: it calls `arguments[arguments.length - 1]`
    /// with its result.
    pub async fn js_async(&self, script: &str, args: Value) -> Value {
        self.call("POST", "/timeouts", Some(json!({"script": 30_000})))
            .await;
        self.call(
            "POST",
            "/execute/async",
            Some(json!({"script": script, "args": args})),
        )
        .await
    }

    /// Waits until `condition` (a JS expression) is truthy; returns its value.
    pub async fn wait(&self, condition: &str) -> Value {
        let deadline = Instant::now() + Duration::from_secs(20);
        let script = format!("try {{ return ({condition}); }} catch (e) {{ return null; }}");
        loop {
            let v = self.js(&script, json!([])).await;
            if !(v.is_null() || v == false || v == "" || v == 0) {
                return v;
            }
            if Instant::now() > deadline {
                let text = self.js("return document.body.innerText", json!([])).await;
                panic!("timed out waiting for `{condition}`; the page shows:\n{text}");
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    async fn element(&self, css: &str) -> String {
        self.wait(&format!("document.querySelector({css:?})")).await;
        let v = self
            .call(
                "POST",
                "/element",
                Some(json!({"using": "css selector", "value": css})),
            )
            .await;
        v[ELEMENT].as_str().unwrap().to_owned()
    }

    pub async fn click(&self, css: &str) {
        let e = self.element(css).await;
        self.call("POST", &format!("/element/{e}/click"), Some(json!({})))
            .await;
    }

    /// Clicks the first button (or link) whose text is `text`.
    pub async fn click_text(&self, text: &str) {
        self.wait(&format!(
            "[...document.querySelectorAll('button, a')].find(b => b.textContent.trim() === {text:?} && b.offsetParent !== null)"
        ))
        .await;
        self.js(
            "[...document.querySelectorAll('button, a')].find(b => b.textContent.trim() === arguments[0] && b.offsetParent !== null).click()",
            json!([text]),
        )
        .await;
    }

    /// Types into the element (keys as a user presses them).
    pub async fn type_into(&self, css: &str, text: &str) {
        let e = self.element(css).await;
        self.call(
            "POST",
            &format!("/element/{e}/value"),
            Some(json!({"text": text})),
        )
        .await;
    }

    /// Runs the next scripts in the `<iframe>` `css` names, or (`None`)
    /// in the top page again.
    pub async fn frame(&self, css: Option<&str>) {
        let id = match css {
            Some(css) => json!({ELEMENT: self.element(css).await}),
            None => Value::Null,
        };
        self.call("POST", "/frame", Some(json!({"id": id}))).await;
    }

    pub async fn clear(&self, css: &str) {
        let e = self.element(css).await;
        self.call("POST", &format!("/element/{e}/clear"), Some(json!({})))
            .await;
    }

    /// Saves a screenshot under `target/ui-screenshots/`.
    pub async fn screenshot(&self, name: &str) {
        use base64::Engine as _;
        let v = self.call("GET", "/screenshot", None).await;
        let png = base64::engine::general_purpose::STANDARD
            .decode(v.as_str().unwrap())
            .unwrap();
        let dir =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/ui-screenshots");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(format!("{name}.png")), png).unwrap();
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .args(["-KILL", "--", &format!("-{}", self.driver.id())])
            .status();
        let _ = self.driver.wait();
    }
}

/// What every page test does: open the UI with a server's token, and check
/// a page with axe-core.
impl Browser {
    /// Opens the UI with the server's token in the address's fragment,
    /// then `route` (`chat`, `settings/mcp`, `chat/<id>`, …).
    pub async fn open_ui(&self, server: &super::server::Server, route: &str) {
        self.goto(&format!("{}/#token={}", server.url, server.token))
            .await;
        self.wait("document.querySelector('main h1')").await;
        self.goto(&format!("{}/#/{route}", server.url)).await;
    }

    /// Runs axe-core on the page as it is; returns the serious and
    /// critical violations (none when EVOFLUX_TEST_AXE names no
    /// axe.min.js).
    pub async fn axe_violations(&self) -> Value {
        let Some(axe) = std::env::var_os("EVOFLUX_TEST_AXE") else {
            eprintln!("axe-core check skipped: EVOFLUX_TEST_AXE names no axe.min.js");
            return json!([]);
        };
        let axe = std::fs::read_to_string(axe).unwrap();
        self.js(&axe, json!([])).await;
        self.js_async(
            "const done = arguments[arguments.length - 1]; axe.run(document).then(r => done(r.violations.filter(v => v.impact === 'serious' || v.impact === 'critical').map(v => ({id: v.id, nodes: v.nodes.map(n => n.target.join(' ')).slice(0, 5)}))));",
            json!([]),
        )
        .await
    }
}
