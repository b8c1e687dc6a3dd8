//! The one writer of viewer HTML: document text only ever goes in escaped,
//! markup only from the renderers' own literals, all within a byte budget.

use base64::Engine as _;

#[derive(Debug)]
pub(crate) struct Html {
    buf: String,
    cap: usize,
    truncated: bool,
}

impl Html {
    pub fn new(cap: usize) -> Html {
        Html {
            buf: String::new(),
            cap,
            truncated: false,
        }
    }

    fn room(&mut self, bytes: usize) -> bool {
        if self.truncated || self.buf.len() + bytes > self.cap {
            self.truncated = true;
            return false;
        }
        true
    }

    /// The renderer's own markup.
    pub fn raw(&mut self, markup: &str) {
        if self.room(markup.len()) {
            self.buf.push_str(markup);
        }
    }

    /// Document text, escaped for an element's content or a quoted
    /// attribute value.
    pub fn text(&mut self, text: &str) {
        if !self.room(text.len()) {
            return;
        }
        for c in text.chars() {
            match c {
                '&' => self.buf.push_str("&amp;"),
                '<' => self.buf.push_str("&lt;"),
                '>' => self.buf.push_str("&gt;"),
                '"' => self.buf.push_str("&quot;"),
                '\'' => self.buf.push_str("&#39;"),
                // Control characters other than tab and newline have no
                // place in HTML text.
                c if c.is_control() && c != '\t' && c != '\n' => {}
                c => self.buf.push(c),
            }
        }
    }

    /// An `<img>` with the picture inline as a `data:` address (the frame
    /// that shows viewer HTML allows no other source).
    pub fn image(&mut self, mime: &str, bytes: &[u8], width_px: Option<u64>, alt: &str) {
        let encoded_len = bytes.len().div_ceil(3) * 4;
        if !self.room(encoded_len + alt.len() + 64) {
            return;
        }
        self.buf.push_str("<img src=\"data:");
        self.buf.push_str(mime);
        self.buf.push_str(";base64,");
        base64::engine::general_purpose::STANDARD.encode_string(bytes, &mut self.buf);
        self.buf.push('"');
        if let Some(w) = width_px.filter(|w| *w > 0) {
            self.buf.push_str(&format!(" width=\"{}\"", w.min(4000)));
        }
        self.buf.push_str(" alt=\"");
        self.text(alt);
        self.buf.push_str("\">");
    }

    /// Bytes still allowed.
    pub fn remaining(&self) -> usize {
        if self.truncated {
            0
        } else {
            self.cap.saturating_sub(self.buf.len())
        }
    }

    /// Takes in a nested writer's finished HTML (a paragraph, a cell).
    pub fn append(&mut self, inner: Html) {
        let (markup, cut) = inner.finish();
        self.raw(&markup);
        if cut {
            self.truncated = true;
        }
    }

    pub fn is_truncated(&self) -> bool {
        self.truncated
    }

    pub fn len(&self) -> usize {
        self.buf.len()
    }

    /// The HTML and whether it was cut short.
    pub fn finish(self) -> (String, bool) {
        (self.buf, self.truncated)
    }
}

/// The picture types a browser shows from a `data:` address, by a package
/// part's extension; `None` for others (EMF, WMF, TIFF, SVG), which are
/// left out with a notice.
pub(crate) fn image_mime(part: &str) -> Option<&'static str> {
    let ext = part.rsplit_once('.')?.1.to_ascii_lowercase();
    match ext.as_str() {
        "png" => Some("image/png"),
        "jpg" | "jpeg" => Some("image/jpeg"),
        "gif" => Some("image/gif"),
        "bmp" => Some("image/bmp"),
        "webp" => Some("image/webp"),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_escaped_and_the_budget_holds() {
        let mut h = Html::new(256);
        h.raw("<p>");
        h.text("<script>alert('x')</script> & \"q\"\u{7}");
        h.raw("</p>");
        let (s, cut) = h.finish();
        assert!(!s.contains("<script"), "{s}");
        assert!(s.contains("&lt;script&gt;") && s.contains("&amp;") && s.contains("&quot;"));
        assert!(!s.contains('\u{7}'));
        assert!(!cut);
        let mut h = Html::new(10);
        h.text("a long text that does not fit");
        assert!(h.is_truncated());
        assert_eq!(h.len(), 0);
    }

    #[test]
    fn images_only_of_shown_types() {
        assert_eq!(image_mime("word/media/image1.PNG"), Some("image/png"));
        assert_eq!(image_mime("ppt/media/a.emf"), None);
        assert_eq!(image_mime("x.svg"), None);
        let mut h = Html::new(1024);
        h.image("image/png", b"\x89PNG", Some(120), "a \"chart\"");
        let (s, _) = h.finish();
        assert!(s.starts_with("<img src=\"data:image/png;base64,"), "{s}");
        assert!(s.contains("width=\"120\"") && s.contains("alt=\"a &quot;chart&quot;\""));
    }
}
