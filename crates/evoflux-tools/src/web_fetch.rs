//! The `web_fetch` executor: one URL, converted to markdown, text or raw
//! HTML, within size and time caps.
//!
//! Redirects are followed by hand (at most [`MAX_REDIRECTS`]) so every hop
//! passes the same address check: by default nothing on loopback, private,
//! link-local or otherwise internal addresses is fetched, because a model
//! that can be steered by page content must not reach the user's local
//! services. The body is read up to [`MAX_BODY_BYTES`] and the converted
//! text is clipped to [`MAX_OUTPUT_CHARS`] with a visible note.

use std::net::IpAddr;
use std::time::Duration;

use futures_util::StreamExt;
use serde::Deserialize;
use serde_json::Value;

use crate::output::ToolOutput;

pub const MAX_REDIRECTS: usize = 10;
pub const MAX_BODY_BYTES: usize = 5 * 1024 * 1024;
pub const MAX_OUTPUT_CHARS: usize = 50_000;
// The `timeout` bounds are defined once, with the schema the model sees
// (see `evoflux_graph::tool::builtin`).
pub use evoflux_graph::tool::builtin::web_fetch::{
    DEFAULT_TIMEOUT_SECONDS as DEFAULT_TIMEOUT_SECS, MAX_TIMEOUT_SECONDS as MAX_TIMEOUT_SECS,
    MIN_TIMEOUT_SECONDS as MIN_TIMEOUT_SECS,
};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
enum Format {
    #[default]
    Markdown,
    Text,
    Html,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Input {
    url: String,
    #[serde(default)]
    format: Format,
    #[serde(default)]
    timeout: Option<u64>,
}

impl Input {
    /// The asked timeout within the schema's bounds: clamped rather than
    /// refused, so a model asking for too long still gets its fetch.
    fn timeout_secs(&self) -> u64 {
        self.timeout
            .unwrap_or(DEFAULT_TIMEOUT_SECS)
            .clamp(MIN_TIMEOUT_SECS, MAX_TIMEOUT_SECS)
    }
}

/// What network tools of a session may reach.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum NetworkAccess {
    /// No network tools.
    Off,
    /// Public addresses only (the default).
    #[default]
    PublicOnly,
    /// Anything, including loopback (tests, or a user who opts in).
    Any,
}

/// The executor, holding one HTTP client for the session.
#[derive(Debug, Clone)]
pub struct WebFetch {
    client: reqwest::Client,
    policy: NetworkAccess,
}

impl WebFetch {
    pub fn new(policy: NetworkAccess) -> Result<WebFetch, String> {
        // One client for the process: building one loads the system's
        // root certificates, which every session (and every child a
        // dispatch opens) would otherwise read again. Clones share it.
        static CLIENT: std::sync::OnceLock<Result<reqwest::Client, String>> =
            std::sync::OnceLock::new();
        let client = CLIENT
            .get_or_init(|| {
                evoflux_core::tls::install_crypto_provider();
                reqwest::Client::builder()
                    .redirect(reqwest::redirect::Policy::none())
                    .user_agent(concat!("evoflux/", env!("CARGO_PKG_VERSION")))
                    .build()
                    .map_err(|e| e.to_string())
            })
            .clone()?;
        Ok(WebFetch { client, policy })
    }

    pub async fn run(&self, input: &Value) -> ToolOutput {
        let input: Input = match serde_json::from_value(input.clone()) {
            Ok(i) => i,
            Err(e) => return ToolOutput::error(format!("invalid web_fetch input: {e}")),
        };
        let secs = input.timeout_secs();
        match tokio::time::timeout(Duration::from_secs(secs), self.fetch(&input)).await {
            Ok(Ok(r)) => r,
            Ok(Err(e)) => ToolOutput::error(e),
            Err(_) => ToolOutput::error(format!(
                "fetching {} timed out after {secs} s; try again with a larger `timeout` (at most {MAX_TIMEOUT_SECS})",
                input.url
            )),
        }
    }

    async fn fetch(&self, input: &Input) -> Result<ToolOutput, String> {
        let mut url = reqwest::Url::parse(&input.url)
            .map_err(|e| format!("`{}` is not a valid URL: {e}", input.url))?;
        let mut hops = 0;
        let response = loop {
            match url.scheme() {
                "http" | "https" => {}
                other => {
                    return Err(format!(
                        "`{other}:` URLs cannot be fetched; use http or https"
                    ));
                }
            }
            self.check_address(&url).await?;
            let response = self
                .client
                .get(url.clone())
                .send()
                .await
                .map_err(|e| format!("cannot fetch {url}: {e}"))?;
            if !response.status().is_redirection() {
                break response;
            }
            hops += 1;
            if hops > MAX_REDIRECTS {
                return Err(format!(
                    "{} redirected more than {MAX_REDIRECTS} times",
                    input.url
                ));
            }
            let location = response
                .headers()
                .get(reqwest::header::LOCATION)
                .and_then(|l| l.to_str().ok())
                .ok_or_else(|| format!("{url} redirected without a Location header"))?;
            url = url
                .join(location)
                .map_err(|e| format!("{url} redirected to an invalid location: {e}"))?;
        };
        let status = response.status();
        let content_type = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_owned();
        let mut body = Vec::new();
        let mut truncated_body = false;
        let mut stream = response.bytes_stream();
        while let Some(chunk) = stream.next().await {
            let chunk = chunk.map_err(|e| format!("reading {url} failed: {e}"))?;
            let room = MAX_BODY_BYTES - body.len();
            if chunk.len() > room {
                body.extend_from_slice(&chunk[..room]);
                truncated_body = true;
                break;
            }
            body.extend_from_slice(&chunk);
        }
        let is_html =
            content_type.contains("html") || (content_type.is_empty() && looks_like_html(&body));
        let text = match (input.format, is_html) {
            (Format::Html, _) | (Format::Markdown | Format::Text, false) => {
                String::from_utf8_lossy(&body).into_owned()
            }
            (Format::Markdown, true) => html2text::from_read(body.as_slice(), 100)
                .map_err(|e| format!("cannot convert the HTML of {url}: {e}"))?,
            (Format::Text, true) => html2text::config::plain_no_decorate()
                .string_from_read(body.as_slice(), 100)
                .map_err(|e| format!("cannot convert the HTML of {url}: {e}"))?,
        };
        let mut content = format!(
            "URL: {url}\nStatus: {}\nContent-Type: {}\n\n",
            status.as_u16(),
            if content_type.is_empty() {
                "unknown"
            } else {
                &content_type
            }
        );
        let chars = text.chars().count();
        if chars > MAX_OUTPUT_CHARS {
            content.extend(text.chars().take(MAX_OUTPUT_CHARS));
            content.push_str(&format!(
                "\n\n[… {} more characters not shown]",
                chars - MAX_OUTPUT_CHARS
            ));
        } else {
            content.push_str(&text);
        }
        if truncated_body {
            content.push_str(&format!(
                "\n[the response was cut at {MAX_BODY_BYTES} bytes]"
            ));
        }
        Ok(if status.is_success() {
            ToolOutput::ok(content)
        } else {
            ToolOutput::error(content)
        })
    }

    async fn check_address(&self, url: &reqwest::Url) -> Result<(), String> {
        match self.policy {
            NetworkAccess::Any => return Ok(()),
            NetworkAccess::Off => return Err("network tools are turned off".to_owned()),
            NetworkAccess::PublicOnly => {}
        }
        let addrs = resolve(url).await?;
        match addrs.iter().find(|ip| !is_public(**ip)) {
            Some(ip) => Err(format!(
                "{url} resolves to {ip}, a local or private address; web_fetch only fetches public addresses"
            )),
            None => Ok(()),
        }
    }
}

fn looks_like_html(body: &[u8]) -> bool {
    let head = String::from_utf8_lossy(&body[..body.len().min(512)]).to_ascii_lowercase();
    head.contains("<html") || head.contains("<!doctype html")
}

/// The addresses a URL's host stands for: the literal address, or what
/// the resolver answers (so a name that resolves to a private address is
/// caught before anything connects).
pub(crate) async fn resolve(url: &reqwest::Url) -> Result<Vec<IpAddr>, String> {
    let host = url
        .host_str()
        .ok_or_else(|| format!("{url} has no host"))?
        .trim_start_matches('[')
        .trim_end_matches(']');
    let port = url.port_or_known_default().unwrap_or(443);
    match host.parse::<IpAddr>() {
        Ok(ip) => Ok(vec![ip]),
        Err(_) => Ok(tokio::net::lookup_host((host, port))
            .await
            .map_err(|e| format!("cannot resolve {host}: {e}"))?
            .map(|a| a.ip())
            .collect()),
    }
}

/// Whether an address is on the public internet.
pub fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            let o = v4.octets();
            !(v4.is_loopback()
                || v4.is_private()
                || v4.is_link_local()
                || v4.is_unspecified()
                || v4.is_broadcast()
                || v4.is_documentation()
                || o[0] == 0
                || (o[0] == 100 && (o[1] & 0xc0) == 64) // carrier-grade NAT
                || (o[0] == 198 && (o[1] & 0xfe) == 18) // benchmarking
                || o[0] >= 240)
        }
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return is_public(IpAddr::V4(v4));
            }
            let s = v6.segments();
            !(v6.is_loopback()
                || v6.is_unspecified()
                || (s[0] & 0xfe00) == 0xfc00 // unique local
                || (s[0] & 0xffc0) == 0xfe80) // link local
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The schema the model sees (compiled from the framework definition)
    /// and this executor agree on the fields, formats and timeout bounds.
    #[test]
    fn input_matches_the_framework_schema() {
        let schema = evoflux_graph::tool::framework_tool("web_fetch")
            .unwrap()
            .input_schema;
        let props = schema["properties"].as_object().unwrap();
        for format in props["format"]["enum"].as_array().unwrap() {
            let input = serde_json::json!({"url": "https://example.com", "format": format});
            assert!(serde_json::from_value::<Input>(input).is_ok(), "{format}");
        }
        let all: serde_json::Map<String, Value> = props
            .keys()
            .map(|k| {
                let v = match k.as_str() {
                    "url" => Value::from("https://example.com"),
                    "format" => Value::from("text"),
                    _ => Value::from(5),
                };
                (k.clone(), v)
            })
            .collect();
        assert_eq!(all.len(), 3);
        assert!(serde_json::from_value::<Input>(Value::Object(all)).is_ok());
        let min = props["timeout"]["minimum"].as_u64().unwrap();
        let max = props["timeout"]["maximum"].as_u64().unwrap();
        let timeout = |t: Option<u64>| {
            Input {
                url: String::new(),
                format: Format::Markdown,
                timeout: t,
            }
            .timeout_secs()
        };
        assert_eq!(timeout(Some(max)), max);
        assert_eq!(timeout(Some(max + 1)), max);
        assert_eq!(timeout(Some(min)), min);
        assert_eq!(timeout(Some(0)), min);
        assert_eq!(timeout(None), DEFAULT_TIMEOUT_SECS);
        assert!((min..=max).contains(&DEFAULT_TIMEOUT_SECS));
    }

    #[test]
    fn internal_addresses_are_not_public() {
        for ip in [
            "127.0.0.1",
            "10.1.2.3",
            "192.168.0.1",
            "172.16.5.4",
            "169.254.169.254",
            "100.64.0.1",
            "0.0.0.0",
            "::1",
            "fd00::1",
            "fe80::1",
            "::ffff:127.0.0.1",
        ] {
            assert!(!is_public(ip.parse().unwrap()), "{ip}");
        }
        for ip in ["93.184.216.34", "2606:4700::1111", "1.1.1.1"] {
            assert!(is_public(ip.parse().unwrap()), "{ip}");
        }
    }
}
