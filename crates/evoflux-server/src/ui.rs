//! The web UI: one page and a handful of first-party ES modules and a
//! stylesheet, compiled into the binary (no Node.js to build or run, no
//! CDN, no generated bundle in the repository). The UI is a client of the
//! HTTP API and nothing else; the page and its files hold no data, so they
//! are served without the token, which the page reads from the address's
//! fragment (`/#token=…`, never sent to a server) or asks for.

use std::sync::OnceLock;

use axum::extract::Path;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

use crate::error::ApiError;

/// One embedded file.
struct Asset {
    name: &'static str,
    content_type: &'static str,
    body: &'static str,
    /// The body gzipped, made on the first request that takes gzip.
    gzipped: OnceLock<Vec<u8>>,
}

macro_rules! asset {
    ($name:literal, $type:expr) => {
        Asset {
            name: $name,
            content_type: $type,
            body: include_str!(concat!("../web/", $name)),
            gzipped: OnceLock::new(),
        }
    };
}

const JS: &str = "text/javascript; charset=utf-8";

static ASSETS: [Asset; 15] = [
    asset!("app.css", "text/css; charset=utf-8"),
    asset!("api.js", JS),
    asset!("app.js", JS),
    asset!("chat.js", JS),
    asset!("dom.js", JS),
    asset!("markdown.js", JS),
    asset!("mcp-login.js", JS),
    asset!("plugins.js", JS),
    asset!("preview.js", JS),
    asset!("provenance.js", JS),
    asset!("scheduler.js", JS),
    asset!("sessions.js", JS),
    asset!("settings.js", JS),
    asset!("trust.js", JS),
    asset!("viewer.js", JS),
];

static PAGE: Asset = asset!("index.html", "text/html; charset=utf-8");

/// What the page may load and run: only its own files, nothing inline,
/// no other origin (model output rendered as Markdown cannot run script).
/// Frames only of this server: the Preview pane's proxied app, which runs
/// sandboxed in an origin of its own (`preview.rs`). Images also from
/// `blob:`: a tool result's image is fetched with the token from the
/// stored-media route and shown from the page's own blob.
const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; connect-src 'self'; frame-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/// A version tag for caching: the build's version and the file's length
/// and a cheap checksum, so an upgrade never serves a stale file.
fn etag(body: &str) -> String {
    let sum = body.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    format!(
        "\"{}-{:x}-{sum:016x}\"",
        env!("CARGO_PKG_VERSION"),
        body.len()
    )
}

impl Asset {
    /// The body gzipped, once per file for the process's life: the UI's
    /// files are a third of their size compressed, and the first load is
    /// what a new user waits for. Empty if compressing failed.
    fn gzipped(&self) -> &[u8] {
        self.gzipped.get_or_init(|| {
            use std::io::Write;
            let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
            // Writing into a Vec cannot fail.
            gz.write_all(self.body.as_bytes())
                .and_then(|()| gz.finish())
                .unwrap_or_default()
        })
    }
}

/// Whether the request takes gzip.
fn accepts_gzip(headers: &HeaderMap) -> bool {
    headers
        .get_all(header::ACCEPT_ENCODING)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|coding| {
            let mut parts = coding.split(';');
            let name = parts.next().unwrap_or("").trim();
            let refused = parts.any(|p| matches!(p.trim(), "q=0" | "q=0.0" | "q=0.00" | "q=0.000"));
            name.eq_ignore_ascii_case("gzip") && !refused
        })
}

fn respond(headers: &HeaderMap, asset: &'static Asset) -> Response {
    let (content_type, body) = (asset.content_type, asset.body);
    let tag = etag(body);
    let fresh = headers
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v == tag);
    let packed = accepts_gzip(headers)
        .then(|| asset.gzipped())
        .filter(|p| !p.is_empty());
    let mut response = if fresh {
        StatusCode::NOT_MODIFIED.into_response()
    } else if let Some(packed) = packed {
        (
            [
                (header::CONTENT_TYPE, content_type),
                (header::CONTENT_ENCODING, "gzip"),
            ],
            packed,
        )
            .into_response()
    } else {
        ([(header::CONTENT_TYPE, content_type)], body).into_response()
    };
    let h = response.headers_mut();
    // Caches keep the gzip and the plain body apart.
    h.insert(header::VARY, HeaderValue::from_static("accept-encoding"));
    if let Ok(v) = HeaderValue::from_str(&tag) {
        h.insert(header::ETAG, v);
    }
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CSP),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    response
}

/// `GET /` and `HEAD /`: the page.
pub async fn page(headers: HeaderMap) -> Response {
    respond(&headers, &PAGE)
}

/// `GET /ui/{file}`: one of the page's files.
pub async fn asset(Path(file): Path<String>, headers: HeaderMap) -> Response {
    match ASSETS.iter().find(|a| a.name == file) {
        Some(a) => respond(&headers, a),
        None => ApiError::not_found(
            "server/asset-not-found",
            format!("the web UI has no file `{file}`"),
        )
        .into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_are_gzipped_for_clients_that_take_it_and_plain_otherwise() {
        use std::io::Read;
        let mut asks = HeaderMap::new();
        asks.insert(
            header::ACCEPT_ENCODING,
            HeaderValue::from_static("br, gzip;q=0.8"),
        );
        let packed = respond(&asks, &ASSETS[1]);
        assert_eq!(packed.headers()[header::CONTENT_ENCODING], "gzip");
        let bytes = ASSETS[1].gzipped();
        assert!(bytes.len() < ASSETS[1].body.len());
        let mut plain = String::new();
        flate2::read::GzDecoder::new(bytes)
            .read_to_string(&mut plain)
            .unwrap();
        assert_eq!(plain, ASSETS[1].body);
        let mut refuses = HeaderMap::new();
        refuses.insert(
            header::ACCEPT_ENCODING,
            HeaderValue::from_static("gzip;q=0, identity"),
        );
        let plain = respond(&refuses, &ASSETS[1]);
        assert!(plain.headers().get(header::CONTENT_ENCODING).is_none());
        assert!(
            respond(&HeaderMap::new(), &ASSETS[1])
                .headers()
                .get(header::CONTENT_ENCODING)
                .is_none()
        );
    }

    #[test]
    fn every_file_the_page_and_modules_name_is_embedded() {
        let sources = std::iter::once(PAGE.body).chain(ASSETS.iter().map(|a| a.body));
        for text in sources {
            let named = text
                .split("/ui/")
                .skip(1)
                .chain(text.split("from './").skip(1));
            for part in named {
                let name: String = part
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '.' || *c == '-')
                    .collect();
                assert!(
                    ASSETS.iter().any(|a| a.name == name),
                    "`/ui/{name}` is not embedded"
                );
            }
        }
    }
}
