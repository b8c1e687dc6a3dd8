//! DOCX to HTML: paragraphs with their heading level from the style sheet,
//! bullet and numbered lists from the numbering part (on the paragraph or
//! its style), bold, italic, underline and struck runs, tabs and breaks,
//! tables with spans, pictures inside the package, hyperlinks shown as
//! text with their address (never followed).

use std::collections::HashMap;

use quick_xml::events::Event;

use crate::budget::Ctx;
use crate::html::Html;
use crate::package::{Package, Rels};
use crate::{Part, ViewError, xml};

/// English Metric Units per CSS pixel.
pub(crate) const EMU_PER_PX: i64 = 9525;

#[derive(Debug, Default)]
struct Style {
    heading: Option<u8>,
    num_id: Option<String>,
    based_on: Option<String>,
}

#[derive(Debug, Default)]
struct Styles(HashMap<String, Style>);

impl Styles {
    fn parse(text: &str, part: &str) -> Result<Styles, ViewError> {
        let mut map = HashMap::new();
        let mut reader = xml::reader(text);
        let mut current: Option<(String, Style)> = None;
        loop {
            match reader.read_event().map_err(|e| xml::error(part, e))? {
                Event::Start(e) => match xml::name(&e) {
                    "style" => {
                        current = xml::attr(&e, "styleId").map(|id| (id, Style::default()));
                    }
                    "name" => {
                        if let (Some((_, s)), Some(name)) = (current.as_mut(), xml::attr(&e, "val"))
                        {
                            s.heading = heading_level(&name);
                        }
                    }
                    "basedOn" => {
                        if let Some((_, s)) = current.as_mut() {
                            s.based_on = xml::attr(&e, "val");
                        }
                    }
                    "numId" => {
                        if let Some((_, s)) = current.as_mut() {
                            s.num_id = xml::attr(&e, "val");
                        }
                    }
                    _ => {}
                },
                Event::End(e) if xml::local(e.name().0) == "style" => {
                    if let Some((id, s)) = current.take() {
                        map.insert(id, s);
                    }
                }
                Event::Eof => break,
                _ => {}
            }
        }
        Ok(Styles(map))
    }

    /// A property of a style or the first style it is based on that has it
    /// (a bounded walk: style sheets can loop).
    fn lookup<T>(&self, id: &str, get: impl Fn(&Style) -> Option<T>) -> Option<T> {
        let mut id = id;
        for _ in 0..16 {
            let style = self.0.get(id)?;
            if let Some(v) = get(style) {
                return Some(v);
            }
            id = style.based_on.as_deref()?;
        }
        None
    }
}

/// `Heading N` (any case) or `Title` as a heading level.
fn heading_level(name: &str) -> Option<u8> {
    let lower = name.to_ascii_lowercase();
    if lower == "title" {
        return Some(1);
    }
    let n: u8 = lower.strip_prefix("heading")?.trim().parse().ok()?;
    (1..=9).contains(&n).then_some(n.min(6))
}

/// Which list levels are numbered (as against bulleted), per `numId`.
#[derive(Debug, Default)]
struct Numbering {
    abstract_of: HashMap<String, String>,
    /// abstractNumId -> ilvl -> numbered.
    levels: HashMap<String, HashMap<u32, bool>>,
}

impl Numbering {
    fn parse(text: &str, part: &str) -> Result<Numbering, ViewError> {
        let mut n = Numbering::default();
        let mut reader = xml::reader(text);
        let mut abstract_id: Option<String> = None;
        let mut level: Option<u32> = None;
        let mut num_id: Option<String> = None;
        loop {
            match reader.read_event().map_err(|e| xml::error(part, e))? {
                Event::Start(e) => match xml::name(&e) {
                    "abstractNum" => abstract_id = xml::attr(&e, "abstractNumId"),
                    "lvl" => level = xml::int_attr(&e, "ilvl").map(|l| l as u32),
                    "numFmt" => {
                        if let (Some(a), Some(l)) = (&abstract_id, level) {
                            let numbered = xml::attr(&e, "val").is_some_and(|v| v != "bullet");
                            n.levels.entry(a.clone()).or_default().insert(l, numbered);
                        }
                    }
                    "num" => num_id = xml::attr(&e, "numId"),
                    "abstractNumId" => {
                        if let (Some(id), Some(a)) = (&num_id, xml::attr(&e, "val")) {
                            n.abstract_of.insert(id.clone(), a);
                        }
                    }
                    _ => {}
                },
                Event::End(e) => match xml::local(e.name().0) {
                    "abstractNum" => abstract_id = None,
                    "num" => num_id = None,
                    "lvl" => level = None,
                    _ => {}
                },
                Event::Eof => break,
                _ => {}
            }
        }
        Ok(n)
    }

    fn numbered(&self, num_id: &str, level: u32) -> bool {
        self.abstract_of
            .get(num_id)
            .and_then(|a| self.levels.get(a))
            .and_then(|l| l.get(&level))
            .copied()
            .unwrap_or(false)
    }
}

/// A paragraph being read: its properties and its content so far.
#[derive(Debug)]
struct Para {
    style: Option<String>,
    level: Option<u32>,
    num_id: Option<String>,
    html: Html,
}

/// A block container: the body, a table, a row or a cell.
#[derive(Debug)]
struct Frame {
    kind: FrameKind,
    html: Html,
    /// Open lists, innermost last: numbered or not.
    lists: Vec<bool>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum FrameKind {
    Body,
    Table,
    Row,
    Cell { span: i64 },
}

impl Frame {
    fn new(kind: FrameKind, cap: usize) -> Frame {
        Frame {
            kind,
            html: Html::new(cap),
            lists: Vec::new(),
        }
    }

    fn close_lists_to(&mut self, depth: usize) {
        while self.lists.len() > depth {
            let numbered = self.lists.pop().unwrap_or(false);
            self.html.raw(if numbered { "</ol>" } else { "</ul>" });
        }
    }
}

#[derive(Debug, Default, Clone, Copy)]
struct RunFormat {
    bold: bool,
    italic: bool,
    underline: bool,
    strike: bool,
}

pub(crate) fn render(bytes: &[u8], ctx: &mut Ctx<'_>) -> Result<Vec<Part>, ViewError> {
    let mut pkg = Package::open(bytes, ctx)?;
    let main = pkg.main_part(ctx)?;
    let rels = pkg.rels(&main, ctx)?;
    let styles = match rels.of_kind("styles").next().map(|r| r.target.clone()) {
        Some(part) => match pkg.read_xml(&part)? {
            Some(text) => Styles::parse(&text, &part)?,
            None => Styles::default(),
        },
        None => Styles::default(),
    };
    let numbering = match rels.of_kind("numbering").next().map(|r| r.target.clone()) {
        Some(part) => match pkg.read_xml(&part)? {
            Some(text) => Numbering::parse(&text, &part)?,
            None => Numbering::default(),
        },
        None => Numbering::default(),
    };
    let text = pkg
        .read_xml(&main)?
        .ok_or_else(|| ViewError::PackageInvalid(format!("the main part `{main}` is missing")))?;
    let body = Body {
        pkg: &mut pkg,
        rels: &rels,
        styles: &styles,
        numbering: &numbering,
        part: &main,
    }
    .run(&text, ctx)?;
    let (html, truncated) = body.finish();
    ctx.spend_output(html.len(), truncated);
    Ok(vec![Part {
        label: "Document".into(),
        html,
    }])
}

struct Body<'p, 'a> {
    pkg: &'p mut Package<'a>,
    rels: &'p Rels,
    styles: &'p Styles,
    numbering: &'p Numbering,
    part: &'p str,
}

impl Body<'_, '_> {
    fn run(self, text: &str, ctx: &mut Ctx<'_>) -> Result<Html, ViewError> {
        let mut reader = xml::reader(text);
        let mut frames = vec![Frame::new(FrameKind::Body, ctx.output_left())];
        let mut paras: Vec<Para> = Vec::new();
        let mut fmt = RunFormat::default();
        let mut in_text = false;
        let mut in_ppr = false;
        let mut drawing: Option<(Option<i64>, String)> = None;
        let mut events = 0u32;
        loop {
            events += 1;
            if events.is_multiple_of(512) {
                ctx.check_time()?;
                if frames.first().is_some_and(|f| f.html.is_truncated()) {
                    break;
                }
            }
            let event = reader.read_event().map_err(|e| xml::error(self.part, e))?;
            match event {
                Event::Start(e) => match xml::name(&e) {
                    "p" => {
                        let cap = frames.last().map_or(0, |f| f.html.remaining());
                        paras.push(Para {
                            style: None,
                            level: None,
                            num_id: None,
                            html: Html::new(cap),
                        });
                    }
                    "pPr" => in_ppr = true,
                    "pStyle" if in_ppr => {
                        if let Some(p) = paras.last_mut() {
                            p.style = xml::attr(&e, "val");
                        }
                    }
                    "ilvl" if in_ppr => {
                        if let Some(p) = paras.last_mut() {
                            p.level = xml::int_attr(&e, "val").map(|v| v.clamp(0, 8) as u32);
                        }
                    }
                    "numId" if in_ppr => {
                        if let Some(p) = paras.last_mut() {
                            p.num_id = xml::attr(&e, "val");
                        }
                    }
                    "r" => fmt = RunFormat::default(),
                    "b" if !in_ppr => fmt.bold = xml::toggle(&e),
                    "i" if !in_ppr => fmt.italic = xml::toggle(&e),
                    "u" if !in_ppr => fmt.underline = xml::toggle(&e),
                    "strike" | "dstrike" if !in_ppr => fmt.strike = xml::toggle(&e),
                    "t" => in_text = true,
                    "tab" if !in_ppr => {
                        if let Some(p) = paras.last_mut() {
                            p.html.raw("&emsp;");
                        }
                    }
                    "br" | "cr" => {
                        if let Some(p) = paras.last_mut() {
                            let page = xml::attr(&e, "type").is_some_and(|t| t == "page");
                            p.html.raw(if page {
                                "<br class=\"page-break\">"
                            } else {
                                "<br>"
                            });
                        }
                    }
                    "hyperlink" => {
                        if let Some(p) = paras.last_mut() {
                            match xml::rel_attr(&e, "id").and_then(|id| self.rels.get(&id)) {
                                Some(rel) if rel.external => {
                                    p.html.raw("<span class=\"link\" title=\"");
                                    p.html.text(&rel.target);
                                    p.html.raw("\">");
                                }
                                _ => p.html.raw("<span class=\"link\">"),
                            }
                        }
                    }
                    "drawing" | "pict" => drawing = Some((None, String::new())),
                    "extent" => {
                        if let Some(d) = drawing.as_mut() {
                            d.0 = xml::int_attr(&e, "cx").map(|cx| cx / EMU_PER_PX);
                        }
                    }
                    "docPr" => {
                        if let Some(d) = drawing.as_mut() {
                            d.1 = xml::attr(&e, "descr")
                                .filter(|s| !s.is_empty())
                                .or_else(|| xml::attr(&e, "name"))
                                .unwrap_or_default();
                        }
                    }
                    "blip" | "imagedata" => {
                        let id = xml::rel_attr(&e, "embed").or_else(|| xml::rel_attr(&e, "id"));
                        let rel = id.as_deref().and_then(|id| self.rels.get(id));
                        if let Some((mime, bytes)) = self.pkg.image(rel, ctx)?
                            && let Some(p) = paras.last_mut()
                        {
                            let (width, alt) = drawing.clone().unwrap_or_default();
                            p.html.image(mime, &bytes, width.map(|w| w as u64), &alt);
                        }
                    }
                    "tbl" => {
                        if let Some(f) = frames.last_mut() {
                            f.close_lists_to(0);
                        }
                        let cap = frames.last().map_or(0, |f| f.html.remaining());
                        frames.push(Frame::new(FrameKind::Table, cap));
                    }
                    "tr" => {
                        let cap = frames.last().map_or(0, |f| f.html.remaining());
                        frames.push(Frame::new(FrameKind::Row, cap));
                    }
                    "tc" => {
                        let cap = frames.last().map_or(0, |f| f.html.remaining());
                        frames.push(Frame::new(FrameKind::Cell { span: 1 }, cap));
                    }
                    "gridSpan" => {
                        if let Some(f) = frames.last_mut()
                            && let FrameKind::Cell { span } = &mut f.kind
                        {
                            *span = xml::int_attr(&e, "val").unwrap_or(1).clamp(1, 64);
                        }
                    }
                    _ => {}
                },
                Event::Text(t) if in_text => {
                    if let Some(p) = paras.last_mut() {
                        run_text(&mut p.html, fmt, &xml::text(&t));
                    }
                }
                Event::GeneralRef(r) if in_text => {
                    if let (Some(p), Some(s)) = (paras.last_mut(), xml::reference(&r)) {
                        run_text(&mut p.html, fmt, &s);
                    }
                }
                Event::End(e) => match xml::local(e.name().0) {
                    "t" => in_text = false,
                    "pPr" => in_ppr = false,
                    "hyperlink" => {
                        if let Some(p) = paras.last_mut() {
                            p.html.raw("</span>");
                        }
                    }
                    "drawing" | "pict" => drawing = None,
                    "p" => {
                        if let Some(para) = paras.pop() {
                            match paras.last_mut() {
                                // A text box's paragraph, inside another.
                                Some(outer) => {
                                    outer.html.raw(" ");
                                    outer.html.append(para.html);
                                }
                                None => {
                                    if let Some(frame) = frames.last_mut() {
                                        self.emit(frame, para);
                                    }
                                }
                            }
                        }
                    }
                    "tc" | "tr" | "tbl" => {
                        let (Some(mut inner), Some(outer)) = (frames.pop(), frames.last_mut())
                        else {
                            continue;
                        };
                        inner.close_lists_to(0);
                        let (open, close) = match inner.kind {
                            FrameKind::Cell { span } if span > 1 => {
                                (format!("<td colspan=\"{span}\">"), "</td>")
                            }
                            FrameKind::Cell { .. } => ("<td>".to_owned(), "</td>"),
                            FrameKind::Row => ("<tr>".to_owned(), "</tr>"),
                            FrameKind::Table => ("<table>".to_owned(), "</table>"),
                            FrameKind::Body => (String::new(), ""),
                        };
                        outer.html.raw(&open);
                        outer.html.append(inner.html);
                        outer.html.raw(close);
                    }
                    _ => {}
                },
                Event::Eof => break,
                _ => {}
            }
        }
        // Whatever a broken or truncated part left open folds into the body.
        while frames.len() > 1 {
            if let (Some(mut inner), Some(outer)) = (frames.pop(), frames.last_mut()) {
                inner.close_lists_to(0);
                outer.html.append(inner.html);
            }
        }
        let mut body = frames
            .pop()
            .unwrap_or_else(|| Frame::new(FrameKind::Body, 0));
        body.close_lists_to(0);
        Ok(body.html)
    }

    /// Writes a finished paragraph into its container: as a list item when
    /// it is numbered (itself or by its style), a heading, or a paragraph.
    fn emit(&self, frame: &mut Frame, para: Para) {
        let style = para.style.as_deref();
        let num_id = para
            .num_id
            .clone()
            .or_else(|| style.and_then(|s| self.styles.lookup(s, |st| st.num_id.clone())))
            .filter(|id| id != "0");
        if let Some(num_id) = num_id {
            let level = para.level.unwrap_or(0);
            let numbered = self.numbering.numbered(&num_id, level);
            let depth = level as usize + 1;
            frame.close_lists_to(depth);
            if frame.lists.len() == depth && frame.lists.last() != Some(&numbered) {
                frame.close_lists_to(depth - 1);
            }
            while frame.lists.len() < depth {
                frame.lists.push(numbered);
                frame.html.raw(if numbered { "<ol>" } else { "<ul>" });
            }
            frame.html.raw("<li>");
            frame.html.append(para.html);
            frame.html.raw("</li>");
            return;
        }
        frame.close_lists_to(0);
        match style.and_then(|s| self.styles.lookup(s, |st| st.heading)) {
            Some(level) => {
                frame.html.raw(&format!("<h{level}>"));
                frame.html.append(para.html);
                frame.html.raw(&format!("</h{level}>"));
            }
            None if para.html.len() == 0 => frame.html.raw("<p class=\"empty\"></p>"),
            None => {
                frame.html.raw("<p>");
                frame.html.append(para.html);
                frame.html.raw("</p>");
            }
        }
    }
}

/// One piece of run text in its formatting.
fn run_text(html: &mut Html, fmt: RunFormat, text: &str) {
    let tags = [
        (fmt.bold, "<strong>", "</strong>"),
        (fmt.italic, "<em>", "</em>"),
        (fmt.underline, "<u>", "</u>"),
        (fmt.strike, "<s>", "</s>"),
    ];
    for (on, open, _) in tags {
        if on {
            html.raw(open);
        }
    }
    html.text(text);
    for (on, _, close) in tags.iter().rev() {
        if *on {
            html.raw(close);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heading_names() {
        assert_eq!(heading_level("heading 1"), Some(1));
        assert_eq!(heading_level("Heading 3"), Some(3));
        assert_eq!(heading_level("heading 8"), Some(6));
        assert_eq!(heading_level("Title"), Some(1));
        assert_eq!(heading_level("Normal"), None);
        assert_eq!(heading_level("heading"), None);
    }
}
