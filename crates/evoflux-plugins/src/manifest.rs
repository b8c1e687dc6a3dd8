//! `plugin.json`: the closed 1.0.0 manifest.
//!
//! Validation follows the spec's failure semantics exactly: an unknown root
//! field and a non-object `extensions` are reported as warnings and ignored;
//! every other violation is fatal and is reported together with all other
//! fatal problems of the same file, so an author fixes them in one pass.
//!
//! Ambiguity resolved here (the spec reads both ways): an `extensions`
//! member whose key is not a reverse-DNS namespace or whose value is not an
//! object is reported and that member alone is ignored. §8.1 tells clients
//! to ignore namespaces they do not implement without validating them, and
//! a harsher reading would let any third-party extension brick a package.

use std::collections::BTreeMap;
use std::path::Path;

use evoflux_core::Diagnostic;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::codes;
use crate::schema::{SpecVersion, check_plugin_name, is_extension_namespace};
use crate::scope::{Scope, ScopedDiagnostic};
use crate::unique_json::UniqueJsonError;

/// The optional `author` object.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Author {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub email: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
}

/// A valid manifest: what remains after the non-fatal parts were dropped.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PluginManifest {
    /// The release named by `$schema`.
    pub spec_version: SpecVersion,
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub author: Option<Author>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub homepage: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repository: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub license: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keywords: Option<Vec<String>>,
    /// Valid extension members by namespace; meaning is assigned only by the
    /// namespaces evoflux implements.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub extensions: BTreeMap<String, Map<String, Value>>,
}

impl PluginManifest {
    /// The extension object under `namespace`, if present and valid.
    pub fn extension(&self, namespace: &str) -> Option<&Map<String, Value>> {
        self.extensions.get(namespace)
    }
}

/// The closed set of root fields of a 1.0.0 manifest.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ManifestField {
    Schema,
    Name,
    Version,
    Description,
    Author,
    Homepage,
    Repository,
    License,
    Keywords,
    Extensions,
}

impl ManifestField {
    fn from_key(key: &str) -> Option<ManifestField> {
        Some(match key {
            "$schema" => ManifestField::Schema,
            "name" => ManifestField::Name,
            "version" => ManifestField::Version,
            "description" => ManifestField::Description,
            "author" => ManifestField::Author,
            "homepage" => ManifestField::Homepage,
            "repository" => ManifestField::Repository,
            "license" => ManifestField::License,
            "keywords" => ManifestField::Keywords,
            "extensions" => ManifestField::Extensions,
            _ => return None,
        })
    }
}

/// The result of validating `plugin.json`: a manifest when nothing fatal
/// was found, and every diagnostic (warnings too) in scope `manifest`.
#[derive(Debug, Clone, PartialEq)]
pub struct ManifestOutcome {
    pub manifest: Option<PluginManifest>,
    pub diagnostics: Vec<ScopedDiagnostic>,
}

/// Validates the text of a `plugin.json`; `file` only names it in diagnostics.
pub fn validate_manifest(text: &str, file: &Path) -> ManifestOutcome {
    let mut out = Checker {
        file,
        diagnostics: Vec::new(),
    };
    if let Err(e) = evoflux_core::nesting::check_json(text) {
        out.push(Diagnostic::error(e.code(), format!("plugin.json: {e}")).with_line(e.line));
        return ManifestOutcome {
            manifest: None,
            diagnostics: out.diagnostics,
        };
    }
    let manifest = match crate::unique_json::parse(text) {
        Ok(value) => out.manifest(&value),
        Err(UniqueJsonError::Duplicate(dup)) => {
            out.push(
                Diagnostic::error(
                    codes::MANIFEST_DUPLICATE_KEY,
                    format!(
                        "plugin.json has the key `{}` twice (line {}); JSON keeps only the \
                         last, so remove or rename one",
                        dup.path, dup.line
                    ),
                )
                .with_line(dup.line)
                .with_field(dup.path),
            );
            None
        }
        Err(UniqueJsonError::Syntax(e)) => {
            let line = u32::try_from(e.line()).unwrap_or(u32::MAX);
            out.push(
                Diagnostic::error(
                    codes::MANIFEST_INVALID_JSON,
                    format!("plugin.json is not valid JSON: {e}"),
                )
                .with_line(line),
            );
            None
        }
    };
    ManifestOutcome {
        manifest,
        diagnostics: out.diagnostics,
    }
}

struct Checker<'a> {
    file: &'a Path,
    diagnostics: Vec<ScopedDiagnostic>,
}

impl Checker<'_> {
    fn push(&mut self, d: Diagnostic) {
        self.diagnostics.push(ScopedDiagnostic::new(
            Scope::Manifest,
            d.with_file(self.file),
        ));
    }

    fn fatal(&mut self, code: &'static str, field: &str, message: impl Into<String>) {
        self.push(Diagnostic::error(code, message).with_field(field));
    }

    fn optional_string(&mut self, value: &Value, field: &str) -> Option<String> {
        match value {
            Value::String(s) => Some(s.clone()),
            other => {
                self.fatal(
                    codes::MANIFEST_FIELD_INVALID,
                    field,
                    format!("`{field}` must be a string, found {}", kind(other)),
                );
                None
            }
        }
    }

    fn manifest(&mut self, value: &Value) -> Option<PluginManifest> {
        let Value::Object(root) = value else {
            self.push(Diagnostic::error(
                codes::MANIFEST_NOT_OBJECT,
                format!("plugin.json must be a JSON object, found {}", kind(value)),
            ));
            return None;
        };
        let mut spec_version = None;
        let mut name = None;
        let mut version = None;
        let mut description = None;
        let mut author = None;
        let mut homepage = None;
        let mut repository = None;
        let mut license = None;
        let mut keywords = None;
        let mut extensions = BTreeMap::new();

        if !root.contains_key("$schema") {
            self.fatal(
                codes::MANIFEST_SCHEMA_MISSING,
                "$schema",
                "plugin.json must declare `$schema` (the Agent Plugins schema it targets)",
            );
        }
        if !root.contains_key("name") {
            self.fatal(
                codes::MANIFEST_NAME_MISSING,
                "name",
                "plugin.json must declare `name`",
            );
        }
        for (key, value) in root {
            let Some(field) = ManifestField::from_key(key) else {
                self.push(
                    Diagnostic::warning(
                        codes::MANIFEST_UNKNOWN_FIELD,
                        format!("unknown manifest field `{key}` is ignored"),
                    )
                    .with_field(key.as_str()),
                );
                continue;
            };
            match field {
                ManifestField::Schema => spec_version = self.schema(value),
                ManifestField::Name => name = self.name(value),
                ManifestField::Version => version = self.optional_string(value, key),
                ManifestField::Description => description = self.optional_string(value, key),
                ManifestField::Homepage => homepage = self.optional_string(value, key),
                ManifestField::Repository => repository = self.optional_string(value, key),
                ManifestField::License => license = self.optional_string(value, key),
                ManifestField::Author => author = self.author(value),
                ManifestField::Keywords => keywords = self.keywords(value),
                ManifestField::Extensions => extensions = self.extensions(value),
            }
        }
        if self.diagnostics.iter().any(ScopedDiagnostic::is_error) {
            return None;
        }
        Some(PluginManifest {
            spec_version: spec_version?,
            name: name?,
            version,
            description,
            author,
            homepage,
            repository,
            license,
            keywords,
            extensions,
        })
    }

    fn schema(&mut self, value: &Value) -> Option<SpecVersion> {
        let id = self.optional_string(value, "$schema")?;
        let version = SpecVersion::from_plugin_schema(&id);
        if version.is_none() {
            self.fatal(
                codes::MANIFEST_SCHEMA_UNSUPPORTED,
                "$schema",
                format!(
                    "`$schema` `{id}` is not a supported Agent Plugins manifest schema (expected `{}`)",
                    SpecVersion::V1_0_0.plugin_schema()
                ),
            );
        }
        version
    }

    fn name(&mut self, value: &Value) -> Option<String> {
        let name = self.optional_string(value, "name")?;
        match check_plugin_name(&name) {
            Ok(()) => Some(name),
            Err(e) => {
                self.fatal(
                    codes::MANIFEST_NAME_INVALID,
                    "name",
                    format!("plugin name `{name}` is invalid: {e}"),
                );
                None
            }
        }
    }

    fn author(&mut self, value: &Value) -> Option<Author> {
        let Value::Object(map) = value else {
            self.fatal(
                codes::MANIFEST_FIELD_INVALID,
                "author",
                format!(
                    "`author` must be an object with optional `name`, `email` and `url`, found {}",
                    kind(value)
                ),
            );
            return None;
        };
        let mut author = Author::default();
        let mut ok = true;
        for (key, v) in map {
            let field = format!("author.{key}");
            let slot = match key.as_str() {
                "name" => &mut author.name,
                "email" => &mut author.email,
                "url" => &mut author.url,
                _ => {
                    self.fatal(
                        codes::MANIFEST_FIELD_INVALID,
                        &field,
                        format!("`author` allows only `name`, `email` and `url`, found `{key}`"),
                    );
                    ok = false;
                    continue;
                }
            };
            match v {
                Value::String(s) => *slot = Some(s.clone()),
                other => {
                    self.fatal(
                        codes::MANIFEST_FIELD_INVALID,
                        &field,
                        format!("`{field}` must be a string, found {}", kind(other)),
                    );
                    ok = false;
                }
            }
        }
        ok.then_some(author)
    }

    fn keywords(&mut self, value: &Value) -> Option<Vec<String>> {
        let Value::Array(items) = value else {
            self.fatal(
                codes::MANIFEST_FIELD_INVALID,
                "keywords",
                format!(
                    "`keywords` must be an array of strings, found {}",
                    kind(value)
                ),
            );
            return None;
        };
        let mut out = Vec::with_capacity(items.len());
        for (i, item) in items.iter().enumerate() {
            match item {
                Value::String(s) => out.push(s.clone()),
                other => self.fatal(
                    codes::MANIFEST_FIELD_INVALID,
                    &format!("keywords.{i}"),
                    format!(
                        "`keywords` must contain only strings, found {}",
                        kind(other)
                    ),
                ),
            }
        }
        (out.len() == items.len()).then_some(out)
    }

    fn extensions(&mut self, value: &Value) -> BTreeMap<String, Map<String, Value>> {
        let Value::Object(map) = value else {
            self.push(
                Diagnostic::warning(
                    codes::MANIFEST_EXTENSIONS_INVALID,
                    format!(
                        "`extensions` must be an object keyed by namespace, found {}; it is ignored",
                        kind(value)
                    ),
                )
                .with_field("extensions"),
            );
            return BTreeMap::new();
        };
        let mut out = BTreeMap::new();
        for (namespace, member) in map {
            let field = format!("extensions.{namespace}");
            if !is_extension_namespace(namespace) {
                self.push(
                    Diagnostic::warning(
                        codes::MANIFEST_EXTENSION_INVALID,
                        format!(
                            "extension key `{namespace}` is not a reverse-DNS namespace; it is ignored"
                        ),
                    )
                    .with_field(field),
                );
                continue;
            }
            match member {
                Value::Object(obj) => {
                    out.insert(namespace.clone(), obj.clone());
                }
                other => self.push(
                    Diagnostic::warning(
                        codes::MANIFEST_EXTENSION_INVALID,
                        format!(
                            "extension `{namespace}` must be an object, found {}; it is ignored",
                            kind(other)
                        ),
                    )
                    .with_field(field),
                ),
            }
        }
        out
    }
}

/// A short name for a JSON value's type, for messages.
pub(crate) fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::PLUGIN_SCHEMA_1_0_0;
    use serde_json::json;

    fn check(v: Value) -> ManifestOutcome {
        validate_manifest(&v.to_string(), Path::new("plugin.json"))
    }

    fn codes(o: &ManifestOutcome) -> Vec<&str> {
        o.diagnostics.iter().map(ScopedDiagnostic::code).collect()
    }

    #[test]
    fn hostile_nesting_is_refused_before_parsing() {
        let text = format!(
            "{{\"name\": \"x\",\n\"keywords\": {}{}}}",
            "[".repeat(100_000),
            "]".repeat(100_000)
        );
        let o = validate_manifest(&text, Path::new("plugin.json"));
        assert!(o.manifest.is_none());
        assert_eq!(codes(&o), ["json/too-deep"]);
        let d = &o.diagnostics[0].diagnostic;
        assert_eq!(d.locator.file.as_deref(), Some(Path::new("plugin.json")));
        assert_eq!(d.locator.line, Some(2));
    }

    #[test]
    fn minimal_manifest_is_valid() {
        let o = check(json!({"$schema": PLUGIN_SCHEMA_1_0_0, "name": "minimal-plugin"}));
        assert!(o.diagnostics.is_empty());
        let m = o.manifest.unwrap();
        assert_eq!(m.name, "minimal-plugin");
        assert_eq!(m.spec_version, SpecVersion::V1_0_0);
    }

    #[test]
    fn all_fatal_problems_are_reported_together() {
        let o = check(json!({
            "$schema": 3, "name": "Bad", "version": 1, "author": "me",
            "keywords": ["a", 2], "homepage": null
        }));
        assert!(o.manifest.is_none());
        let c = codes(&o);
        assert!(c.contains(&"plugin/manifest-name-invalid"));
        assert_eq!(
            c.iter()
                .filter(|c| **c == "plugin/manifest-field-invalid")
                .count(),
            5,
            "{c:?}"
        );
    }

    #[test]
    fn author_extra_key_and_non_string_value_are_fatal() {
        let o = check(json!({
            "$schema": PLUGIN_SCHEMA_1_0_0, "name": "a",
            "author": {"name": "x", "twitter": "@x", "url": 5}
        }));
        assert!(o.manifest.is_none());
        let fields: Vec<_> = o
            .diagnostics
            .iter()
            .map(|d| d.diagnostic.locator.field.clone().unwrap())
            .collect();
        assert_eq!(fields, ["author.twitter", "author.url"]);
    }

    #[test]
    fn extension_members_are_checked_one_by_one() {
        let o = check(json!({
            "$schema": PLUGIN_SCHEMA_1_0_0, "name": "a",
            "extensions": {"com.example.ok": {"k": 1}, "com.example.bad": 3, "nodots": {}}
        }));
        let m = o.manifest.clone().unwrap();
        assert_eq!(m.extensions.keys().collect::<Vec<_>>(), ["com.example.ok"]);
        assert_eq!(
            codes(&o),
            [
                "plugin/manifest-extension-invalid",
                "plugin/manifest-extension-invalid"
            ]
        );
        assert!(o.diagnostics.iter().all(|d| !d.is_error()));
    }

    #[test]
    fn invalid_json_names_the_line() {
        let o = validate_manifest("{\n  \"name\": \n}", Path::new("plugin.json"));
        assert_eq!(codes(&o), ["plugin/manifest-invalid-json"]);
        assert_eq!(o.diagnostics[0].diagnostic.locator.line, Some(3));
    }
}
