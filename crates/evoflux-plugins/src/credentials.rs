//! The credentials extension `org.evoelsewhere.evoflux.credentials` (legacy
//! alias `evoflux.credentials`, read-only; the canonical namespace wins).
//!
//! A plugin declares a small form; the host renders it, stores the values
//! outside the package in `data/<id>/credentials.json` (mode 0600, atomic,
//! sorted keys) and injects them only into that installation's stdio MCP
//! processes under the declared environment names. Secret values never
//! leave this module unmasked except through [`CredentialValues::environment`],
//! which feeds a child process and nothing else.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::io::{self, Read};
use std::path::Path;

use evoflux_core::atomic::{AtomicOptions, write_atomic};
use evoflux_graph::connection::{UrlProblem, check_url};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::PluginError;
use crate::extensions::EvofluxExtension;
use crate::manifest::PluginManifest;

/// How a secret is shown everywhere.
pub const MASK: &str = "********";
/// Most fields one declaration may have.
pub const MAX_FIELDS: usize = 32;
/// Largest credentials file read (256 KiB).
pub const MAX_STORE_BYTES: u64 = 256 * 1024;
/// Environment names a credential may not set: the host owns them.
const RESERVED_ENV: [&str; 3] = ["PATH", "PLUGIN_ROOT", "PLUGIN_DATA"];

/// The field types. Closed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FieldType {
    #[default]
    Text,
    /// Masked in every output.
    Secret,
    /// An absolute http(s) URL without user information or fragment.
    Url,
    Boolean,
}

/// A stored or default value.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum CredentialValue {
    Bool(bool),
    Text(String),
}

impl CredentialValue {
    /// The value as injected into an environment variable.
    fn to_env(&self) -> String {
        match self {
            CredentialValue::Bool(b) => b.to_string(),
            CredentialValue::Text(s) => s.clone(),
        }
    }
}

/// One declared field.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CredentialField {
    pub key: String,
    pub label: String,
    #[serde(rename = "type", default)]
    pub field_type: FieldType,
    pub env: String,
    #[serde(default)]
    pub required: bool,
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub placeholder: String,
    #[serde(default)]
    pub default: Option<CredentialValue>,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
struct DeclarationDoc {
    fields: Vec<CredentialField>,
}

/// A validated declaration.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CredentialDeclaration {
    pub fields: Vec<CredentialField>,
}

fn key_ok(key: &str) -> bool {
    let b = key.as_bytes();
    !b.is_empty()
        && b.len() <= 64
        && b[0].is_ascii_lowercase()
        && b[1..].iter().all(|c| {
            c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, b'_' | b'.' | b'-')
        })
}

fn env_ok(env: &str) -> bool {
    let b = env.as_bytes();
    !b.is_empty()
        && b.len() <= 128
        && (b[0].is_ascii_uppercase() || b[0] == b'_')
        && b[1..]
            .iter()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || *c == b'_')
}

/// Checks a URL value: absolute http(s), no user information, no
/// fragment. Plain http to a remote host is allowed here (unlike an MCP
/// `url`): the value is data for the plugin, not a connection evoflux makes.
fn url_value_ok(raw: &str) -> Result<(), String> {
    match check_url(raw) {
        Ok(_) | Err(UrlProblem::PlainHttpRemote) => Ok(()),
        Err(problem) => Err(format!(
            "must be an absolute HTTP(S) URL: `{raw}` {problem}"
        )),
    }
}

/// Checks `value` against the field's type.
fn check_value(field: &CredentialField, value: &CredentialValue) -> Result<(), String> {
    match (field.field_type, value) {
        (FieldType::Boolean, CredentialValue::Bool(_)) => Ok(()),
        (FieldType::Boolean, CredentialValue::Text(_)) => Err("must be true or false".into()),
        (FieldType::Text | FieldType::Secret | FieldType::Url, CredentialValue::Bool(_)) => {
            Err("must be a string".into())
        }
        (FieldType::Url, CredentialValue::Text(s)) => url_value_ok(s),
        (FieldType::Text | FieldType::Secret, CredentialValue::Text(s)) => {
            if s.contains('\0') {
                Err("must not contain NUL".into())
            } else {
                Ok(())
            }
        }
    }
}

impl CredentialDeclaration {
    /// The declaration in effect for `manifest` (canonical namespace first),
    /// `Ok(None)` when the plugin declares no credentials.
    pub fn of(manifest: &PluginManifest) -> Result<Option<CredentialDeclaration>, PluginError> {
        let Some(decl) = EvofluxExtension::Credentials.declaration(manifest) else {
            return Ok(None);
        };
        let invalid = |reason: String| PluginError::CredentialsDeclarationInvalid {
            plugin: manifest.name.clone(),
            reason,
        };
        let doc: DeclarationDoc = serde_json::from_value(Value::Object(decl.clone()))
            .map_err(|e| invalid(e.to_string()))?;
        if doc.fields.len() > MAX_FIELDS {
            return Err(invalid(format!("more than {MAX_FIELDS} fields")));
        }
        let mut keys = BTreeSet::new();
        let mut envs = BTreeSet::new();
        for (i, f) in doc.fields.iter().enumerate() {
            let at = |why: String| invalid(format!("fields[{i}] (`{}`): {why}", f.key));
            if !key_ok(&f.key) {
                return Err(at(
                    "`key` must be 1-64 of a-z, 0-9, `_`, `.`, `-`, starting with a letter".into(),
                ));
            }
            if !env_ok(&f.env) {
                return Err(at(
                    "`env` must be 1-128 of A-Z, 0-9 and `_`, not starting with a digit".into(),
                ));
            }
            if RESERVED_ENV.contains(&f.env.as_str()) {
                return Err(at(format!("`env` may not be `{}`", f.env)));
            }
            if !keys.insert(f.key.as_str()) {
                return Err(at("`key` is declared twice".into()));
            }
            if !envs.insert(f.env.as_str()) {
                return Err(at(format!("`env` `{}` is declared twice", f.env)));
            }
            if let Some(default) = &f.default {
                check_value(f, default).map_err(|why| at(format!("`default` {why}")))?;
            }
        }
        Ok(Some(CredentialDeclaration { fields: doc.fields }))
    }

    fn field(&self, key: &str) -> Option<&CredentialField> {
        self.fields.iter().find(|f| f.key == key)
    }
}

/// The stored values of one installation.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CredentialValues(BTreeMap<String, CredentialValue>);

impl CredentialValues {
    /// Reads `file`; a missing file holds no values.
    pub fn read(file: &Path) -> Result<CredentialValues, PluginError> {
        let malformed = |reason: String| PluginError::CredentialsMalformed {
            path: file.to_path_buf(),
            reason,
        };
        let f = match fs::File::open(file) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Self::default()),
            Err(e) => return Err(PluginError::io("read", file)(e)),
        };
        let mut bytes = Vec::new();
        f.take(MAX_STORE_BYTES + 1)
            .read_to_end(&mut bytes)
            .map_err(PluginError::io("read", file))?;
        if bytes.len() as u64 > MAX_STORE_BYTES {
            return Err(malformed(format!(
                "larger than {} KiB",
                MAX_STORE_BYTES / 1024
            )));
        }
        let map: BTreeMap<String, CredentialValue> =
            serde_json::from_slice(&bytes).map_err(|e| malformed(e.to_string()))?;
        Ok(CredentialValues(map))
    }

    /// Every stored text value by its key: what must never leave the
    /// machine in a session export.
    pub fn texts(&self) -> Vec<(&str, &str)> {
        self.0
            .iter()
            .filter_map(|(k, v)| match v {
                CredentialValue::Text(t) => Some((k.as_str(), t.as_str())),
                CredentialValue::Bool(_) => None,
            })
            .collect()
    }

    /// Writes atomically with mode 0600 (the folder is created 0700).
    pub fn write(&self, file: &Path) -> Result<(), PluginError> {
        if let Some(dir) = file.parent() {
            create_private_dir(dir).map_err(PluginError::io("create", dir))?;
        }
        let mut text = serde_json::to_string_pretty(&self.0).map_err(|e| PluginError::Io {
            action: "serialize",
            path: file.to_path_buf(),
            source: io::Error::other(e),
        })?;
        text.push('\n');
        write_atomic(file, text.as_bytes(), AtomicOptions::SECRET).map_err(|e| PluginError::Io {
            action: "write",
            path: file.to_path_buf(),
            source: e.source,
        })
    }

    fn effective<'a>(&'a self, field: &'a CredentialField) -> Option<&'a CredentialValue> {
        self.0.get(&field.key).or(field.default.as_ref())
    }

    /// The variables to inject into the installation's stdio MCP
    /// processes: declared `env` name to value, for every field that has
    /// a stored or default value. Only the MCP runtime may call this.
    /// The labels of the required fields without a stored or default
    /// value: while any is missing the plugin's stdio servers are not
    /// started (they would start without what they need).
    pub fn missing_required(&self, decl: &CredentialDeclaration) -> Vec<String> {
        decl.fields
            .iter()
            .filter(|f| f.required && self.effective(f).is_none())
            .map(|f| f.label.clone())
            .collect()
    }

    pub fn environment(&self, decl: &CredentialDeclaration) -> BTreeMap<String, String> {
        decl.fields
            .iter()
            .filter_map(|f| Some((f.env.clone(), self.effective(f)?.to_env())))
            .collect()
    }
}

fn create_private_dir(dir: &Path) -> io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
    }
    #[cfg(not(unix))]
    {
        fs::create_dir_all(dir)
    }
}

/// One field as shown to a client: secrets masked.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FieldState {
    pub key: String,
    pub label: String,
    #[serde(rename = "type")]
    pub field_type: FieldType,
    pub env: String,
    pub required: bool,
    pub description: String,
    pub placeholder: String,
    pub configured: bool,
    /// The stored (or default) value; `********` for a secret.
    pub value: Option<CredentialValue>,
}

/// The credentials form of one installation, safe to print.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CredentialState {
    pub supported: bool,
    /// Every required field has a value.
    pub configured: bool,
    pub fields: Vec<FieldState>,
    pub error: Option<String>,
    /// The labels of the required fields without a value.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub missing: Vec<String>,
}

impl CredentialState {
    /// The state of a plugin without the extension.
    pub fn unsupported() -> CredentialState {
        CredentialState {
            supported: false,
            configured: true,
            fields: Vec::new(),
            error: None,
            missing: Vec::new(),
        }
    }

    /// A declaration or store that cannot be read.
    pub fn broken(error: &PluginError) -> CredentialState {
        CredentialState {
            supported: true,
            configured: false,
            fields: Vec::new(),
            error: Some(error.to_string()),
            missing: Vec::new(),
        }
    }

    pub fn new(decl: &CredentialDeclaration, values: &CredentialValues) -> CredentialState {
        let fields: Vec<FieldState> = decl
            .fields
            .iter()
            .map(|f| {
                let value = values.effective(f).map(|v| match f.field_type {
                    FieldType::Secret => CredentialValue::Text(MASK.to_owned()),
                    FieldType::Text | FieldType::Url | FieldType::Boolean => v.clone(),
                });
                FieldState {
                    key: f.key.clone(),
                    label: f.label.clone(),
                    field_type: f.field_type,
                    env: f.env.clone(),
                    required: f.required,
                    description: f.description.clone(),
                    placeholder: f.placeholder.clone(),
                    configured: value.is_some(),
                    value,
                }
            })
            .collect();
        let missing = values.missing_required(decl);
        CredentialState {
            supported: true,
            configured: missing.is_empty(),
            fields,
            error: None,
            missing,
        }
    }
}

/// One requested change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CredentialChange {
    /// A typed value (API clients).
    Set(CredentialValue),
    /// A value as typed on a command line: `true`/`false` for booleans.
    SetText(String),
    Clear,
}

/// Applies `changes` to `values` under `decl`. Unknown keys are refused; a
/// secret whose new value is the mask is left unchanged (a client echoing
/// the masked form back must not overwrite the secret); an empty string
/// clears. Nothing is applied unless every change is valid.
pub fn apply_changes(
    plugin: &str,
    decl: &CredentialDeclaration,
    values: &CredentialValues,
    changes: &BTreeMap<String, CredentialChange>,
) -> Result<CredentialValues, PluginError> {
    let mut out = values.clone();
    for (key, change) in changes {
        let Some(field) = decl.field(key) else {
            return Err(PluginError::UnknownCredential {
                plugin: plugin.to_owned(),
                key: key.clone(),
            });
        };
        let value = match change {
            CredentialChange::Clear => None,
            CredentialChange::Set(CredentialValue::Text(s)) | CredentialChange::SetText(s)
                if s.is_empty() =>
            {
                None
            }
            CredentialChange::Set(v) => Some(v.clone()),
            CredentialChange::SetText(s) => Some(match field.field_type {
                FieldType::Boolean => match s.as_str() {
                    "true" => CredentialValue::Bool(true),
                    "false" => CredentialValue::Bool(false),
                    _ => CredentialValue::Text(s.clone()),
                },
                FieldType::Text | FieldType::Secret | FieldType::Url => {
                    CredentialValue::Text(s.clone())
                }
            }),
        };
        match value {
            None => {
                out.0.remove(key);
            }
            Some(CredentialValue::Text(s))
                if s == MASK && field.field_type == FieldType::Secret => {}
            Some(v) => {
                check_value(field, &v).map_err(|reason| PluginError::InvalidCredential {
                    key: key.clone(),
                    reason,
                })?;
                out.0.insert(key.clone(), v);
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::manifest::validate_manifest;
    use crate::schema::PLUGIN_SCHEMA_1_0_0;
    use serde_json::json;

    fn manifest(ext: Value) -> PluginManifest {
        let text = json!({"$schema": PLUGIN_SCHEMA_1_0_0, "name": "svc", "extensions": ext});
        validate_manifest(&text.to_string(), Path::new("plugin.json"))
            .manifest
            .unwrap()
    }

    fn fields() -> Value {
        json!([
            {"key": "endpoint", "label": "Service URL", "type": "url", "env": "SERVICE_URL", "required": true},
            {"key": "token", "label": "API token", "type": "secret", "env": "SERVICE_API_TOKEN", "required": true},
            {"key": "verbose", "label": "Verbose", "type": "boolean", "env": "SERVICE_VERBOSE", "default": false}
        ])
    }

    fn decl() -> CredentialDeclaration {
        CredentialDeclaration::of(&manifest(
            json!({"org.evoelsewhere.evoflux.credentials": {"fields": fields()}}),
        ))
        .unwrap()
        .unwrap()
    }

    #[test]
    fn canonical_namespace_wins_over_the_alias() {
        let m = manifest(json!({
            "evoflux.credentials": {"fields": [{"key": "legacy", "label": "L", "env": "LEGACY"}]},
            "org.evoelsewhere.evoflux.credentials": {"fields": [{"key": "new", "label": "N", "env": "NEW"}]},
        }));
        let d = CredentialDeclaration::of(&m).unwrap().unwrap();
        assert_eq!(d.fields.len(), 1);
        assert_eq!(d.fields[0].key, "new");
        let legacy_only = manifest(json!({
            "evoflux.credentials": {"fields": [{"key": "legacy", "label": "L", "env": "LEGACY"}]},
        }));
        let d = CredentialDeclaration::of(&legacy_only).unwrap().unwrap();
        assert_eq!(d.fields[0].key, "legacy");
        assert!(
            CredentialDeclaration::of(&manifest(json!({})))
                .unwrap()
                .is_none()
        );
    }

    #[test]
    fn declaration_rules() {
        for (field, needle) in [
            (
                json!({"key": "u", "label": "U", "type": "url", "env": "U", "default": "not-a-url"}),
                "absolute HTTP(S) URL",
            ),
            (json!({"key": "Bad", "label": "B", "env": "B"}), "`key`"),
            (json!({"key": "p", "label": "P", "env": "PATH"}), "`PATH`"),
            (
                json!({"key": "p", "label": "P", "env": "PLUGIN_DATA"}),
                "`PLUGIN_DATA`",
            ),
            (json!({"key": "p", "label": "P", "env": "lower"}), "`env`"),
            (
                json!({"key": "p", "label": "P", "env": "P", "type": "number"}),
                "unknown variant",
            ),
            (
                json!({"key": "p", "label": "P", "env": "P", "extra": 1}),
                "unknown field",
            ),
            (
                json!({"key": "b", "label": "B", "env": "B", "type": "boolean", "default": "yes"}),
                "true or false",
            ),
        ] {
            let m = manifest(json!({"org.evoelsewhere.evoflux.credentials": {"fields": [field]}}));
            let err = CredentialDeclaration::of(&m).unwrap_err();
            assert_eq!(err.code(), "plugin/credentials-declaration-invalid");
            assert!(err.to_string().contains(needle), "{err} lacks {needle}");
        }
        let dup = manifest(json!({"org.evoelsewhere.evoflux.credentials": {"fields": [
            {"key": "a", "label": "A", "env": "X"}, {"key": "b", "label": "B", "env": "X"}
        ]}}));
        assert!(CredentialDeclaration::of(&dup).is_err());
    }

    #[test]
    fn secrets_are_masked_and_the_mask_never_overwrites() {
        let d = decl();
        let empty = CredentialValues::default();
        let state = CredentialState::new(&d, &empty);
        assert!(state.supported && !state.configured);
        let changes = BTreeMap::from([
            (
                "endpoint".to_owned(),
                CredentialChange::SetText("https://svc.example/api".into()),
            ),
            (
                "token".to_owned(),
                CredentialChange::SetText("s3cr3t-value".into()),
            ),
            (
                "verbose".to_owned(),
                CredentialChange::SetText("true".into()),
            ),
        ]);
        let values = apply_changes("svc", &d, &empty, &changes).unwrap();
        let state = CredentialState::new(&d, &values);
        assert!(state.configured);
        let printed = serde_json::to_string(&state).unwrap();
        assert!(!printed.contains("s3cr3t-value"));
        assert!(printed.contains(MASK));
        let echoed = BTreeMap::from([("token".to_owned(), CredentialChange::SetText(MASK.into()))]);
        let same = apply_changes("svc", &d, &values, &echoed).unwrap();
        assert_eq!(same, values);
        let env = values.environment(&d);
        assert_eq!(env["SERVICE_API_TOKEN"], "s3cr3t-value");
        assert_eq!(env["SERVICE_VERBOSE"], "true");
        let cleared = apply_changes(
            "svc",
            &d,
            &values,
            &BTreeMap::from([("token".to_owned(), CredentialChange::Clear)]),
        )
        .unwrap();
        assert!(!CredentialState::new(&d, &cleared).configured);
    }

    #[test]
    fn bad_values_are_refused_whole() {
        let d = decl();
        let empty = CredentialValues::default();
        for (key, value, code) in [
            ("endpoint", "ftp://x", "plugin/credential-invalid"),
            ("endpoint", "https://u:p@x/", "plugin/credential-invalid"),
            ("verbose", "maybe", "plugin/credential-invalid"),
            ("nope", "x", "plugin/credential-unknown"),
        ] {
            let changes = BTreeMap::from([
                ("token".to_owned(), CredentialChange::SetText("t".into())),
                (key.to_owned(), CredentialChange::SetText(value.into())),
            ]);
            let err = apply_changes("svc", &d, &empty, &changes).unwrap_err();
            assert_eq!(err.code(), code, "{key}={value}");
        }
    }

    #[cfg(unix)]
    #[test]
    fn store_is_private_and_sorted() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("data/abc/credentials.json");
        let values = CredentialValues(BTreeMap::from([
            ("z".to_owned(), CredentialValue::Text("1".into())),
            ("a".to_owned(), CredentialValue::Bool(true)),
        ]));
        values.write(&file).unwrap();
        assert_eq!(
            fs::metadata(&file).unwrap().permissions().mode() & 0o777,
            0o600
        );
        let text = fs::read_to_string(&file).unwrap();
        assert!(text.find("\"a\"").unwrap() < text.find("\"z\"").unwrap());
        assert_eq!(CredentialValues::read(&file).unwrap(), values);
        fs::write(&file, "[]").unwrap();
        assert_eq!(
            CredentialValues::read(&file).unwrap_err().code(),
            "plugin/credentials-malformed"
        );
    }
}
