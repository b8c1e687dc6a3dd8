//! Reading OOXML parts with quick-xml: elements and attributes by local
//! name (prefixes are conventions, not guarantees), relationship ids by
//! their prefixed attributes, text and references decoded.

use quick_xml::Reader;
use quick_xml::events::{BytesRef, BytesStart, BytesText};

use crate::ViewError;

/// A reader that reports `<a/>` as a start and an end, so the renderers'
/// state machines see one shape.
pub(crate) fn reader(xml: &str) -> Reader<&[u8]> {
    let mut r = Reader::from_str(xml);
    r.config_mut().expand_empty_elements = true;
    r
}

pub(crate) fn error(part: &str, e: impl std::fmt::Display) -> ViewError {
    ViewError::Xml {
        part: part.to_owned(),
        message: e.to_string(),
    }
}

/// The local part of a qualified name.
pub(crate) fn local(name: &str) -> &str {
    name.rsplit_once(':').map_or(name, |(_, l)| l)
}

/// An element's local name.
pub(crate) fn name<'e>(e: &'e BytesStart<'_>) -> &'e str {
    local(e.name().0)
}

/// The value of the first attribute whose local name is `local`, with any
/// prefix or none.
pub(crate) fn attr(e: &BytesStart<'_>, local_name: &str) -> Option<String> {
    e.attributes().flatten().find_map(|a| {
        (local(a.key.0) == local_name).then(|| {
            a.normalized_value(quick_xml::XmlVersion::Implicit1_0)
                .map(|v| v.into_owned())
                .unwrap_or_else(|_| a.value.into_owned())
        })
    })
}

/// A relationship reference (`r:id`, `r:embed`): a prefixed attribute, so
/// that `<p:sldId id="256" r:id="rId2">` gives `rId2`.
pub(crate) fn rel_attr(e: &BytesStart<'_>, local_name: &str) -> Option<String> {
    e.attributes().flatten().find_map(|a| {
        let key = a.key.0;
        (key.contains(':') && local(key) == local_name).then(|| a.value.into_owned())
    })
}

/// Whether a toggle property (`<w:b/>`, `<w:i w:val="0"/>`) is on.
pub(crate) fn toggle(e: &BytesStart<'_>) -> bool {
    !matches!(
        attr(e, "val").as_deref(),
        Some("0" | "false" | "off" | "none")
    )
}

pub(crate) fn int_attr(e: &BytesStart<'_>, local_name: &str) -> Option<i64> {
    attr(e, local_name)?.trim().parse().ok()
}

pub(crate) fn text(t: &BytesText<'_>) -> String {
    t.xml10_content().into_owned()
}

/// A character or predefined entity reference as text.
pub(crate) fn reference(r: &BytesRef<'_>) -> Option<String> {
    if let Ok(Some(c)) = r.resolve_char_ref() {
        return Some(c.to_string());
    }
    let name = r.xml10_content();
    quick_xml::escape::resolve_predefined_entity(&name).map(str::to_owned)
}
