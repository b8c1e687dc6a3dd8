//! PPTX to one HTML slide per slide, in the presentation's order: shapes'
//! text, pictures inside the package and tables, placed where the slide
//! (or, for a placeholder, its layout or master) puts them, as fractions of
//! the slide size; grouped shapes through their group's transform. Layout
//! is approximated: no themes, fonts, fills or animations. Positions are
//! data (`data-ratio="W H"` on a slide, `data-box="left top width height"`
//! in percent on a shape), which the reader applies, so the markup needs
//! no inline style.

use std::collections::HashMap;

use quick_xml::events::Event;

use crate::budget::Ctx;
use crate::html::Html;
use crate::notice::NoticeKind;
use crate::package::{Package, Rels};
use crate::{Part, ViewError, xml};

/// A position and size in EMU.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct Rect {
    x: f64,
    y: f64,
    w: f64,
    h: f64,
}

/// A group's mapping from its children's coordinates to the slide's.
#[derive(Debug, Clone, Copy)]
struct Transform {
    off: (f64, f64),
    scale: (f64, f64),
    child_off: (f64, f64),
}

impl Transform {
    const IDENTITY: Transform = Transform {
        off: (0.0, 0.0),
        scale: (1.0, 1.0),
        child_off: (0.0, 0.0),
    };

    fn apply(&self, r: Rect) -> Rect {
        Rect {
            x: self.off.0 + (r.x - self.child_off.0) * self.scale.0,
            y: self.off.1 + (r.y - self.child_off.1) * self.scale.1,
            w: r.w * self.scale.0,
            h: r.h * self.scale.1,
        }
    }
}

/// A group being read: its own position and its children's frame.
#[derive(Debug, Clone, Copy)]
struct Group {
    transform: Transform,
    off: Option<(f64, f64)>,
    ext: Option<(f64, f64)>,
    child_off: Option<(f64, f64)>,
    child_ext: Option<(f64, f64)>,
}

impl Default for Group {
    fn default() -> Group {
        Group {
            transform: Transform::IDENTITY,
            off: None,
            ext: None,
            child_off: None,
            child_ext: None,
        }
    }
}

impl Group {
    /// The mapping of this group's children onto the slide, inside
    /// `parent`; the parent's own when the group declares no frame.
    fn resolve(&self, parent: Transform) -> Transform {
        let (Some(off), Some(ext)) = (self.off, self.ext) else {
            return parent;
        };
        let r = parent.apply(Rect {
            x: off.0,
            y: off.1,
            w: ext.0,
            h: ext.1,
        });
        let child_off = self.child_off.unwrap_or(off);
        let child_ext = self.child_ext.unwrap_or(ext);
        Transform {
            off: (r.x, r.y),
            scale: (
                if child_ext.0 > 0.0 {
                    r.w / child_ext.0
                } else {
                    1.0
                },
                if child_ext.1 > 0.0 {
                    r.h / child_ext.1
                } else {
                    1.0
                },
            ),
            child_off,
        }
    }
}

/// Placeholder positions of a layout or master, by `idx:N` and `type:T`.
type Placeholders = HashMap<String, Rect>;

pub(crate) fn render(bytes: &[u8], ctx: &mut Ctx<'_>) -> Result<Vec<Part>, ViewError> {
    let mut pkg = Package::open(bytes, ctx)?;
    let main = pkg.main_part(ctx)?;
    let rels = pkg.rels(&main, ctx)?;
    let text = pkg
        .read_xml(&main)?
        .ok_or_else(|| ViewError::PackageInvalid(format!("the main part `{main}` is missing")))?;
    let (size, order) = presentation(&text, &main)?;
    let slides: Vec<String> = order
        .iter()
        .filter_map(|id| rels.get(id))
        .filter(|r| !r.external)
        .map(|r| r.target.clone())
        .collect();
    if slides.len() > ctx.limits.max_slides {
        ctx.notices.add(
            NoticeKind::SlidesTruncated,
            format!(
                "the presentation has {} slides; the first {} are shown",
                slides.len(),
                ctx.limits.max_slides
            ),
        );
    }
    let mut layouts: HashMap<String, Placeholders> = HashMap::new();
    let mut parts = Vec::new();
    for (n, slide) in slides.iter().take(ctx.limits.max_slides).enumerate() {
        ctx.check_time()?;
        if ctx.output_spent() {
            break;
        }
        let Some(text) = pkg.read_xml(slide)? else {
            continue;
        };
        let slide_rels = pkg.rels(slide, ctx)?;
        let placeholders = layout_placeholders(&mut pkg, &slide_rels, &mut layouts, ctx)?;
        let mut html = Html::new(ctx.output_left());
        Slide {
            pkg: &mut pkg,
            rels: &slide_rels,
            placeholders: &placeholders,
            size,
            part: slide,
        }
        .render(&text, &mut html, ctx)?;
        let (html, truncated) = html.finish();
        ctx.spend_output(html.len(), truncated);
        parts.push(Part {
            label: format!("Slide {}", n + 1),
            html,
        });
    }
    Ok(parts)
}

/// The slide size (EMU) and the slides' relationship ids in order.
fn presentation(text: &str, part: &str) -> Result<((f64, f64), Vec<String>), ViewError> {
    let mut reader = xml::reader(text);
    // 4:3 at 10 inches, PowerPoint's old default, when the size is absent.
    let mut size = (9_144_000.0, 6_858_000.0);
    let mut order = Vec::new();
    loop {
        match reader.read_event().map_err(|e| xml::error(part, e))? {
            Event::Start(e) => match xml::name(&e) {
                "sldSz" => {
                    if let (Some(cx), Some(cy)) = (xml::int_attr(&e, "cx"), xml::int_attr(&e, "cy"))
                        && cx > 0
                        && cy > 0
                    {
                        size = (cx as f64, cy as f64);
                    }
                }
                "sldId" => {
                    if let Some(id) = xml::rel_attr(&e, "id") {
                        order.push(id);
                    }
                }
                _ => {}
            },
            Event::Eof => break,
            _ => {}
        }
    }
    Ok((size, order))
}

/// The placeholder positions a slide inherits: its layout's, then its
/// master's for what the layout does not place. Each layout is read once.
fn layout_placeholders(
    pkg: &mut Package<'_>,
    slide_rels: &Rels,
    cache: &mut HashMap<String, Placeholders>,
    ctx: &mut Ctx<'_>,
) -> Result<Placeholders, ViewError> {
    let Some(layout) = slide_rels
        .of_kind("slideLayout")
        .find(|r| !r.external)
        .map(|r| r.target.clone())
    else {
        return Ok(Placeholders::new());
    };
    if let Some(p) = cache.get(&layout) {
        return Ok(p.clone());
    }
    let mut placed = match pkg.read_xml(&layout)? {
        Some(text) => placeholders_of(&text, &layout)?,
        None => Placeholders::new(),
    };
    let layout_rels = pkg.rels(&layout, ctx)?;
    if let Some(master) = layout_rels
        .of_kind("slideMaster")
        .find(|r| !r.external)
        .map(|r| r.target.clone())
        && let Some(text) = pkg.read_xml(&master)?
    {
        for (k, v) in placeholders_of(&text, &master)? {
            placed.entry(k).or_insert(v);
        }
    }
    cache.insert(layout, placed.clone());
    Ok(placed)
}

fn placeholders_of(text: &str, part: &str) -> Result<Placeholders, ViewError> {
    let mut out = Placeholders::new();
    let mut reader = xml::reader(text);
    let mut keys: Vec<String> = Vec::new();
    let mut rect: Option<Rect> = None;
    let mut depth = 0usize;
    loop {
        match reader.read_event().map_err(|e| xml::error(part, e))? {
            Event::Start(e) => match xml::name(&e) {
                "sp" => {
                    depth += 1;
                    keys.clear();
                    rect = None;
                }
                "ph" if depth > 0 => keys = placeholder_keys(&e),
                "off" if depth > 0 => {
                    let r = rect.get_or_insert_with(Rect::default);
                    r.x = xml::int_attr(&e, "x").unwrap_or(0) as f64;
                    r.y = xml::int_attr(&e, "y").unwrap_or(0) as f64;
                }
                "ext" if depth > 0 => {
                    if let (Some(r), Some(cx), Some(cy)) = (
                        rect.as_mut(),
                        xml::int_attr(&e, "cx"),
                        xml::int_attr(&e, "cy"),
                    ) {
                        r.w = cx as f64;
                        r.h = cy as f64;
                    }
                }
                _ => {}
            },
            Event::End(e) if xml::local(e.name().0) == "sp" => {
                depth = depth.saturating_sub(1);
                if let Some(r) = rect.take() {
                    for k in keys.drain(..) {
                        out.entry(k).or_insert(r);
                    }
                }
            }
            Event::Eof => break,
            _ => {}
        }
    }
    Ok(out)
}

/// The lookup keys of a `<p:ph>`: its index, then its type (a title is a
/// title whether centered or not; an untyped placeholder is a body).
fn placeholder_keys(e: &quick_xml::events::BytesStart<'_>) -> Vec<String> {
    let mut keys = Vec::new();
    if let Some(idx) = xml::attr(e, "idx") {
        keys.push(format!("idx:{idx}"));
    }
    let kind = xml::attr(e, "type").unwrap_or_else(|| "body".into());
    let kind = match kind.as_str() {
        "ctrTitle" => "title".to_owned(),
        _ => kind,
    };
    keys.push(format!("type:{kind}"));
    keys
}

/// What a shape is being read as.
#[derive(Debug)]
struct Shape {
    rect: Option<Rect>,
    /// Placeholder keys, and its type for styling.
    keys: Vec<String>,
    title: bool,
    html: Html,
    in_xfrm: bool,
}

struct Slide<'p, 'a> {
    pkg: &'p mut Package<'a>,
    rels: &'p Rels,
    placeholders: &'p Placeholders,
    size: (f64, f64),
    part: &'p str,
}

#[derive(Debug, Default, Clone, Copy)]
struct RunFormat {
    bold: bool,
    italic: bool,
}

impl Slide<'_, '_> {
    fn render(self, text: &str, out: &mut Html, ctx: &mut Ctx<'_>) -> Result<(), ViewError> {
        let Slide {
            pkg,
            rels,
            placeholders,
            size,
            part,
        } = self;
        let mut reader = xml::reader(text);
        let ratio = format!("{} {}", size.0.round(), size.1.round());
        out.raw(&format!("<div class=\"slide\" data-ratio=\"{ratio}\">"));
        let mut flow = Html::new(out.remaining());
        let mut shapes: Vec<Shape> = Vec::new();
        let mut groups: Vec<Group> = vec![Group::default()];
        let mut para = Html::new(0);
        let mut fmt = RunFormat::default();
        let mut in_text = false;
        let mut in_group_xfrm = false;
        let mut events = 0u32;
        loop {
            events += 1;
            if events.is_multiple_of(512) {
                ctx.check_time()?;
            }
            match reader.read_event().map_err(|e| xml::error(part, e))? {
                Event::Start(e) => match xml::name(&e) {
                    "sp" | "pic" | "graphicFrame" | "cxnSp" => shapes.push(Shape {
                        rect: None,
                        keys: Vec::new(),
                        title: false,
                        html: Html::new(out.remaining()),
                        in_xfrm: false,
                    }),
                    "grpSp" => groups.push(Group::default()),
                    "grpSpPr" => in_group_xfrm = true,
                    "ph" => {
                        if let Some(s) = shapes.last_mut() {
                            s.keys = placeholder_keys(&e);
                            s.title = s.keys.iter().any(|k| k == "type:title");
                        }
                    }
                    "xfrm" => {
                        if let Some(s) = shapes.last_mut()
                            && !in_group_xfrm
                        {
                            s.in_xfrm = true;
                        }
                    }
                    "off" | "ext" | "chOff" | "chExt" => {
                        let which = xml::name(&e);
                        let pair = match which {
                            "off" | "chOff" => (xml::int_attr(&e, "x"), xml::int_attr(&e, "y")),
                            _ => (xml::int_attr(&e, "cx"), xml::int_attr(&e, "cy")),
                        };
                        let (Some(a), Some(b)) = pair else {
                            continue;
                        };
                        let v = (a as f64, b as f64);
                        if in_group_xfrm {
                            if let Some(g) = groups.last_mut() {
                                match which {
                                    "off" => g.off = Some(v),
                                    "ext" => g.ext = Some(v),
                                    "chOff" => g.child_off = Some(v),
                                    _ => g.child_ext = Some(v),
                                }
                            }
                        } else if let Some(s) = shapes.last_mut()
                            && s.in_xfrm
                        {
                            let r = s.rect.get_or_insert_with(Rect::default);
                            match which {
                                "off" => (r.x, r.y) = v,
                                "ext" => (r.w, r.h) = v,
                                _ => {}
                            }
                        }
                    }
                    "p" => {
                        para = Html::new(shapes.last().map_or(0, |s| s.html.remaining()));
                    }
                    "r" | "fld" => fmt = RunFormat::default(),
                    "rPr" => {
                        fmt.bold = xml::attr(&e, "b").is_some_and(|v| v == "1" || v == "true");
                        fmt.italic = xml::attr(&e, "i").is_some_and(|v| v == "1" || v == "true");
                    }
                    "t" => in_text = true,
                    "br" => para.raw("<br>"),
                    "tbl" => {
                        if let Some(s) = shapes.last_mut() {
                            s.html.raw("<table>");
                        }
                    }
                    "tr" => {
                        if let Some(s) = shapes.last_mut() {
                            s.html.raw("<tr>");
                        }
                    }
                    "tc" => {
                        if let Some(s) = shapes.last_mut() {
                            let span = xml::int_attr(&e, "gridSpan").unwrap_or(1).clamp(1, 64);
                            if span > 1 {
                                s.html.raw(&format!("<td colspan=\"{span}\">"));
                            } else {
                                s.html.raw("<td>");
                            }
                        }
                    }
                    "blip" => {
                        let rel = xml::rel_attr(&e, "embed").and_then(|id| rels.get(&id));
                        if let Some((mime, bytes)) = pkg.image(rel, ctx)?
                            && let Some(s) = shapes.last_mut()
                        {
                            s.html.image(mime, &bytes, None, "");
                        }
                    }
                    _ => {}
                },
                Event::Text(t) if in_text => {
                    run_text(&mut para, fmt, &xml::text(&t));
                }
                Event::GeneralRef(r) if in_text => {
                    if let Some(s) = xml::reference(&r) {
                        run_text(&mut para, fmt, &s);
                    }
                }
                Event::End(e) => match xml::local(e.name().0) {
                    "t" => in_text = false,
                    "xfrm" => {
                        if let Some(s) = shapes.last_mut() {
                            s.in_xfrm = false;
                        }
                    }
                    "grpSpPr" => {
                        in_group_xfrm = false;
                        let parent = groups
                            .iter()
                            .rev()
                            .nth(1)
                            .map_or(Transform::IDENTITY, |g| g.transform);
                        if let Some(g) = groups.last_mut() {
                            g.transform = g.resolve(parent);
                        }
                    }
                    "grpSp" if groups.len() > 1 => {
                        groups.pop();
                    }
                    "p" => {
                        let p = std::mem::replace(&mut para, Html::new(0));
                        if p.len() > 0
                            && let Some(s) = shapes.last_mut()
                        {
                            s.html.raw("<p>");
                            s.html.append(p);
                            s.html.raw("</p>");
                        }
                    }
                    "tc" => {
                        if let Some(s) = shapes.last_mut() {
                            s.html.raw("</td>");
                        }
                    }
                    "tr" => {
                        if let Some(s) = shapes.last_mut() {
                            s.html.raw("</tr>");
                        }
                    }
                    "tbl" => {
                        if let Some(s) = shapes.last_mut() {
                            s.html.raw("</table>");
                        }
                    }
                    "sp" | "pic" | "graphicFrame" | "cxnSp" => {
                        let Some(shape) = shapes.pop() else {
                            continue;
                        };
                        if shape.html.len() == 0 {
                            continue;
                        }
                        let transform = groups.last().map_or(Transform::IDENTITY, |g| g.transform);
                        let rect = shape.rect.map(|r| transform.apply(r)).or_else(|| {
                            shape.keys.iter().find_map(|k| placeholders.get(k).copied())
                        });
                        let class = if shape.title { "shape title" } else { "shape" };
                        match rect.filter(|r| r.w > 0.0 && r.h > 0.0) {
                            Some(r) => {
                                let pct = |v: f64, of: f64| (v / of * 100.0).clamp(-100.0, 200.0);
                                out.raw(&format!(
                                    "<div class=\"{class}\" data-box=\"{:.2} {:.2} {:.2} {:.2}\">",
                                    pct(r.x, size.0),
                                    pct(r.y, size.1),
                                    pct(r.w, size.0),
                                    pct(r.h, size.1)
                                ));
                                out.append(shape.html);
                                out.raw("</div>");
                            }
                            None => {
                                flow.raw(&format!("<div class=\"{class}\">"));
                                flow.append(shape.html);
                                flow.raw("</div>");
                            }
                        }
                    }
                    _ => {}
                },
                Event::Eof => break,
                _ => {}
            }
        }
        out.raw("</div>");
        if flow.len() > 0 {
            out.raw("<div class=\"slide-flow\">");
            out.append(flow);
            out.raw("</div>");
        }
        Ok(())
    }
}

fn run_text(html: &mut Html, fmt: RunFormat, text: &str) {
    if fmt.bold {
        html.raw("<strong>");
    }
    if fmt.italic {
        html.raw("<em>");
    }
    html.text(text);
    if fmt.italic {
        html.raw("</em>");
    }
    if fmt.bold {
        html.raw("</strong>");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn group_transforms_map_children_onto_the_slide() {
        let t = Transform {
            off: (100.0, 200.0),
            scale: (2.0, 0.5),
            child_off: (10.0, 20.0),
        };
        let r = t.apply(Rect {
            x: 10.0,
            y: 20.0,
            w: 50.0,
            h: 40.0,
        });
        assert_eq!(
            r,
            Rect {
                x: 100.0,
                y: 200.0,
                w: 100.0,
                h: 20.0
            }
        );
    }
}
