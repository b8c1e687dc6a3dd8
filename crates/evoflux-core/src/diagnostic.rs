//! Diagnostics: the one way evoflux reports a problem in something a user wrote.
//!
//! Every diagnostic carries a stable code `area/kebab-name` (tests and tools
//! match on it, never on prose), a severity, a human message and a locator
//! that says where to look (file and line, slot, source id, field). Domains
//! push diagnostics into a [`Diagnostics`] sink so that every problem in a
//! set of files is reported together instead of stopping at the first.

use std::borrow::Cow;
use std::fmt::{self, Write as _};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::slot::Slot;

/// How bad a diagnostic is. Ordered from least to most severe.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Info,
    Warning,
    Error,
}

impl Severity {
    pub const fn as_str(self) -> &'static str {
        match self {
            Severity::Info => "info",
            Severity::Warning => "warning",
            Severity::Error => "error",
        }
    }
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Where a diagnostic points. Every field is optional because problems are
/// found at different depths: a whole file, one line, one slot of the graph,
/// one field of a manifest.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Locator {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<PathBuf>,
    /// 1-based line in `file`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<u32>,
    /// Logical slot of the source graph, such as `skills/review`; written
    /// as that text.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "crate::slot::as_text"
    )]
    pub slot: Option<Slot>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_id: Option<String>,
    /// Dotted path of the offending field, such as `providers.openai.kind`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
}

impl Locator {
    pub fn is_empty(&self) -> bool {
        *self == Locator::default()
    }
}

/// One problem found in user input.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Diagnostic {
    pub code: Cow<'static, str>,
    pub severity: Severity,
    pub message: String,
    #[serde(default, skip_serializing_if = "Locator::is_empty")]
    pub locator: Locator,
}

/// Whether `code` has the stable shape `area/kebab-name`: two lowercase
/// kebab-case words (ASCII letters and digits, single hyphens) joined by one
/// slash, each starting with a letter.
pub fn is_valid_code(code: &str) -> bool {
    fn kebab(word: &str) -> bool {
        let bytes = word.as_bytes();
        !bytes.is_empty()
            && bytes[0].is_ascii_lowercase()
            && !word.ends_with('-')
            && !word.contains("--")
            && bytes
                .iter()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-')
    }
    match code.split_once('/') {
        Some((area, name)) => kebab(area) && kebab(name),
        None => false,
    }
}

impl Diagnostic {
    /// A diagnostic with a stable code. Codes are literals written by us, so
    /// a malformed one is a programming error caught by any test that
    /// constructs it.
    pub fn new(code: &'static str, severity: Severity, message: impl Into<String>) -> Self {
        debug_assert!(
            is_valid_code(code),
            "diagnostic code `{code}` is not area/kebab-name"
        );
        Diagnostic {
            code: Cow::Borrowed(code),
            severity,
            message: message.into(),
            locator: Locator::default(),
        }
    }

    pub fn error(code: &'static str, message: impl Into<String>) -> Self {
        Self::new(code, Severity::Error, message)
    }

    pub fn warning(code: &'static str, message: impl Into<String>) -> Self {
        Self::new(code, Severity::Warning, message)
    }

    pub fn info(code: &'static str, message: impl Into<String>) -> Self {
        Self::new(code, Severity::Info, message)
    }

    pub fn with_file(mut self, file: impl AsRef<Path>) -> Self {
        self.locator.file = Some(file.as_ref().to_path_buf());
        self
    }

    pub fn with_line(mut self, line: u32) -> Self {
        self.locator.line = Some(line);
        self
    }

    pub fn with_slot(mut self, slot: Slot) -> Self {
        self.locator.slot = Some(slot);
        self
    }

    pub fn with_source_id(mut self, source_id: impl Into<String>) -> Self {
        self.locator.source_id = Some(source_id.into());
        self
    }

    pub fn with_field(mut self, field: impl Into<String>) -> Self {
        self.locator.field = Some(field.into());
        self
    }

    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }

    /// The human rendering, compiler style:
    ///
    /// ```text
    /// error[skill/name-invalid]: name must equal the folder name
    ///   --> skills/review/SKILL.md:2
    ///   = slot: skills/review, field: name
    /// ```
    pub fn render_human(&self) -> String {
        let mut out = format!("{}[{}]: {}\n", self.severity, self.code, self.message);
        let loc = &self.locator;
        if let Some(file) = &loc.file {
            let _ = match loc.line {
                Some(line) => writeln!(out, "  --> {}:{line}", file.display()),
                None => writeln!(out, "  --> {}", file.display()),
            };
        }
        let mut notes = Vec::new();
        if let Some(slot) = &loc.slot {
            notes.push(format!("slot: {slot}"));
        }
        if let Some(field) = &loc.field {
            notes.push(format!("field: {field}"));
        }
        if let Some(source_id) = &loc.source_id {
            notes.push(format!("source: {source_id}"));
        }
        if !notes.is_empty() {
            let _ = writeln!(out, "  = {}", notes.join(", "));
        }
        out
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.render_human().trim_end())
    }
}

/// A sink that accumulates diagnostics in the order they were found.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Diagnostics {
    items: Vec<Diagnostic>,
}

/// Most diagnostics [`Diagnostics::render_human`] prints one by one: a
/// file with ten thousand unknown keys is summarized, not printed whole.
pub const HUMAN_RENDER_LIMIT: usize = 50;

impl Diagnostics {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn push(&mut self, diagnostic: Diagnostic) {
        self.items.push(diagnostic);
    }

    pub fn extend(&mut self, diagnostics: impl IntoIterator<Item = Diagnostic>) {
        self.items.extend(diagnostics);
    }

    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    pub fn len(&self) -> usize {
        self.items.len()
    }

    pub fn iter(&self) -> std::slice::Iter<'_, Diagnostic> {
        self.items.iter()
    }

    pub fn count(&self, severity: Severity) -> usize {
        self.items.iter().filter(|d| d.severity == severity).count()
    }

    pub fn has_errors(&self) -> bool {
        self.items.iter().any(Diagnostic::is_error)
    }

    /// Only the errors, for places that show what stopped something and
    /// leave warnings to the commands that report them.
    pub fn errors(&self) -> Diagnostics {
        self.items
            .iter()
            .filter(|d| d.is_error())
            .cloned()
            .collect()
    }

    /// Whether any diagnostic carries `code`; what tests assert on.
    pub fn has_code(&self, code: &str) -> bool {
        self.items.iter().any(|d| d.code == code)
    }

    pub fn codes(&self) -> Vec<&str> {
        self.items.iter().map(|d| d.code.as_ref()).collect()
    }

    pub fn into_vec(self) -> Vec<Diagnostic> {
        self.items
    }

    pub fn as_slice(&self) -> &[Diagnostic] {
        &self.items
    }

    /// The diagnostics rendered for humans — the first
    /// [`HUMAN_RENDER_LIMIT`], errors before the rest, then how many more
    /// there are by code — followed by a one-line summary when there is
    /// anything to report. (`--json` output carries every one.)
    pub fn render_human(&self) -> String {
        let mut out = String::new();
        let mut shown: Vec<&Diagnostic> = self.items.iter().collect();
        // Stable: errors first, each group in its original order.
        shown.sort_by_key(|d| d.severity != Severity::Error);
        let (head, rest) = shown.split_at(shown.len().min(HUMAN_RENDER_LIMIT));
        for d in head {
            out.push_str(&d.render_human());
        }
        if !rest.is_empty() {
            let mut by_code: std::collections::BTreeMap<&str, usize> = Default::default();
            for d in rest {
                *by_code.entry(&d.code).or_default() += 1;
            }
            let codes: Vec<String> = by_code.iter().map(|(c, n)| format!("{c} ×{n}")).collect();
            let _ = writeln!(
                out,
                "… and {} more not shown ({}); --json lists every one",
                rest.len(),
                codes.join(", ")
            );
        }
        if !self.items.is_empty() {
            out.push_str(&self.summary());
            out.push('\n');
        }
        out
    }

    /// `2 errors, 1 warning` (infos are counted only when present).
    pub fn summary(&self) -> String {
        fn plural(n: usize, word: &str) -> String {
            if n == 1 {
                format!("1 {word}")
            } else {
                format!("{n} {word}s")
            }
        }
        let mut parts = vec![
            plural(self.count(Severity::Error), "error"),
            plural(self.count(Severity::Warning), "warning"),
        ];
        let infos = self.count(Severity::Info);
        if infos > 0 {
            parts.push(plural(infos, "note"));
        }
        parts.join(", ")
    }

    /// The JSON rendering: an array of diagnostic objects.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::to_value(&self.items).unwrap_or(serde_json::Value::Null)
    }
}

impl From<Vec<Diagnostic>> for Diagnostics {
    fn from(items: Vec<Diagnostic>) -> Self {
        Diagnostics { items }
    }
}

impl FromIterator<Diagnostic> for Diagnostics {
    fn from_iter<I: IntoIterator<Item = Diagnostic>>(iter: I) -> Self {
        Diagnostics {
            items: iter.into_iter().collect(),
        }
    }
}

impl IntoIterator for Diagnostics {
    type Item = Diagnostic;
    type IntoIter = std::vec::IntoIter<Diagnostic>;
    fn into_iter(self) -> Self::IntoIter {
        self.items.into_iter()
    }
}

impl<'a> IntoIterator for &'a Diagnostics {
    type Item = &'a Diagnostic;
    type IntoIter = std::slice::Iter<'a, Diagnostic>;
    fn into_iter(self) -> Self::IntoIter {
        self.items.iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn code_shape() {
        for good in [
            "skill/name-invalid",
            "config/unknown-key",
            "a/b",
            "fleet2/write-bound-3",
        ] {
            assert!(is_valid_code(good), "{good}");
        }
        for bad in [
            "",
            "skill",
            "skill/",
            "/name",
            "Skill/name",
            "skill/Name",
            "skill/name_invalid",
            "skill/name--invalid",
            "skill/-name",
            "skill/name-",
            "skill/name/extra",
            "1skill/name",
        ] {
            assert!(!is_valid_code(bad), "{bad}");
        }
    }

    #[test]
    fn human_rendering_has_code_location_and_notes() {
        let d = Diagnostic::error("skill/name-invalid", "name must equal the folder name")
            .with_file("skills/review/SKILL.md")
            .with_line(2)
            .with_slot(Slot::new(crate::slot::SlotKind::Skill, "review"))
            .with_field("name");
        insta::assert_snapshot!(d.render_human(), @r"
        error[skill/name-invalid]: name must equal the folder name
          --> skills/review/SKILL.md:2
          = slot: skills/review, field: name
        ");
    }

    #[test]
    fn a_located_slot_is_written_as_its_text() {
        let d = Diagnostic::warning("worker/quarantined", "q")
            .with_slot(Slot::new(crate::slot::SlotKind::CodingAgent, "tester"));
        let json = serde_json::to_string(&d).unwrap();
        assert_eq!(
            json,
            r#"{"code":"worker/quarantined","severity":"warning","message":"q","locator":{"slot":"agents/coding/tester"}}"#
        );
        assert_eq!(serde_json::from_str::<Diagnostic>(&json).unwrap(), d);
        let unknown = json.replace("agents/coding/tester", "nowhere/x");
        assert!(serde_json::from_str::<Diagnostic>(&unknown).is_err());
    }

    #[test]
    fn human_rendering_without_locator_is_one_line() {
        let d = Diagnostic::warning("discover/unsupported-file", "ignored");
        assert_eq!(
            d.render_human(),
            "warning[discover/unsupported-file]: ignored\n"
        );
    }

    #[test]
    fn sink_accumulates_counts_and_renders_json() {
        let mut sink = Diagnostics::new();
        assert!(!sink.has_errors());
        assert_eq!(sink.render_human(), "");
        sink.push(Diagnostic::warning("config/deprecated-key", "old").with_field("x"));
        sink.push(Diagnostic::error("config/unknown-key", "bad").with_file("c.toml"));
        sink.push(Diagnostic::error("config/model-invalid", "bad"));
        assert!(sink.has_errors());
        assert_eq!(sink.count(Severity::Error), 2);
        assert_eq!(
            sink.codes(),
            [
                "config/deprecated-key",
                "config/unknown-key",
                "config/model-invalid"
            ]
        );
        assert!(sink.render_human().ends_with("2 errors, 1 warning\n"));
        // Map order depends on serde_json features chosen elsewhere in the
        // workspace; the snapshot is of the sorted form.
        insta::with_settings!({sort_maps => true}, {
        insta::assert_json_snapshot!(sink.to_json(), @r#"
            [
              {
                "code": "config/deprecated-key",
                "locator": {
                  "field": "x"
                },
                "message": "old",
                "severity": "warning"
              },
              {
                "code": "config/unknown-key",
                "locator": {
                  "file": "c.toml"
                },
                "message": "bad",
                "severity": "error"
              },
              {
                "code": "config/model-invalid",
                "message": "bad",
                "severity": "error"
              }
            ]
            "#);
        });
        let back: Vec<Diagnostic> = serde_json::from_value(sink.to_json()).unwrap();
        assert_eq!(Diagnostics::from(back), sink);
    }

    #[test]
    fn severity_orders_by_gravity() {
        assert!(Severity::Error > Severity::Warning && Severity::Warning > Severity::Info);
    }
}

#[cfg(test)]
mod flood_tests {
    use super::*;

    #[test]
    fn a_flood_is_summarized_after_the_limit_with_errors_first() {
        let mut d = Diagnostics::new();
        for i in 0..10_000 {
            d.push(Diagnostic::warning(
                "config/unknown-key",
                format!("key {i}"),
            ));
        }
        d.push(Diagnostic::error("config/invalid", "the one that matters"));
        let text = d.render_human();
        assert!(text.starts_with("error[config/invalid]"), "{}", &text[..80]);
        assert!(text.lines().count() < 200, "{} lines", text.lines().count());
        assert!(
            text.contains("… and 9951 more not shown (config/unknown-key ×9951)"),
            "{text}"
        );
        assert!(
            text.trim_end().ends_with("1 error, 10000 warnings"),
            "{text}"
        );
    }
}
