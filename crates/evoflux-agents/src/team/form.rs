//! The agent editor's Form view: a serializer that rewrites the keys it
//! knows and preserves everything else byte-for-byte.
//!
//! Agent files are user-owned. A Form save writes the known keys in the
//! parser's order ([`AgentKey`], one list for both, matched exhaustively,
//! so the Form cannot drop a key the parser reads); a known key whose
//! value did not change keeps its original text (comments and quoting
//! included); every unknown key keeps its exact bytes and the comments
//! above it; the body is never touched. The retired key `skills_opt_out`
//! is dropped on save.
//!
//! The YAML block is cut into top-level entries by indentation: an entry is
//! its leading blank and comment lines, a line at column 0 that starts a
//! key, and every following line that is indented, a column-0 list item or
//! a closing bracket. Each entry is checked to parse as a one-key mapping
//! of its own; YAML that cannot be cut this way (anchors shared across
//! keys, multi-document tricks) is refused with [`FormError::Unsupported`]
//! and stays editable in the Raw view.

use yaml_serde::{Mapping, Value};

use super::agent_file::AgentKey;

/// Keys a Form save removes.
pub const RETIRED_KEYS: [&str; 1] = ["skills_opt_out"];

/// The Form view's values. `None` removes the key from the file.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct AgentForm {
    pub name: Option<String>,
    pub role: Option<String>,
    pub description: Option<String>,
    pub model: Option<String>,
    pub fallback_model: Option<String>,
    pub thinking_level: Option<String>,
    pub responses_api: Option<bool>,
    pub tools: Option<Vec<String>>,
    pub tools_add: Option<Vec<String>>,
    pub tools_opt_out: Option<Vec<String>>,
    pub skills: Option<Vec<String>>,
    pub mcp: Option<Vec<String>>,
    pub lead: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FormError {
    #[error("{0}")]
    FrontMatter(String),
    #[error(
        "the front matter cannot be edited in the Form view without losing text ({0}); edit it \
         in the Raw view"
    )]
    Unsupported(String),
    #[error("cannot render `{0}` as YAML")]
    Render(String),
}

/// One top-level entry of the YAML block.
#[derive(Debug, Clone, PartialEq)]
struct Entry<'a> {
    /// Blank and comment lines above the key line.
    trivia: &'a str,
    /// The key line and its continuation lines.
    body: &'a str,
    key: String,
    value: Value,
}

/// The YAML block cut into entries.
#[derive(Debug)]
struct Cut<'a> {
    entries: Vec<Entry<'a>>,
    /// Blank and comment lines after the last entry.
    tail: &'a str,
}

fn is_continuation(line: &str) -> bool {
    line.starts_with([' ', '\t'])
        || line.starts_with("- ")
        || line.trim_end() == "-"
        || line.starts_with([']', '}'])
}

fn is_trivia(line: &str) -> bool {
    let t = line.trim();
    t.is_empty() || t.starts_with('#')
}

/// Lines with their line breaks.
fn lines(text: &str) -> Vec<&str> {
    text.split_inclusive('\n').collect()
}

fn cut(yaml: &str) -> Result<Cut<'_>, FormError> {
    // Every entry below is a slice of `yaml`: one guard covers them all.
    evoflux_core::nesting::check_yaml(yaml).map_err(|e| {
        FormError::FrontMatter(format!("{e} (line {} of the front matter)", e.line))
    })?;
    let ls = lines(yaml);
    let mut entries = Vec::new();
    let mut pos = 0usize; // byte offset of ls[i]
    let mut i = 0;
    let mut trivia_start = 0usize;
    while i < ls.len() {
        let line = ls[i];
        if is_trivia(line) {
            pos += line.len();
            i += 1;
            continue;
        }
        if is_continuation(line) {
            return Err(FormError::Unsupported(format!(
                "line `{}` continues no key",
                line.trim_end()
            )));
        }
        let body_start = pos;
        pos += line.len();
        i += 1;
        // Continuation lines; trailing trivia that is followed by more
        // continuation belongs to the entry, otherwise to the next one.
        let mut body_end = pos;
        while i < ls.len() {
            let l = ls[i];
            if is_continuation(l) && !l.trim().is_empty() {
                pos += l.len();
                body_end = pos;
                i += 1;
            } else if is_trivia(l) || l.trim().is_empty() {
                // Look ahead: comments indented inside a block stay with it.
                let mut j = i;
                let mut p = pos;
                while j < ls.len() && (is_trivia(ls[j]) || ls[j].trim().is_empty()) {
                    p += ls[j].len();
                    j += 1;
                }
                if j < ls.len() && is_continuation(ls[j]) {
                    pos = p;
                    body_end = p;
                    i = j;
                } else {
                    break;
                }
            } else {
                break;
            }
        }
        let body = &yaml[body_start..body_end];
        let parsed: Value = yaml_serde::from_str(body)
            .map_err(|e| FormError::Unsupported(format!("entry `{}`: {e}", body.trim_end())))?;
        let Value::Mapping(m) = parsed else {
            return Err(FormError::Unsupported(format!(
                "`{}` is not a `key: value` entry",
                body.trim_end()
            )));
        };
        let mut it = m.into_iter();
        let (Some((k, value)), None) = (it.next(), it.next()) else {
            return Err(FormError::Unsupported(format!(
                "`{}` holds more than one key",
                body.trim_end()
            )));
        };
        let Value::String(key) = k else {
            return Err(FormError::Unsupported("a key is not a string".into()));
        };
        entries.push(Entry {
            trivia: &yaml[trivia_start..body_start],
            body,
            key,
            value,
        });
        trivia_start = body_end;
        pos = body_end;
    }
    // Cross-check: the entries together must mean the same as the block.
    let whole: Value = yaml_serde::from_str(yaml)
        .map_err(|e| FormError::FrontMatter(format!("front matter is not valid YAML: {e}")))?;
    let mut rebuilt = Mapping::new();
    for e in &entries {
        rebuilt.insert(Value::String(e.key.clone()), e.value.clone());
    }
    let same = match &whole {
        Value::Mapping(m) => *m == rebuilt,
        Value::Null => rebuilt.is_empty(),
        _ => false,
    };
    if !same {
        return Err(FormError::Unsupported(
            "the keys do not parse the same one by one (anchors or duplicate keys)".into(),
        ));
    }
    Ok(Cut {
        entries,
        tail: &yaml[trivia_start..],
    })
}

/// The pieces of a Markdown file around its YAML block.
struct Frame<'a> {
    /// Everything before the YAML (BOM, blank lines, the opening fence).
    head: &'a str,
    yaml: &'a str,
    /// The closing fence line.
    close: &'a str,
    body: &'a str,
}

fn frame(text: &str) -> Result<Frame<'_>, FormError> {
    let split =
        evoflux_core::frontmatter::split(text).map_err(|e| FormError::FrontMatter(e.message))?;
    let offset = |s: &str| s.as_ptr() as usize - text.as_ptr() as usize;
    let body_start = offset(split.body);
    match split.yaml {
        Some(yaml) => {
            let ys = offset(yaml);
            let ye = ys + yaml.len();
            Ok(Frame {
                head: &text[..ys],
                yaml,
                close: &text[ye..body_start],
                body: split.body,
            })
        }
        None => Ok(Frame {
            head: "",
            yaml: "",
            close: "",
            body: &text[body_start..],
        }),
    }
}

fn string_of(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Null => None,
        Value::Bool(b) => Some(b.to_string()),
        Value::Number(n) => Some(n.to_string()),
        Value::Sequence(_) | Value::Mapping(_) | Value::Tagged(_) => None,
    }
}

fn list_of(v: &Value) -> Option<Vec<String>> {
    match v {
        Value::Sequence(items) => Some(items.iter().filter_map(string_of).collect()),
        Value::String(s) => Some(vec![s.clone()]),
        _ => None,
    }
}

/// A tool list, which may also be Claude's comma-separated string.
fn tool_list_of(v: &Value) -> Option<Vec<String>> {
    match v {
        Value::String(s) => Some(super::claude::split_comma_list(s)),
        _ => list_of(v),
    }
}

/// Whether a Form value says what the file already says: a tool list
/// written as Claude's comma string keeps its spelling when unchanged.
fn unchanged(key: AgentKey, written: &Value, value: &Value) -> bool {
    written == value
        || match key {
            AgentKey::Tools | AgentKey::ToolsAdd | AgentKey::ToolsOptOut => {
                matches!(written, Value::String(_)) && tool_list_of(written) == tool_list_of(value)
            }
            AgentKey::Name
            | AgentKey::Role
            | AgentKey::Description
            | AgentKey::Model
            | AgentKey::FallbackModel
            | AgentKey::ThinkingLevel
            | AgentKey::ResponsesApi
            | AgentKey::Skills
            | AgentKey::Mcp
            | AgentKey::Lead => false,
        }
}

/// Reads the Form view's values and the body from a file.
pub fn read_form(text: &str) -> Result<(AgentForm, String), FormError> {
    let f = frame(text)?;
    let c = cut(f.yaml)?;
    let mut form = AgentForm::default();
    for e in &c.entries {
        let v = &e.value;
        let Some(key) = AgentKey::parse(&e.key) else {
            continue;
        };
        match key {
            AgentKey::Name => form.name = string_of(v),
            AgentKey::Role => form.role = string_of(v),
            AgentKey::Description => form.description = string_of(v),
            AgentKey::Model => form.model = string_of(v),
            AgentKey::FallbackModel => form.fallback_model = string_of(v),
            AgentKey::ThinkingLevel => form.thinking_level = string_of(v),
            AgentKey::ResponsesApi => form.responses_api = v.as_bool(),
            AgentKey::Tools => form.tools = tool_list_of(v),
            AgentKey::ToolsAdd => form.tools_add = tool_list_of(v),
            AgentKey::ToolsOptOut => form.tools_opt_out = tool_list_of(v),
            AgentKey::Skills => form.skills = list_of(v),
            AgentKey::Mcp => form.mcp = list_of(v),
            AgentKey::Lead => form.lead = string_of(v),
        }
    }
    Ok((form, f.body.to_owned()))
}

impl AgentForm {
    /// The YAML value of a known key, `None` when the form removes it.
    fn value(&self, key: AgentKey) -> Option<Value> {
        let s = |v: &Option<String>| v.as_ref().map(|s| Value::String(s.clone()));
        let l = |v: &Option<Vec<String>>| {
            v.as_ref()
                .map(|items| Value::Sequence(items.iter().cloned().map(Value::String).collect()))
        };
        match key {
            AgentKey::Name => s(&self.name),
            AgentKey::Role => s(&self.role),
            AgentKey::Description => s(&self.description),
            AgentKey::Model => s(&self.model),
            AgentKey::FallbackModel => s(&self.fallback_model),
            AgentKey::ThinkingLevel => s(&self.thinking_level),
            AgentKey::ResponsesApi => self.responses_api.map(Value::Bool),
            AgentKey::Tools => l(&self.tools),
            AgentKey::ToolsAdd => l(&self.tools_add),
            AgentKey::ToolsOptOut => l(&self.tools_opt_out),
            AgentKey::Skills => l(&self.skills),
            AgentKey::Mcp => l(&self.mcp),
            AgentKey::Lead => s(&self.lead),
        }
    }
}

fn render_entry(key: &str, value: &Value) -> Result<String, FormError> {
    let mut m = Mapping::new();
    m.insert(Value::String(key.to_owned()), value.clone());
    yaml_serde::to_string(&m).map_err(|_| FormError::Render(key.to_owned()))
}

/// Writes `form` over `original`. `body`, when given, replaces the body
/// (the Form view's prompt editor); otherwise the body is kept exactly.
pub fn write_form(
    original: &str,
    form: &AgentForm,
    body: Option<&str>,
) -> Result<String, FormError> {
    let f = frame(original)?;
    let c = cut(f.yaml)?;
    let crlf = f.yaml.contains("\r\n") || f.head.ends_with("\r\n");
    let eol = |s: String| if crlf { s.replace('\n', "\r\n") } else { s };
    let mut out = String::with_capacity(original.len() + 64);
    if f.head.is_empty() {
        out.push_str("---\n");
    } else {
        out.push_str(f.head);
    }
    for &key in AgentKey::ALL {
        let Some(value) = form.value(key) else {
            continue;
        };
        let known = key;
        let key = key.as_str();
        match c.entries.iter().find(|e| e.key == key) {
            Some(e) if unchanged(known, &e.value, &value) => {
                out.push_str(e.trivia);
                out.push_str(e.body);
            }
            Some(e) => {
                out.push_str(e.trivia);
                out.push_str(&eol(render_entry(key, &value)?));
            }
            None => out.push_str(&eol(render_entry(key, &value)?)),
        }
        if !out.ends_with('\n') {
            out.push_str(&eol("\n".into()));
        }
    }
    for e in &c.entries {
        let known = AgentKey::parse(&e.key).is_some();
        let retired = RETIRED_KEYS.contains(&e.key.as_str());
        if known || retired {
            continue;
        }
        out.push_str(e.trivia);
        out.push_str(e.body);
        if !out.ends_with('\n') {
            out.push('\n');
        }
    }
    out.push_str(c.tail);
    if !out.ends_with('\n') {
        out.push('\n');
    }
    if f.close.is_empty() {
        out.push_str("---\n");
    } else {
        out.push_str(f.close);
    }
    out.push_str(body.unwrap_or(f.body));
    Ok(out)
}

/// The unknown entries of a file, each with its comments, exactly as
/// written; what a Form save must carry over unchanged.
pub fn unknown_entries(text: &str) -> Result<Vec<String>, FormError> {
    let f = frame(text)?;
    let c = cut(f.yaml)?;
    Ok(c.entries
        .iter()
        .filter(|e| AgentKey::parse(&e.key).is_none() && !RETIRED_KEYS.contains(&e.key.as_str()))
        .map(|e| format!("{}{}", e.trivia, e.body))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::team::agent_file::KNOWN_KEYS;

    /// A Form save writes the parser's keys in this order, and every key
    /// the parser knows has a Form field: a key added to [`KNOWN_KEYS`]
    /// without one would be dropped on every save.
    #[test]
    fn form_writes_every_known_key_in_the_pinned_order() {
        assert_eq!(
            KNOWN_KEYS,
            [
                "name",
                "role",
                "description",
                "model",
                "fallback_model",
                "thinking_level",
                "responses_api",
                "tools",
                "tools_add",
                "tools_opt_out",
                "skills",
                "mcp",
                "lead",
            ]
        );
        let full = AgentForm {
            name: Some("a".into()),
            role: Some("member".into()),
            description: Some("d".into()),
            model: Some("m".into()),
            fallback_model: Some("f".into()),
            thinking_level: Some("high".into()),
            responses_api: Some(true),
            tools: Some(vec!["read".into()]),
            tools_add: Some(vec!["ls".into()]),
            tools_opt_out: Some(vec!["shell".into()]),
            skills: Some(vec!["review".into()]),
            mcp: Some(vec!["github".into()]),
            lead: Some("l".into()),
        };
        for &key in AgentKey::ALL {
            assert!(full.value(key).is_some(), "no Form field for `{key}`");
        }
        let out = write_form("---\n---\n", &full, None).unwrap_or_default();
        let written: Vec<&str> = out
            .lines()
            .filter_map(|l| l.split_once(':').map(|(k, _)| k))
            .filter(|k| !k.starts_with(' ') && !k.starts_with('-'))
            .collect();
        assert_eq!(written, KNOWN_KEYS);
    }
}
