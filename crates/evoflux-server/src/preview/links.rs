//! Root-absolute links of a previewed app, moved under its proxy.
//!
//! An app written for the root of its own server names its files
//! root-absolute (`<script src="/static/app.js">`, `url(/img/a.png)`),
//! which under the proxy's path would reach evoflux instead of the app.
//! The proxy rewrites them in the HTML and CSS it passes on: the URL-valued
//! attributes ([`ATTRIBUTES`]), CSS `url(…)` and `@import`, each value that
//! starts with one `/` (never `//host`, never a relative or absolute URL).
//!
//! Why rewriting, not a fallback route that sends unmatched paths under
//! the proxy their `Referer` names: the proxied page runs sandboxed in an
//! opaque origin, and Chromium sends no `Referer` at all from it, whatever
//! the page's `Referrer-Policy` (tried with `same-origin` and
//! `no-referrer-when-downgrade`: the request for `/static/app.js` came with
//! `Origin: null` and no `Referer`), so nothing in it says which preview's
//! page asked; a cookie would not say it either (an opaque origin's requests
//! are cross-site, so they carry no `SameSite` cookie). What rewriting
//! cannot see are root-absolute URLs a script builds at run time
//! (`img.src = '/a.png'`, `fetch('/api/x')`, module imports); the last two
//! fail from the sandbox anyway (an opaque origin's `fetch` and modules
//! need CORS). An app that needs them is opened at its own URL.

/// Attributes whose value is a URL.
const ATTRIBUTES: &[&str] = &["src", "href", "action", "formaction", "poster", "data"];

/// `html` with every root-absolute URL of an attribute or a style moved
/// below `prefix` (which ends with `/`).
pub(super) fn html(html: &str, prefix: &str) -> String {
    rewrite(html, prefix, |text, i| {
        attribute_value(text, i).or_else(|| css_value(text, i))
    })
}

/// `css` with every root-absolute `url(…)` and `@import` moved below
/// `prefix`.
pub(super) fn css(css: &str, prefix: &str) -> String {
    rewrite(css, prefix, css_value)
}

/// Copies `text`, replacing the leading `/` of each value `value_at` finds
/// (it returns the index of that `/`) with `prefix`.
fn rewrite(text: &str, prefix: &str, value_at: impl Fn(&str, usize) -> Option<usize>) -> String {
    let mut out = String::with_capacity(text.len());
    let mut copied = 0;
    let mut i = 0;
    while i < text.len() {
        if let Some(slash) = value_at(text, i).filter(|&s| root_absolute(text, s)) {
            out.push_str(&text[copied..slash]);
            out.push_str(prefix);
            copied = slash + 1;
            i = copied;
            continue;
        }
        // Next character (the text is UTF-8; names are ASCII).
        i += text[i..].chars().next().map_or(1, char::len_utf8);
    }
    out.push_str(&text[copied..]);
    out
}

/// Whether the value at `slash` is a path from the root: `/` and not `//`.
fn root_absolute(text: &str, slash: usize) -> bool {
    let rest = &text.as_bytes()[slash..];
    rest.first() == Some(&b'/') && rest.get(1) != Some(&b'/')
}

/// At `i`: whitespace, a URL attribute's name, `=` and an optional quote;
/// the index of its value's first character.
fn attribute_value(text: &str, i: usize) -> Option<usize> {
    let bytes = text.as_bytes();
    if !bytes[i].is_ascii_whitespace() {
        return None;
    }
    let name_at = i + 1;
    let name = ATTRIBUTES.iter().find(|name| {
        bytes
            .get(name_at..name_at + name.len())
            .is_some_and(|b| b.eq_ignore_ascii_case(name.as_bytes()))
    })?;
    let mut j = skip_spaces(bytes, name_at + name.len());
    if bytes.get(j) != Some(&b'=') {
        return None;
    }
    j = skip_spaces(bytes, j + 1);
    if matches!(bytes.get(j), Some(b'"' | b'\'')) {
        j += 1;
    }
    Some(j)
}

/// At `i`: `url(` or `@import` and an optional quote; the index of the
/// value's first character.
fn css_value(text: &str, i: usize) -> Option<usize> {
    let bytes = text.as_bytes();
    let after = ["url(", "@import"].iter().find_map(|word| {
        bytes
            .get(i..i + word.len())
            .filter(|b| b.eq_ignore_ascii_case(word.as_bytes()))
            .map(|_| i + word.len())
    })?;
    let mut j = skip_spaces(bytes, after);
    if matches!(bytes.get(j), Some(b'"' | b'\'')) {
        j += 1;
    }
    Some(j)
}

fn skip_spaces(bytes: &[u8], mut j: usize) -> usize {
    while bytes.get(j).is_some_and(u8::is_ascii_whitespace) {
        j += 1;
    }
    j
}

#[cfg(test)]
mod tests {
    use super::*;

    const PREFIX: &str = "/api/sessions/s/previews/p/k/";

    #[test]
    fn root_absolute_attributes_move_under_the_proxy() {
        let page = "<!doctype html><link rel=stylesheet href=\"/css/a.css\">\
            <SCRIPT SRC='/static/app.js'></SCRIPT><a href = /about>About</a>\
            <form action=\"/api/x\"><img src=\"/\"></form>";
        assert_eq!(
            html(page, PREFIX),
            format!(
                "<!doctype html><link rel=stylesheet href=\"{PREFIX}css/a.css\">\
                 <SCRIPT SRC='{PREFIX}static/app.js'></SCRIPT><a href = {PREFIX}about>About</a>\
                 <form action=\"{PREFIX}api/x\"><img src=\"{PREFIX}\"></form>"
            )
        );
    }

    #[test]
    fn other_links_and_text_stay() {
        for kept in [
            "<a href=\"about.html\">relative</a>",
            "<script src=\"//cdn.example/x.js\"></script>",
            "<a href=\"https://example.com/x\">absolute</a>",
            "<a href=\"#top\">fragment</a>",
            "<p>src=/not-an-attribute</p>",
            "<p data-src=\"/x\">no such attribute</p>",
            "<script>el.src = '/x.js'</script>",
            "<p>naïve café — /path</p>",
        ] {
            assert_eq!(html(kept, PREFIX), kept);
        }
    }

    #[test]
    fn styles_move_their_urls_too() {
        assert_eq!(
            css(
                "@import \"/base.css\"; body { background: url(/img/a.png) } \
                 i { background: URL( '/b.png' ) } b { background: url(c.png) }",
                PREFIX
            ),
            format!(
                "@import \"{PREFIX}base.css\"; body {{ background: url({PREFIX}img/a.png) }} \
                 i {{ background: URL( '{PREFIX}b.png' ) }} b {{ background: url(c.png) }}"
            )
        );
        assert_eq!(
            html("<div style=\"background:url(/a.png)\"></div>", PREFIX),
            format!("<div style=\"background:url({PREFIX}a.png)\"></div>")
        );
    }
}
