#![allow(clippy::unwrap_used, clippy::expect_used)]

//! `POST /api/highlight` (issue #48): a code block's tokens as
//! `[start, end, class]` with offsets in UTF-16 code units, what the web
//! page's strings index; unknown languages and oversized blocks are refused
//! with their codes; the route needs the token like every other.

use crate::common;

use serde_json::{Value, json};

async fn post(url: &str, token: Option<&str>, body: Value) -> (u16, Value) {
    let mut request = reqwest::Client::new()
        .post(format!("{url}/api/highlight"))
        .json(&body);
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    let r = request.send().await.unwrap();
    (r.status().as_u16(), r.json().await.unwrap_or(Value::Null))
}

/// The text of each span, sliced by UTF-16 offsets as the page slices it.
fn texts(code: &str, answer: &Value) -> Vec<(String, String)> {
    let units: Vec<u16> = code.encode_utf16().collect();
    answer["spans"]
        .as_array()
        .unwrap_or_else(|| panic!("{answer}"))
        .iter()
        .map(|s| {
            let (start, end) = (s[0].as_u64().unwrap(), s[1].as_u64().unwrap());
            (
                String::from_utf16(&units[start as usize..end as usize]).unwrap(),
                s[2].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

#[tokio::test]
async fn code_blocks_are_highlighted_by_utf16_ranges_and_refusals_have_codes() {
    let (_tmp, app) = common::setup();
    let server = common::start(&app, |_| {}).await;
    let url = server.url();
    let token = Some(common::TOKEN);

    // Non-ASCII before the tokens: "é" is 2 bytes and 1 unit, "😀" 4 and 2.
    let code = "// é😀\nfn main() { let s = \"<img src=x onerror=alert(1)>😀\"; }\n";
    let (status, answer) = post(&url, token, json!({"language": "rs", "code": code})).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["language"], "rust");
    let spans = texts(code, &answer);
    assert!(
        spans.contains(&("// é😀".to_owned(), "comment".to_owned())),
        "{spans:?}"
    );
    assert!(
        spans.contains(&("fn".to_owned(), "keyword".to_owned())),
        "{spans:?}"
    );
    assert!(
        spans.contains(&("main".to_owned(), "function".to_owned())),
        "{spans:?}"
    );
    assert!(
        spans.contains(&(
            "\"<img src=x onerror=alert(1)>😀\"".to_owned(),
            "string".to_owned()
        )),
        "{spans:?}"
    );
    // `fn` is at byte 10 and UTF-16 unit 7 ("// ", 1 + 2 units for 2 + 4
    // bytes of non-ASCII, the newline).
    assert_eq!(code.find("fn"), Some(10));
    let fn_span = answer["spans"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s[2] == "keyword")
        .cloned();
    assert_eq!(fn_span, Some(json!([7, 9, "keyword"])));

    // A fence tag is read case-insensitively, aliases included.
    let (status, answer) = post(
        &url,
        token,
        json!({"language": "C++", "code": "class A {};"}),
    )
    .await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["language"], "cpp");

    let (status, answer) = post(&url, token, json!({"language": "cobol", "code": "x"})).await;
    assert_eq!(status, 422, "{answer}");
    assert_eq!(answer["code"], "highlight/unknown-language");
    assert_eq!(answer["field"], "language");

    let big = "x".repeat(256 * 1024 + 1);
    let (status, answer) = post(&url, token, json!({"language": "json", "code": big})).await;
    assert_eq!(status, 413, "{answer}");
    assert_eq!(answer["code"], "highlight/too-large");
    assert_eq!(answer["field"], "code");

    let (status, answer) = post(
        &url,
        token,
        json!({"language": "rust", "code": "fn f() {}", "theme": "dark"}),
    )
    .await;
    assert_eq!(status, 422, "{answer}");
    assert_eq!(answer["code"], "server/body-invalid");

    let (status, _) = post(&url, None, json!({"language": "rust", "code": "fn f() {}"})).await;
    assert_eq!(status, 401);

    // The route is described in the OpenAPI document.
    let doc: Value = reqwest::get(format!("{url}/openapi.json"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(doc["paths"]["/api/highlight"]["post"].is_object(), "{doc}");

    server.stop().await;
}
