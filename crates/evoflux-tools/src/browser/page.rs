//! The actions on the session's page: each one a few DevTools calls, then
//! (for those that change the page) the page read again, so the model
//! always acts on numbers it has just seen.

use std::fmt::Write as _;
use std::time::Duration;

use base64::Engine as _;
use evoflux_graph::tool::builtin::browser::ACTIONS;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::time::Instant;

use super::cdp::Cdp;
use super::reach::Gate;
use super::{
    BrowserConfig, BrowserOutput, DEFAULT_TIMEOUT_SECONDS, MAX_DOWNLOAD_BYTES, MAX_ELEMENTS,
    MAX_TEXT_CHARS, MAX_TIMEOUT_SECONDS, MIN_TIMEOUT_SECONDS, Screenshot, Shared,
};
use crate::output::ToolOutput;
use crate::sync::lock;

/// The script that reads the page ([`Page::read`]).
const SNAPSHOT_JS: &str = include_str!("snapshot.js");
/// How often a wait looks at the page again.
const POLL: Duration = Duration::from_millis(100);

/// What a call asks. Closed: [`Page::act`] matches every one. In the
/// order of [`ACTIONS`], which [`action_name`] relies on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Action {
    Open,
    Read,
    Click,
    Type,
    Select,
    Scroll,
    Wait,
    Back,
    Screenshot,
    Download,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
enum Direction {
    #[default]
    Down,
    Up,
}

/// One call's arguments (checked against the schema first).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BrowserInput {
    pub action: Action,
    #[serde(default)]
    url: Option<String>,
    #[serde(default)]
    element: Option<u64>,
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    submit: bool,
    #[serde(default)]
    value: Option<String>,
    #[serde(default)]
    direction: Direction,
    #[serde(default)]
    selector: Option<String>,
    #[serde(default)]
    timeout: Option<u64>,
}

impl BrowserInput {
    pub fn parse(input: &Value) -> Result<BrowserInput, String> {
        serde_json::from_value(input.clone()).map_err(|e| format!("invalid browser input: {e}"))
    }

    /// The asked timeout within the schema's bounds.
    pub fn timeout(&self) -> Duration {
        Duration::from_secs(
            self.timeout
                .unwrap_or(DEFAULT_TIMEOUT_SECONDS)
                .clamp(MIN_TIMEOUT_SECONDS, MAX_TIMEOUT_SECONDS),
        )
    }

    fn needs<'a, T>(&self, field: &'a Option<T>, name: &str) -> Result<&'a T, String> {
        field
            .as_ref()
            .ok_or_else(|| format!("`{}` needs `{name}`", action_name(self.action)))
    }
}

/// The session's page for one call.
pub(crate) struct Page<'a> {
    pub cdp: &'a Cdp,
    pub session: &'a str,
    pub shared: &'a Shared,
    pub config: &'a BrowserConfig,
    /// What the page's requests pass.
    pub gate: Gate,
    /// When the call's `timeout` runs out.
    pub deadline: Instant,
}

impl Page<'_> {
    pub(crate) async fn act(&self, input: &BrowserInput) -> BrowserOutput {
        let limit = input.timeout();
        let result = match tokio::time::timeout_at(self.deadline, self.dispatch(input)).await {
            Ok(r) => r,
            Err(_) => Err(format!(
                "the browser's `{}` did not finish within {} s; try a larger `timeout` (at most {MAX_TIMEOUT_SECONDS})",
                action_name(input.action),
                limit.as_secs()
            )),
        };
        self.finish(result)
    }

    /// Opens `url`, waits for it to load and takes a screenshot, within
    /// the call's deadline.
    pub(crate) async fn snapshot(&self, url: &str) -> BrowserOutput {
        let shot = async {
            self.gate.check(url).await?;
            self.navigate(url).await?;
            self.screenshot().await
        };
        let result = match tokio::time::timeout_at(self.deadline, shot).await {
            Ok(r) => r,
            Err(_) => Err(format!("{url} did not load and show within the time given")),
        };
        self.finish(result)
    }

    /// A call's result, with the requests the browser refused meanwhile.
    fn finish(&self, result: Result<BrowserOutput, String>) -> BrowserOutput {
        let blocked: Vec<String> = std::mem::take(&mut *lock(&self.shared.blocked));
        let mut out = match result {
            Ok(out) => out,
            Err(e) => BrowserOutput::text(ToolOutput::error(e)),
        };
        if !blocked.is_empty() {
            let mut note = String::from("\n\nRequests refused:\n");
            for b in blocked.iter().take(10) {
                let _ = writeln!(note, "- {b}");
            }
            if blocked.len() > 10 {
                let _ = writeln!(note, "- … and {} more", blocked.len() - 10);
            }
            out.output.text.push_str(note.trim_end());
        }
        out
    }

    async fn dispatch(&self, input: &BrowserInput) -> Result<BrowserOutput, String> {
        match input.action {
            Action::Open => {
                let url = input.needs(&input.url, "url")?;
                self.gate.check(url).await?;
                self.navigate(url).await?;
                self.read().await
            }
            Action::Read => self.read().await,
            Action::Click => {
                let n = *input.needs(&input.element, "element")?;
                self.click(n).await?;
                self.settle().await;
                self.read().await
            }
            Action::Type => {
                let n = *input.needs(&input.element, "element")?;
                let text = input.needs(&input.text, "text")?;
                self.type_into(n, text, input.submit).await?;
                self.settle().await;
                self.read().await
            }
            Action::Select => {
                let n = *input.needs(&input.element, "element")?;
                let value = input.needs(&input.value, "value")?;
                self.select(n, value).await?;
                self.settle().await;
                self.read().await
            }
            Action::Scroll => {
                let sign = match input.direction {
                    Direction::Down => 1,
                    Direction::Up => -1,
                };
                self.eval(&format!(
                    "window.scrollBy(0, {sign} * window.innerHeight * 0.8)"
                ))
                .await?;
                self.read().await
            }
            Action::Wait => {
                let check = match (&input.text, &input.selector) {
                    (Some(text), None) => format!(
                        "!!document.body && document.body.innerText.includes({})",
                        json!(text)
                    ),
                    (None, Some(sel)) => format!("!!document.querySelector({})", json!(sel)),
                    _ => return Err("`wait` needs exactly one of `text` and `selector`".into()),
                };
                loop {
                    if self.eval(&check).await? == Value::Bool(true) {
                        break;
                    }
                    tokio::time::sleep(POLL).await;
                }
                self.read().await
            }
            Action::Back => {
                let history = self.call("Page.getNavigationHistory", json!({})).await?;
                let current = history["currentIndex"].as_u64().unwrap_or(0);
                let Some(previous) = current
                    .checked_sub(1)
                    .and_then(|i| history["entries"].get(usize::try_from(i).ok()?))
                else {
                    return Err("there is no previous page to go back to".into());
                };
                self.call(
                    "Page.navigateToHistoryEntry",
                    json!({"entryId": previous["id"]}),
                )
                .await?;
                self.settle().await;
                self.read().await
            }
            Action::Screenshot => self.screenshot().await,
            Action::Download => self.download(input).await,
        }
    }

    async fn call(&self, method: &str, params: Value) -> Result<Value, String> {
        self.cdp.call(Some(self.session), method, params).await
    }

    /// Evaluates `expression` in the page; its value, or the exception.
    async fn eval(&self, expression: &str) -> Result<Value, String> {
        let r = self
            .call(
                "Runtime.evaluate",
                json!({"expression": expression, "returnByValue": true, "awaitPromise": true}),
            )
            .await?;
        if let Some(e) = r.get("exceptionDetails") {
            let text = e["exception"]["description"]
                .as_str()
                .or_else(|| e["text"].as_str())
                .unwrap_or("the page's script failed");
            return Err(text.lines().next().unwrap_or_default().to_owned());
        }
        Ok(r["result"]["value"].clone())
    }

    async fn navigate(&self, url: &str) -> Result<(), String> {
        let r = self.call("Page.navigate", json!({"url": url})).await?;
        if let Some(error) = r["errorText"].as_str() {
            let blocked = lock(&self.shared.blocked).first().cloned();
            return Err(match blocked {
                Some(why) => format!("cannot open {url}: {why}"),
                None => format!("cannot open {url}: {error}"),
            });
        }
        self.wait_loaded().await;
        Ok(())
    }

    /// Waits until the document has loaded (or the call's time is up).
    async fn wait_loaded(&self) {
        while Instant::now() < self.deadline {
            match self.eval("document.readyState").await {
                Ok(Value::String(s)) if s == "complete" => return,
                Ok(_) | Err(_) => tokio::time::sleep(POLL).await,
            }
        }
    }

    /// After an input: lets a navigation it started begin, then waits for
    /// the page to load.
    async fn settle(&self) {
        tokio::time::sleep(Duration::from_millis(300)).await;
        self.wait_loaded().await;
    }

    /// Scrolls element `n` into view and returns its centre, or says the
    /// number is stale.
    async fn locate(&self, n: u64) -> Result<(f64, f64), String> {
        let v = self
            .eval(&format!(
                "(() => {{ const el = document.querySelector('[data-evoflux-ref=\"{n}\"]'); \
                 if (!el) return null; el.scrollIntoView({{block: 'center', inline: 'center'}}); \
                 const r = el.getBoundingClientRect(); \
                 return [r.left + r.width / 2, r.top + r.height / 2]; }})()"
            ))
            .await?;
        match (v[0].as_f64(), v[1].as_f64()) {
            (Some(x), Some(y)) => Ok((x, y)),
            _ => Err(stale(n)),
        }
    }

    async fn click(&self, n: u64) -> Result<(), String> {
        let (x, y) = self.locate(n).await?;
        for kind in ["mouseMoved", "mousePressed", "mouseReleased"] {
            self.call(
                "Input.dispatchMouseEvent",
                json!({"type": kind, "x": x, "y": y, "button": "left", "clickCount": 1}),
            )
            .await?;
        }
        Ok(())
    }

    async fn type_into(&self, n: u64, text: &str, submit: bool) -> Result<(), String> {
        self.locate(n).await?;
        let focused = self
            .eval(&format!(
                "(() => {{ const el = document.querySelector('[data-evoflux-ref=\"{n}\"]'); \
                 if (!el) return false; el.focus(); \
                 if (typeof el.select === 'function') el.select(); \
                 else document.execCommand('selectAll'); \
                 return document.activeElement === el; }})()"
            ))
            .await?;
        if focused != Value::Bool(true) {
            return Err(format!("element [{n}] cannot take text"));
        }
        self.call("Input.insertText", json!({"text": text})).await?;
        if submit {
            for kind in ["keyDown", "keyUp"] {
                self.call(
                    "Input.dispatchKeyEvent",
                    json!({"type": kind, "key": "Enter", "code": "Enter",
                           "windowsVirtualKeyCode": 13, "text": "\r"}),
                )
                .await?;
            }
        }
        Ok(())
    }

    async fn select(&self, n: u64, value: &str) -> Result<(), String> {
        let r = self
            .eval(&format!(
                "(() => {{ const el = document.querySelector('[data-evoflux-ref=\"{n}\"]'); \
                 if (!el) return 'stale'; if (el.tagName !== 'SELECT') return 'not-select'; \
                 const want = {want}; \
                 const o = Array.from(el.options).find(o => o.value === want || o.label === want || o.text.trim() === want); \
                 if (!o) return 'no-option:' + Array.from(el.options).map(o => o.label).join(', '); \
                 el.value = o.value; \
                 el.dispatchEvent(new Event('input', {{bubbles: true}})); \
                 el.dispatchEvent(new Event('change', {{bubbles: true}})); return 'ok'; }})()",
                want = json!(value)
            ))
            .await?;
        match r.as_str().unwrap_or_default() {
            "ok" => Ok(()),
            "stale" => Err(stale(n)),
            "not-select" => Err(format!(
                "element [{n}] is not a list to select from; use click or type"
            )),
            other => Err(format!(
                "element [{n}] has no option `{value}`; its options: {}",
                other.trim_start_matches("no-option:")
            )),
        }
    }

    /// The page as text with its numbered elements.
    async fn read(&self) -> Result<BrowserOutput, String> {
        let v = self
            .eval(&format!(
                "({SNAPSHOT_JS})({})",
                json!({"maxText": MAX_TEXT_CHARS, "maxElements": MAX_ELEMENTS})
            ))
            .await?;
        Ok(BrowserOutput::text(ToolOutput::ok(render(&v))))
    }

    async fn screenshot(&self) -> Result<BrowserOutput, String> {
        let r = self
            .call("Page.captureScreenshot", json!({"format": "png"}))
            .await?;
        let data = r["data"]
            .as_str()
            .ok_or("the browser returned no image")?
            .to_owned();
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(&data)
            .map_err(|e| format!("the browser returned an unreadable image: {e}"))?;
        let dir = self.config.screenshots_dir();
        let n = std::fs::read_dir(&dir).map(Iterator::count).unwrap_or(0) + 1;
        let path = dir.join(format!("screenshot-{n}.png"));
        std::fs::write(&path, &bytes)
            .map_err(|e| format!("cannot keep the screenshot at {}: {e}", path.display()))?;
        let url = self.eval("location.href").await.unwrap_or(Value::Null);
        let (w, h) = super::VIEWPORT;
        Ok(BrowserOutput {
            output: ToolOutput::ok(format!(
                "Screenshot of {} ({w}x{h}), kept at {}",
                url.as_str().unwrap_or("the page"),
                path.display()
            )),
            screenshot: Some(Screenshot {
                png_base64: data,
                path,
            }),
        })
    }

    /// Saves a file into the session's downloads folder: the `url`'s, or
    /// the one the link `element` leads to.
    async fn download(&self, input: &BrowserInput) -> Result<BrowserOutput, String> {
        let before = lock(&self.shared.downloads).len();
        match (&input.url, input.element) {
            (Some(url), None) => {
                self.gate.check(url).await?;
                // A download aborts the navigation; that is expected.
                self.call("Page.navigate", json!({"url": url})).await?;
            }
            (None, Some(n)) => self.click(n).await?,
            _ => return Err("`download` needs exactly one of `url` and `element`".into()),
        }
        loop {
            let changed = self.shared.download_changed.notified();
            let done = lock(&self.shared.downloads).get(before).cloned();
            if let Some(d) = done {
                match d.state.as_str() {
                    "completed" => {
                        let path = self.config.downloads_dir().join(&d.file);
                        return Ok(BrowserOutput::text(ToolOutput::ok(format!(
                            "Downloaded {} ({} bytes) to {}",
                            d.file,
                            d.received,
                            path.display()
                        ))));
                    }
                    "canceled" if d.received > MAX_DOWNLOAD_BYTES => {
                        return Err(format!(
                            "the download of {} was stopped: it is larger than {MAX_DOWNLOAD_BYTES} bytes",
                            d.file
                        ));
                    }
                    "canceled" => return Err(format!("the download of {} failed", d.file)),
                    _ => {}
                }
            }
            let blocked = lock(&self.shared.blocked).first().cloned();
            if let Some(why) = blocked {
                return Err(format!("nothing was downloaded: {why}"));
            }
            // Woken by the browser's next download event, or polls.
            let _ = tokio::time::timeout(Duration::from_millis(500), changed).await;
        }
    }
}

/// Its serde name: [`ACTIONS`] lists them in the enum's order.
fn action_name(action: Action) -> &'static str {
    ACTIONS[action as usize]
}

fn stale(n: u64) -> String {
    format!(
        "element [{n}] is not on the page (numbers change when the page does); read the page again"
    )
}

/// The read as the model sees it.
fn render(v: &Value) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "Page: {}", v["title"].as_str().unwrap_or_default());
    let _ = writeln!(out, "URL: {}\n", v["url"].as_str().unwrap_or_default());
    let text = v["text"].as_str().unwrap_or_default();
    out.push_str(text.trim());
    let total = v["textChars"].as_u64().unwrap_or(0);
    let shown = text.chars().count() as u64;
    if total > shown {
        let _ = write!(out, "\n[… {} more characters not shown]", total - shown);
    }
    let elements = v["elements"].as_array().map(Vec::as_slice).unwrap_or(&[]);
    if elements.is_empty() {
        out.push_str("\n\nNo interactive elements.");
        return out;
    }
    out.push_str("\n\nInteractive elements (use their numbers as `element`):");
    for e in elements {
        let _ = write!(
            out,
            "\n[{}] {} {}",
            e["n"],
            e["role"].as_str().unwrap_or_default(),
            json!(e["name"].as_str().unwrap_or_default())
        );
        if let Some(value) = e.get("value").and_then(Value::as_str) {
            let _ = write!(out, " value={}", json!(value));
        }
        if let Some(checked) = e.get("checked").and_then(Value::as_bool) {
            out.push_str(if checked { " checked" } else { " unchecked" });
        }
        if let Some(options) = e.get("options").and_then(Value::as_array) {
            let names: Vec<&str> = options.iter().filter_map(Value::as_str).collect();
            let _ = write!(out, " options: {}", names.join(" | "));
        }
        if e.get("disabled").is_some() {
            out.push_str(" disabled");
        }
    }
    if let Some(more) = v["moreElements"].as_u64().filter(|m| *m > 0) {
        let _ = write!(
            out,
            "\n… and {more} more not listed (scroll or wait to narrow)"
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The schema the model sees and this parser agree on every action and
    /// field.
    #[test]
    fn input_matches_the_framework_schema() {
        let schema = evoflux_graph::tool::framework_tool("browser")
            .unwrap()
            .input_schema;
        let props = schema["properties"].as_object().unwrap();
        for action in props["action"]["enum"].as_array().unwrap() {
            let parsed = BrowserInput::parse(&json!({"action": action})).unwrap();
            assert_eq!(json!(parsed.action), *action);
            assert_eq!(action_name(parsed.action), action.as_str().unwrap());
        }
        let all = json!({
            "action": "type", "url": "https://example.com", "element": 2, "text": "x",
            "submit": true, "value": "v", "direction": "up", "selector": "p", "timeout": 5
        });
        assert_eq!(all.as_object().unwrap().len(), props.len());
        assert!(BrowserInput::parse(&all).is_ok());
        assert!(BrowserInput::parse(&json!({"action": "fly"})).is_err());
        let t = |s: u64| {
            BrowserInput::parse(&json!({"action": "read", "timeout": s}))
                .unwrap()
                .timeout()
                .as_secs()
        };
        assert_eq!(t(0), MIN_TIMEOUT_SECONDS);
        assert_eq!(t(MAX_TIMEOUT_SECONDS + 5), MAX_TIMEOUT_SECONDS);
    }

    #[test]
    fn a_read_lists_elements_with_their_numbers() {
        let text = render(&json!({
            "title": "Form", "url": "http://x/", "text": "Hello", "textChars": 5,
            "elements": [
                {"n": 1, "role": "textbox", "name": "Name", "value": ""},
                {"n": 2, "role": "combobox", "name": "Colour", "value": "red", "options": ["red", "green"]},
                {"n": 3, "role": "button", "name": "Send"}
            ],
            "moreElements": 0
        }));
        assert!(text.contains("[1] textbox \"Name\" value=\"\""), "{text}");
        assert!(text.contains("[2] combobox \"Colour\" value=\"red\" options: red | green"));
        assert!(text.contains("[3] button \"Send\""));
    }
}
