//! Turning a schedule on and off from a front end (the web UI's Scheduler,
//! `PATCH /api/scheduler/{name}`, `evoflux schedule enable|disable`): the
//! one thing that changes is `enabled` in the file that defines it, so the
//! file stays the truth the scheduler and every other front end read.
//!
//! The edit keeps everything else the user wrote: TOML goes through
//! `toml_edit` (comments, order, spacing and any other key kept); JSON is
//! edited as text, only the value of `enabled` replaced or one member
//! added. Either edit is checked before it is written: the file must read
//! back as it read before, with only `enabled` changed; otherwise nothing
//! is written. Only files of the user's own layers (their config folder, a
//! repository's `.evoflux`) are edited: a built-in schedule has no file,
//! and a plugin's or the administrator's is not the user's to rewrite.

use std::path::{Path, PathBuf};

use evoflux_core::Diagnostic;
use evoflux_core::atomic::{AtomicOptions, AtomicWriteError, write_atomic};
use evoflux_graph::compose::BoundSource;
use evoflux_graph::layer::Layer;
use evoflux_graph::slot::FileFormat;
use evoflux_graph::{Binding, CompiledGraph};
use serde_json::Value;

/// Why a schedule's `enabled` was not changed (its file is as it was).
#[derive(Debug, thiserror::Error)]
pub enum ScheduleEditError {
    #[error("no schedule `{0}`; `evoflux schedule list` lists them")]
    NotFound(String),
    #[error(
        "schedule `{name}` is built into evoflux and has no file to change; to override it, \
         write `schedules/{name}.toml` in your config folder"
    )]
    Builtin { name: String },
    #[error(
        "schedule `{name}` is defined in {} ({reason}), which is not yours to change; to \
         override it, write `schedules/{name}.toml` in your config folder",
        path.display()
    )]
    NotEditable {
        name: String,
        path: PathBuf,
        reason: &'static str,
    },
    #[error("cannot read {}: {source}", path.display())]
    Unreadable {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{} no longer reads as a schedule file: {}; fix it, then try again", path.display(), diagnostic.message)]
    Invalid {
        path: PathBuf,
        diagnostic: Box<Diagnostic>,
    },
    #[error(
        "{}: `enabled` is not true or false; set it to true or false by hand",
        path.display()
    )]
    EnabledInvalid { path: PathBuf },
    #[error(
        "{} is not a TOML or JSON schedule file; change `enabled` in it by hand",
        path.display()
    )]
    FormatUnsupported { path: PathBuf },
    #[error(
        "changing `enabled` in {} would have changed more of the file, so nothing was \
         written; change `enabled` by hand",
        path.display()
    )]
    Unverified { path: PathBuf },
    #[error(transparent)]
    Write(#[from] AtomicWriteError),
}

impl ScheduleEditError {
    pub fn code(&self) -> &'static str {
        match self {
            ScheduleEditError::NotFound(_) => "schedule/not-found",
            ScheduleEditError::Builtin { .. } => "schedule/builtin-read-only",
            ScheduleEditError::NotEditable { .. } => "schedule/not-editable",
            ScheduleEditError::Unreadable { .. } => "schedule/file-unreadable",
            ScheduleEditError::Invalid { .. } => "schedule/file-invalid",
            ScheduleEditError::EnabledInvalid { .. } => "schedule/enabled-invalid",
            ScheduleEditError::FormatUnsupported { .. } => "schedule/format-unsupported",
            ScheduleEditError::Unverified { .. } => "schedule/edit-unverified",
            ScheduleEditError::Write(_) => "schedule/write-failed",
        }
    }

    /// The file at fault, when there is one.
    pub fn file(&self) -> Option<&Path> {
        match self {
            ScheduleEditError::NotFound(_) | ScheduleEditError::Builtin { .. } => None,
            ScheduleEditError::NotEditable { path, .. }
            | ScheduleEditError::Unreadable { path, .. }
            | ScheduleEditError::Invalid { path, .. }
            | ScheduleEditError::EnabledInvalid { path }
            | ScheduleEditError::FormatUnsupported { path }
            | ScheduleEditError::Unverified { path } => Some(path),
            ScheduleEditError::Write(e) => Some(&e.path),
        }
    }

    /// The error as a diagnostic with its code, file and field.
    pub fn to_diagnostic(&self) -> Diagnostic {
        let d = Diagnostic::error(self.code(), self.to_string()).with_field("enabled");
        match self.file() {
            Some(file) => d.with_file(file),
            None => d,
        }
    }
}

/// What [`set_enabled`] did.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct EnabledChange {
    pub name: String,
    /// The file that defines the schedule.
    pub file: PathBuf,
    pub enabled: bool,
    /// False when the file already said so (nothing was written).
    pub changed: bool,
}

/// The file `enabled` of the schedule `name` is changed in, or why it is
/// not changed there. The one rule for which schedules a front end may
/// switch (listings show it as `editable`).
pub fn editable_file(name: &str, bound: &BoundSource) -> Result<PathBuf, ScheduleEditError> {
    let (path, entry) = match &bound.binding {
        Binding::Builtin { .. } => {
            return Err(ScheduleEditError::Builtin {
                name: name.to_owned(),
            });
        }
        Binding::File { path, entry, .. } => (path, entry),
    };
    let not_editable = |reason| ScheduleEditError::NotEditable {
        name: name.to_owned(),
        path: path.clone(),
        reason,
    };
    if entry.is_some() {
        return Err(not_editable("a file that holds several definitions"));
    }
    match bound.layer {
        Layer::User | Layer::Project => Ok(path.clone()),
        Layer::Admin => Err(not_editable("the administrator's machine-wide folder")),
        Layer::Plugin | Layer::BundledPlugin => Err(not_editable("a plugin")),
        Layer::Framework => Err(ScheduleEditError::Builtin {
            name: name.to_owned(),
        }),
    }
}

/// Sets `enabled` of the schedule `name` of `graph` in its file.
pub fn set_enabled(
    graph: &CompiledGraph,
    name: &str,
    enabled: bool,
) -> Result<EnabledChange, ScheduleEditError> {
    let node = super::schedule_nodes(graph)
        .map(|(n, _)| n)
        .find(|n| n.slot.name == name)
        .ok_or_else(|| ScheduleEditError::NotFound(name.to_owned()))?;
    let bound = graph
        .binding(&node.source_id)
        .ok_or_else(|| ScheduleEditError::NotFound(name.to_owned()))?;
    let file = editable_file(name, bound)?;
    let changed = set_enabled_in_file(&file, enabled)?;
    Ok(EnabledChange {
        name: name.to_owned(),
        file,
        enabled,
        changed,
    })
}

/// Sets `enabled` in the schedule file `path`; false when it already said
/// so (nothing is written then).
pub fn set_enabled_in_file(path: &Path, enabled: bool) -> Result<bool, ScheduleEditError> {
    let format = match path.extension().and_then(|e| e.to_str()) {
        Some("toml") => FileFormat::Toml,
        Some("json") => FileFormat::Json,
        Some(_) | None => {
            return Err(ScheduleEditError::FormatUnsupported {
                path: path.to_owned(),
            });
        }
    };
    let text = std::fs::read_to_string(path).map_err(|source| ScheduleEditError::Unreadable {
        path: path.to_owned(),
        source,
    })?;
    let Some(edited) = edit_enabled(path, format, &text, enabled)? else {
        return Ok(false);
    };
    // Keeps the file's permissions.
    write_atomic(path, edited.as_bytes(), AtomicOptions::default())?;
    Ok(true)
}

/// `text` (a schedule file of `format`) with `enabled` set; `None` when it
/// already says so. The result reads as `text` did with only `enabled`
/// changed, or it is refused.
pub fn edit_enabled(
    path: &Path,
    format: FileFormat,
    text: &str,
    enabled: bool,
) -> Result<Option<String>, ScheduleEditError> {
    let read = |text: &str| {
        evoflux_graph::declarative::parse_value(path, format, text).map_err(|d| {
            ScheduleEditError::Invalid {
                path: path.to_owned(),
                diagnostic: Box::new(d),
            }
        })
    };
    let before = read(text)?;
    let Value::Object(mut expected) = before else {
        return Err(ScheduleEditError::Invalid {
            path: path.to_owned(),
            diagnostic: Box::new(
                Diagnostic::error(
                    "schedule/not-a-table",
                    "a schedule is a table of fields (cron or every, prompt, …)",
                )
                .with_file(path),
            ),
        });
    };
    match expected.get("enabled") {
        Some(Value::Bool(b)) if *b == enabled => return Ok(None),
        // Absent is enabled.
        None if enabled => return Ok(None),
        Some(Value::Bool(_)) | None => {}
        Some(_) => {
            return Err(ScheduleEditError::EnabledInvalid {
                path: path.to_owned(),
            });
        }
    }
    let edited = match format {
        FileFormat::Toml => edit_toml(text, enabled),
        FileFormat::Json => edit_json(text, enabled),
        FileFormat::Yaml | FileFormat::Markdown => None,
    }
    .ok_or_else(|| ScheduleEditError::Unverified {
        path: path.to_owned(),
    })?;
    expected.insert("enabled".to_owned(), Value::Bool(enabled));
    match read(&edited) {
        Ok(after) if after == Value::Object(expected) => Ok(Some(edited)),
        Ok(_) | Err(_) => Err(ScheduleEditError::Unverified {
            path: path.to_owned(),
        }),
    }
}

/// TOML: the value of `enabled` replaced (its comment and spacing kept),
/// or `enabled = false` added after the last key.
fn edit_toml(text: &str, enabled: bool) -> Option<String> {
    let mut doc: toml_edit::DocumentMut = text.parse().ok()?;
    match doc.get_mut("enabled") {
        Some(item) => match item.as_value_mut()? {
            toml_edit::Value::Boolean(b) => {
                let decor = b.decor().clone();
                *b = toml_edit::Formatted::new(enabled);
                *b.decor_mut() = decor;
            }
            _ => return None,
        },
        None => {
            doc.insert("enabled", toml_edit::value(enabled));
        }
    }
    Some(doc.to_string())
}

/// One member of a JSON object: where its key starts and its value's
/// bytes.
struct Member {
    key_start: usize,
    key: String,
    value: std::ops::Range<usize>,
}

/// JSON: every top-level `enabled` value replaced, or an `"enabled":
/// false` member added after the last one, indented as that one is. The
/// text is valid JSON (it was read before).
fn edit_json(text: &str, enabled: bool) -> Option<String> {
    let (open, members) = json_members(text)?;
    let literal = if enabled { "true" } else { "false" };
    let mut out = text.to_owned();
    let hits: Vec<&Member> = members.iter().filter(|m| m.key == "enabled").collect();
    if hits.is_empty() {
        let member = format!("\"enabled\": {literal}");
        match members.last() {
            None => out.insert_str(open + 1, &member),
            Some(last) => {
                let before_key = members
                    .len()
                    .checked_sub(2)
                    .and_then(|i| members.get(i))
                    .map_or(open + 1, |prev| prev.value.end);
                // The spacing before the last key (after its comma).
                let gap = text.get(before_key..last.key_start)?;
                let gap = gap.rsplit(',').next().unwrap_or_default();
                out.insert_str(last.value.end, &format!(",{gap}{member}"));
            }
        }
    } else {
        // Back to front, so the earlier spans stay where they are.
        for m in hits.iter().rev() {
            match text.get(m.value.clone())? {
                "true" | "false" => out.replace_range(m.value.clone(), literal),
                _ => return None,
            }
        }
    }
    Some(out)
}

/// The byte offset of the top-level object's `{` and its members.
fn json_members(text: &str) -> Option<(usize, Vec<Member>)> {
    let mut s = Scan {
        b: text.as_bytes(),
        i: 0,
    };
    s.ws();
    let open = s.i;
    s.eat(b'{')?;
    let mut members = Vec::new();
    s.ws();
    if s.peek()? == b'}' {
        return Some((open, members));
    }
    loop {
        s.ws();
        let key_start = s.i;
        s.string()?;
        let key: String = serde_json::from_str(text.get(key_start..s.i)?).ok()?;
        s.ws();
        s.eat(b':')?;
        s.ws();
        let start = s.i;
        s.value()?;
        members.push(Member {
            key_start,
            key,
            value: start..s.i,
        });
        s.ws();
        match s.peek()? {
            b',' => s.i += 1,
            b'}' => return Some((open, members)),
            _ => return None,
        }
    }
}

/// A cursor over JSON bytes.
struct Scan<'a> {
    b: &'a [u8],
    i: usize,
}

impl Scan<'_> {
    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    fn eat(&mut self, c: u8) -> Option<()> {
        (self.peek()? == c).then(|| self.i += 1)
    }

    fn ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.i += 1;
        }
    }

    fn string(&mut self) -> Option<()> {
        self.eat(b'"')?;
        loop {
            match self.peek()? {
                b'\\' => self.i += 2,
                b'"' => {
                    self.i += 1;
                    return Some(());
                }
                _ => self.i += 1,
            }
        }
    }

    fn value(&mut self) -> Option<()> {
        match self.peek()? {
            b'"' => self.string(),
            b'{' | b'[' => {
                let mut depth = 0usize;
                loop {
                    match self.peek()? {
                        b'"' => {
                            self.string()?;
                            continue;
                        }
                        b'{' | b'[' => depth += 1,
                        b'}' | b']' => {
                            depth = depth.checked_sub(1)?;
                            if depth == 0 {
                                self.i += 1;
                                return Some(());
                            }
                        }
                        _ => {}
                    }
                    self.i += 1;
                }
            }
            _ => {
                let start = self.i;
                while !matches!(
                    self.peek(),
                    None | Some(b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r')
                ) {
                    self.i += 1;
                }
                (self.i > start).then_some(())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use evoflux_graph::candidate::{AppFolder, AppRoot, Owner};

    fn toml(text: &str, enabled: bool) -> Result<Option<String>, ScheduleEditError> {
        edit_enabled(Path::new("s.toml"), FileFormat::Toml, text, enabled)
    }

    fn json(text: &str, enabled: bool) -> Result<Option<String>, ScheduleEditError> {
        edit_enabled(Path::new("s.json"), FileFormat::Json, text, enabled)
    }

    #[test]
    fn toml_keeps_comments_order_and_unknown_keys() {
        let text = "# Made by hand: the nightly digest.\n\
                    every = \"1d\"   # once a day\n\
                    prompt = \"Write the digest\"\n\
                    enabled = true # flip me\n\
                    future_key = { nested = [1, 2] } # not ours\n";
        let off = toml(text, false).unwrap().unwrap();
        assert_eq!(off, text.replace("enabled = true #", "enabled = false #"));
        // Back on: the file is as it was.
        assert_eq!(toml(&off, true).unwrap().unwrap(), text);
        // Already so: nothing to write.
        assert_eq!(toml(text, true).unwrap(), None);
    }

    #[test]
    fn toml_without_enabled_gets_one_line_and_keeps_the_rest() {
        let text = "# Made by schedule_task in session s1.\nevery = \"1h\"\nprompt = \"p\"\n";
        assert_eq!(toml(text, true).unwrap(), None, "absent is enabled");
        let off = toml(text, false).unwrap().unwrap();
        assert_eq!(off, format!("{text}enabled = false\n"));
        let back = toml(&off, true).unwrap().unwrap();
        assert_eq!(back, format!("{text}enabled = true\n"));
    }

    #[test]
    fn json_keeps_layout_and_unknown_keys() {
        let text = "{\n    \"every\": \"1h\",\n    \"prompt\": \"say \\\"enabled\\\": true\",\n    \"x-note\": {\"enabled\": true, \"list\": [1, {\"a\": \"}\"}]},\n    \"enabled\": true\n}\n";
        let off = json(text, false).unwrap().unwrap();
        assert_eq!(
            off,
            text.replace("\"enabled\": true\n}", "\"enabled\": false\n}")
        );
        // Absent: one member after the last, indented as it is.
        let text = "{\n  \"every\": \"1h\",\n  \"prompt\": \"p\",\n  \"x-owner\": \"me\"\n}";
        let off = json(text, false).unwrap().unwrap();
        assert_eq!(
            off,
            "{\n  \"every\": \"1h\",\n  \"prompt\": \"p\",\n  \"x-owner\": \"me\",\n  \"enabled\": false\n}"
        );
        let compact = "{\"every\":\"1h\",\"prompt\":\"p\"}";
        assert_eq!(
            json(compact, false).unwrap().unwrap(),
            "{\"every\":\"1h\",\"prompt\":\"p\",\"enabled\": false}"
        );
        let single = "{ \"prompt\": \"p\" }";
        assert_eq!(
            json(single, false).unwrap().unwrap(),
            "{ \"prompt\": \"p\", \"enabled\": false }"
        );
    }

    #[test]
    fn bad_files_are_refused_with_their_code_and_left_alone() {
        let e = toml("every = \"1h\"\nenabled = \"yes\"\n", false).unwrap_err();
        assert_eq!(e.code(), "schedule/enabled-invalid");
        let e = toml("every = \n", false).unwrap_err();
        assert_eq!(e.code(), "schedule/file-invalid");
        let e = json("[1, 2]", false).unwrap_err();
        assert_eq!(e.code(), "schedule/file-invalid");
        let t = tempfile::tempdir().unwrap();
        let yaml = t.path().join("s.yaml");
        std::fs::write(&yaml, "every: 1h\n").unwrap();
        let e = set_enabled_in_file(&yaml, false).unwrap_err();
        assert_eq!(e.code(), "schedule/format-unsupported");
        assert_eq!(std::fs::read_to_string(&yaml).unwrap(), "every: 1h\n");
    }

    #[test]
    fn a_file_is_edited_in_place() {
        let t = tempfile::tempdir().unwrap();
        let path = t.path().join("digest.toml");
        let text = "# mine\nevery = \"1h\"\nprompt = \"p\"\nenabled = true\n";
        std::fs::write(&path, text).unwrap();
        assert!(set_enabled_in_file(&path, false).unwrap());
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            text.replace("true", "false")
        );
        assert!(!set_enabled_in_file(&path, false).unwrap(), "already off");
    }

    fn bound(binding: Binding, layer: Layer) -> BoundSource {
        BoundSource {
            binding,
            logical_path: "schedules/digest.toml".into(),
            layer,
            owner: Owner::Application {
                root: AppRoot::User,
                folder: AppFolder::Evoflux,
                path: PathBuf::from("/c"),
            },
        }
    }

    #[test]
    fn only_the_users_own_files_are_editable() {
        let file = |entry: Option<&str>| Binding::File {
            path: PathBuf::from("/c/schedules/digest.toml"),
            sha256: String::new(),
            entry: entry.map(str::to_owned),
        };
        let builtin = Binding::Builtin {
            registry: "framework".into(),
            module: "digest".into(),
            revision: "1".into(),
            semantic_revision: None,
            derivation: None,
        };
        let e = editable_file("digest", &bound(builtin, Layer::Framework)).unwrap_err();
        assert_eq!(e.code(), "schedule/builtin-read-only");
        for layer in [Layer::User, Layer::Project] {
            assert_eq!(
                editable_file("digest", &bound(file(None), layer)).unwrap(),
                Path::new("/c/schedules/digest.toml")
            );
        }
        for layer in [Layer::Admin, Layer::Plugin, Layer::BundledPlugin] {
            let e = editable_file("digest", &bound(file(None), layer)).unwrap_err();
            assert_eq!(e.code(), "schedule/not-editable", "{layer}");
        }
        let e = editable_file("digest", &bound(file(Some("x")), Layer::User)).unwrap_err();
        assert_eq!(e.code(), "schedule/not-editable");
    }
}
