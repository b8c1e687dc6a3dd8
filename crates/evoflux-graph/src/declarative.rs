//! Reading declarative definition files (TOML, JSON, YAML) into typed
//! structs, strictly: unknown keys are errors naming their key path, and a
//! file that holds only `disable = true` is a disable sentinel.

use std::path::Path;

use evoflux_core::{Diagnostic, Diagnostics};
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::slot::FileFormat;

/// Parses `text` of `format` into a JSON value, or a diagnostic with the
/// line of the syntax error. JSON and YAML pass the nesting guard first
/// (`evoflux_core::nesting`; YAML through `parse_yaml_mapping`).
pub fn parse_value(path: &Path, format: FileFormat, text: &str) -> Result<Value, Diagnostic> {
    let syntax = |message: String, line: Option<usize>| {
        let d = Diagnostic::error("compile/syntax-invalid", message).with_file(path);
        match line.and_then(|l| u32::try_from(l).ok()) {
            Some(l) => d.with_line(l),
            None => d,
        }
    };
    match format {
        FileFormat::Toml => toml::from_str::<toml::Value>(text)
            .map_err(|e| {
                let line = e
                    .span()
                    .map(|s| text.get(..s.start).unwrap_or(text).matches('\n').count() + 1);
                syntax(format!("invalid TOML: {}", e.message().trim()), line)
            })
            .and_then(|v| {
                serde_json::to_value(v).map_err(|e| syntax(format!("invalid TOML: {e}"), None))
            }),
        FileFormat::Json => evoflux_core::nesting::check_json(text)
            .map_err(|e| e.to_diagnostic(path))
            .and_then(|()| {
                serde_json::from_str(text)
                    .map_err(|e| syntax(format!("invalid JSON: {e}"), Some(e.line())))
            }),
        FileFormat::Yaml => evoflux_core::frontmatter::parse_yaml_mapping(text, 1)
            .map_err(|e| e.to_diagnostic(path))
            .and_then(|m| {
                serde_json::to_value(yaml_to_json(&yaml_serde::Value::Mapping(m)))
                    .map_err(|e| syntax(format!("invalid YAML: {e}"), None))
            }),
        FileFormat::Markdown => Err(syntax(
            "a Markdown file is not a declarative definition".to_owned(),
            None,
        )),
    }
}

/// Converts YAML to JSON, turning non-string keys into their YAML text.
pub fn yaml_to_json(v: &yaml_serde::Value) -> Value {
    use yaml_serde::Value as Y;
    match v {
        Y::Null => Value::Null,
        Y::Bool(b) => Value::Bool(*b),
        Y::Number(n) => {
            if let Some(i) = n.as_i64() {
                Value::from(i)
            } else if let Some(u) = n.as_u64() {
                Value::from(u)
            } else {
                n.as_f64().map_or(Value::Null, Value::from)
            }
        }
        Y::String(s) => Value::String(s.clone()),
        Y::Sequence(items) => Value::Array(items.iter().map(yaml_to_json).collect()),
        Y::Mapping(m) => Value::Object(
            m.iter()
                .map(|(k, v)| {
                    let key = match k {
                        Y::String(s) => s.clone(),
                        other => yaml_serde::to_string(other)
                            .unwrap_or_default()
                            .trim()
                            .to_owned(),
                    };
                    (key, yaml_to_json(v))
                })
                .collect(),
        ),
        Y::Tagged(t) => yaml_to_json(&t.value),
    }
}

/// A disable sentinel holds exactly one key, `disable`, set to `true`.
pub fn is_disable_sentinel(v: &Value) -> bool {
    v.as_object()
        .is_some_and(|m| m.len() == 1 && m.get("disable") == Some(&Value::Bool(true)))
}

/// The dotted key path of an ignored key.
fn key_path(path: &serde_ignored::Path<'_>) -> String {
    use serde_ignored::Path as P;
    match path {
        P::Root => String::new(),
        P::Seq { parent, index } => format!("{}[{index}]", key_path(parent)),
        P::Map { parent, key } => match key_path(parent) {
            p if p.is_empty() => key.clone(),
            p => format!("{p}.{key}"),
        },
        P::Some { parent } | P::NewtypeStruct { parent } | P::NewtypeVariant { parent } => {
            key_path(parent)
        }
    }
}

/// Deserializes `value` into `T`, reporting every unknown key and the
/// first type error. Returns `None` when anything was reported.
pub fn deserialize_strict<T: DeserializeOwned>(
    path: &Path,
    value: Value,
    what: &str,
    diags: &mut Diagnostics,
) -> Option<T> {
    let mut unknown = Vec::new();
    let result: Result<T, _> = serde_ignored::deserialize(value, |p| unknown.push(key_path(&p)));
    // JSON maps iterate in file or key order depending on serde_json's
    // features; report in one deterministic order.
    unknown.sort();
    for key in &unknown {
        diags.push(
            Diagnostic::error(
                "compile/unknown-key",
                format!("unknown key `{key}` in {what}: remove it or check its spelling"),
            )
            .with_file(path)
            .with_field(key.clone()),
        );
    }
    match result {
        Ok(v) if unknown.is_empty() => Some(v),
        Ok(_) => None,
        Err(e) => {
            diags.push(
                Diagnostic::error("compile/definition-invalid", format!("invalid {what}: {e}"))
                    .with_file(path),
            );
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sentinel_is_exactly_disable_true() {
        assert!(is_disable_sentinel(&serde_json::json!({"disable": true})));
        assert!(!is_disable_sentinel(&serde_json::json!({"disable": false})));
        assert!(!is_disable_sentinel(
            &serde_json::json!({"disable": true, "description": "x"})
        ));
    }

    #[test]
    fn toml_syntax_error_has_line() {
        let e = parse_value(Path::new("t.toml"), FileFormat::Toml, "a = 1\nb = \n").unwrap_err();
        assert_eq!(e.code, "compile/syntax-invalid");
        assert_eq!(e.locator.line, Some(2));
    }

    #[test]
    fn hostile_nesting_is_refused_before_parsing() {
        let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
        let json = format!("{{\n\"a\": {deep}}}");
        let e = parse_value(Path::new("e.json"), FileFormat::Json, &json).unwrap_err();
        assert_eq!(
            (e.code.as_ref(), e.locator.line),
            ("json/too-deep", Some(2))
        );
        let yaml = format!("a: 1\nb: {deep}\n");
        let e = parse_value(Path::new("e.yaml"), FileFormat::Yaml, &yaml).unwrap_err();
        assert_eq!(
            (e.code.as_ref(), e.locator.line),
            ("yaml/too-deep", Some(2))
        );
        assert_eq!(e.locator.file.as_deref(), Some(Path::new("e.yaml")));
    }

    #[test]
    fn unknown_keys_named_with_path() {
        #[derive(serde::Deserialize)]
        #[allow(dead_code)]
        struct T {
            a: u32,
            inner: Option<Inner>,
        }
        #[derive(serde::Deserialize)]
        #[allow(dead_code)]
        struct Inner {
            b: u32,
        }
        let mut diags = Diagnostics::new();
        let v = serde_json::json!({"a": 1, "zz": 2, "inner": {"b": 1, "c": 3}});
        assert!(deserialize_strict::<T>(Path::new("x.toml"), v, "tool", &mut diags).is_none());
        let fields: Vec<_> = diags
            .iter()
            .map(|d| d.locator.field.clone().unwrap())
            .collect();
        assert_eq!(fields, ["inner.c", "zz"]);
    }
}
