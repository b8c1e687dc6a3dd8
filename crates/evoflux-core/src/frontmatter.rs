//! Markdown front matter: a YAML mapping between `---` fences, then a body.
//!
//! Agents, workers, skills and fleets are all Markdown files with front
//! matter, so one splitter and one YAML entry point serve them all. The
//! mapping keeps the author's key order (unknown keys can be preserved and
//! written back) and errors carry the file and the line in the file, not the
//! line inside the YAML block. The body is a slice of the original text:
//! nothing the user wrote is normalized away. The YAML passes the
//! [`crate::nesting`] guard before the parser sees it, so a hostile file
//! costs milliseconds, not minutes.

use std::path::Path;

use serde::de::DeserializeOwned;
use yaml_serde::{Mapping, Value};

use crate::diagnostic::Diagnostic;
use crate::nesting;

/// What went wrong while reading front matter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FrontMatterErrorKind {
    /// An opening `---` fence with no closing `---` or `...` line.
    Unterminated,
    /// The YAML between the fences does not parse.
    YamlInvalid,
    /// The YAML expands too much (alias bombs) or nests too deeply, as the
    /// parser itself found.
    YamlTooComplex,
    /// The YAML nests deeper than [`crate::nesting::MAX_DEPTH`]; refused
    /// before parsing.
    YamlTooDeep,
    /// The YAML's aliases repeat more than
    /// [`crate::nesting::MAX_ALIAS_REPLAY_BYTES`]; refused before parsing.
    YamlTooManyAliases,
    /// The YAML parses but is a list or a scalar, not a mapping.
    NotAMapping,
}

impl FrontMatterErrorKind {
    /// The stable diagnostic code.
    pub const fn code(self) -> &'static str {
        match self {
            FrontMatterErrorKind::Unterminated => "frontmatter/unterminated",
            FrontMatterErrorKind::YamlInvalid => "frontmatter/yaml-invalid",
            FrontMatterErrorKind::YamlTooComplex => "frontmatter/yaml-too-complex",
            FrontMatterErrorKind::YamlTooDeep => {
                nesting::code(nesting::Syntax::Yaml, nesting::Limit::Depth)
            }
            FrontMatterErrorKind::YamlTooManyAliases => {
                nesting::code(nesting::Syntax::Yaml, nesting::Limit::AliasReplay)
            }
            FrontMatterErrorKind::NotAMapping => "frontmatter/not-a-mapping",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct FrontMatterError {
    pub kind: FrontMatterErrorKind,
    /// 1-based line in the whole file.
    pub line: Option<u32>,
    pub message: String,
}

impl FrontMatterError {
    pub fn to_diagnostic(&self, file: &Path) -> Diagnostic {
        let d = Diagnostic::error(self.kind.code(), self.message.clone()).with_file(file);
        match self.line {
            Some(line) => d.with_line(line),
            None => d,
        }
    }
}

/// The raw pieces of a Markdown file, before any YAML is parsed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Split<'a> {
    /// The text between the fences, or `None` when the file has no front
    /// matter at all.
    pub yaml: Option<&'a str>,
    /// 1-based line of the first YAML line (the line after the opening fence).
    pub yaml_line: u32,
    /// Everything after the closing fence (or the whole text, minus a BOM).
    pub body: &'a str,
    /// 1-based line where the body starts.
    pub body_line: u32,
}

/// A parsed Markdown document.
#[derive(Debug, Clone, PartialEq)]
pub struct Document<'a> {
    /// The front matter mapping in the author's order; empty when the file
    /// has no front matter or an empty one.
    pub mapping: Mapping,
    /// Whether the file had fences at all (an empty block still counts).
    pub has_front_matter: bool,
    /// The YAML text exactly as written, for byte-preserving editors.
    pub raw_yaml: &'a str,
    pub body: &'a str,
    pub body_line: u32,
}

impl Document<'_> {
    /// Deserializes the mapping into a typed struct; errors name no line
    /// because serde has lost it by then, so callers add the field.
    pub fn deserialize<T: DeserializeOwned>(&self) -> Result<T, yaml_serde::Error> {
        yaml_serde::from_value(Value::Mapping(self.mapping.clone()))
    }
}

/// Iterates lines with their byte ranges, the range excluding the line break
/// (`\n` or `\r\n`), plus the offset where the next line starts.
fn lines_with_offsets(text: &str) -> impl Iterator<Item = (&str, usize)> {
    let mut pos = 0;
    std::iter::from_fn(move || {
        if pos >= text.len() {
            return None;
        }
        let rest = &text[pos..];
        let (line, advance) = match rest.find('\n') {
            Some(i) => (&rest[..i], i + 1),
            None => (rest, rest.len()),
        };
        pos += advance;
        Some((line.strip_suffix('\r').unwrap_or(line), pos))
    })
}

fn is_fence(line: &str, closing: bool) -> bool {
    let t = line.trim_end();
    t == "---" || (closing && t == "...")
}

/// Splits `text` into front matter and body without parsing YAML.
///
/// A leading byte-order mark and blank lines before the opening fence are
/// tolerated; the fences may end in `\n` or `\r\n`; the closing fence is
/// `---` or `...`.
pub fn split(text: &str) -> Result<Split<'_>, FrontMatterError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut line_no: u32 = 0;
    let mut lines = lines_with_offsets(text);
    let no_front_matter = Split {
        yaml: None,
        yaml_line: 1,
        body: text,
        body_line: 1,
    };
    // Find the first non-blank line; it must be the opening fence.
    let (open_line, yaml_start) = loop {
        let Some((line, next)) = lines.next() else {
            return Ok(no_front_matter);
        };
        line_no += 1;
        if line.trim().is_empty() {
            continue;
        }
        if is_fence(line, false) {
            break (line_no, next);
        }
        return Ok(no_front_matter);
    };
    let mut yaml_end = yaml_start;
    for (line, next) in lines {
        line_no += 1;
        if is_fence(line, true) {
            return Ok(Split {
                yaml: Some(&text[yaml_start..yaml_end]),
                yaml_line: open_line + 1,
                body: &text[next..],
                body_line: line_no + 1,
            });
        }
        yaml_end = next;
    }
    Err(FrontMatterError {
        kind: FrontMatterErrorKind::Unterminated,
        line: Some(open_line),
        message: "front matter opened with `---` is never closed: add a `---` line after the \
                  last YAML key"
            .to_owned(),
    })
}

/// Parses a YAML document that must be a mapping. `first_line` is the
/// 1-based file line where `yaml` starts, so errors point into the file.
pub fn parse_yaml_mapping(yaml: &str, first_line: u32) -> Result<Mapping, FrontMatterError> {
    guard(yaml, first_line)?;
    let value: Value = yaml_serde::from_str(yaml).map_err(|e| yaml_error(&e, first_line))?;
    match value {
        Value::Mapping(m) => Ok(m),
        Value::Null => Ok(Mapping::new()),
        other => Err(FrontMatterError {
            kind: FrontMatterErrorKind::NotAMapping,
            line: Some(first_line),
            message: format!(
                "front matter must be a mapping of `key: value` lines, found {}",
                value_kind(&other)
            ),
        }),
    }
}

/// The [`crate::nesting`] guard on YAML that starts at file line
/// `first_line`, as a front matter error with the file line.
fn guard(yaml: &str, first_line: u32) -> Result<(), FrontMatterError> {
    nesting::check_yaml(yaml).map_err(|e| FrontMatterError {
        kind: match e.limit {
            nesting::Limit::Depth => FrontMatterErrorKind::YamlTooDeep,
            nesting::Limit::AliasReplay => FrontMatterErrorKind::YamlTooManyAliases,
        },
        line: Some(first_line.saturating_add(e.line.saturating_sub(1))),
        message: e.to_string(),
    })
}

fn value_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "nothing",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Sequence(_) => "a list",
        Value::Mapping(_) => "a mapping",
        Value::Tagged(_) => "a tagged value",
    }
}

fn yaml_error(e: &yaml_serde::Error, first_line: u32) -> FrontMatterError {
    let text = e.to_string();
    // The YAML library reports expansion and depth limits only through its
    // message; these guard against alias bombs and absurd nesting.
    let too_complex = text.contains("repetition limit") || text.contains("recursion limit");
    let line = e
        .location()
        .and_then(|loc| u32::try_from(loc.line()).ok())
        .map(|l| first_line + l.saturating_sub(1));
    // The library appends its own position, relative to the YAML block;
    // drop it in favour of the file line carried in the locator.
    let detail = match text.find(" at line ") {
        Some(i) => &text[..i],
        None => text.as_str(),
    };
    if too_complex {
        FrontMatterError {
            kind: FrontMatterErrorKind::YamlTooComplex,
            line,
            message: format!(
                "front matter YAML is too complex ({detail}): remove anchors/aliases that \
                 expand repeatedly or reduce nesting"
            ),
        }
    } else {
        FrontMatterError {
            kind: FrontMatterErrorKind::YamlInvalid,
            line,
            message: format!("front matter is not valid YAML: {detail}"),
        }
    }
}

/// Splits and parses a Markdown document.
pub fn parse(text: &str) -> Result<Document<'_>, FrontMatterError> {
    let split = split(text)?;
    let (mapping, raw_yaml) = match split.yaml {
        Some(yaml) => (parse_yaml_mapping(yaml, split.yaml_line)?, yaml),
        None => (Mapping::new(), ""),
    };
    Ok(Document {
        mapping,
        has_front_matter: split.yaml.is_some(),
        raw_yaml,
        body: split.body,
        body_line: split.body_line,
    })
}

/// Like [`parse`], with errors as a diagnostic that names `file`.
pub fn parse_file<'a>(file: &Path, text: &'a str) -> Result<Document<'a>, Diagnostic> {
    parse(text).map_err(|e| e.to_diagnostic(file))
}

/// Writes a mapping and a body back as a Markdown document. Keys keep the
/// mapping's order; comments in the original YAML are not kept (editors that
/// must keep them edit `raw_yaml` instead).
pub fn render(mapping: &Mapping, body: &str) -> Result<String, yaml_serde::Error> {
    let yaml = if mapping.is_empty() {
        String::new()
    } else {
        yaml_serde::to_string(mapping)?
    };
    Ok(format!("---\n{yaml}---\n{body}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(m: &Mapping) -> Vec<String> {
        m.keys()
            .map(|k| k.as_str().unwrap_or("?").to_owned())
            .collect()
    }

    #[test]
    fn no_fences_means_whole_text_is_body() {
        let doc = parse("# Title\n\nSome text\n").unwrap();
        assert!(!doc.has_front_matter);
        assert!(doc.mapping.is_empty());
        assert_eq!(doc.body, "# Title\n\nSome text\n");
        assert_eq!(doc.body_line, 1);
    }

    #[test]
    fn basic_front_matter_and_body_line() {
        let doc = parse("---\nname: review\ndescription: Reviews code\n---\nBody\nmore\n").unwrap();
        assert!(doc.has_front_matter);
        assert_eq!(keys(&doc.mapping), ["name", "description"]);
        assert_eq!(doc.body, "Body\nmore\n");
        assert_eq!(doc.body_line, 5);
        assert_eq!(doc.raw_yaml, "name: review\ndescription: Reviews code\n");
    }

    #[test]
    fn unterminated_fence_is_an_error_at_the_opening_line() {
        let err = parse("\n---\nname: x\nbody without fence\n").unwrap_err();
        assert_eq!(err.kind, FrontMatterErrorKind::Unterminated);
        assert_eq!(err.line, Some(2));
        let d = err.to_diagnostic(Path::new("agents/a.md"));
        assert_eq!(d.code, "frontmatter/unterminated");
        assert_eq!(d.locator.line, Some(2));
    }

    #[test]
    fn crlf_line_endings() {
        let text = "---\r\nname: x\r\ntools:\r\n  - shell\r\n---\r\nBody\r\n";
        let doc = parse(text).unwrap();
        assert_eq!(keys(&doc.mapping), ["name", "tools"]);
        assert_eq!(doc.mapping["name"].as_str(), Some("x"));
        // The body keeps the author's line endings.
        assert_eq!(doc.body, "Body\r\n");
        assert_eq!(doc.body_line, 6);
    }

    #[test]
    fn bom_and_leading_whitespace_tolerated() {
        let doc = parse("\u{feff}\n  \n---\nname: x\n---\nhi").unwrap();
        assert_eq!(doc.mapping["name"].as_str(), Some("x"));
        assert_eq!(doc.body, "hi");
        assert_eq!(doc.body_line, 6);
        // A BOM without front matter is stripped from the body.
        assert_eq!(parse("\u{feff}hello").unwrap().body, "hello");
    }

    #[test]
    fn empty_body_and_empty_front_matter() {
        let doc = parse("---\nname: x\n---\n").unwrap();
        assert_eq!(doc.body, "");
        let doc = parse("---\nname: x\n---").unwrap();
        assert_eq!(doc.body, "");
        let doc = parse("---\n---\nbody").unwrap();
        assert!(doc.has_front_matter && doc.mapping.is_empty());
        assert_eq!(doc.body, "body");
    }

    #[test]
    fn dots_close_front_matter_too() {
        let doc = parse("---\na: 1\n...\nbody").unwrap();
        assert_eq!(doc.body, "body");
    }

    #[test]
    fn unknown_keys_kept_in_author_order() {
        let text = "---\nzeta: 1\nname: x\nx-custom:\n  nested: [1, 2]\nalpha: true\n---\n";
        let doc = parse(text).unwrap();
        assert_eq!(keys(&doc.mapping), ["zeta", "name", "x-custom", "alpha"]);
        // Written back, the order survives a round trip.
        let written = render(&doc.mapping, doc.body).unwrap();
        let again = parse(&written).unwrap();
        assert_eq!(again.mapping, doc.mapping);
        assert_eq!(keys(&again.mapping), ["zeta", "name", "x-custom", "alpha"]);
    }

    #[test]
    fn yaml_errors_point_at_the_file_line() {
        let text = "---\nname: x\ndescription: [unclosed\n---\nbody\n";
        let err = parse(text).unwrap_err();
        assert_eq!(err.kind, FrontMatterErrorKind::YamlInvalid);
        let line = err.line.unwrap();
        assert!((3..=4).contains(&line), "line {line}");
        assert!(!err.message.contains(" at line "), "{}", err.message);
    }

    #[test]
    fn non_mapping_front_matter_rejected() {
        let err = parse("---\n- a\n- b\n---\n").unwrap_err();
        assert_eq!(err.kind, FrontMatterErrorKind::NotAMapping);
        assert!(err.message.contains("a list"));
        let err = parse("---\njust text\n---\n").unwrap_err();
        assert_eq!(err.kind, FrontMatterErrorKind::NotAMapping);
    }

    #[test]
    fn billion_laughs_refused_before_parsing() {
        let text = "---\n\
            a: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n\
            b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\n\
            c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\n\
            d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]\n\
            e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]\n\
            f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]\n\
            g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]\n\
            h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]\n\
            i: &i [*h,*h,*h,*h,*h,*h,*h,*h,*h]\n\
            ---\nbody\n";
        let err = parse(text).unwrap_err();
        assert_eq!(err.kind, FrontMatterErrorKind::YamlTooManyAliases);
        assert_eq!(err.kind.code(), "yaml/too-many-aliases");
        // Level e repeats 9 × 9 × 9 × 9 × 9 strings: past 64 KiB on its line.
        assert_eq!(err.line, Some(6));
    }

    #[test]
    fn absurd_nesting_rejected() {
        let depth = 10_000;
        let text = format!("---\nk: {}{}\n---\n", "[".repeat(depth), "]".repeat(depth));
        let err = parse(&text).unwrap_err();
        assert_eq!(err.kind, FrontMatterErrorKind::YamlTooDeep);
    }

    /// Issue #46: 100,000 nested brackets (200 KB) and 200,000 (400 KB),
    /// both under the 512 KiB source cap, are refused by the guard with the
    /// file and the line, instead of being parsed for half a minute.
    #[test]
    fn hostile_front_matter_refused_with_file_and_line() {
        for depth in [100_000, 200_000] {
            let text = format!(
                "---\nname: x\ndescription: d\ntools: {}{}\n---\nbody\n",
                "[".repeat(depth),
                "]".repeat(depth)
            );
            let d = parse_file(Path::new("agents/x.md"), &text).unwrap_err();
            assert_eq!(d.code, "yaml/too-deep");
            assert_eq!(d.severity, crate::Severity::Error);
            assert_eq!(d.locator.file.as_deref(), Some(Path::new("agents/x.md")));
            assert_eq!(d.locator.line, Some(4));
        }
    }

    #[test]
    fn nesting_past_the_limit_by_indentation_is_refused_at_its_line() {
        let mut yaml = String::new();
        for level in 0..=crate::nesting::MAX_DEPTH {
            yaml.push_str(&format!("{}k{level}:\n", "  ".repeat(level)));
        }
        let text = format!("---\n{yaml}---\n");
        let err = parse(&text).unwrap_err();
        assert_eq!(err.kind.code(), "yaml/too-deep");
        // Level 65 is on YAML line 65, file line 66.
        assert_eq!(err.line, Some(66));
        // One level less parses.
        let yaml: String = yaml
            .lines()
            .take(crate::nesting::MAX_DEPTH)
            .fold(String::new(), |acc, l| acc + l + "\n");
        assert!(parse(&format!("---\n{yaml}---\n")).is_ok());
    }

    #[test]
    fn shared_defaults_through_aliases_still_parse() {
        let mut text = String::from(
            "---\nname: x\ndefaults: &defaults\n  model: openai:gpt-4o\n  tools: [read, grep]\n\
             steps:\n",
        );
        for i in 0..40 {
            text.push_str(&format!("  - <<: *defaults\n    name: step-{i}\n"));
        }
        text.push_str("---\nbody\n");
        let doc = parse(&text).unwrap();
        assert_eq!(doc.mapping["steps"].as_sequence().map(Vec::len), Some(40));
    }

    #[test]
    fn typed_deserialization() {
        #[derive(serde::Deserialize, Debug, PartialEq)]
        struct Meta {
            name: String,
            #[serde(default)]
            tools: Vec<String>,
        }
        let doc = parse("---\nname: x\ntools: [a, b]\nextra: 1\n---\n").unwrap();
        let meta: Meta = doc.deserialize().unwrap();
        assert_eq!(
            meta,
            Meta {
                name: "x".into(),
                tools: vec!["a".into(), "b".into()]
            }
        );
    }

    #[test]
    fn fence_with_trailing_spaces_counts_but_not_longer_dashes() {
        let doc = parse("---  \na: 1\n---\t\nbody").unwrap();
        assert_eq!(doc.body, "body");
        let doc = parse("----\na: 1\n").unwrap();
        assert!(!doc.has_front_matter);
    }
}
