//! OOXML preflight and reading: the package passes the host's archive rules
//! ([`evoflux_core::archive::check_entries`], the same rules plugin packages pass)
//! before any part is read; parts are read with their real size counted;
//! relationships resolve to parts inside the package, and an external one
//! is never followed. Macros are never run: a `vbaProject.bin` is only
//! noticed.

use std::collections::HashMap;
use std::io::{Cursor, Read};

use evoflux_core::archive::{ExtractError, check_entries};
use quick_xml::events::Event;
use zip::ZipArchive;

use crate::budget::Ctx;
use crate::notice::NoticeKind;
use crate::{ViewError, xml};

/// An opened, checked package.
#[derive(Debug)]
pub(crate) struct Package<'a> {
    zip: ZipArchive<Cursor<&'a [u8]>>,
    /// Lower-cased part name to its index: part names are compared without
    /// letter case (OPC).
    parts: HashMap<String, usize>,
    max_part_bytes: u64,
}

/// One relationship of a part.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Rel {
    pub id: String,
    /// The last segment of the relationship type (`image`, `slide`,
    /// `hyperlink`, `officeDocument`).
    pub kind: String,
    /// The part it names (resolved, without a leading `/`), or the
    /// external address.
    pub target: String,
    pub external: bool,
}

#[derive(Debug, Default)]
pub(crate) struct Rels(Vec<Rel>);

impl Rels {
    pub fn get(&self, id: &str) -> Option<&Rel> {
        self.0.iter().find(|r| r.id == id)
    }

    pub fn of_kind<'r>(&'r self, kind: &'r str) -> impl Iterator<Item = &'r Rel> + 'r {
        self.0.iter().filter(move |r| r.kind == kind)
    }
}

impl<'a> Package<'a> {
    /// Opens `bytes` as an OOXML package under the archive rules.
    pub fn open(bytes: &'a [u8], ctx: &mut Ctx<'_>) -> Result<Package<'a>, ViewError> {
        let mut zip = ZipArchive::new(Cursor::new(bytes))
            .map_err(|e| ViewError::Package(ExtractError::Invalid(e)))?;
        let entries = check_entries(&mut zip, &ctx.limits.archive).map_err(ViewError::Package)?;
        let mut parts = HashMap::with_capacity(entries.len());
        for e in entries.iter().filter(|e| !e.is_dir) {
            parts.insert(e.path.to_ascii_lowercase(), e.index);
        }
        if !parts.contains_key("[content_types].xml") {
            return Err(ViewError::PackageInvalid(
                "it is a ZIP archive without `[Content_Types].xml`, not an Office document".into(),
            ));
        }
        if parts.keys().any(|p| p.ends_with("vbaproject.bin")) {
            ctx.notices.add(
                NoticeKind::MacrosNotRun,
                "the document contains macros; the viewer never runs them",
            );
        }
        Ok(Package {
            zip,
            parts,
            max_part_bytes: ctx.limits.max_part_bytes,
        })
    }

    pub fn has(&self, name: &str) -> bool {
        self.parts.contains_key(&name.to_ascii_lowercase())
    }

    /// The bytes of part `name`, or `None` when the package has no such
    /// part. Real bytes are counted: a part that expands past the limit is
    /// refused whatever size it declares.
    pub fn read(&mut self, name: &str) -> Result<Option<Vec<u8>>, ViewError> {
        let Some(&index) = self.parts.get(&name.to_ascii_lowercase()) else {
            return Ok(None);
        };
        let entry = self
            .zip
            .by_index(index)
            .map_err(|e| ViewError::Package(ExtractError::Invalid(e)))?;
        let declared = entry.size();
        if declared > self.max_part_bytes {
            return Err(ViewError::PartTooLarge {
                name: name.to_owned(),
                limit: self.max_part_bytes,
            });
        }
        let mut out = Vec::with_capacity(declared as usize);
        entry
            .take(self.max_part_bytes + 1)
            .read_to_end(&mut out)
            .map_err(|e| ViewError::PackageInvalid(format!("part `{name}`: {e}")))?;
        if out.len() as u64 > self.max_part_bytes {
            return Err(ViewError::PartTooLarge {
                name: name.to_owned(),
                limit: self.max_part_bytes,
            });
        }
        Ok(Some(out))
    }

    /// Part `name` as XML text (UTF-8, a byte-order mark dropped).
    pub fn read_xml(&mut self, name: &str) -> Result<Option<String>, ViewError> {
        let Some(bytes) = self.read(name)? else {
            return Ok(None);
        };
        let bytes = bytes
            .strip_prefix(b"\xEF\xBB\xBF")
            .map(<[u8]>::to_vec)
            .unwrap_or(bytes);
        String::from_utf8(bytes)
            .map(Some)
            .map_err(|_| xml::error(name, "it is not UTF-8"))
    }

    /// The relationships of `part`; none when it has no relationship part.
    /// External targets are kept as addresses and noticed (other than
    /// hyperlinks, which are shown as text): the viewer never loads them.
    pub fn rels(&mut self, part: &str, ctx: &mut Ctx<'_>) -> Result<Rels, ViewError> {
        let (dir, file) = part.rsplit_once('/').unwrap_or(("", part));
        let rels_name = if dir.is_empty() {
            format!("_rels/{file}.rels")
        } else {
            format!("{dir}/_rels/{file}.rels")
        };
        let Some(text) = self.read_xml(&rels_name)? else {
            return Ok(Rels::default());
        };
        let mut reader = xml::reader(&text);
        let mut rels = Vec::new();
        loop {
            match reader.read_event() {
                Ok(Event::Start(e)) if xml::name(&e) == "Relationship" => {
                    let (Some(id), Some(kind), Some(target)) = (
                        xml::attr(&e, "Id"),
                        xml::attr(&e, "Type"),
                        xml::attr(&e, "Target"),
                    ) else {
                        continue;
                    };
                    let external = xml::attr(&e, "TargetMode")
                        .is_some_and(|m| m.eq_ignore_ascii_case("external"));
                    let kind = kind.rsplit('/').next().unwrap_or_default().to_owned();
                    if external && kind != "hyperlink" {
                        ctx.notices.add(
                            NoticeKind::ExternalNotFollowed,
                            format!(
                                "the document refers to outside resources (such as `{target}`); the viewer never loads them"
                            ),
                        );
                    }
                    let target = if external {
                        target
                    } else {
                        resolve(dir, &target)
                    };
                    rels.push(Rel {
                        id,
                        kind,
                        target,
                        external,
                    });
                }
                Ok(Event::Eof) => break,
                Ok(_) => {}
                Err(e) => return Err(xml::error(&rels_name, e)),
            }
        }
        Ok(Rels(rels))
    }

    /// The main part (`word/document.xml`, `xl/workbook.xml`,
    /// `ppt/presentation.xml`) as the package's own relationships name it.
    pub fn main_part(&mut self, ctx: &mut Ctx<'_>) -> Result<String, ViewError> {
        let rels = self.rels("", ctx)?;
        rels.of_kind("officeDocument")
            .find(|r| !r.external)
            .map(|r| r.target.clone())
            .filter(|t| self.has(t))
            .ok_or_else(|| {
                ViewError::PackageInvalid(
                    "its `_rels/.rels` names no main document part that the package holds".into(),
                )
            })
    }

    /// An image part as a `data:` picture, when it may be shown: inside
    /// the package, of a type browsers show, within the image budget.
    pub fn image(
        &mut self,
        rel: Option<&Rel>,
        ctx: &mut Ctx<'_>,
    ) -> Result<Option<(&'static str, Vec<u8>)>, ViewError> {
        let Some(rel) = rel else {
            return Ok(None);
        };
        if rel.external {
            return Ok(None);
        }
        let Some(mime) = crate::html::image_mime(&rel.target) else {
            ctx.notices.add(
                NoticeKind::ImageOmitted,
                "some pictures are in formats the viewer does not show (such as EMF or WMF)",
            );
            return Ok(None);
        };
        let Some(bytes) = self.read(&rel.target)? else {
            return Ok(None);
        };
        if !ctx.take_image(bytes.len() as u64) {
            return Ok(None);
        }
        Ok(Some((mime, bytes)))
    }
}

/// Resolves a relationship target against the folder of its source part;
/// `..` never climbs above the package root.
fn resolve(dir: &str, target: &str) -> String {
    let (base, target) = match target.strip_prefix('/') {
        Some(absolute) => ("", absolute),
        None => (dir, target),
    };
    let mut segments: Vec<&str> = base.split('/').filter(|s| !s.is_empty()).collect();
    for s in target.split('/') {
        match s {
            "" | "." => {}
            ".." => {
                segments.pop();
            }
            s => segments.push(s),
        }
    }
    segments.join("/")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_resolve_inside_the_package() {
        assert_eq!(resolve("word", "media/image1.png"), "word/media/image1.png");
        assert_eq!(resolve("ppt/slides", "../media/a.png"), "ppt/media/a.png");
        assert_eq!(resolve("ppt/slides", "/ppt/media/a.png"), "ppt/media/a.png");
        assert_eq!(resolve("", "word/document.xml"), "word/document.xml");
        assert_eq!(resolve("a", "../../../../etc/passwd"), "etc/passwd");
    }
}
