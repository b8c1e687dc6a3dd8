//! Web search results and citations as providers send them: Anthropic's
//! `web_search_result`s and `web_search_result_location`s, the Responses
//! API's `sources` and `url_citation`s. Both name a page by `url` and
//! `title`; this is the one reader of those shapes.

use serde_json::Value;

use crate::message::{Citation, WebSource};

/// Reads a string field of a provider's JSON object.
fn wire_str(v: &Value, key: &str) -> Option<String> {
    v.get(key).and_then(Value::as_str).map(str::to_owned)
}

/// The pages of a provider's list of search results. Entries without a
/// `url` are no page.
pub(crate) fn sources(list: Option<&Value>) -> Vec<WebSource> {
    list.and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|r| {
            Some(WebSource {
                url: wire_str(r, "url")?,
                title: wire_str(r, "title"),
            })
        })
        .collect()
}

/// A provider's citation; `None` for one that cites no web page.
pub(crate) fn citation(c: &Value) -> Option<Citation> {
    Some(Citation {
        url: wire_str(c, "url")?,
        title: wire_str(c, "title"),
        cited_text: wire_str(c, "cited_text"),
    })
}
