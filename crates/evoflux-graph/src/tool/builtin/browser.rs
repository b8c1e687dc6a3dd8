//! `browser`: drives a headless Chromium for pages that need a real
//! browser (text written by JavaScript, forms, logins within the
//! session): open, read, click, type, select, scroll, wait, back,
//! screenshot and download.
//!
//! Its handler (when the session can run it: Chromium installed and the
//! network not closed to it) is `evoflux-harness/src/tools/browser.rs`;
//! its executor is `evoflux_tools::browser`. Its definition is large and
//! most turns need none, so when the session's MCP tools are too many to
//! send it is held back with them, behind `connection_search`.

use serde_json::json;

use super::{Framework, Spec, object};
use crate::tool::{ActionClass, BuiltinExecutor};
use evoflux_core::AppMode;

/// `timeout` (seconds) when the call gives none: how long one action
/// (a page load, a wait) may take.
pub const DEFAULT_TIMEOUT_SECONDS: u64 = 30;
pub const MIN_TIMEOUT_SECONDS: u64 = 1;
pub const MAX_TIMEOUT_SECONDS: u64 = 120;
/// The actions, in the order the schema lists them.
pub const ACTIONS: &[&str] = &[
    "open",
    "read",
    "click",
    "type",
    "select",
    "scroll",
    "wait",
    "back",
    "screenshot",
    "download",
];
/// The scroll directions.
pub const DIRECTIONS: &[&str] = &["down", "up"];

pub(super) const TOOL: Framework = Framework {
    name: "browser",
    spec,
};

fn spec() -> Spec {
    let mut spec = Spec::ordinary(
        BuiltinExecutor::Browser,
        ActionClass::Network,
        "Drive a real web browser (headless Chromium) for pages that need one: text written \
         by JavaScript, forms, multi-step sites. `open` a URL, then `read` the page: its text \
         and a numbered list of the elements you can act on. `click`, `type` (with `submit` \
         to press Enter) and `select` take an element's `element` number from the latest \
         read; numbers change when the page does, so read again after it changes. `scroll` \
         moves the page, `wait` waits for `text` or a CSS `selector` to appear, `back` goes \
         to the previous page, `screenshot` returns an image of the page and `download` \
         saves a file (a `url`, or the link `element`) into the session's folder. Only http \
         and https pages are opened. Prefer web_fetch for static pages.",
        object(
            json!({
                "action": {"type": "string", "enum": ACTIONS},
                "url": {"type": "string", "description": "open, download: the http(s) URL"},
                "element": {
                    "type": "integer",
                    "minimum": 1,
                    "description": "click, type, select, download: the element's number from the latest read"
                },
                "text": {
                    "type": "string",
                    "description": "type: the text to enter (replacing what the field holds); wait: the text to wait for"
                },
                "submit": {"type": "boolean", "description": "type: press Enter afterwards"},
                "value": {"type": "string", "description": "select: the option's value or label"},
                "direction": {"type": "string", "enum": DIRECTIONS},
                "selector": {"type": "string", "description": "wait: a CSS selector to wait for"},
                "timeout": {
                    "type": "integer",
                    "minimum": MIN_TIMEOUT_SECONDS,
                    "maximum": MAX_TIMEOUT_SECONDS,
                    "description": "seconds the action may take (a page load, a wait)"
                }
            }),
            &["action"],
        ),
    );
    // Work mode's browser; a Coding agent gets it only by naming it.
    spec.modes = &[AppMode::Work, AppMode::Coding];
    spec.requested_in = &[AppMode::Coding];
    spec
}
